// What a kernel's first reads of its constant bank cost: the kernel's
// parameters are fresh in memory at each launch, so an SM's first read of each
// constant line misses its constant caches. Every warp's lane 0 reads the SM
// clock, then K parameters `stride` bytes apart (ULDCs), then the clock again;
// the clock read takes the sum as an operand, so it follows the ULDCs. A
// second pass over the same values comes from the uniform registers the
// compiler keeps them in, so the third clock read gives the floor under the
// first figure (the barrier and the clock reads; the JSON's again_cycles). constants.sass shows where
// the ULDCs lie: with K = 1 the compiler moves the one read past the clocks,
// so that point times no read; 3,840 bytes hold 15 lines 256 bytes apart, so
// K = 32 reads those 15 again.
//   - "lines": K of 2..16 at 256 bytes apart, one warp a CTA, one CTA an SM:
//     what the first miss costs, and each further line.
//   - "stride": K = 16 at 4..256 bytes apart: how many bytes a miss brings.
//   - "warps": K = 8 lines, 1..32 warps a CTA: whether the warps that arrive
//     while a line is on its way wait for the same fill, or each sub-core's
//     cache misses on its own.
//   - "second_wave": two CTAs an SM one after the other (the second starts
//     when the first ends), of one warp and of four (one on each sub-core):
//     whether the SM's caches keep the lines for the next CTA of the same
//     launch, and whether a CTA that follows misses because it lands on
//     another sub-core or because its sub-core's cache starts empty.
// Medians over SMs and over eight launches after a warm-up.
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "workloads/common/runner.cuh"
#include "workloads/latency/probe.cuh"

namespace {

constexpr int kLaunches = 9;
constexpr int kWords = 960;  // 3,840 bytes of parameters, within the 4 KB a launch may pass

struct Params {
  int v[kWords];
};

template <int K, int Stride>
__global__ void read_constants(Params p, long long* out) {
  const int lane = threadIdx.x % 32;
  long long t0, t1, t2;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t0)::"memory");
  __syncthreads();
  int first = 0;
#pragma unroll
  for (int i = 0; i < K; ++i) first += p.v[(i * Stride / 4) % kWords] * (i + 1);
  asm volatile("{ .reg .u32 dep; mov.u32 dep, %1; mov.u64 %0, %%clock64; }" : "=l"(t1) : "r"(first) : "memory");
  __syncthreads();
  int again = 0;
#pragma unroll
  for (int i = 0; i < K; ++i) again ^= p.v[(i * Stride / 4) % kWords] + i;
  asm volatile("{ .reg .u32 dep; mov.u32 dep, %1; mov.u64 %0, %%clock64; }" : "=l"(t2) : "r"(again) : "memory");
  if (lane == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    const int w = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
    out[4 * w + 0] = t1 - t0;
    out[4 * w + 1] = t2 - t1;
    out[4 * w + 2] = sm;
    out[4 * w + 3] = first + again;  // keeps the sums
  }
}

using Kernel = void (*)(Params, long long*);

struct Point {
  double first_cycles, floor_cycles;
};

// Medians over launches of the per-warp medians, for warps selected by `pick`
// (0: every warp; 1: the first CTA of each SM; 2: the second).
Point run(Kernel kernel, int ctas, int warps, int shared, int pick, const Params& params, long long* out) {
  std::vector<double> first, floor;
  std::vector<long long> host(4 * ctas * warps);
  if (shared) WORKLOAD_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, shared));
  for (int launch = 0; launch < kLaunches; ++launch) {
    kernel<<<ctas, 32 * warps, shared>>>(params, out);
    WORKLOAD_CHECK(cudaGetLastError());
    WORKLOAD_CHECK(cudaMemcpy(host.data(), out, host.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    if (launch == 0) continue;
    std::vector<double> f, b;
    std::vector<int> seen(1024, 0);
    for (int c = 0; c < ctas; ++c) {
      const int sm = int(host[4 * c * warps + 2]) % 1024;
      const int order = seen[sm]++;
      if (pick && order != pick - 1) continue;
      for (int w = 0; w < warps; ++w) {
        f.push_back(double(host[4 * (c * warps + w)]));
        b.push_back(double(host[4 * (c * warps + w) + 1]));
      }
    }
    first.push_back(median(f));
    floor.push_back(median(b));
  }
  return {median(first), median(floor)};
}

template <int K, int Stride>
Kernel kernel_for() { return read_constants<K, Stride>; }

}  // namespace

