// Probe of atomics that return their old value (ATOM) against the same
// updates without a return (RED): each warp repeats `iterations` times one
// integer atomic per lane and, for ATOM, adds the returned value to a running
// sum, so its next atomic waits for the return (as the sparse grid's
// activation does with its atomicOr). Where the lanes' words are:
//   private1   every lane its own word in the warp's own line;
//   private32  the warp's 32 lanes on one word of its own (32 rounds);
//   hot        the 32 lanes of every warp on one of 64 words shared by the
//              whole GPU, one per line (same-word updates from many SMs).
// Captured by tools/capture/capture_h100_workloads.sh ('^probe/atom/'): the
// model's atomic return path and same-word serialisation against the H100.
#include "workloads/common/runner.cuh"

namespace {

constexpr int kThreads = 256;
constexpr std::uint32_t kHotWords = 64;

enum class Op { Red, AtomAdd, AtomOr };
enum class Pattern { Private1, Private32, Hot };

__device__ __forceinline__ std::uint32_t word_of(Pattern pattern, std::uint32_t warp, std::uint32_t lane, int i) {
  switch (pattern) {
    case Pattern::Private1: return warp * 32 + lane;
    case Pattern::Private32: return warp * 32;
    default: return ((warp + i) % kHotWords) * 32;
  }
}

template <Op kOp, Pattern kPattern>
__global__ void atom_return(std::uint32_t* target, std::uint32_t* sums, int iterations) {
  const std::uint32_t lane = threadIdx.x & 31;
  const std::uint32_t thread = blockIdx.x * kThreads + threadIdx.x;
  const std::uint32_t warp = thread >> 5;
  std::uint32_t sum = 0;
  #pragma unroll 1  // one atomic in flight per warp: its consumer is the next instruction
  for (int i = 0; i < iterations; ++i) {
    std::uint32_t* word = target + word_of(kPattern, warp, lane, i);
    if constexpr (kOp == Op::Red) atomicAdd(word, 1u);
    else if constexpr (kOp == Op::AtomAdd) sum += atomicAdd(word, 1u);
    else sum += atomicOr(word, 1u << lane);
  }
  if (kOp != Op::Red) sums[thread] = sum;
}

template <Op kOp>
void launch(Pattern pattern, int blocks, std::uint32_t* target, std::uint32_t* sums, int iterations) {
  switch (pattern) {
    case Pattern::Private1: atom_return<kOp, Pattern::Private1><<<blocks, kThreads>>>(target, sums, iterations); break;
    case Pattern::Private32: atom_return<kOp, Pattern::Private32><<<blocks, kThreads>>>(target, sums, iterations); break;
    case Pattern::Hot: atom_return<kOp, Pattern::Hot><<<blocks, kThreads>>>(target, sums, iterations); break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace atomsim::workload;
  program_name() = "atom_return";
  Options o(argc, argv, {{"op", "atom"}, {"pattern", "private1"}, {"blocks", "2112"}, {"iterations", "32"}, {"warmup", "3"}, {"repeat", "21"}},
            "[--op red|atom|atom-or] [--pattern private1|private32|hot] [--blocks B] [--iterations I] [--warmup W] [--repeat R]");
  const std::string op_name = o.choice("op", {"red", "atom", "atom-or"});
  const std::string pattern_name = o.choice("pattern", {"private1", "private32", "hot"});
  const Op op = op_name == "red" ? Op::Red : op_name == "atom" ? Op::AtomAdd : Op::AtomOr;
  const Pattern pattern = pattern_name == "private1" ? Pattern::Private1 : pattern_name == "private32" ? Pattern::Private32 : Pattern::Hot;
  const int blocks = static_cast<int>(o.integer("blocks", 1, 1 << 16));
  const int iterations = static_cast<int>(o.integer("iterations", 1, 1 << 12));
  const int warmup = static_cast<int>(o.integer("warmup", 0, 1000)), repeat = static_cast<int>(o.integer("repeat", 1, 10000));
  require_gpu();

  const std::uint32_t threads = std::uint32_t(blocks) * kThreads;
  const std::uint32_t words = std::max<std::uint32_t>(threads, kHotWords * 32);
  std::uint32_t *d_target = nullptr, *d_sums = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&d_target, words * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&d_sums, threads * sizeof(std::uint32_t)));

  const std::string name = "atom_return";
  KernelTimes times;
  for (int r = 0; r < warmup + repeat; ++r) {
    WORKLOAD_CHECK(cudaMemset(d_target, 0, words * sizeof(std::uint32_t)));
    times.time(name, r >= warmup, [&] {
      switch (op) {
        case Op::Red: launch<Op::Red>(pattern, blocks, d_target, d_sums, iterations); break;
        case Op::AtomAdd: launch<Op::AtomAdd>(pattern, blocks, d_target, d_sums, iterations); break;
        case Op::AtomOr: launch<Op::AtomOr>(pattern, blocks, d_target, d_sums, iterations); break;
      }
    });
  }

  // Adds: every lane adds 1 per iteration, so the words sum to threads x
  // iterations whatever the order. Or: a word holds the bits of the lanes
  // that reached it, every lane of a warp on the same word in these patterns
  // except private1, where each word holds its own lane's bit.
  std::vector<std::uint32_t> got(words);
  WORKLOAD_CHECK(cudaMemcpy(got.data(), d_target, words * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  bool correct = true;
  if (op == Op::AtomOr) {
    for (std::uint32_t w = 0; w < words; ++w) {
      const bool used = pattern == Pattern::Private1 ? w < threads : pattern == Pattern::Private32 ? w % 32 == 0 && w < threads : w % 32 == 0 && w / 32 < kHotWords;
      const std::uint32_t expected = !used ? 0u : pattern == Pattern::Private1 ? 1u << (w % 32) : 0xffffffffu;
      correct = correct && got[w] == expected;
    }
  } else {
    std::uint64_t total = 0;
    for (std::uint32_t g : got) total += g;
    correct = total == std::uint64_t(threads) * iterations;
  }
  std::printf("{\"workload\":\"atom_return\",\"op\":\"%s\",\"pattern\":\"%s\",\"blocks\":%d,\"iterations\":%d,\"warmup\":%d,\"repeat\":%d,%s,"
              "\"kernels\":%s,\"correct\":%s}\n",
              op_name.c_str(), pattern_name.c_str(), blocks, iterations, warmup, repeat, device_json().c_str(), times.json().c_str(),
              correct ? "true" : "false");
  WORKLOAD_CHECK(cudaFree(d_target));
  WORKLOAD_CHECK(cudaFree(d_sums));
  if (!correct) fail(3, "the words do not hold the updates of every lane");
  return 0;
}
