// Probe of how shared-memory loads and global float reductions (RED) share the
// way to the L1: each warp repeats `iterations` times `loads` 128-bit shared
// loads (LDS.128, from a tile the CTA staged) whose values it sums, then one
// RED of the sum. Where the REDs back up (all active lanes of a warp on one
// word: the L2 applies them one by one, as in the 3DGS backward's regime),
// the question is what the loads behind them wait for: room in the MIO queue
// (mio_throttle), their own results (short_scoreboard at their consumers), or
// the REDs' reading of registers the loads overwrite (long_scoreboard at the
// loads). `--pattern distinct` gives every lane its own word, so the REDs
// flow, as a control. Captured by tools/capture/capture_h100_workloads.sh
// ('^probe/lds-red/').
#include "workloads/common/runner.cuh"

namespace {

constexpr int kThreads = 256;
constexpr int kTile = 256;  // float4 per CTA

template <int kLoads>
__global__ void lds_red(const float4* tile_source, float* target, int iterations, bool same_word, std::uint32_t words) {
  __shared__ float4 tile[kTile];
  tile[threadIdx.x] = tile_source[(blockIdx.x * kThreads + threadIdx.x) % (kTile * 64)];
  __syncthreads();
  const std::uint32_t lane = threadIdx.x & 31;
  const std::uint32_t warp = (blockIdx.x * kThreads + threadIdx.x) >> 5;
  for (int i = 0; i < iterations; ++i) {
    float sum = 1.0f;
    #pragma unroll
    for (int j = 0; j < kLoads; ++j) {
      const float4 v = tile[(threadIdx.x + 37 * i + 11 * j) % kTile];
      sum += v.x + v.y + v.z + v.w;
    }
    // A word per warp and iteration (same_word), or per lane.
    const std::uint32_t word = same_word ? (warp * 31 + i) % words : ((warp * 32 + lane) * 17 + i) % words;
    atomicAdd(target + word, sum);
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace atomsim::workload;
  program_name() = "lds_red";
  Options o(argc, argv, {{"loads", "4"}, {"pattern", "same"}, {"blocks", "1056"}, {"iterations", "64"}, {"warmup", "3"}, {"repeat", "21"}},
            "[--loads 0|1|2|4|8] [--pattern same|distinct] [--blocks B] [--iterations I] [--warmup W] [--repeat R]");
  const int loads = static_cast<int>(o.integer("loads", 0, 8));
  const bool same_word = o.choice("pattern", {"same", "distinct"}) == "same";
  const int blocks = static_cast<int>(o.integer("blocks", 1, 1 << 20));
  const int iterations = static_cast<int>(o.integer("iterations", 1, 1 << 16));
  const int warmup = static_cast<int>(o.integer("warmup", 0, 1000)), repeat = static_cast<int>(o.integer("repeat", 1, 10000));
  if (loads != 0 && loads != 1 && loads != 2 && loads != 4 && loads != 8) fail(2, "--loads must be 0, 1, 2, 4 or 8 (got %d)", loads);
  require_gpu();

  const std::uint32_t words = 1u << 20;
  std::vector<float4> source(kTile * 64);
  for (std::size_t k = 0; k < source.size(); ++k) {
    const float x = static_cast<float>(k % 7) * 0.125f;
    source[k] = make_float4(x, 0.5f * x, 0.25f, 0.0f);
  }
  float4* d_source = nullptr;
  float* d_target = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&d_source, source.size() * sizeof(float4)));
  WORKLOAD_CHECK(cudaMemcpy(d_source, source.data(), source.size() * sizeof(float4), cudaMemcpyHostToDevice));
  WORKLOAD_CHECK(cudaMalloc(&d_target, words * sizeof(float)));

  const std::string name = "lds_red";
  KernelTimes times;
  for (int r = 0; r < warmup + repeat; ++r) {
    WORKLOAD_CHECK(cudaMemset(d_target, 0, words * sizeof(float)));
    times.time(name, r >= warmup, [&] {
      switch (loads) {
        case 0: lds_red<0><<<blocks, kThreads>>>(d_source, d_target, iterations, same_word, words); break;
        case 1: lds_red<1><<<blocks, kThreads>>>(d_source, d_target, iterations, same_word, words); break;
        case 2: lds_red<2><<<blocks, kThreads>>>(d_source, d_target, iterations, same_word, words); break;
        case 4: lds_red<4><<<blocks, kThreads>>>(d_source, d_target, iterations, same_word, words); break;
        default: lds_red<8><<<blocks, kThreads>>>(d_source, d_target, iterations, same_word, words); break;
      }
    });
  }

  // Every lane adds 1 + its loads' values each iteration: the total over all
  // words is known without replaying the order.
  double expected = 0;
  for (std::uint32_t t = 0; t < std::uint32_t(blocks) * kThreads; ++t) {
    const std::uint32_t x = t % kThreads;
    for (int i = 0; i < iterations; ++i) {
      expected += 1.0;
      for (int j = 0; j < loads; ++j) {
        const std::uint32_t block = t / kThreads;
        const float4 v = source[(block * kThreads + (x + 37 * i + 11 * j) % kTile) % (kTile * 64)];
        expected += double(v.x) + v.y + v.z + v.w;
      }
    }
  }
  std::vector<float> got(words);
  WORKLOAD_CHECK(cudaMemcpy(got.data(), d_target, words * sizeof(float), cudaMemcpyDeviceToHost));
  double total = 0;
  for (float g : got) total += g;
  const double error = std::fabs(total - expected) / expected;
  const bool correct = error < 1e-3;
  std::printf("{\"workload\":\"lds_red\",\"loads\":%d,\"pattern\":\"%s\",\"blocks\":%d,\"iterations\":%d,\"warmup\":%d,\"repeat\":%d,%s,"
              "\"kernels\":%s,\"relative_error\":%.3e,\"correct\":%s}\n",
              loads, same_word ? "same" : "distinct", blocks, iterations, warmup, repeat, device_json().c_str(), times.json().c_str(), error,
              correct ? "true" : "false");
  WORKLOAD_CHECK(cudaFree(d_source));
  WORKLOAD_CHECK(cudaFree(d_target));
  if (!correct) fail(3, "sum of all words %.6e differs from the expected %.6e (relative %.3e)", total, expected, error);
  return 0;
}
