// How the latency of single loads spreads under load: the loaded probe
// (loaded.cu) gives bytes per SM cycle, from which Little's law gives a mean
// latency; this one times every load. Each warp streams coalesced 4-byte loads
// (one 128-byte line per warp instruction, the GPU's warps on consecutive
// lines as in loaded.cu's interleaved pattern), LOADS of them issued back to
// back, then waits for each in turn and reads the clock after each: the time
// from issue to the k-th value is the latest of the first k+1 loads. Lane 0
// adds every time to a histogram in shared memory (32-cycle bins), so the
// report has, for each load point, the distribution of single-load latencies
// (LOADS = 1) or of a batch's completions (LOADS = 4). From DRAM (the L2
// flushed before each launch) and, as a control, from an 8 MB window the L2
// holds. Warm-up launch first; the histograms add up the launches after it;
// bytes per SM cycle is the median launch's median warp.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "workloads/latency/streamed_memory.cuh"

constexpr int kLineWords = 32;
constexpr int kBins = 256;  // 32 cycles each: up to 8,192 cycles, the last bin holds the rest
constexpr int kBinCycles = 32;
constexpr int kMaxLoads = 4;

__device__ __forceinline__ long long clock_now() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

template <int LOADS, bool L2_ONLY>
__global__ void timed_loads(const unsigned* __restrict__ data, unsigned window_mask, int iterations, unsigned* out,
                            long long* cycles, unsigned long long* histogram) {
  __shared__ unsigned bins[LOADS][kBins];
  for (int i = threadIdx.x; i < LOADS * kBins; i += blockDim.x) bins[i / kBins][i % kBins] = 0;
  __syncthreads();
  const unsigned warps = gridDim.x * (blockDim.x / 32);
  const unsigned warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned stride = warps * kLineWords;
  unsigned index = warp * kLineWords + lane;
  unsigned sum = 0;
  const long long begin = clock_now();
#pragma unroll 1
  for (int t = 0; t < iterations; ++t) {
    unsigned v[LOADS];
    long long done[LOADS];
    const long long issue = clock_now();
#pragma unroll
    for (int k = 0; k < LOADS; ++k) {
      const unsigned* p = data + (index & window_mask);
      if (L2_ONLY)
        asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(v[k]) : "l"(p) : "memory");
      else
        asm volatile("ld.global.u32 %0, [%1];" : "=r"(v[k]) : "l"(p) : "memory");
      index += stride;
    }
#pragma unroll
    for (int k = 0; k < LOADS; ++k) {
      asm volatile("add.u32 %0, %0, %1;" : "+r"(sum) : "r"(v[k]));
      done[k] = clock_now();
    }
    if (lane == 0)
#pragma unroll
      for (int k = 0; k < LOADS; ++k) atomicAdd(&bins[k][min(int((done[k] - issue) / kBinCycles), kBins - 1)], 1u);
  }
  const long long end = clock_now();
  if (sum == 0x9e3779b9u) out[warp] = sum;  // keeps the loads; the data never sums to it
  if (lane == 0) cycles[warp] = end - begin;
  __syncthreads();
  for (int i = threadIdx.x; i < LOADS * kBins; i += blockDim.x)
    if (unsigned n = bins[i / kBins][i % kBins]) atomicAdd(&histogram[i], n);
}

struct Shape {
  bool from_dram;
  int active_sms, warps_per_sm, loads;
};

int main() {
  atomsim::workload::program_name() = "load_spread";
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const StreamedMemory memory;
  unsigned* out;
  long long* d_cycles;
  unsigned long long* d_histogram;
  WORKLOAD_CHECK(cudaMalloc(&out, size_t(sms) * 64 * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&d_cycles, size_t(sms) * 64 * sizeof(long long)));
  WORKLOAD_CHECK(cudaMalloc(&d_histogram, kMaxLoads * kBins * sizeof(unsigned long long)));
  // Idle to saturated on every SM, one load or four in flight per warp; 32
  // warps an SM on fewer SMs (where loaded.cu found the H100 slower than a
  // fixed latency); the L2 as a control.
  std::vector<Shape> shapes;
  for (const int loads : {1, 4})
    for (const int warps : {4, 16, 32, 64}) shapes.push_back({true, sms, warps, loads});
  for (const int loads : {1, 4})
    for (const int active : {8, 16, 33}) shapes.push_back({true, active, 32, loads});
  for (const int warps : {4, 32}) shapes.push_back({false, sms, warps, 4});
  std::printf("{\n  \"sms\": %d,\n  \"line_bytes\": 128,\n  \"bin_cycles\": %d,\n  \"points\": [\n", sms, kBinCycles);
  for (size_t s = 0; s < shapes.size(); ++s) {
    const Shape& shape = shapes[s];
    const int warps_per_cta = std::min(shape.warps_per_sm, 32), ctas = shape.active_sms * shape.warps_per_sm / warps_per_cta;
    const int warps = ctas * warps_per_cta;
    const int iterations = std::max(16, 8192 / (shape.warps_per_sm * shape.loads));
    const unsigned window_mask = StreamedMemory::window_mask(shape.from_dram);
    const double bytes = double(warps) * iterations * shape.loads * kLineWords * 4;
    std::vector<double> per_cycle;
    std::vector<long long> c(warps);
    for (int r = 0; r < 6; ++r) {
      if (r == 1) WORKLOAD_CHECK(cudaMemset(d_histogram, 0, kMaxLoads * kBins * sizeof(unsigned long long)));
      if (shape.from_dram) memory.flush_l2(r);
      const dim3 grid(ctas), block(32 * warps_per_cta);
      if (shape.from_dram && shape.loads == 1) timed_loads<1, false><<<grid, block>>>(memory.data, window_mask, iterations, out, d_cycles, d_histogram);
      if (shape.from_dram && shape.loads == 4) timed_loads<4, false><<<grid, block>>>(memory.data, window_mask, iterations, out, d_cycles, d_histogram);
      if (!shape.from_dram) timed_loads<4, true><<<grid, block>>>(memory.data, window_mask, iterations, out, d_cycles, d_histogram);
      WORKLOAD_CHECK(cudaGetLastError());
      WORKLOAD_CHECK(cudaDeviceSynchronize());
      WORKLOAD_CHECK(cudaMemcpy(c.data(), d_cycles, warps * sizeof(long long), cudaMemcpyDeviceToHost));
      if (r == 0) continue;  // warm-up
      std::sort(c.begin(), c.end());
      per_cycle.push_back(bytes / shape.active_sms / static_cast<double>(c[c.size() / 2]));
    }
    std::sort(per_cycle.begin(), per_cycle.end());
    std::vector<unsigned long long> histogram(kMaxLoads * kBins);
    WORKLOAD_CHECK(cudaMemcpy(histogram.data(), d_histogram, histogram.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    std::printf("    {\"source\": \"%s\", \"active_sms\": %d, \"warps_per_sm\": %d, \"loads_in_flight\": %d, \"bytes_per_sm_cycle\": %.2f, \"completions\": [",
                shape.from_dram ? "dram" : "l2", shape.active_sms, shape.warps_per_sm, shape.loads, per_cycle[per_cycle.size() / 2]);
    for (int k = 0; k < shape.loads; ++k) {
      int last = kBins - 1;
      while (last > 0 && histogram[k * kBins + last] == 0) --last;
      std::printf("%s[", k ? ", " : "");
      for (int b = 0; b <= last; ++b) std::printf("%s%llu", b ? "," : "", histogram[k * kBins + b]);
      std::printf("]");
    }
    std::printf("]}%s\n", s + 1 < shapes.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
  return 0;
}
