// What the instructions that keep a warp's lanes together cost one warp: loops
// of the loop_chain kind (a multiply-add, the counter, the compare, the taken
// branch back; latency.cu) with, in each trip, a __syncwarp() of the whole
// warp whose mask the compiler cannot see (WARPSYNC R), or one of half the
// warp inside a branch half of it takes, after a load (an L1 hit) in that
// branch (a divergent branch, WARPSYNC of 16 lanes, the lanes joined again:
// BSSY / BSYNC). Each is timed with clock64() over 1024 trips, median of 15
// launches after a warm-up. Prints cycles per trip; set beside `loop` (no such
// instruction). (A __syncwarp() of a warp the compiler knows whole is a NOP,
// and an if/else of a load each is predicated: neither measures anything.)
// The simulator's test reads the loops from convergence.sass
// (tests/test_sm.cpp, "convergence instructions").
#include <cuda_runtime.h>

#include <cstdio>
#include <vector>

#include "workloads/latency/probe.cuh"

constexpr int kTrips = 1024;

enum class Shape { Plain, SyncFull, SyncHalf };

template <Shape shape>
__global__ void converge_loop(unsigned* out, long long* cycles, unsigned seed, int n, unsigned full) {
  const unsigned lane = threadIdx.x & 31;
  unsigned x = seed + threadIdx.x;
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < n; ++i) {
    x = x * seed + i;
    if constexpr (shape == Shape::SyncFull) __syncwarp(full);
    if constexpr (shape == Shape::SyncHalf) {
      if (lane < (seed >> 8) + 16) {  // half the warp: seed is small
        x ^= out[lane + 64];
        __syncwarp(0x0000FFFFu);
      }
    }
  }
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

template <Shape shape>
double trip_cycles(unsigned* d_out, long long* d_cycles) {
  std::vector<double> v;
  for (int r = 0; r < 16; ++r) {
    converge_loop<shape><<<1, 32>>>(d_out, d_cycles, 3u, kTrips, 0xFFFFFFFFu);
    WORKLOAD_CHECK(cudaGetLastError());
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    long long c = 0;
    WORKLOAD_CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
    if (r > 0) v.push_back(static_cast<double>(c) / kTrips);
  }
  return median(v);
}

int main() {
  long long* d_cycles;
  unsigned* d_out;
  WORKLOAD_CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
  WORKLOAD_CHECK(cudaMalloc(&d_out, 1024 * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMemset(d_out, 0, 1024 * sizeof(unsigned)));
  cudaDeviceProp prop;
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const double plain = trip_cycles<Shape::Plain>(d_out, d_cycles);
  const double sync_full = trip_cycles<Shape::SyncFull>(d_out, d_cycles);
  const double sync_half = trip_cycles<Shape::SyncHalf>(d_out, d_cycles);
  std::printf("{\"device\":\"%s\",\"trips\":%d,\"loop\":%.2f,\"syncwarp_full\":%.2f,\"syncwarp_half\":%.2f,"
              "\"unit\":\"SM cycles per trip of one warp's loop: plain, with __syncwarp() of 32 lanes (a mask the compiler "
              "cannot see), with a branch of 16 lanes holding a load and __syncwarp of them\"}\n",
              prop.name, kTrips, plain, sync_full, sync_half);
  return 0;
}
