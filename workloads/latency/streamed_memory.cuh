// What the memory-under-load probes (loaded.cu, load_spread.cu) stream: 2 GB of
// lines no launch read before, made so by writing a scratch buffer five times
// the L2 before each launch (or reading it, which leaves the L2 no dirty line),
// or an 8 MB window the L2 holds.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <vector>

#include "workloads/common/runner.cuh"
#include "workloads/latency/probe.cuh"

// Reads `count` 16-byte words, so that the L2 holds them, clean.
__global__ void read_words(const uint4* words, std::size_t count, unsigned* sink) {
  uint4 sum{};
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < count; i += std::size_t(gridDim.x) * blockDim.x) {
    const uint4 v = words[i];
    sum.x ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (sum.x == 0x9e3779b9u) *sink = sum.x;
}

struct StreamedMemory {
  static constexpr std::size_t kDramBytes = std::size_t(1) << 31, kL2WindowBytes = std::size_t(8) << 20,
                               kScratchBytes = std::size_t(256) << 20;
  unsigned* data = nullptr;
  unsigned* scratch = nullptr;

  // Data that is not zero and never sums to the probes' sentinel in practice.
  StreamedMemory() {
    WORKLOAD_CHECK(cudaMalloc(&data, kDramBytes));
    WORKLOAD_CHECK(cudaMalloc(&scratch, kScratchBytes));
    std::vector<unsigned> host(kDramBytes / 4);
    for (std::size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned>(i * 2654435761u) | 1u;
    WORKLOAD_CHECK(cudaMemcpy(data, host.data(), kDramBytes, cudaMemcpyHostToDevice));
  }
  // Evicts what earlier launches left in the L2 (launch `r` writes the byte r).
  void flush_l2(int r) const { WORKLOAD_CHECK(cudaMemset(scratch, r, kScratchBytes)); }
  // The same by reading the scratch buffer: the L2 then holds clean lines
  // only, and a launch after it writes back none that an earlier one wrote.
  void flush_l2_clean(int sms) const {
    read_words<<<sms * 8, 256>>>(reinterpret_cast<const uint4*>(scratch), kScratchBytes / 16, data + kDramBytes / 4 - 1);
    WORKLOAD_CHECK(cudaGetLastError());
  }
  // The mask of word indices into the window loads read: all of DRAM's 2 GB, or the L2's 8 MB.
  static unsigned window_mask(bool from_dram) { return unsigned((from_dram ? kDramBytes : kL2WindowBytes) / 4 - 1); }
};

// Runs `launch` between two events and copies the warps' cycles (one a warp,
// as many as `cycles` holds) back; returns the launch's milliseconds.
template <class Launch>
float timed_launch(Launch launch, const long long* d_cycles, std::vector<long long>& cycles) {
  const float ms = atomsim::workload::event_milliseconds(launch);
  WORKLOAD_CHECK(cudaMemcpy(cycles.data(), d_cycles, cycles.size() * sizeof(long long), cudaMemcpyDeviceToHost));
  return ms;
}

// What repeated_launches measures: each SM's units (line requests, accesses)
// per cycle, from its warps' median clock64 span, the amount (bytes, accesses)
// they move per SM cycle, and the GPU's amount per nanosecond (events).
struct LaunchRates {
  double units_per_sm_cycle, amount_per_sm_cycle, amount_per_ns;
};

// The median of `repeats` launches' figures, the first a warm-up: `launch(r)`
// runs the r-th and returns its milliseconds, having copied each warp's
// cycles into `warp_cycles`.
template <class Launch>
LaunchRates repeated_launches(Launch launch, int repeats, std::vector<long long>& warp_cycles, double units_per_sm, double amount,
                              double amount_per_unit) {
  std::vector<double> per_cycle, per_ns;
  for (int r = 0; r < repeats; ++r) {
    const float ms = launch(r);
    if (r == 0 && repeats > 1) continue;
    std::sort(warp_cycles.begin(), warp_cycles.end());
    per_cycle.push_back(units_per_sm / static_cast<double>(warp_cycles[warp_cycles.size() / 2]));
    per_ns.push_back(amount / (ms * 1e6));
  }
  const double units = median(per_cycle);
  return {units, units * amount_per_unit, median(per_ns)};
}
