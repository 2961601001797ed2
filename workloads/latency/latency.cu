// Latency microbenchmarks for the h100 configuration: one warp times a chain
// of dependent operations with clock64() and reports cycles per operation.
// Chains: FFMA, integer add (IADD3), SHFL.IDX, MUFU.RCP, BREV, FLO, POPC and
// REDUX (each with an add, and also their rate on a full SM), MATCH.ANY (with
// an add, 1 to 32 distinct values in the warp, on a full and a half-populated
// warp, and its rate and that of SHFL.IDX on a full SM; pairs of kinds mixed
// on a full SM, for which share a pipe: two that share one together go no faster
// than each alone; SHFL with a quarter and three quarters of MATCH or REDUX,
// for what a shuffle costs them; SHFL on half a warp in a divergent branch;
// SW-S's peer loop on one warp and on a full SM; one sub-core's rates by kind;
// a match's latency beside its sub-core's shuffles), a loop's
// iteration (its taken branch), shared-memory load
// (plus its address arithmetic),
// L1-hit load, L2-hit load (ld.global.cg) and DRAM load (pointer chase over a
// buffer larger than the L2, through lines no launch loaded before). Warm-up
// pass first, except for DRAM; median of repeats.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    cudaError_t err_ = (call);                                                               \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "latency: %s failed: %s\n", #call, cudaGetErrorString(err_));     \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

constexpr int kChain = 1024;

