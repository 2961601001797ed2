// What the latency probes share: the median of their repeated figures, and
// the dynamic shared memory that leaves an SM room for one CTA of a kernel.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "workloads/common/runner.cuh"

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Lets `kernel` take more than half an SM's shared memory, so that one CTA of
// `warps` warps fits an SM and no second; checks it and returns the bytes to
// launch with. `what` names the kernel in the error.
inline int one_cta_per_sm(const void* kernel, int warps, const char* what) {
  int max_shared = 0, dev = 0;
  WORKLOAD_CHECK(cudaGetDevice(&dev));
  WORKLOAD_CHECK(cudaDeviceGetAttribute(&max_shared, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  const int padding = max_shared / 2 + 1024;
  WORKLOAD_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, padding));
  int resident = 0;
  WORKLOAD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, 32 * warps, padding));
  if (resident != 1) atomsim::workload::fail(1, "%d CTAs of %s with %d warps fit an SM, not one", resident, what, warps);
  return padding;
}
