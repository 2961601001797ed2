// How much data the H100's L2 keeps: every SM's warps read (or write) the
// first F MB of a buffer, whole lines, in a grid-stride order that spreads
// each stretch of lines over all SMs, then do it again. Nsight Compute counts
// what the second kernel misses in the L2 and moves to and from DRAM
// (l2_capacity_h100.sh runs it; ncu must not flush the caches between the
// two: --cache-control none). A footprint the L2 holds misses nothing the
// second time; one larger misses what did not fit.
//
// Usage: l2_capacity read|write MB
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "workloads/common/runner.cuh"

template <int kPass>
__global__ void read_pass(const uint4* data, size_t n, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(data + i));
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x12345678u) sink[0] = acc;  // keeps the loads
}

template <int kPass>
__global__ void write_pass(uint4* data, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    data[i] = make_uint4(unsigned(i), kPass, 0, 0);
}

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "read") && std::strcmp(argv[1], "write"))) {
    std::fprintf(stderr, "usage: l2_capacity read|write MB\n");
    return 2;
  }
  const bool write = !std::strcmp(argv[1], "write");
  const size_t bytes = size_t(std::atoi(argv[2])) << 20;
  if (bytes == 0 || bytes > (size_t(1) << 32)) { std::fprintf(stderr, "l2_capacity: MB out of range\n"); return 2; }
  const size_t n = bytes / sizeof(uint4);
  uint4* data;
  unsigned* sink;
  WORKLOAD_CHECK(cudaMalloc(&data, bytes));
  WORKLOAD_CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMemset(data, 0, bytes));
  int sms = 0;
  WORKLOAD_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const dim3 grid(sms * 8), block(256);
  // A flush first: a buffer twice the L2 read through.
  {
    uint4* flush;
    const size_t flush_bytes = size_t(256) << 20;
    WORKLOAD_CHECK(cudaMalloc(&flush, flush_bytes));
    read_pass<0><<<grid, block>>>(flush, flush_bytes / sizeof(uint4), sink);
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    WORKLOAD_CHECK(cudaFree(flush));
  }
  if (write) {
    write_pass<1><<<grid, block>>>(data, n);
    write_pass<2><<<grid, block>>>(data, n);
  } else {
    read_pass<1><<<grid, block>>>(data, n, sink);
    read_pass<2><<<grid, block>>>(data, n, sink);
  }
  WORKLOAD_CHECK(cudaGetLastError());
  WORKLOAD_CHECK(cudaDeviceSynchronize());
  std::printf("{\"mode\":\"%s\",\"mb\":%d}\n", argv[1], std::atoi(argv[2]));
  return 0;
}
