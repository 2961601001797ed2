// Shared loads behind scattered stores: what a radix sort's scatter loop does
// (a shared load gives each key's place, a 4-byte store writes it there). Each
// warp runs a chain of conflict-free shared loads (each load's index is the one
// before's value) and, after each load, a store whose address depends on that
// value, `lanes_per_line` lanes to a line (1: 32 lines a store, the scatter's
// pattern; 32: one line). The lines are scattered over the L2's 8 MB (written
// by the launch before, so every store finds its line). Three kernels: the
// chain alone, the stores alone (addresses from a counter), both. Each reports
// the cycles a step takes (clock64 per warp, the median warp), the line
// requests each SM sends per SM cycle by that warp's time, and the GPU's line
// requests per nanosecond over the whole launch (events): where the slices
// saturate, warps share them unevenly and only the launch's rate says what
// they take. 32 or 8 warps an SM on every SM. Warm-up launch first, median of
// repeats.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "workloads/latency/probe.cuh"
#include "workloads/latency/streamed_memory.cuh"

constexpr int kSteps = 4;          // chain steps a trip, unrolled
constexpr int kWarpsPerCta = 8;
constexpr int kTableWords = 1024;  // each lane's index moves by a warp's width: every load is one wavefront

template <bool LOADS, bool STORES>
__global__ void lds_stores(unsigned* data, unsigned window_lines_mask, unsigned lanes_per_line, int iterations, long long* cycles,
                           unsigned* sink) {
  __shared__ unsigned table[kTableWords];
  for (unsigned i = threadIdx.x; i < kTableWords; i += blockDim.x) table[i] = (i + 32) % kTableWords;
  __syncthreads();
  const unsigned warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  const unsigned lines_per_store = 32 / lanes_per_line;
  unsigned sequence = warp * lines_per_store + lane / lanes_per_line;
  const unsigned sequence_step = warps * lines_per_store;
  const unsigned offset_words = lane % lanes_per_line;
  unsigned index = lane;
  const long long t0 = clock64();
#pragma unroll 1
  for (int t = 0; t < iterations; ++t) {
#pragma unroll
    for (int k = 0; k < kSteps; ++k) {
      if (LOADS) index = table[index];
      if (STORES) {
        // index / kTableWords is 0, which the compiler cannot know: the store waits for the load.
        const unsigned line = ((sequence + index / kTableWords) * 2654435761u) & window_lines_mask;
        data[line * 32 + offset_words] = lane;
        sequence += sequence_step;
      }
    }
  }
  const long long t1 = clock64();
  if (lane == 0) cycles[warp] = t1 - t0;
  if (index == 0xFFFFFFFFu) *sink = index;
}

struct Shape {
  bool loads, stores;
  int lanes_per_line, warps_per_sm;
};

struct Point {
  double cycles_per_step, requests_per_sm_cycle, requests_per_ns;
};

template <bool LOADS, bool STORES>
Point measure(const StreamedMemory& memory, const Shape& s, int sms, long long* d_cycles, unsigned* d_sink) {
  const int ctas = sms * s.warps_per_sm / kWarpsPerCta, warps = ctas * kWarpsPerCta;
  const unsigned lines_per_store = 32 / s.lanes_per_line;
  const int iterations = 256;
  const unsigned window_lines_mask = unsigned(StreamedMemory::kL2WindowBytes / 128 - 1);
  std::vector<double> per_step, per_cycle, per_ns;
  std::vector<long long> c(warps);
  for (int r = 0; r < 8; ++r) {
    const float ms = timed_launch([&] {
      lds_stores<LOADS, STORES><<<ctas, 32 * kWarpsPerCta>>>(memory.data, window_lines_mask, s.lanes_per_line, iterations, d_cycles, d_sink);
    }, d_cycles, c);
    if (r == 0) continue;  // warm-up
    std::sort(c.begin(), c.end());
    const double median_cycles = static_cast<double>(c[c.size() / 2]);
    per_step.push_back(median_cycles / (iterations * kSteps));
    per_cycle.push_back(STORES ? double(s.warps_per_sm) * iterations * kSteps * lines_per_store / median_cycles : 0);
    per_ns.push_back(STORES ? double(warps) * iterations * kSteps * lines_per_store / (ms * 1e6) : 0);
  }
  return {median(per_step), median(per_cycle), median(per_ns)};
}

int main(int argc, char**) {
  atomsim::workload::program_name() = "lds_stores";
  if (argc > 1) atomsim::workload::fail(2, "usage: lds_stores");
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const StreamedMemory memory;
  long long* d_cycles;
  unsigned* d_sink;
  WORKLOAD_CHECK(cudaMalloc(&d_cycles, size_t(sms) * 32 * sizeof(long long)));
  WORKLOAD_CHECK(cudaMalloc(&d_sink, sizeof(unsigned)));
  std::vector<Shape> shapes;
  for (const int warps : {32, 8}) {
    shapes.push_back({true, false, 1, warps});
    for (const int lanes : {1, 32}) {
      shapes.push_back({false, true, lanes, warps});
      shapes.push_back({true, true, lanes, warps});
    }
  }
  std::printf("{\n  \"sms\": %d,\n  \"steps_per_trip\": %d,\n  \"points\": [\n", sms, kSteps);
  bool first = true;
  for (const Shape& s : shapes) {
    const Point p = s.loads && s.stores ? measure<true, true>(memory, s, sms, d_cycles, d_sink)
                    : s.loads           ? measure<true, false>(memory, s, sms, d_cycles, d_sink)
                                        : measure<false, true>(memory, s, sms, d_cycles, d_sink);
    std::printf("%s    {\"loads\": %s, \"stores\": %s, \"lanes_per_line\": %d, \"warps_per_sm\": %d, \"cycles_per_step\": %.2f, "
                "\"requests_per_sm_cycle\": %.4f, \"requests_per_ns\": %.2f}",
                first ? "" : ",\n", s.loads ? "true" : "false", s.stores ? "true" : "false", s.stores ? s.lanes_per_line : 0,
                s.warps_per_sm, p.cycles_per_step, p.requests_per_sm_cycle, p.requests_per_ns);
    first = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
