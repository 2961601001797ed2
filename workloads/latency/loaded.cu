// Memory under load: every SM's warps stream coalesced 4-byte loads (one
// 128-byte line per warp instruction, the way the radix sort reads its keys),
// each warp with LOADS independent loads in flight before it uses them. For
// warps per SM x loads in flight, from DRAM (lines no launch read before: the
// L2 is flushed before each launch) and from the L2 (an 8 MB window read again,
// past the L1: ld.global.cg),
// it reports the bytes each SM moves per SM cycle (clock64 per warp, the median
// warp) and the GPU's bytes per nanosecond (events); at the highest load also on
// fewer SMs, for which limit is the SM's own. By Little's law, bytes in
// flight over bytes per cycle is the loaded latency. Warm-up launch first,
// median of repeats.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <type_traits>
#include <vector>

#define CHECK(call)                                                                      \
  do {                                                                                   \
    cudaError_t err_ = (call);                                                           \
    if (err_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "loaded: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

constexpr int kLineWords = 32;

// Warp w's load k of iteration t reads line (t * LOADS + k) * warps + w of the
// window: at any moment the GPU's warps read consecutive lines.
template <int LOADS, bool L2_ONLY>
__global__ void stream_loads(const unsigned* __restrict__ data, unsigned long long window_mask, int iterations, unsigned* out,
                             long long* cycles) {
  const unsigned warps = gridDim.x * (blockDim.x / 32);
  const unsigned warp = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
  const unsigned lane = threadIdx.x % 32;
  unsigned sum = 0;
  const long long t0 = clock64();
#pragma unroll 1
  for (int t = 0; t < iterations; ++t) {
    unsigned v[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) {
      const unsigned long long line = static_cast<unsigned long long>(t * LOADS + k) * warps + warp;
      const unsigned* p = data + ((line * kLineWords + lane) & window_mask);
      v[k] = L2_ONLY ? __ldcg(p) : *p;
    }
#pragma unroll
    for (int k = 0; k < LOADS; ++k) sum += v[k];
  }
  const long long t1 = clock64();
  if (sum == 0x9e3779b9u) out[warp] = sum;  // keeps the loads; the data never sums to it
  if (lane == 0) cycles[warp] = t1 - t0;
}

struct Point {
  double bytes_per_sm_cycle, bytes_per_ns;
};

template <int LOADS>
Point measure(const unsigned* data, unsigned long long window_words, int warps_per_sm, int sms, bool flush, unsigned* scratch,
              size_t scratch_bytes, unsigned* out, long long* d_cycles) {
  const int ctas_per_sm = (warps_per_sm + 31) / 32, warps_per_cta = warps_per_sm / ctas_per_sm;
  const int ctas = sms * ctas_per_sm, warps = ctas * warps_per_cta;
  // 16384 lines per SM (2 MB; 277 MB on 132 SMs, over five times the L2), at least 16 iterations.
  const int iterations = std::max(16, 16384 / (warps_per_sm * LOADS));
  const double bytes = double(warps) * iterations * LOADS * kLineWords * 4;
  cudaEvent_t begin, end;
  CHECK(cudaEventCreate(&begin));
  CHECK(cudaEventCreate(&end));
  std::vector<double> per_cycle, per_ns;
  std::vector<long long> c(warps);
  for (int r = 0; r < 8; ++r) {
    if (flush) CHECK(cudaMemset(scratch, r, scratch_bytes));
    CHECK(cudaEventRecord(begin));
    if (flush)
      stream_loads<LOADS, false><<<ctas, 32 * warps_per_cta>>>(data, window_words - 1, iterations, out, d_cycles);
    else
      stream_loads<LOADS, true><<<ctas, 32 * warps_per_cta>>>(data, window_words - 1, iterations, out, d_cycles);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(end));
    CHECK(cudaEventSynchronize(end));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, begin, end));
    CHECK(cudaMemcpy(c.data(), d_cycles, warps * sizeof(long long), cudaMemcpyDeviceToHost));
    if (r == 0) continue;  // warm-up
    std::sort(c.begin(), c.end());
    per_cycle.push_back(bytes / sms / static_cast<double>(c[c.size() / 2]));
    per_ns.push_back(bytes / (ms * 1e6));
  }
  std::sort(per_cycle.begin(), per_cycle.end());
  std::sort(per_ns.begin(), per_ns.end());
  CHECK(cudaEventDestroy(begin));
  CHECK(cudaEventDestroy(end));
  return {per_cycle[per_cycle.size() / 2], per_ns[per_ns.size() / 2]};
}

int main() {
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const size_t dram_bytes = size_t(1) << 31, l2_window_bytes = size_t(8) << 20, scratch_bytes = size_t(256) << 20;
  unsigned *data, *scratch, *out;
  long long* d_cycles;
  CHECK(cudaMalloc(&data, dram_bytes));
  CHECK(cudaMalloc(&scratch, scratch_bytes));
  CHECK(cudaMalloc(&out, size_t(sms) * 64 * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_cycles, size_t(sms) * 64 * sizeof(long long)));
  {  // Data that is not zero and never sums to the kernels' sentinel in practice.
    std::vector<unsigned> host(dram_bytes / 4);
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned>(i * 2654435761u) | 1u;
    CHECK(cudaMemcpy(data, host.data(), dram_bytes, cudaMemcpyHostToDevice));
  }
  // Every SM with 4-64 warps of 1, 4 or 16 loads in flight; then 64 warps of 16
  // loads on fewer SMs (one CTA of 1024 threads, two per SM): what one SM can
  // take in against what the L2 slices or DRAM give all of them.
  struct Shape {
    int warps, loads, active_sms;
  };
  std::vector<Shape> shapes;
  for (const int warps : {4, 8, 16, 32, 64})
    for (const int loads : {1, 4, 16}) shapes.push_back({warps, loads, sms});
  for (const int active : {8, 16, 33, 66}) shapes.push_back({64, 16, active});
  std::printf("{\n  \"sms\": %d,\n  \"line_bytes\": 128,\n  \"points\": [\n", sms);
  bool first = true;
  for (const bool from_dram : {true, false}) {
    const unsigned long long window_words = (from_dram ? dram_bytes : l2_window_bytes) / 4;
    for (const Shape& shape : shapes) {
      auto run = [&](auto loads_constant) {
        return measure<decltype(loads_constant)::value>(data, window_words, shape.warps, shape.active_sms, from_dram, scratch,
                                                        scratch_bytes, out, d_cycles);
      };
      const Point p = shape.loads == 1   ? run(std::integral_constant<int, 1>{})
                      : shape.loads == 4 ? run(std::integral_constant<int, 4>{})
                                         : run(std::integral_constant<int, 16>{});
      std::printf("%s    {\"source\": \"%s\", \"active_sms\": %d, \"warps_per_sm\": %d, \"loads_in_flight\": %d, "
                  "\"bytes_per_sm_cycle\": %.2f, \"bytes_per_ns\": %.1f}",
                  first ? "" : ",\n", from_dram ? "dram" : "l2", shape.active_sms, shape.warps, shape.loads, p.bytes_per_sm_cycle,
                  p.bytes_per_ns);
      first = false;
    }
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
