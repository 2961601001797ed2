// What the memory-under-load probes (loaded.cu, load_spread.cu) stream: 2 GB of
// lines no launch read before, made so by writing a scratch buffer five times
// the L2 before each launch, or an 8 MB window the L2 holds.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <vector>

#include "workloads/common/runner.cuh"

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
