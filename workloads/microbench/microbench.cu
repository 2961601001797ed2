// Native atomics microbenchmark: the kernel that `atomsim gen microbench` models.
// Each warp runs `iterations` rounds; in each round every lane picks a primitive
// (lanes_per_primitive lanes share one), decides whether it is active, computes
// P gradient values and adds them to the primitive's parameters with one of the
// reduction variants: baseline (per-lane atomics), DISTWAR SW-B, DISTWAR SW-S.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "workloads/common/hash.cuh"

#define CHECK(call)                                                                     \
  do {                                                                                  \
    cudaError_t err_ = (call);                                                          \
    if (err_ != cudaSuccess) {                                                          \
      std::fprintf(stderr, "microbench: %s failed: %s\n", #call, cudaGetErrorString(err_)); \
      std::exit(1);                                                                     \
    }                                                                                   \
  } while (0)

struct KernelArgs {
  float* grads;
  uint32_t iterations;
  uint32_t num_primitives;
  uint32_t lanes_per_primitive;
  uint32_t active_threshold;  // lane active when its hash < threshold (fraction * 2^32)
  uint32_t balance_threshold; // DISTWAR: reduce in the warp when at least this many lanes agree
  uint32_t seed;
};

struct LaneWork {
  uint32_t primitive;
  bool active;
  float base;
};

__host__ __device__ inline LaneWork lane_work(const KernelArgs& a, uint32_t warp, uint32_t lane, uint32_t it) {
  uint32_t warp_key = mix32(a.seed ^ (warp * a.iterations + it));
  uint32_t group = lane / a.lanes_per_primitive;
  uint32_t lane_key = mix32(warp_key ^ lane);
  LaneWork w;
  w.primitive = (warp_key + group * 0x9e3779b9u) % a.num_primitives;
  w.active = lane_key < a.active_threshold;
  w.base = (float)(lane_key >> 8) * (1.0f / 16777216.0f);
  return w;
}

template <int P>
__host__ __device__ inline float grad_value(float base, int p) { return base * (float)(p + 1) + 0.25f; }

enum class Variant { Baseline, SwB, SwS };

template <int P>
__global__ void microbench_baseline(KernelArgs a) {
  uint32_t lane = threadIdx.x & 31u;
  uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  for (uint32_t it = 0; it < a.iterations; ++it) {
    LaneWork w = lane_work(a, warp, lane, it);
    if (w.active) {
      float* dst = a.grads + (size_t)w.primitive * P;
#pragma unroll
      for (int p = 0; p < P; ++p) atomicAdd(dst + p, grad_value<P>(w.base, p));
    }
  }
}

// DISTWAR SW-B: when the whole warp updates one primitive and enough lanes are
// active, a butterfly of SHFL.DOWN sums each parameter and lane 0 issues the atomics.
template <int P>
__global__ void microbench_swb(KernelArgs a) {
  uint32_t lane = threadIdx.x & 31u;
  uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  for (uint32_t it = 0; it < a.iterations; ++it) {
    LaneWork w = lane_work(a, warp, lane, it);
    int all_same = 0;
    __match_all_sync(0xffffffffu, w.primitive, &all_same);
    uint32_t active_lanes = __popc(__ballot_sync(0xffffffffu, w.active));
    float* dst = a.grads + (size_t)w.primitive * P;
    if (all_same && active_lanes >= a.balance_threshold) {
#pragma unroll
      for (int p = 0; p < P; ++p) {
        float v = w.active ? grad_value<P>(w.base, p) : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
        if (lane == 0) atomicAdd(dst + p, v);
      }
    } else if (w.active) {
#pragma unroll
      for (int p = 0; p < P; ++p) atomicAdd(dst + p, grad_value<P>(w.base, p));
    }
  }
}

// DISTWAR SW-S: lanes that agree on a primitive (MATCH.ANY) elect the lowest
// lane as leader, which pulls every peer's values with SHFL.IDX and issues one
// atomic per parameter; groups smaller than the threshold use per-lane atomics.
template <int P>
__global__ void microbench_sws(KernelArgs a) {
  uint32_t lane = threadIdx.x & 31u;
  uint32_t warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
  for (uint32_t it = 0; it < a.iterations; ++it) {
    LaneWork w = lane_work(a, warp, lane, it);
    if (!w.active) continue;
    float* dst = a.grads + (size_t)w.primitive * P;
    float v[P];
#pragma unroll
    for (int p = 0; p < P; ++p) v[p] = grad_value<P>(w.base, p);
    uint32_t group = __match_any_sync(__activemask(), w.primitive);
    if ((uint32_t)__popc(group) >= a.balance_threshold) {
      uint32_t leader = __ffs(group) - 1;
      uint32_t peers = group & ~(1u << leader);
      while (peers) {
        uint32_t src = __ffs(peers) - 1;
#pragma unroll
        for (int p = 0; p < P; ++p) {
          float t = __shfl_sync(group, v[p], src);
          if (lane == leader) v[p] += t;
        }
        peers &= ~(1u << src);
      }
      if (lane == leader) {
#pragma unroll
        for (int p = 0; p < P; ++p) atomicAdd(dst + p, v[p]);
      }
    } else {
#pragma unroll
      for (int p = 0; p < P; ++p) atomicAdd(dst + p, v[p]);
    }
  }
}

template <int P>
static void launch(Variant v, int blocks, int threads, const KernelArgs& a) {
  switch (v) {
    case Variant::Baseline: microbench_baseline<P><<<blocks, threads>>>(a); break;
    case Variant::SwB: microbench_swb<P><<<blocks, threads>>>(a); break;
    case Variant::SwS: microbench_sws<P><<<blocks, threads>>>(a); break;
  }
}

static void launch_any(int params, Variant v, int blocks, int threads, const KernelArgs& a) {
  switch (params) {
    case 1: launch<1>(v, blocks, threads, a); break;
    case 4: launch<4>(v, blocks, threads, a); break;
    case 9: launch<9>(v, blocks, threads, a); break;
    default: std::fprintf(stderr, "microbench: --params must be 1, 4 or 9 (got %d)\n", params); std::exit(2);
  }
}

struct Options {
  std::string variant = "baseline";
  int blocks = 264, warps_per_block = 8, params = 9, warmup = 3, repeat = 21;
  uint32_t iterations = 64, primitives = 4096, lanes_per_primitive = 32, balance_threshold = 8, seed = 1;
  double active_fraction = 1.0;
};

static Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc) { std::fprintf(stderr, "microbench: option %s needs a value\n", k.c_str()); std::exit(2); }
    const char* v = argv[++i];
    if (k == "--variant") o.variant = v;
    else if (k == "--blocks") o.blocks = std::atoi(v);
    else if (k == "--warps-per-block") o.warps_per_block = std::atoi(v);
    else if (k == "--params") o.params = std::atoi(v);
    else if (k == "--iterations") o.iterations = std::strtoul(v, nullptr, 10);
    else if (k == "--primitives") o.primitives = std::strtoul(v, nullptr, 10);
    else if (k == "--lanes-per-primitive") o.lanes_per_primitive = std::strtoul(v, nullptr, 10);
    else if (k == "--active-fraction") o.active_fraction = std::atof(v);
    else if (k == "--threshold") o.balance_threshold = std::strtoul(v, nullptr, 10);
    else if (k == "--seed") o.seed = std::strtoul(v, nullptr, 10);
    else if (k == "--warmup") o.warmup = std::atoi(v);
    else if (k == "--repeat") o.repeat = std::atoi(v);
    else { std::fprintf(stderr, "microbench: unknown option %s\n", k.c_str()); std::exit(2); }
  }
  return o;
}

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  Variant variant = o.variant == "baseline" ? Variant::Baseline : o.variant == "swb" ? Variant::SwB
                  : o.variant == "sws" ? Variant::SwS : (std::fprintf(stderr, "microbench: unknown variant %s\n", o.variant.c_str()), std::exit(2), Variant::Baseline);
  KernelArgs a{};
  a.iterations = o.iterations;
  a.num_primitives = o.primitives;
  a.lanes_per_primitive = o.lanes_per_primitive;
  a.active_threshold = o.active_fraction >= 1.0 ? 0xffffffffu : (uint32_t)(o.active_fraction * 4294967296.0);
  a.balance_threshold = o.balance_threshold;
  a.seed = o.seed;
  size_t n = (size_t)o.primitives * o.params;
  CHECK(cudaMalloc(&a.grads, n * sizeof(float)));
  int threads = o.warps_per_block * 32;

  std::vector<float> times;
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  for (int r = 0; r < o.warmup + o.repeat; ++r) {
    CHECK(cudaMemset(a.grads, 0, n * sizeof(float)));
    CHECK(cudaEventRecord(start));
    launch_any(o.params, variant, o.blocks, threads, a);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    if (r >= o.warmup) times.push_back(ms);
  }
  std::vector<float> out(n);
  CHECK(cudaMemcpy(out.data(), a.grads, n * sizeof(float), cudaMemcpyDeviceToHost));

  // Reference sum in double over every lane's contribution.
  std::vector<double> ref(n, 0.0);
  uint32_t warps = (uint32_t)o.blocks * o.warps_per_block;
  for (uint32_t w = 0; w < warps; ++w)
    for (uint32_t it = 0; it < o.iterations; ++it)
      for (uint32_t lane = 0; lane < 32; ++lane) {
        LaneWork lw = lane_work(a, w, lane, it);
        if (!lw.active) continue;
        for (int p = 0; p < o.params; ++p) ref[(size_t)lw.primitive * o.params + p] += (double)(lw.base * (float)(p + 1) + 0.25f);
      }
  double err = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) { err += (out[i] - ref[i]) * (out[i] - ref[i]); norm += ref[i] * ref[i]; }
  double rel = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  std::sort(times.begin(), times.end());
  double median_ms = times[times.size() / 2];
  int dev = 0;
  cudaDeviceProp prop{};
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaGetDeviceProperties(&prop, dev));
  int clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  std::printf("{\"variant\":\"%s\",\"blocks\":%d,\"warps_per_block\":%d,\"iterations\":%u,\"primitives\":%u,"
              "\"params\":%d,\"active_fraction\":%g,\"lanes_per_primitive\":%u,\"threshold\":%u,"
              "\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,\"repeat\":%d,\"rel_error\":%.3e,"
              "\"device\":\"%s\",\"sm_count\":%d,\"clock_khz\":%d,\"correct\":%s}\n",
              o.variant.c_str(), o.blocks, o.warps_per_block, o.iterations, o.primitives, o.params, o.active_fraction,
              o.lanes_per_primitive, o.balance_threshold, median_ms, times.front(), times.back(), o.repeat, rel,
              prop.name, prop.multiProcessorCount, clock_khz, rel < 1e-4 ? "true" : "false");
  CHECK(cudaFree(a.grads));
  return rel < 1e-4 ? 0 : 3;
}