__global__ void ffma_chain(float* out, long long* cycles, float seed) {
  float x = seed + threadIdx.x;
  long long t0 = clock64();
#pragma unroll 64
  for (int i = 0; i < kChain; ++i) x = fmaf(x, 0.999f, 0.5f);
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

__global__ void iadd_chain(unsigned* out, long long* cycles, unsigned seed) {
  unsigned x = seed + threadIdx.x;
  long long t0 = clock64();
#pragma unroll 64
  for (int i = 0; i < kChain; ++i) asm volatile("add.u32 %0, %0, %1;" : "+r"(x) : "r"(seed));
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

__global__ void shfl_chain(unsigned* out, long long* cycles, unsigned seed) {
  unsigned x = seed + threadIdx.x;
  const int source = (threadIdx.x + 1) & 31;
  long long t0 = clock64();
#pragma unroll 64
  for (int i = 0; i < kChain; ++i) x = __shfl_sync(0xffffffffu, x, source);
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

__global__ void rcp_chain(float* out, long long* cycles, float seed) {
  float x = seed + threadIdx.x + 1.0f;
  long long t0 = clock64();
#pragma unroll 64
  for (int i = 0; i < kChain; ++i) asm volatile("rcp.approx.ftz.f32 %0, %0;" : "+f"(x));
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

__global__ void shared_chain(unsigned* out, long long* cycles) {
  __shared__ unsigned next[1024];
  for (int i = threadIdx.x; i < 1024; i += blockDim.x) next[i] = (i + 33) & 1023;
  __syncthreads();
  unsigned p = threadIdx.x;
  long long t0 = clock64();
#pragma unroll 16
  for (int i = 0; i < kChain; ++i) p = next[p];
  long long t1 = clock64();
  out[threadIdx.x] = p;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

// Instructions the compiler gives a result barrier though they look like ALU
// work (BREV, FLO, POPC, REDUX): each step is the instruction and an integer
// add (so that no two of them fold), the add's latency measured by iadd_chain.
enum class VarOp { Brev, Flo, Popc, Redux };
template <VarOp op>
__device__ __forceinline__ unsigned var_step(unsigned x, unsigned seed) {
  if constexpr (op == VarOp::Brev) asm volatile("brev.b32 %0, %0;\n\tadd.u32 %0, %0, %1;" : "+r"(x) : "r"(seed));
  if constexpr (op == VarOp::Flo) asm volatile("bfind.u32 %0, %0;\n\tadd.u32 %0, %0, %1;" : "+r"(x) : "r"(seed));
  if constexpr (op == VarOp::Popc) asm volatile("popc.b32 %0, %0;\n\tadd.u32 %0, %0, %1;" : "+r"(x) : "r"(seed));
  if constexpr (op == VarOp::Redux)
    asm volatile("redux.sync.or.b32 %0, %0, 0xffffffff;\n\tadd.u32 %0, %0, %1;" : "+r"(x) : "r"(seed));
  return x;
}

template <VarOp op>
__global__ void var_chain(unsigned* out, long long* cycles, unsigned seed) {
  unsigned x = seed + threadIdx.x;
  long long t0 = clock64();
#pragma unroll 64
  for (int i = 0; i < kChain; ++i) x = var_step<op>(x, seed);
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

// Throughput on one SM: the CTA's warps (32 of them: every sub-core), each
// with 8 independent chains, chain c stepped by `step(x, c)`; thread 0's cycles
// for kChain / 8 steps of all 8. Threads whose `runs` is false skip the chains
// and wait at the barrier (part of a warp, or warps of other sub-cores).
template <class Step>
__device__ __forceinline__ void time_eight_chains(unsigned (&x)[8], Step step, unsigned* out, long long* cycles, bool runs = true) {
  __syncthreads();
  long long t0 = clock64();
  if (runs) {
#pragma unroll 4
    for (int i = 0; i < kChain / 8; ++i)
#pragma unroll
      for (int c = 0; c < 8; ++c) x[c] = step(x[c], c);
  }
  __syncthreads();
  long long t1 = clock64();
  unsigned sum = 0;
  for (int c = 0; c < 8; ++c) sum += x[c];
  out[threadIdx.x] = sum;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

template <VarOp op>
__global__ void var_throughput(unsigned* out, long long* cycles, unsigned seed) {
  unsigned x[8];
  for (int c = 0; c < 8; ++c) x[c] = seed + threadIdx.x * 8 + c;
  time_eight_chains(x, [seed](unsigned v, int) { return var_step<op>(v, seed); }, out, cycles);
}

// MATCH.ANY, which DISTWAR's grouping (__match_any_sync) and the compiler's
// convergence checks use: each step is the match and an integer add, the
// chain starting with `groups` distinct values among the warp's lanes (lanes
// equal before a step get the same mask, so they stay equal after it); lanes
// from `active` on skip the chain, leaving a partial warp. Its rate on a full
// SM is kind_throughput's.
__device__ __forceinline__ unsigned match_step(unsigned x, unsigned seed, unsigned lanes) {
  asm volatile("match.any.sync.b32 %0, %0, %2;\n\tadd.u32 %0, %0, %1;" : "+r"(x) : "r"(seed), "r"(lanes));
  return x;
}
// Each lane reads the next lane's value: with a warp-uniform source lane the
// values become uniform after one step and ptxas drops the shuffles after it.
__device__ __forceinline__ unsigned shfl_step(unsigned x, unsigned seed) {
  const unsigned source = (threadIdx.x + 1) & 31;
  asm volatile("shfl.sync.idx.b32 %0, %0, %2, 0x1f, 0xffffffff;\n\tadd.u32 %0, %0, %1;" : "+r"(x) : "r"(seed), "r"(source));
  return x;
}

template <int groups, int active>
__global__ void match_chain(unsigned* out, long long* cycles, unsigned seed) {
  unsigned x = seed + threadIdx.x % groups;
  long long t0 = clock64();
  if (threadIdx.x < active) {
    const unsigned lanes = __activemask();
#pragma unroll 64
    for (int i = 0; i < kChain; ++i) x = match_step(x, seed, lanes);
  }
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

// Rates on a full SM of one kind of instruction, or of two mixed, half the
// chains each: two together no faster than each alone share a pipe; otherwise
// their rates add. Kinds: 0-3 the VarOps, 4 SHFL.IDX, 5 MATCH.ANY (chains
// starting with `groups` distinct values among a warp's lanes).
template <int kind>
__device__ __forceinline__ unsigned any_step(unsigned x, unsigned seed) {
  if constexpr (kind < 4) return var_step<static_cast<VarOp>(kind)>(x, seed);
  else if constexpr (kind == 4) return shfl_step(x, seed);
  else return match_step(x, seed, 0xffffffffu);
}

// `second_chains` of the 8 chains are of the second kind, spread among the
// first's (half: the odd chains).
template <int first, int second, int groups, int second_chains>
__device__ __forceinline__ void mixed_chains(unsigned* out, long long* cycles, unsigned seed) {
  unsigned x[8];
  for (int c = 0; c < 8; ++c) x[c] = seed + 64u * c + threadIdx.x % 32 % groups;
  time_eight_chains(x, [seed](unsigned v, int c) {
    const bool is_second = (c + 1) * second_chains / 8 > c * second_chains / 8;
    return is_second ? any_step<second>(v, seed) : any_step<first>(v, seed);
  }, out, cycles);
}
template <int first, int second, int groups = 32>
__global__ void kind_throughput(unsigned* out, long long* cycles, unsigned seed) {
  mixed_chains<first, second, groups, 4>(out, cycles, seed);
}
template <int first, int second, int groups, int second_chains>
__global__ void kind_mix(unsigned* out, long long* cycles, unsigned seed) {
  mixed_chains<first, second, groups, second_chains>(out, cycles, seed);
}

// SW-S's shuffles run on part of the warp (the lanes of one primitive, in a
// branch the others skipped): SHFL.IDX with `active` lanes inside a divergent
// branch, each reading the next active lane; its step on one warp and its rate
// on a full SM (32 warps of 8 chains), beside the whole warp's.
template <int active>
__global__ void partial_shfl_chain(unsigned* out, long long* cycles, unsigned seed) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned x = seed + lane;
  const long long t0 = clock64();
  if (lane < active) {
    const unsigned mask = active == 32 ? 0xffffffffu : (1u << active) - 1u, source = (lane + 1) % active;
#pragma unroll 64
    for (int i = 0; i < kChain; ++i) x = __shfl_sync(mask, x, source);
  }
  const long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}
template <int active>
__global__ void partial_shfl_rate(unsigned* out, long long* cycles, unsigned seed) {
  const unsigned lane = threadIdx.x & 31u;
  unsigned x[8];
  for (int c = 0; c < 8; ++c) x[c] = seed + 64u * c + lane;
  const unsigned mask = active == 32 ? 0xffffffffu : (1u << active) - 1u, source = (lane + 1) % active;
  time_eight_chains(x, [=](unsigned v, int) { return __shfl_sync(mask, v, source) + seed; }, out, cycles, lane < active);
}

// The rate one sub-core feeds the MIO: `warps` warps of one sub-core (warps
// 0, 4, 8, ...; the others wait at the barrier) of 8 independent chains each
// of one kind (any_step: 0 BREV, 4 SHFL.IDX, 5 MATCH.ANY of one value).
template <int kind, int warps>
__global__ void subcore_kind(unsigned* out, long long* cycles, unsigned seed) {
  const unsigned warp = threadIdx.x / 32;
  unsigned x[8];
  for (int c = 0; c < 8; ++c) x[c] = seed + 64u * c + (kind == 5 ? 0u : threadIdx.x % 32);
  time_eight_chains(x, [seed](unsigned v, int) { return any_step<kind>(v, seed); }, out, cycles, warp % 4 == 0 && warp / 4 < warps);
}

// A match's latency beside shuffles: warp 0 steps a MATCH.ANY chain (one
// value) while the warps `shuffling` picks run 8 independent SHFL.IDX chains
// each, longer than the match chain; warp 0's cycles per step.
template <class Shuffling>
__device__ __forceinline__ void match_among_shuffles(unsigned* out, long long* cycles, unsigned seed, Shuffling shuffling) {
  const unsigned warp = threadIdx.x / 32;
  unsigned x[8];
  for (int c = 0; c < 8; ++c) x[c] = seed + 64u * c + threadIdx.x % 32;
  unsigned m = seed;
  __syncthreads();
  if (warp == 0) {
    const long long t0 = clock64();
#pragma unroll 64
    for (int i = 0; i < kChain; ++i) m = match_step(m, seed, 0xffffffffu);
    const long long t1 = clock64();
    if (threadIdx.x == 0) *cycles = t1 - t0;
  } else if (shuffling(warp)) {
#pragma unroll 4
    for (int i = 0; i < kChain; ++i)
#pragma unroll
      for (int c = 0; c < 8; ++c) x[c] = shfl_step(x[c], seed);
  }
  unsigned sum = m;
  for (int c = 0; c < 8; ++c) sum += x[c];
  out[threadIdx.x] = sum;
}
// `loaded` more warps of the match's own sub-core (warps 4, 8, 12).
template <int loaded>
__global__ void match_under_shuffles(unsigned* out, long long* cycles, unsigned seed) {
  match_among_shuffles(out, cycles, seed, [](unsigned warp) { return warp % 4 == 0 && warp / 4 <= loaded; });
}
// `loaded` warps of sub-core `subcore` (0, the match's own: warps 4, 8, ...;
// another: subcore, subcore + 4, ...): whether the match waits behind its own
// sub-core's shuffles or behind every shuffle of the SM.
template <int loaded, int subcore>
__global__ void match_beside_shuffles(unsigned* out, long long* cycles, unsigned seed) {
  match_among_shuffles(out, cycles, seed, [](unsigned warp) {
    return warp % 4 == subcore && (subcore == 0 ? warp / 4 <= loaded : warp / 4 < loaded);
  });
}

// SW-S's reduction as the 3DGS and microbenchmark kernels run it: the lanes
// of one primitive (`active` of the warp, in a branch the others skipped)
// MATCH.ANY their primitive, then pass their 9 values to the lowest lane one
// peer at a time (SHFL.IDX over the group, the add on the leader). `kRounds`
// primitives; cycles per peer iteration on one warp, or peer iterations of 32
// warps per SM cycle. `as_kernels`: as the kernels have it, each lane's
// primitive its own (here all the same, which the compiler cannot see) and the
// loop behind the balancing threshold's branch (a threshold of 1 here), so that
// the compiler checks the group's convergence on every peer (MATCH.ANY and
// REDUX of the mask) before its shuffles.
constexpr int kRounds = 16;
template <int active, bool as_kernels>
__global__ void sws_reduce(float* out, long long* cycles, unsigned seed) {
  const unsigned lane = threadIdx.x & 31u;
  float v[9];
  for (int k = 0; k < 9; ++k) v[k] = float(seed + lane * 9 + k);
  __syncthreads();
  const long long t0 = clock64();
  if (lane < active) {
#pragma unroll 1
    for (int r = 0; r < kRounds; ++r) {
      const unsigned primitive = seed + r + (as_kernels ? (seed + lane) / 64 : 0);
      const unsigned group = __match_any_sync(__activemask(), primitive);
      if (as_kernels && unsigned(__popc(group)) < seed - 2) continue;
      const unsigned leader = __ffs(group) - 1;
      for (unsigned peers = group & ~(1u << leader); peers; peers &= ~(1u << (__ffs(peers) - 1))) {
        const unsigned src = __ffs(peers) - 1;
        for (int k = 0; k < 9; ++k) {
          const float t = __shfl_sync(group, v[k], src);
          if (lane == leader) v[k] += t;
        }
      }
    }
  }
  __syncthreads();
  const long long t1 = clock64();
  float sum = 0;
  for (int k = 0; k < 9; ++k) sum += v[k];
  out[threadIdx.x] = sum;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

// A loop the compiler keeps as a loop (one multiply-add, the counter, the
// compare and the taken branch back): cycles per iteration, for what a taken
// branch costs.
__global__ void loop_chain(unsigned* out, long long* cycles, unsigned seed, int n) {
  unsigned x = seed + threadIdx.x;
  long long t0 = clock64();
#pragma unroll 1
  for (int i = 0; i < n; ++i) x = x * seed + i;
  long long t1 = clock64();
  out[threadIdx.x] = x;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

// Pointer chase through `chain` (indices); `cg` bypasses the L1.
template <bool cg>
__global__ void global_chain(const unsigned* chain, unsigned* out, long long* cycles, int steps) {
  unsigned p = 0;
  for (int i = 0; i < steps; ++i) p = cg ? __ldcg(chain + p) : __ldca(chain + p);  // warm
  p = 0;
  long long t0 = clock64();
  for (int i = 0; i < steps; ++i) p = cg ? __ldcg(chain + p) : __ldca(chain + p);
  long long t1 = clock64();
  out[threadIdx.x] = p;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

// A chase through lines no earlier launch touched: no warm-up, starting at
// `start`, so that every load misses the L2 (a warm-up over the same hops, or
// a repeat from the same start, finds them in the L2).
__global__ void cold_chain(const unsigned* chain, unsigned start, unsigned* out, long long* cycles, int steps) {
  unsigned p = start;
  long long t0 = clock64();
  for (int i = 0; i < steps; ++i) p = __ldcg(chain + p);
  long long t1 = clock64();
  out[threadIdx.x] = p;
  if (threadIdx.x == 0) *cycles = t1 - t0;
}

template <class Launch>
double median_cycles(Launch launch, long long* d_cycles, int ops, int repeats = 9) {
  std::vector<double> v;
  for (int r = 0; r < repeats + 1; ++r) {
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    long long c = 0;
    CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
    if (r > 0) v.push_back(static_cast<double>(c) / ops);
  }
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  long long* d_cycles;
  unsigned* d_out;
  float* d_fout;
  CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
  CHECK(cudaMalloc(&d_out, 1024 * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_fout, 1024 * sizeof(float)));
  // Chains for global loads: 128-byte stride within 16 KB (L1 hit), 4 MB (L2 hit, .cg),
  // and a 1 GB random chase at 4 KB granularity (DRAM).
  // `hops_out`, when given, receives the chain's hops in chase order.
  auto make_chain = [](size_t bytes, size_t stride, bool shuffle, std::vector<unsigned>* hops_out = nullptr) {
    size_t n = bytes / sizeof(unsigned), hops = bytes / stride;
    std::vector<unsigned> order(hops);
    for (size_t i = 0; i < hops; ++i) order[i] = static_cast<unsigned>(i * (stride / sizeof(unsigned)));
    if (shuffle) { srand(7); for (size_t i = hops - 1; i > 0; --i) std::swap(order[i], order[rand() % (i + 1)]); }
    std::vector<unsigned> chain(n, 0);
    for (size_t i = 0; i < hops; ++i) chain[order[i]] = order[(i + 1) % hops];
    if (hops_out) *hops_out = order;
    unsigned* d;
    CHECK(cudaMalloc(&d, bytes));
    CHECK(cudaMemcpy(d, chain.data(), bytes, cudaMemcpyHostToDevice));
    return d;
  };
  unsigned* l1 = make_chain(16 << 10, 128, false);
  unsigned* l2 = make_chain(4 << 20, 128, true);
  std::vector<unsigned> dram_hops;
  unsigned* dram = make_chain(size_t(1) << 30, 4096, true, &dram_hops);

  double ffma = median_cycles([&] { ffma_chain<<<1, 32>>>(d_fout, d_cycles, 1.0f); }, d_cycles, kChain);
  double iadd = median_cycles([&] { iadd_chain<<<1, 32>>>(d_out, d_cycles, 3u); }, d_cycles, kChain);
  double shfl = median_cycles([&] { shfl_chain<<<1, 32>>>(d_out, d_cycles, 3u); }, d_cycles, kChain);
  double rcp = median_cycles([&] { rcp_chain<<<1, 32>>>(d_fout, d_cycles, 1.0f); }, d_cycles, kChain);
  double lds = median_cycles([&] { shared_chain<<<1, 32>>>(d_out, d_cycles); }, d_cycles, kChain);
  double ldl1 = median_cycles([&] { global_chain<false><<<1, 1>>>(l1, d_out, d_cycles, 2048); }, d_cycles, 2048);
  double ldl2 = median_cycles([&] { global_chain<true><<<1, 1>>>(l2, d_out, d_cycles, 2048); }, d_cycles, 2048);
  int launch = 0;  // each launch starts 8192 hops past the previous one's start, on lines not yet loaded
  double lddram = median_cycles([&] { cold_chain<<<1, 1>>>(dram, dram_hops[(launch++ * 8192) % dram_hops.size()], d_out, d_cycles, 2048); },
                                d_cycles, 2048, 9);
  const double loop = median_cycles([&] { loop_chain<<<1, 32>>>(d_out, d_cycles, 3u, kChain); }, d_cycles, kChain);
  // Per step: the instruction and its add (the compiler fuses no adds here,
  // and spaces each by its stall count: see latency.sass); per throughput
  // kernel: 32 warps x kChain steps.
  double var_step_cycles[4], var_rate[4];
  auto measure = [&](auto latency_kernel, auto rate_kernel, int i) {
    var_step_cycles[i] = median_cycles([&] { latency_kernel<<<1, 32>>>(d_out, d_cycles, 3u); }, d_cycles, kChain);
    const double cycles = median_cycles([&] { rate_kernel<<<1, 1024>>>(d_out, d_cycles, 3u); }, d_cycles, 1);
    var_rate[i] = 32.0 * kChain / cycles;
  };
  measure(var_chain<VarOp::Brev>, var_throughput<VarOp::Brev>, 0);
  measure(var_chain<VarOp::Flo>, var_throughput<VarOp::Flo>, 1);
  measure(var_chain<VarOp::Popc>, var_throughput<VarOp::Popc>, 2);
  measure(var_chain<VarOp::Redux>, var_throughput<VarOp::Redux>, 3);
  // Rates on a full SM (32 warps of 8 chains), warp instructions per cycle.
  auto rate = [&](auto kernel) { return 32.0 * kChain / median_cycles([&] { kernel<<<1, 1024>>>(d_out, d_cycles, 3u); }, d_cycles, 1); };
  // MATCH.ANY: step latency (one warp) and rate, by distinct values.
  const int groups[4] = {1, 2, 8, 32};
  double match_step_cycles[4], match_rate[4];
  auto match = [&](auto chain, auto throughput, int i) {
    match_step_cycles[i] = median_cycles([&] { chain<<<1, 32>>>(d_out, d_cycles, 3u); }, d_cycles, kChain);
    match_rate[i] = rate(throughput);
  };
  match(match_chain<1, 32>, kind_throughput<5, 5, 1>, 0);
  match(match_chain<2, 32>, kind_throughput<5, 5, 2>, 1);
  match(match_chain<8, 32>, kind_throughput<5, 5, 8>, 2);
  match(match_chain<32, 32>, kind_throughput<5, 5, 32>, 3);
  const double match_half_warp = median_cycles([&] { match_chain<32, 16><<<1, 32>>>(d_out, d_cycles, 3u); }, d_cycles, kChain);
  const double shfl_rate = rate(kind_throughput<4, 4>);
  // MATCH.ANY mixed on one distinct value, its fastest.
  const double brev_redux = rate(kind_throughput<0, 3>), brev_flo = rate(kind_throughput<0, 1>),
               shfl_match = rate(kind_throughput<4, 5, 1>), shfl_brev = rate(kind_throughput<4, 0>),
               shfl_redux = rate(kind_throughput<4, 3>), match_brev = rate(kind_throughput<5, 0, 1>),
               match_redux = rate(kind_throughput<5, 3, 1>);
  // What a shuffle costs a match or a REDUX beside it: a quarter and three
  // quarters of the chains matches (one value), REDUX or two-value matches.
  const double shfl_match_quarter = rate(kind_mix<4, 5, 1, 2>), shfl_match_three_quarters = rate(kind_mix<4, 5, 1, 6>),
               shfl_redux_quarter = rate(kind_mix<4, 3, 32, 2>), shfl_redux_three_quarters = rate(kind_mix<4, 3, 32, 6>),
               shfl_match_two_values = rate(kind_throughput<4, 5, 2>);
  // Whether bit manipulation takes the MIO's dispatch slot a shuffle or a
  // match takes: half and half cannot tell (the bits' own pipe takes 0.5 a
  // cycle), a quarter can (more than one a cycle in all if not).
  const double shfl_brev_eighth = rate(kind_mix<4, 0, 32, 1>), shfl_brev_three_eighths = rate(kind_mix<4, 0, 32, 3>),
               shfl_brev_quarter = rate(kind_mix<4, 0, 32, 2>), shfl_flo_quarter = rate(kind_mix<4, 1, 32, 2>),
               match_brev_quarter = rate(kind_mix<5, 0, 1, 2>), redux_brev_quarter = rate(kind_mix<3, 0, 32, 2>);
  // Peer iterations: active - 1 per round.
  auto sws_step = [&](auto kernel, int active) {
    return median_cycles([&] { kernel<<<1, 32>>>(d_fout, d_cycles, 3u); }, d_cycles, kRounds * (active - 1));
  };
  auto sws_rate = [&](auto kernel, int active, int warps = 32) {
    return warps * kRounds * (active - 1) / median_cycles([&] { kernel<<<1, 32 * warps>>>(d_fout, d_cycles, 3u); }, d_cycles, 1);
  };
  const double sws_step_16 = sws_step(sws_reduce<16, false>, 16), sws_step_32 = sws_step(sws_reduce<32, false>, 32),
               sws_rate_16 = sws_rate(sws_reduce<16, false>, 16), sws_rate_32 = sws_rate(sws_reduce<32, false>, 32),
               kernels_step_16 = sws_step(sws_reduce<16, true>, 16), kernels_step_32 = sws_step(sws_reduce<32, true>, 32),
               kernels_rate_16 = sws_rate(sws_reduce<16, true>, 16), kernels_rate_32 = sws_rate(sws_reduce<32, true>, 32),
               kernels_rate_16_warps_2 = sws_rate(sws_reduce<16, true>, 16, 2), kernels_rate_16_warps_4 = sws_rate(sws_reduce<16, true>, 16, 4),
               kernels_rate_16_warps_8 = sws_rate(sws_reduce<16, true>, 16, 8), kernels_rate_16_warps_16 = sws_rate(sws_reduce<16, true>, 16, 16);
  auto subcore_rate = [&](auto kernel, int warps) {
    return double(warps) * kChain / median_cycles([&] { kernel<<<1, 128 * warps>>>(d_out, d_cycles, 3u); }, d_cycles, 1);
  };
  double subcore[3][4];
  auto subcore_kinds = [&](auto w1, auto w2, auto w4, auto w8, double (&r)[4]) {
    r[0] = subcore_rate(w1, 1), r[1] = subcore_rate(w2, 2), r[2] = subcore_rate(w4, 4), r[3] = subcore_rate(w8, 8);
  };
  subcore_kinds(subcore_kind<4, 1>, subcore_kind<4, 2>, subcore_kind<4, 4>, subcore_kind<4, 8>, subcore[0]);
  subcore_kinds(subcore_kind<0, 1>, subcore_kind<0, 2>, subcore_kind<0, 4>, subcore_kind<0, 8>, subcore[1]);
  subcore_kinds(subcore_kind<5, 1>, subcore_kind<5, 2>, subcore_kind<5, 4>, subcore_kind<5, 8>, subcore[2]);
  auto match_loaded = [&](auto kernel, int loaded) {
    return median_cycles([&] { kernel<<<1, 128 * (loaded + 1)>>>(d_out, d_cycles, 3u); }, d_cycles, kChain);
  };
  const double match_loaded_0 = match_loaded(match_under_shuffles<0>, 0), match_loaded_1 = match_loaded(match_under_shuffles<1>, 1),
               match_loaded_3 = match_loaded(match_under_shuffles<3>, 3),
               match_loaded_2 = match_loaded(match_beside_shuffles<2, 0>, 2),
               match_other_subcore_3 = match_loaded(match_beside_shuffles<3, 1>, 3);
  const double shfl_step_lanes_16 = median_cycles([&] { partial_shfl_chain<16><<<1, 32>>>(d_out, d_cycles, 3u); }, d_cycles, kChain),
               shfl_rate_lanes_16 = rate(partial_shfl_rate<16>), shfl_rate_lanes_32 = rate(partial_shfl_rate<32>);
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("{\"device\":\"%s\",\"ffma\":%.2f,\"iadd\":%.2f,\"shfl\":%.2f,\"rcp\":%.2f,\"lds\":%.2f,"
              "\"ldg_l1_hit\":%.2f,\"ldg_l2_hit\":%.2f,\"ldg_dram\":%.2f,\"unit\":\"SM cycles per dependent operation\","
              "\"loop_iteration\":%.2f,\"step_with_add\":{\"brev\":%.2f,\"flo\":%.2f,\"popc\":%.2f,\"redux\":%.2f,"
              "\"match_values_%d\":%.2f,\"match_values_%d\":%.2f,\"match_values_%d\":%.2f,\"match_values_%d\":%.2f,"
              "\"match_values_32_lanes_16\":%.2f,"
              "\"unit\":\"SM cycles per dependent step of the instruction and an integer add\"},"
              "\"per_sm_cycle\":{\"brev\":%.3f,\"flo\":%.3f,\"popc\":%.3f,\"redux\":%.3f,"
              "\"match_values_%d\":%.3f,\"match_values_%d\":%.3f,\"match_values_%d\":%.3f,\"match_values_%d\":%.3f,"
              "\"shfl\":%.3f,"
              "\"unit\":\"warp instructions per SM cycle, 32 warps of 8 independent chains\"},"
              "\"per_sm_cycle_mixed\":{\"brev_redux\":%.3f,\"brev_flo\":%.3f,\"shfl_match_values_1\":%.3f,\"shfl_brev\":%.3f,"
              "\"shfl_redux\":%.3f,\"match_values_1_brev\":%.3f,\"match_values_1_redux\":%.3f,"
              "\"shfl_match_values_1_quarter\":%.3f,\"shfl_match_values_1_three_quarters\":%.3f,"
              "\"shfl_redux_quarter\":%.3f,\"shfl_redux_three_quarters\":%.3f,\"shfl_match_values_2\":%.3f,"
              "\"shfl_brev_eighth\":%.3f,\"shfl_brev_three_eighths\":%.3f,\"shfl_brev_quarter\":%.3f,\"shfl_flo_quarter\":%.3f,\"match_values_1_brev_quarter\":%.3f,\"redux_brev_quarter\":%.3f,"
              "\"unit\":\"warp instructions per SM cycle, 32 warps of 8 chains, half of each kind unless named: quarter, three quarters of the second\"},"
              "\"partial_warp\":{\"shfl_step_lanes_16\":%.2f,\"shfl_per_sm_cycle_lanes_16\":%.3f,\"shfl_per_sm_cycle_lanes_32\":%.3f,"
              "\"unit\":\"SHFL.IDX in a branch with 16 (or all 32) lanes: SM cycles per dependent step; warp instructions per SM cycle\"},"
              "\"subcore_shfl\":{\"warps_1\":%.3f,\"warps_2\":%.3f,\"warps_4\":%.3f,\"warps_8\":%.3f,"
              "\"unit\":\"SHFL.IDX per cycle from the warps of one sub-core, 8 independent chains each\"},"
              "\"subcore_brev\":{\"warps_1\":%.3f,\"warps_2\":%.3f,\"warps_4\":%.3f,\"warps_8\":%.3f,\"unit\":\"the same, BREV\"},"
              "\"subcore_match\":{\"warps_1\":%.3f,\"warps_2\":%.3f,\"warps_4\":%.3f,\"warps_8\":%.3f,\"unit\":\"the same, MATCH.ANY of one value\"},"
              "\"match_under_shuffles\":{\"loaded_0\":%.2f,\"loaded_1\":%.2f,\"loaded_2\":%.2f,\"loaded_3\":%.2f,"
              "\"other_subcore_loaded_3\":%.2f,"
              "\"unit\":\"SM cycles per MATCH.ANY step (with its add) of one warp while 0, 1, 2 or 3 more warps of its sub-core (or 3 warps of another sub-core) run 8 SHFL chains each\"},"
              "\"sws_reduce\":{\"step_lanes_16\":%.2f,\"step_lanes_32\":%.2f,\"per_sm_cycle_lanes_16\":%.4f,\"per_sm_cycle_lanes_32\":%.4f,"
              "\"as_kernels_step_lanes_16\":%.2f,\"as_kernels_step_lanes_32\":%.2f,\"as_kernels_per_sm_cycle_lanes_16\":%.4f,\"as_kernels_per_sm_cycle_lanes_32\":%.4f,"
              "\"as_kernels_per_sm_cycle_lanes_16_warps_2\":%.4f,\"as_kernels_per_sm_cycle_lanes_16_warps_4\":%.4f,\"as_kernels_per_sm_cycle_lanes_16_warps_8\":%.4f,\"as_kernels_per_sm_cycle_lanes_16_warps_16\":%.4f,"
              "\"unit\":\"SW-S's peer loop (MATCH.ANY per primitive, 9 SHFL.IDX and adds per peer) on 16 or 32 lanes: SM cycles per peer iteration of one warp; peer iterations of 32 warps (or as many as named) per SM cycle; as_kernels: per-lane primitives behind the threshold's branch, the group's convergence checked per peer\"}}\n",
              prop.name, ffma, iadd, shfl, rcp, lds, ldl1, ldl2, lddram, loop, var_step_cycles[0], var_step_cycles[1], var_step_cycles[2],
              var_step_cycles[3], groups[0], match_step_cycles[0], groups[1], match_step_cycles[1], groups[2],
              match_step_cycles[2], groups[3], match_step_cycles[3], match_half_warp, var_rate[0], var_rate[1],
              var_rate[2], var_rate[3], groups[0], match_rate[0], groups[1], match_rate[1], groups[2], match_rate[2],
              groups[3], match_rate[3], shfl_rate, brev_redux, brev_flo, shfl_match, shfl_brev, shfl_redux, match_brev,
              match_redux, shfl_match_quarter, shfl_match_three_quarters, shfl_redux_quarter, shfl_redux_three_quarters,
              shfl_match_two_values, shfl_brev_eighth, shfl_brev_three_eighths, shfl_brev_quarter, shfl_flo_quarter, match_brev_quarter, redux_brev_quarter, shfl_step_lanes_16, shfl_rate_lanes_16, shfl_rate_lanes_32, subcore[0][0], subcore[0][1], subcore[0][2], subcore[0][3],
              subcore[1][0], subcore[1][1], subcore[1][2], subcore[1][3], subcore[2][0], subcore[2][1], subcore[2][2], subcore[2][3],
              match_loaded_0, match_loaded_1, match_loaded_2, match_loaded_3, match_other_subcore_3, sws_step_16, sws_step_32, sws_rate_16, sws_rate_32,
              kernels_step_16, kernels_step_32, kernels_rate_16, kernels_rate_32,
              kernels_rate_16_warps_2, kernels_rate_16_warps_4, kernels_rate_16_warps_8, kernels_rate_16_warps_16);
  return 0;
}
