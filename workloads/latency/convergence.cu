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
// The same loop with, in each trip, a __syncwarp() or a __shfl_sync() whose
// mask is the lane's group: the warp's 32 lanes in 1, 2, 4, 8, 16 or 32 groups
// (lanes alike modulo the count), every lane in every trip, so that the warp
// stays whole while its lanes name different masks, as lanes summing over
// their MATCH.ANY peers do (workloads/sparse/sparse_grid.cu, sum_over_peers).
// The simulator's test reads the loops from convergence.sass
// (tests/test_sm.cpp, "convergence instructions").
#include <cuda_runtime.h>

#include <cstdio>
#include <string>
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

template <bool kShuffle>
__global__ void group_loop(unsigned* out, long long* cycles, unsigned seed, int n, unsigned groups) {
  const unsigned lane = threadIdx.x & 31;
  unsigned group = 0;
  for (unsigned l = lane % groups; l < 32; l += groups) group |= 1u << l;
  const unsigned source = (lane + groups) & 31;  // the next lane of the group
  unsigned x = seed + threadIdx.x;
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < n; ++i) {
    x = x * seed + i;
    if constexpr (kShuffle) x += __shfl_sync(group, x, source);
    else __syncwarp(group);
  }
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

// Median cycles a trip of `launch(n)`'s loop over 15 launches after a warm-up.
template <class Launch>
double median_trip(Launch launch, long long* d_cycles) {
  std::vector<double> v;
  for (int r = 0; r < 16; ++r) {
    launch(kTrips);
    WORKLOAD_CHECK(cudaGetLastError());
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    long long c = 0;
    WORKLOAD_CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
    if (r > 0) v.push_back(static_cast<double>(c) / kTrips);
  }
  return median(v);
}

template <Shape shape>
double trip_cycles(unsigned* d_out, long long* d_cycles) {
  return median_trip([&](int n) { converge_loop<shape><<<1, 32>>>(d_out, d_cycles, 3u, n, 0xFFFFFFFFu); }, d_cycles);
}

// {"1": cycles a trip, "2": ..., ...} for the group counts.
template <bool kShuffle>
std::string group_trips(unsigned* d_out, long long* d_cycles) {
  std::string json = "{";
  for (unsigned groups : {1u, 2u, 4u, 8u, 16u, 32u}) {
    const double trip = median_trip([&](int n) { group_loop<kShuffle><<<1, 32>>>(d_out, d_cycles, 3u, n, groups); }, d_cycles);
    char entry[64];
    std::snprintf(entry, sizeof entry, "%s\"%u\":%.2f", groups == 1 ? "" : ",", groups, trip);
    json += entry;
  }
  return json + "}";
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
  const std::string sync_groups = group_trips<false>(d_out, d_cycles), shfl_groups = group_trips<true>(d_out, d_cycles);
  std::printf("{\"device\":\"%s\",\"trips\":%d,\"loop\":%.2f,\"syncwarp_full\":%.2f,\"syncwarp_half\":%.2f,"
              "\"syncwarp_groups\":%s,\"shfl_groups\":%s,"
              "\"unit\":\"SM cycles per trip of one warp's loop: plain, with __syncwarp() of 32 lanes (a mask the compiler "
              "cannot see), with a branch of 16 lanes holding a load and __syncwarp of them; with __syncwarp() or "
              "__shfl_sync() of each lane's group, by the number of groups\"}\n",
              prop.name, kTrips, plain, sync_full, sync_half, sync_groups.c_str(), shfl_groups.c_str());
  return 0;
}
