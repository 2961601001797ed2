// Memory under load: every SM's warps stream coalesced 4-byte loads (one
// 128-byte line per warp instruction, the way the radix sort reads its keys),
// each warp with LOADS independent loads in flight before it uses them. For
// warps per SM x loads in flight, from DRAM (lines no launch read before: the
// L2 is flushed before each launch) and from the L2 (an 8 MB window read again,
// past the L1: ld.global.cg),
// it reports the bytes each SM moves per SM cycle (clock64 per warp, the median
// warp) and the GPU's bytes per nanosecond (events); at the highest load also on
// fewer SMs, for which limit is the SM's own; and from DRAM with each CTA
// reading a tile of its own (hundreds of streams at once, each in rows of its
// own: what DRAM's banks and rows cost). By Little's law, bytes in
// flight over bytes per cycle is the loaded latency. Warm-up launch first,
// median of repeats.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "workloads/latency/streamed_memory.cuh"

constexpr int kLineWords = 32;

// Load k of iteration t of a warp reads the line (t * LOADS + k) lines of its
// stride past the warp's first: interleaved, warp w of the GPU's `warps` starts
// at line w with a stride of `warps` (at any moment the GPU's warps read
// consecutive lines); tiled, each CTA reads a contiguous tile of its own, its
// warps side by side (the radix sort's histogram reads its keys so). 32-bit
// index arithmetic keeps the loop at a few instructions a load.
template <int LOADS, bool L2_ONLY>
__global__ void stream_loads(const unsigned* __restrict__ data, unsigned window_mask, int iterations, bool tiled, unsigned* out,
                             long long* cycles) {
  const unsigned warps_per_cta = blockDim.x / 32, warp_in_cta = threadIdx.x / 32;
  const unsigned warp = blockIdx.x * warps_per_cta + warp_in_cta, lane = threadIdx.x % 32;
  const unsigned stride = (tiled ? warps_per_cta : gridDim.x * warps_per_cta) * kLineWords;
  unsigned index = tiled ? (blockIdx.x * iterations * LOADS * warps_per_cta + warp_in_cta) * kLineWords + lane : warp * kLineWords + lane;
  unsigned sum = 0;
  const long long t0 = clock64();
#pragma unroll 1
  for (int t = 0; t < iterations; ++t) {
    unsigned v[LOADS];
#pragma unroll
    for (int k = 0; k < LOADS; ++k) {
      const unsigned* p = data + (index & window_mask);
      v[k] = L2_ONLY ? __ldcg(p) : *p;
      index += stride;
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
Point measure(const StreamedMemory& memory, int warps_per_sm, int warps_per_cta, int sms, bool flush, bool tiled, unsigned* out,
              long long* d_cycles) {
  const int ctas_per_sm = warps_per_sm / warps_per_cta;
  const int ctas = sms * ctas_per_sm, warps = ctas * warps_per_cta;
  // 16384 lines per SM (2 MB; 277 MB on 132 SMs, over five times the L2), at least 16 iterations.
  const int iterations = std::max(16, 16384 / (warps_per_sm * LOADS));
  const double bytes = double(warps) * iterations * LOADS * kLineWords * 4;
  std::vector<double> per_cycle, per_ns;
  std::vector<long long> c(warps);
  for (int r = 0; r < 8; ++r) {
    if (flush) memory.flush_l2(r);
    const float ms = timed_launch(
        [&] {
          if (flush)
            stream_loads<LOADS, false><<<ctas, 32 * warps_per_cta>>>(memory.data, StreamedMemory::window_mask(flush), iterations, tiled, out, d_cycles);
          else
            stream_loads<LOADS, true><<<ctas, 32 * warps_per_cta>>>(memory.data, StreamedMemory::window_mask(flush), iterations, tiled, out, d_cycles);
        },
        d_cycles, c);
    if (r == 0) continue;  // warm-up
    std::sort(c.begin(), c.end());
    per_cycle.push_back(bytes / sms / static_cast<double>(c[c.size() / 2]));
    per_ns.push_back(bytes / (ms * 1e6));
  }
  std::sort(per_cycle.begin(), per_cycle.end());
  std::sort(per_ns.begin(), per_ns.end());
  return {per_cycle[per_cycle.size() / 2], per_ns[per_ns.size() / 2]};
}

int main() {
  atomsim::workload::program_name() = "loaded";
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const StreamedMemory memory;
  unsigned* out;
  long long* d_cycles;
  WORKLOAD_CHECK(cudaMalloc(&out, size_t(sms) * 64 * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&d_cycles, size_t(sms) * 64 * sizeof(long long)));
  // Every SM with 4-64 warps of 1, 4 or 16 loads in flight; then 32 warps of 16
  // loads (one CTA of 1024 threads) on fewer SMs: what one SM can take in
  // against what the L2 slices or DRAM give all of them; then from DRAM, tiles
  // of a CTA each instead of the GPU-wide interleave.
  struct Shape {
    bool from_dram, tiled;
    int warps, loads, active_sms, warps_per_cta;
  };
  const auto cta_of = [](int warps) { return std::min(warps, 32); };  // the fewest CTAs
  std::vector<Shape> shapes;
  for (const bool from_dram : {true, false}) {
    for (const int warps : {4, 8, 16, 32, 64})
      for (const int loads : {1, 4, 16}) shapes.push_back({from_dram, false, warps, loads, sms, cta_of(warps)});
    for (const int active : {8, 16, 33, 66}) shapes.push_back({from_dram, false, 32, 16, active, 32});
  }
  for (const int warps : {16, 32, 64})
    for (const int loads : {1, 4, 16}) shapes.push_back({true, true, warps, loads, sms, cta_of(warps)});
  // Tiles of CTAs of 4 warps, 4 to 16 CTAs an SM: hundreds to thousands of streams.
  for (const int warps : {16, 32, 64})
    for (const int loads : {1, 4}) shapes.push_back({true, true, warps, loads, sms, 4});
  std::printf("{\n  \"sms\": %d,\n  \"line_bytes\": 128,\n  \"points\": [\n", sms);
  bool first = true;
  for (const Shape& shape : shapes) {
    auto run = [&](auto loads_constant) {
      return measure<decltype(loads_constant)::value>(memory, shape.warps, shape.warps_per_cta, shape.active_sms, shape.from_dram, shape.tiled,
                                                      out, d_cycles);
    };
    const Point p = shape.loads == 1   ? run(std::integral_constant<int, 1>{})
                    : shape.loads == 4 ? run(std::integral_constant<int, 4>{})
                                       : run(std::integral_constant<int, 16>{});
    std::printf("%s    {\"source\": \"%s\", \"pattern\": \"%s\", \"active_sms\": %d, \"warps_per_sm\": %d, \"warps_per_cta\": %d, \"loads_in_flight\": %d, "
                "\"bytes_per_sm_cycle\": %.2f, \"bytes_per_ns\": %.1f}",
                first ? "" : ",\n", shape.from_dram ? "dram" : "l2", shape.tiled ? "tiled" : "interleaved", shape.active_sms, shape.warps,
                shape.warps_per_cta, shape.loads, p.bytes_per_sm_cycle, p.bytes_per_ns);
    first = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