int main() {
  atomsim::workload::program_name() = "constants";
  atomsim::workload::require_gpu();
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  Params params{};
  for (int i = 0; i < kWords; ++i) params.v[i] = i * 7 + 1;
  long long* out;
  WORKLOAD_CHECK(cudaMalloc(&out, 4 * 2 * sms * 32 * sizeof(long long)));
  const int one_per_sm = one_cta_per_sm(reinterpret_cast<const void*>(kernel_for<8, 256>()), 1, "read_constants");
  std::printf("{\n  %s, \"sms\": %d,\n", atomsim::workload::device_json().c_str(), sms);

  const std::pair<int, Kernel> lines[] = {{1, kernel_for<1, 256>()},   {2, kernel_for<2, 256>()},   {4, kernel_for<4, 256>()},
                                          {8, kernel_for<8, 256>()},   {16, kernel_for<16, 256>()}, {32, kernel_for<32, 256>()}};
  std::printf("  \"lines\": [");
  for (std::size_t i = 0; i < std::size(lines); ++i) {
    const Point p = run(lines[i].second, sms, 1, one_per_sm, 0, params, out);
    std::printf("%s\n    {\"lines\": %d, \"first_cycles\": %.1f, \"again_cycles\": %.1f}", i ? "," : "", lines[i].first, p.first_cycles,
                p.floor_cycles);
  }
  const std::pair<int, Kernel> strides[] = {{4, kernel_for<16, 4>()},    {16, kernel_for<16, 16>()},   {32, kernel_for<16, 32>()},
                                            {64, kernel_for<16, 64>()},  {128, kernel_for<16, 128>()}, {256, kernel_for<16, 256>()}};
  std::printf("\n  ],\n  \"stride\": [");
  for (std::size_t i = 0; i < std::size(strides); ++i) {
    const Point p = run(strides[i].second, sms, 1, one_per_sm, 0, params, out);
    std::printf("%s\n    {\"stride_bytes\": %d, \"reads\": 16, \"first_cycles\": %.1f, \"again_cycles\": %.1f}", i ? "," : "",
                strides[i].first, p.first_cycles, p.floor_cycles);
  }
  std::printf("\n  ],\n  \"warps\": [");
  bool first = true;
  for (int warps : {1, 2, 4, 8, 16, 32}) {
    const Point p = run(kernel_for<8, 256>(), sms, warps, 0, 0, params, out);
    std::printf("%s\n    {\"warps\": %d, \"lines\": 8, \"first_cycles\": %.1f, \"again_cycles\": %.1f}", first ? "" : ",", warps,
                p.first_cycles, p.floor_cycles);
    first = false;
  }
  std::printf("\n  ],\n  \"second_wave\": [");
  const int four_per_sm = one_cta_per_sm(reinterpret_cast<const void*>(kernel_for<8, 256>()), 4, "read_constants");
  first = true;
  for (const auto& [warps, shared] : {std::pair{1, one_per_sm}, std::pair{4, four_per_sm}})
    for (int pick : {1, 2}) {
      const Point p = run(kernel_for<8, 256>(), 2 * sms, warps, shared, pick, params, out);
      std::printf("%s\n    {\"warps_per_cta\": %d, \"cta_on_its_sm\": %d, \"lines\": 8, \"first_cycles\": %.1f, \"again_cycles\": %.1f}",
                  first ? "" : ",", warps, pick, p.first_cycles, p.floor_cycles);
      first = false;
    }
  std::printf("\n  ]\n}\n");
  return 0;
}
