// Loads of one line by many warps of an SM at once: does the L1 send the L2
// one request for the line and let the other warps wait for its reply, or a
// request per warp? One CTA an SM of W warps (1 to 32). After a barrier every
// warp loads once, as kernels do (ld.global: LDG.E, which the L1 caches), either
//   - "line": the line every warp of its SM loads, a word a lane;
//   - "word": one word of that line, every lane of every warp of its SM;
//   - "own": a line of the warp's own, a word a lane (the control).
// Each SM has lines of its own, which the L2 holds (read through the L2 only,
// ld.global.cg, just before) and the L1 does not (a fresh window every
// launch). Per warp, cycles from the barrier to its value; per SM, the warps'
// mean and the last warp's. Eight launches after a warm-up, medians over SMs
// then over launches. Nsight Compute counts the L2's read requests from the
// L1s (workloads/latency/run_h100.sh; `pending_line ncu` runs the 32-warp
// points once each, nothing timed).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "workloads/common/runner.cuh"
#include "workloads/latency/probe.cuh"

namespace {

constexpr int kMaxWarps = 32;
constexpr int kLinesPerSm = kMaxWarps;  // "own" takes a line per warp
constexpr int kLineWords = 32;
constexpr int kLaunches = 9;  // a warm-up, then eight timed

enum Mode { kLine = 0, kWord = 1, kOwn = 2 };
const char* const kModeNames[] = {"line", "word", "own"};

__device__ __forceinline__ long long clock_now() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

// Leaves the window's lines in the L2 and not in any L1.
__global__ void warm_l2(const unsigned* window, std::size_t words, unsigned* out) {
  unsigned sum = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x) {
    unsigned v;
    asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v) : "l"(window + i) : "memory");
    sum += v;
  }
  if (sum == 0x9e3779b9u) out[0] = sum;  // keeps the loads; the window is zero
}

template <int MODE>
__global__ void pending_loads(const unsigned* window, unsigned* out, long long* cycles) {
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned* p = window + std::size_t(blockIdx.x) * kLinesPerSm * kLineWords;
  if (MODE == kLine) p += lane;
  if (MODE == kOwn) p += warp * kLineWords + lane;
  __syncthreads();
  const long long start = clock_now();
  unsigned v, used;
  asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  asm volatile("add.u32 %0, %1, 1;" : "=r"(used) : "r"(v));  // waits for the value, so the clock after it does
  const long long done = clock_now();
  if (used == 0x9e3779b9u) out[0] = used;
  if (lane == 0) cycles[blockIdx.x * kMaxWarps + warp] = done - start;
}

using Kernel = void (*)(const unsigned*, unsigned*, long long*);
const Kernel kKernels[] = {pending_loads<kLine>, pending_loads<kWord>, pending_loads<kOwn>};

struct Point {
  double mean_cycles, last_cycles;
};

Point measure(Mode mode, int warps, int sms, unsigned* window, std::size_t window_words, unsigned* out, long long* cycles) {
  const int padding = one_cta_per_sm(reinterpret_cast<const void*>(kKernels[mode]), warps, kModeNames[mode]);
  const std::size_t per_launch = std::size_t(sms) * kLinesPerSm * kLineWords;
  std::vector<double> means, lasts;
  std::vector<long long> host(std::size_t(sms) * kMaxWarps);
  for (int launch = 0; launch < kLaunches; ++launch) {
    const unsigned* fresh = window + (launch * per_launch) % window_words;
    warm_l2<<<sms, 1024>>>(fresh, per_launch, out);
    kKernels[mode]<<<sms, 32 * warps, padding>>>(fresh, out, cycles);
    WORKLOAD_CHECK(cudaGetLastError());
    WORKLOAD_CHECK(cudaMemcpy(host.data(), cycles, host.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    if (launch == 0) continue;
    std::vector<double> sm_means, sm_lasts;
    for (int sm = 0; sm < sms; ++sm) {
      double sum = 0, last = 0;
      for (int w = 0; w < warps; ++w) {
        const double c = double(host[std::size_t(sm) * kMaxWarps + w]);
        sum += c;
        last = std::max(last, c);
      }
      sm_means.push_back(sum / warps);
      sm_lasts.push_back(last);
    }
    means.push_back(median(sm_means));
    lasts.push_back(median(sm_lasts));
  }
  return {median(means), median(lasts)};
}

}  // namespace

int main(int argc, char** argv) {
  atomsim::workload::program_name() = "pending_line";
  const bool ncu_only = argc > 1 && std::strcmp(argv[1], "ncu") == 0;
  if (argc > 2 || (argc == 2 && !ncu_only)) atomsim::workload::fail(2, "usage: pending_line [ncu]");
  atomsim::workload::require_gpu();
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const std::size_t window_words = std::size_t(kLaunches) * sms * kLinesPerSm * kLineWords;
  unsigned *window, *out;
  long long* cycles;
  WORKLOAD_CHECK(cudaMalloc(&window, window_words * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMemset(window, 0, window_words * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&out, sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&cycles, std::size_t(sms) * kMaxWarps * sizeof(long long)));
  if (ncu_only) {
    for (Mode mode : {kLine, kWord, kOwn}) {
      const int padding = one_cta_per_sm(reinterpret_cast<const void*>(kKernels[mode]), kMaxWarps, kModeNames[mode]);
      kKernels[mode]<<<sms, 32 * kMaxWarps, padding>>>(window, out, cycles);
    }
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    return 0;
  }
  std::printf("{\n  %s, \"sms\": %d,\n  \"points\": [\n", atomsim::workload::device_json().c_str(), sms);
  bool first = true;
  for (Mode mode : {kLine, kWord, kOwn})
    for (int warps : {1, 2, 4, 8, 16, 32}) {
      const Point p = measure(mode, warps, sms, window, window_words, out, cycles);
      std::printf("%s    {\"mode\": \"%s\", \"warps\": %d, \"mean_cycles\": %.1f, \"last_cycles\": %.1f}", first ? "" : ",\n",
                  kModeNames[mode], warps, p.mean_cycles, p.last_cycles);
      first = false;
    }
  std::printf("\n  ]\n}\n");
  return 0;
}
