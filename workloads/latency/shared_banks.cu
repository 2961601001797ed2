// What shared memory's banks and atomics cost on the GPU. Part one: each
// warp of one CTA per SM issues independent shared-memory instructions (a
// load, a result-free atomic add of 1 or of a register, an atomic add whose
// result is used) whose 32 lane addresses follow a pattern: conflict-free,
// k distinct words in one bank (a k-way bank conflict), k lanes on one word,
// or random words in 256 bins (a radix digit histogram). It reports
// warp-instructions per SM cycle (clock64; the CTA's span from its first
// warp's start to its last warp's end; median of 7 launches after a warm-up).
// Part two: the radix sort's histogram loop (workloads/sort/onesweep.cu:
// coalesced key loads, four shared atomics per key) with the atomics on its
// digits, on conflict-free words (from the key or not), replaced by shared
// stores or loads, or without them; keys from DRAM or from 16 MB the L2
// holds; 64, 32 or 16 warps an SM. Kernel time (median of 7 launches after a
// warm-up, event-timed) and the mean cycles from a key load's issue to its use.
// Part three, the same loop with 0-8 conflict-free shared stores per key, its
// loads cached in the L1 or not, or 16 ALU instructions instead of stores.
// Part four, the histogram loop's flush REDs on one histogram for all CTAs,
// on 32 or on one per CTA. Part five, coalesced REDs from every warp onto 1
// to 65,536 lines and onto eight lines 4 KB or 64 KB apart, requests per
// microsecond. Part six, one warp's dependent shared loads (each lane's next
// word the one it loaded) on part one's lane patterns: cycles per step, so
// that what a conflict adds to a load's latency shows beside what it costs
// the pipe.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "workloads/common/runner.cuh"

namespace {

constexpr int kUnroll = 8;    // independent shared instructions per round
constexpr int kWords = 8192;  // 32 KB of shared memory

enum class Op { Load, AtomicInc, AtomicAdd, AtomicReturn };
const char* op_name(Op op) {
  switch (op) {
    case Op::Load: return "load";
    case Op::AtomicInc: return "atomic_add_1";
    case Op::AtomicAdd: return "atomic_add_register";
    case Op::AtomicReturn: return "atomic_add_return";
  }
  return "?";
}

__device__ __forceinline__ long long clock_now() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

template <Op OP>
__global__ void shared_ops(const unsigned* __restrict__ offsets, unsigned increment, int rounds, unsigned* sink,
                           long long* spans) {
  __shared__ unsigned words[kWords];
  __shared__ long long first_start, last_end;
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) words[i] = i;
  if (threadIdx.x == 0) first_start = 0x7fffffffffffffffll, last_end = 0;
  const unsigned lane = threadIdx.x % 32;
  unsigned offset[kUnroll];
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) offset[u] = offsets[u * 32 + lane];
  unsigned acc = 0;
  __syncthreads();
  const long long start = clock_now();
#pragma unroll 1
  for (int r = 0; r < rounds; ++r) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      unsigned* p = &words[offset[u]];
      if constexpr (OP == Op::Load) {
        unsigned v;
        asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))) : "memory");
        acc += v;
      } else if constexpr (OP == Op::AtomicInc) {
        atomicAdd(p, 1u);
      } else if constexpr (OP == Op::AtomicAdd) {
        atomicAdd(p, increment);
      } else {
        acc += atomicAdd(p, increment);
      }
    }
  }
  const long long end = clock_now();
  if (lane == 0) {
    atomicMin(&first_start, start);
    atomicMax(&last_end, end);
  }
  __syncthreads();
  if (threadIdx.x == 0) spans[blockIdx.x] = last_end - first_start;
  if (acc == 0x9e3779b9u) sink[threadIdx.x] = acc;  // keeps the loads' results
}

// One warp: each lane loads the word it loaded last (every word holds its own
// index), starting from its word of the pattern's first instruction.
__global__ void dependent_loads(const unsigned* __restrict__ offsets, int steps, unsigned* sink, long long* cycles) {
  __shared__ unsigned words[kWords];
  for (int i = threadIdx.x; i < kWords; i += blockDim.x) words[i] = i;
  __syncthreads();
  unsigned p = offsets[threadIdx.x];
  const long long start = clock_now();
#pragma unroll 1
  for (int s = 0; s < steps; ++s)
    asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(p) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&words[p]))) : "memory");
  const long long end = clock_now();
  sink[threadIdx.x] = p;
  if (threadIdx.x == 0) *cycles = end - start;
}

// Word offsets for kUnroll instructions x 32 lanes.
std::vector<unsigned> pattern(const std::string& name, int k) {
  std::vector<unsigned> words(kUnroll * 32);
  std::uint32_t state = 12345;
  for (int u = 0; u < kUnroll; ++u)
    for (int lane = 0; lane < 32; ++lane) {
      unsigned w = 0;
      if (name == "conflict_free") w = lane;
      else if (name == "bank_ways") w = (lane / k) + (lane % k) * 32;  // lanes of a group: one bank, k words
      else if (name == "same_word") w = lane / k;                        // groups of k lanes: one word, distinct banks
      else {                                                             // random digit of 256 bins, pass u % 4
        state = state * 1664525u + 1013904223u;
        w = (u % 4) * 256 + (state >> 24);
      }
      words[u * 32 + lane] = w + (name == "digits" ? 0 : 1024 * u);
    }
  return words;
}

// The radix sort's histogram loop (onesweep.cu): one coalesced key load at a
// time (the loop's early exit keeps the compiler from hoisting the next), then
// four shared-memory instructions per key. Each warp's lane 0 adds up the
// cycles from issuing a load to its value's first use.
constexpr int kPasses = 4, kRadix = 256, kHistogramThreads = 128, kKeysPerThread = 32;
enum class Between { Nothing, AtomicDigits, AtomicConflictFree, AtomicKeyFree, StoreDigits, LoadDigits };
const char* between_name(Between b) {
  switch (b) {
    case Between::Nothing: return "nothing";
    case Between::AtomicDigits: return "atomic_digits";
    case Between::AtomicConflictFree: return "atomic_conflict_free";
    case Between::AtomicKeyFree: return "atomic_key_free";
    case Between::StoreDigits: return "store_digits";
    case Between::LoadDigits: return "load_digits";
  }
  return "?";
}

template <Between B>
__global__ void histogram_loop(const unsigned* keys, unsigned n, unsigned window_mask, unsigned* histograms,
                               unsigned long long* load_cycles, unsigned copies) {
  // CTAs share `copies` copies of the global histogram and the load counters.
  histograms += (blockIdx.x % copies) * kPasses * kRadix;
  load_cycles += 2 * (blockIdx.x % copies);
  __shared__ unsigned counts[kPasses][kRadix];
  for (int i = threadIdx.x; i < kPasses * kRadix; i += blockDim.x) (&counts[0][0])[i] = 0;
  __syncthreads();
  const std::uint64_t begin = std::uint64_t(blockIdx.x) * kHistogramThreads * kKeysPerThread;
  unsigned folded = 0, loads = 0;
  long long waited = 0;
  for (int k = 0; k < kKeysPerThread; ++k) {
    const std::uint64_t i = begin + std::uint64_t(k) * kHistogramThreads + threadIdx.x;
    if (i >= n) break;
    const long long issue = clock_now();
    const unsigned key = keys[i & window_mask];
    asm volatile("add.u32 %0, %0, %1;" : "+r"(folded) : "r"(key));
    waited += clock_now() - issue;
    ++loads;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const unsigned digit = (key >> (8 * p)) & 255;
      if constexpr (B == Between::AtomicDigits) atomicAdd(&counts[p][digit], 1u);
      if constexpr (B == Between::AtomicConflictFree) atomicAdd(&counts[p][(threadIdx.x % 32) + 32 * (key & 7)], 1u);
      if constexpr (B == Between::AtomicKeyFree) atomicAdd(&counts[p][(threadIdx.x % 32) + 32 * (k & 7)], 1u);
      if constexpr (B == Between::StoreDigits) counts[p][digit] = key;
      if constexpr (B == Between::LoadDigits) {
        unsigned v;
        asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(v) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(&counts[p][digit]))) : "memory");
        folded += v;
      }
    }
  }
  if (folded == 0x9e3779b9u) histograms[0] = folded;  // keeps the loads
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&load_cycles[0], static_cast<unsigned long long>(waited));
    atomicAdd(&load_cycles[1], static_cast<unsigned long long>(loads));
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kPasses * kRadix; i += blockDim.x)
    if (unsigned c = (&counts[0][0])[i]) atomicAdd(&histograms[i], c);
}

struct LoopShape {
  Between between;
  bool from_l2;
  int warps_per_sm;
};

// What in the shared-memory writes slows the loads: WRITES conflict-free
// shared stores per key (0-8), the loads cached in the L1 or not (.cg), or
// ALU instructions on the key instead of the stores.
template <int WRITES, bool BYPASS_L1, int ALU>
__global__ void write_mix(const unsigned* keys, unsigned n, unsigned window_mask, unsigned* sink, unsigned long long* load_cycles) {
  __shared__ unsigned counts[8][256];
  const std::uint64_t begin = std::uint64_t(blockIdx.x) * kHistogramThreads * kKeysPerThread;
  unsigned folded = 0, loads = 0;
  long long waited = 0;
  for (int k = 0; k < kKeysPerThread; ++k) {
    const std::uint64_t i = begin + std::uint64_t(k) * kHistogramThreads + threadIdx.x;
    if (i >= n) break;
    const long long issue = clock_now();
    unsigned key;
    if (BYPASS_L1)
      asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(key) : "l"(keys + (i & window_mask)) : "memory");
    else
      asm volatile("ld.global.u32 %0, [%1];" : "=r"(key) : "l"(keys + (i & window_mask)) : "memory");
    asm volatile("add.u32 %0, %0, %1;" : "+r"(folded) : "r"(key));
    waited += clock_now() - issue;
    ++loads;
#pragma unroll
    for (int w = 0; w < WRITES; ++w) counts[w][(threadIdx.x % 32) + 32 * ((key >> (3 * w)) & 7)] = key;
#pragma unroll
    for (int a = 0; a < ALU; ++a) asm volatile("xor.b32 %0, %0, %1;" : "+r"(folded) : "r"(key >> a));
  }
  __syncthreads();
  if (folded == 0x9e3779b9u) sink[0] = counts[folded & 7][threadIdx.x];  // keeps the loads and stores
  if (threadIdx.x % 32 == 0) {
    atomicAdd(&load_cycles[0], static_cast<unsigned long long>(waited));
    atomicAdd(&load_cycles[1], static_cast<unsigned long long>(loads));
  }
}

// REDs from every warp onto `lines` lines `line_stride` lines apart: warp
// w's r-th RED goes to line (w + r) % lines, from its first `lanes` lanes,
// lane l to word l + (w % spread) * spread_stride of the line.
__global__ void red_lines(unsigned* target, unsigned lines, unsigned line_stride, int rounds, unsigned lanes, unsigned spread,
                          unsigned spread_stride) {
  const unsigned warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  if (lane >= lanes) return;
  const unsigned word = lane + (warp % spread) * spread_stride;
  for (int r = 0; r < rounds; ++r) atomicAdd(&target[std::size_t((warp + r) % lines) * line_stride * 32 + word], 1u);
}

// Launches one histogram_loop; returns the CTAs an SM holds with this padding.
template <Between B>
int launch_loop(const LoopShape& shape, const unsigned* keys, unsigned n, unsigned ctas, int padding, unsigned* histograms,
                unsigned long long* load_cycles, unsigned copies = 1) {
  const unsigned mask = shape.from_l2 ? (4u << 20) - 1 : 0xffffffffu;  // 16 MB of keys the L2 holds, or all of them
  WORKLOAD_CHECK(cudaFuncSetAttribute(histogram_loop<B>, cudaFuncAttributeMaxDynamicSharedMemorySize, padding));
  int resident = 0;
  WORKLOAD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, histogram_loop<B>, kHistogramThreads, padding));
  histogram_loop<B><<<ctas, kHistogramThreads, padding>>>(keys, n, mask, histograms, load_cycles, copies);
  return resident;
}

template <Op OP>
void run_ops(const unsigned* offsets, int ctas, int warps, int rounds, unsigned* sink, long long* spans) {
  shared_ops<OP><<<ctas, warps * 32>>>(offsets, 1u, rounds, sink, spans);
}

}  // namespace

int main() {
  atomsim::workload::program_name() = "shared_banks";
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  unsigned *offsets, *sink;
  long long* spans;
  WORKLOAD_CHECK(cudaMalloc(&offsets, kUnroll * 32 * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&sink, 1024 * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&spans, sms * sizeof(long long)));
  struct Pattern {
    std::string name;
    int k;
  };
  std::vector<Pattern> patterns = {{"conflict_free", 1}, {"digits", 0}};
  for (int k : {2, 4, 8, 16, 32}) patterns.push_back({"bank_ways", k});
  for (int k : {2, 4, 8, 32}) patterns.push_back({"same_word", k});
  std::printf("{\n  \"sms\": %d,\n  \"unroll\": %d,\n  \"throughput\": [\n", sms, kUnroll);
  bool first = true;
  for (const Pattern& pat : patterns) {
    const std::vector<unsigned> host = pattern(pat.name, pat.k);
    WORKLOAD_CHECK(cudaMemcpy(offsets, host.data(), host.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
    for (Op op : {Op::Load, Op::AtomicInc, Op::AtomicAdd, Op::AtomicReturn})
      for (int warps : {1, 4, 16, 32}) {
        const int rounds = 128;
        std::vector<double> rates;
        std::vector<long long> s(sms);
        for (int r = 0; r < 8; ++r) {
          if (op == Op::Load) run_ops<Op::Load>(offsets, sms, warps, rounds, sink, spans);
          if (op == Op::AtomicInc) run_ops<Op::AtomicInc>(offsets, sms, warps, rounds, sink, spans);
          if (op == Op::AtomicAdd) run_ops<Op::AtomicAdd>(offsets, sms, warps, rounds, sink, spans);
          if (op == Op::AtomicReturn) run_ops<Op::AtomicReturn>(offsets, sms, warps, rounds, sink, spans);
          WORKLOAD_CHECK(cudaGetLastError());
          WORKLOAD_CHECK(cudaMemcpy(s.data(), spans, sms * sizeof(long long), cudaMemcpyDeviceToHost));
          if (r == 0) continue;
          std::sort(s.begin(), s.end());
          rates.push_back(double(warps) * rounds * kUnroll / double(s[s.size() / 2]));
        }
        std::sort(rates.begin(), rates.end());
        std::printf("%s    {\"op\": \"%s\", \"pattern\": \"%s\", \"k\": %d, \"warps\": %d, \"per_sm_cycle\": %.4f}",
                    first ? "" : ",\n", op_name(op), pat.name.c_str(), pat.k, warps, rates[rates.size() / 2]);
        first = false;
      }
  }
  std::printf("\n  ],\n");

  // Part six: dependent loads, the difference of 512 and 256 steps per step (the loop's own cost stays in).
  std::printf("  \"dependent_loads\": [\n");
  first = true;
  long long* d_cycles;
  WORKLOAD_CHECK(cudaMalloc(&d_cycles, sizeof(long long)));
  for (const Pattern& pat : patterns) {
    if (pat.name == "same_word" && pat.k != 32) continue;
    const std::vector<unsigned> host = pattern(pat.name, pat.k);
    WORKLOAD_CHECK(cudaMemcpy(offsets, host.data(), host.size() * sizeof(unsigned), cudaMemcpyHostToDevice));
    auto cycles = [&](int steps) {
      std::vector<long long> runs;
      for (int r = 0; r < 8; ++r) {
        dependent_loads<<<1, 32>>>(offsets, steps, sink, d_cycles);
        WORKLOAD_CHECK(cudaGetLastError());
        long long c = 0;
        WORKLOAD_CHECK(cudaMemcpy(&c, d_cycles, sizeof c, cudaMemcpyDeviceToHost));
        if (r > 0) runs.push_back(c);
      }
      std::sort(runs.begin(), runs.end());
      return double(runs[runs.size() / 2]);
    };
    std::printf("%s    {\"pattern\": \"%s\", \"k\": %d, \"cycles_per_step\": %.2f}", first ? "" : ",\n", pat.name.c_str(), pat.k,
                (cycles(512) - cycles(256)) / 256);
    first = false;
  }
  std::printf("\n  ],\n");

  const unsigned n = 17825792;  // the sort dataset's key count
  std::vector<unsigned> keys(n);
  std::uint32_t state = 1;
  for (unsigned& key : keys) key = (state = state * 1664525u + 1013904223u);
  unsigned *d_keys, *d_histograms;
  unsigned long long* d_load_cycles;
  WORKLOAD_CHECK(cudaMalloc(&d_keys, n * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&d_histograms, std::size_t(4352) * kPasses * kRadix * sizeof(unsigned)));
  WORKLOAD_CHECK(cudaMalloc(&d_load_cycles, 2 * 4352 * sizeof(unsigned long long)));
  WORKLOAD_CHECK(cudaMemcpy(d_keys, keys.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  const unsigned ctas = (n + kHistogramThreads * kKeysPerThread - 1) / (kHistogramThreads * kKeysPerThread);
  std::vector<LoopShape> shapes;
  for (Between b : {Between::Nothing, Between::AtomicDigits, Between::AtomicConflictFree, Between::AtomicKeyFree,
                    Between::StoreDigits, Between::LoadDigits})
    for (bool from_l2 : {false, true})
      for (int warps : {64, 32, 16}) shapes.push_back({b, from_l2, warps});
  std::printf("  \"sort_histogram\": {\"keys\": %u, \"ctas\": %u, \"points\": [\n", n, ctas);
  for (std::size_t s = 0; s < shapes.size(); ++s) {
    const LoopShape& shape = shapes[s];
    // Dynamic shared memory (launched, not used) that leaves room for warps_per_sm / 4 CTAs an SM.
    const int ctas_per_sm = shape.warps_per_sm / 4;
    const int padding = ctas_per_sm >= 16 ? 0 : int(prop.sharedMemPerMultiprocessor / ctas_per_sm) - 4096 - 2048;
    atomsim::workload::KernelTimes timer;
    std::vector<double> latencies;
    int resident = 0;
    for (int r = 0; r < 8; ++r) {
      WORKLOAD_CHECK(cudaMemset(d_load_cycles, 0, 2 * sizeof(unsigned long long)));
      timer.time("loop", r > 0, [&] {
        switch (shape.between) {
          case Between::Nothing: resident = launch_loop<Between::Nothing>(shape, d_keys, n, ctas, padding, d_histograms, d_load_cycles); break;
          case Between::AtomicDigits: resident = launch_loop<Between::AtomicDigits>(shape, d_keys, n, ctas, padding, d_histograms, d_load_cycles); break;
          case Between::AtomicConflictFree: resident = launch_loop<Between::AtomicConflictFree>(shape, d_keys, n, ctas, padding, d_histograms, d_load_cycles); break;
          case Between::AtomicKeyFree: resident = launch_loop<Between::AtomicKeyFree>(shape, d_keys, n, ctas, padding, d_histograms, d_load_cycles); break;
          case Between::StoreDigits: resident = launch_loop<Between::StoreDigits>(shape, d_keys, n, ctas, padding, d_histograms, d_load_cycles); break;
          case Between::LoadDigits: resident = launch_loop<Between::LoadDigits>(shape, d_keys, n, ctas, padding, d_histograms, d_load_cycles); break;
        }
      });
      unsigned long long lc[2];
      WORKLOAD_CHECK(cudaMemcpy(lc, d_load_cycles, sizeof lc, cudaMemcpyDeviceToHost));
      if (r > 0) latencies.push_back(double(lc[0]) / double(lc[1]));
    }
    std::sort(latencies.begin(), latencies.end());
    std::printf("    {\"between\": \"%s\", \"source\": \"%s\", \"warps_per_sm\": %d, \"median_us\": %.2f, \"load_to_use_cycles\": %.0f}%s\n",
                between_name(shape.between), shape.from_l2 ? "l2" : "dram", resident * 4, timer.summary("loop").median_ms * 1000.0,
                latencies[latencies.size() / 2], s + 1 < shapes.size() ? "," : "");
  }
  std::printf("  ]},\n");

  // Part three: which of the writes' properties slows the loads.
  struct Mix {
    int writes;
    bool bypass_l1;
    int alu;
    void (*kernel)(const unsigned*, unsigned, unsigned, unsigned*, unsigned long long*);
  };
  const Mix mixes[] = {{0, false, 0, write_mix<0, false, 0>}, {1, false, 0, write_mix<1, false, 0>}, {2, false, 0, write_mix<2, false, 0>},
                       {4, false, 0, write_mix<4, false, 0>}, {8, false, 0, write_mix<8, false, 0>}, {0, true, 0, write_mix<0, true, 0>},
                       {4, true, 0, write_mix<4, true, 0>},   {0, false, 16, write_mix<0, false, 16>}};
  std::printf("  \"write_mix\": [\n");
  bool first_mix = true;
  for (const Mix& mix : mixes)
    for (bool from_l2 : {false, true})
      for (int warps : {64, 32}) {
        const int ctas_per_sm = warps / 4;
        const int padding = ctas_per_sm >= 16 ? 0 : int(prop.sharedMemPerMultiprocessor / ctas_per_sm) - 8192 - 2048;
        WORKLOAD_CHECK(cudaFuncSetAttribute(mix.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, padding));
        int resident = 0;
        WORKLOAD_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, mix.kernel, kHistogramThreads, padding));
        const unsigned mask = from_l2 ? (4u << 20) - 1 : 0xffffffffu;
        atomsim::workload::KernelTimes timer;
        std::vector<double> latencies;
        for (int r = 0; r < 8; ++r) {
          WORKLOAD_CHECK(cudaMemset(d_load_cycles, 0, 2 * sizeof(unsigned long long)));
          timer.time("mix", r > 0, [&] { mix.kernel<<<ctas, kHistogramThreads, padding>>>(d_keys, n, mask, d_histograms, d_load_cycles); });
          unsigned long long lc[2];
          WORKLOAD_CHECK(cudaMemcpy(lc, d_load_cycles, sizeof lc, cudaMemcpyDeviceToHost));
          if (r > 0) latencies.push_back(double(lc[0]) / double(lc[1]));
        }
        std::sort(latencies.begin(), latencies.end());
        std::printf("%s    {\"writes\": %d, \"bypass_l1\": %s, \"alu\": %d, \"source\": \"%s\", \"warps_per_sm\": %d, \"median_us\": %.2f, \"load_to_use_cycles\": %.0f}",
                    first_mix ? "" : ",\n", mix.writes, mix.bypass_l1 ? "true" : "false", mix.alu, from_l2 ? "l2" : "dram", resident * 4,
                    timer.summary("mix").median_ms * 1000.0, latencies[latencies.size() / 2]);
        first_mix = false;
      }
  std::printf("\n  ],\n");

  // Part four: the histogram loop with its flush's REDs (and the load
  // counters') on one copy of the histogram, as the sort has them, or spread
  // over 32 or one copy per CTA.
  std::printf("  \"flush_copies\": [\n");
  bool first_copy = true;
  for (unsigned copies : {1u, 32u, 4352u})
    for (bool from_l2 : {false, true})
      for (int warps : {64, 32}) {
        const LoopShape shape{Between::AtomicDigits, from_l2, warps};
        const int ctas_per_sm = warps / 4;
        const int padding = ctas_per_sm >= 16 ? 0 : int(prop.sharedMemPerMultiprocessor / ctas_per_sm) - 4096 - 2048;
        atomsim::workload::KernelTimes timer;
        std::vector<double> latencies;
        int resident = 0;
        std::vector<unsigned long long> lc(2 * copies);
        for (int r = 0; r < 8; ++r) {
          WORKLOAD_CHECK(cudaMemset(d_load_cycles, 0, lc.size() * sizeof(unsigned long long)));
          timer.time("flush", r > 0, [&] {
            resident = launch_loop<Between::AtomicDigits>(shape, d_keys, n, ctas, padding, d_histograms, d_load_cycles, copies);
          });
          WORKLOAD_CHECK(cudaMemcpy(lc.data(), d_load_cycles, lc.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
          unsigned long long waited = 0, loads = 0;
          for (unsigned c = 0; c < copies; ++c) waited += lc[2 * c], loads += lc[2 * c + 1];
          if (r > 0) latencies.push_back(double(waited) / double(loads));
        }
        std::sort(latencies.begin(), latencies.end());
        std::printf("%s    {\"copies\": %u, \"source\": \"%s\", \"warps_per_sm\": %d, \"median_us\": %.2f, \"load_to_use_cycles\": %.0f}",
                    first_copy ? "" : ",\n", copies, from_l2 ? "l2" : "dram", resident * 4, timer.summary("flush").median_ms * 1000.0,
                    latencies[latencies.size() / 2]);
        first_copy = false;
      }
  std::printf("\n  ],\n");

  // Part five: how fast the L2 takes coalesced REDs that crowd onto a few lines.
  unsigned* d_target;
  const unsigned max_lines = 1u << 16;
  WORKLOAD_CHECK(cudaMalloc(&d_target, std::size_t(max_lines) * 128 * 2));
  std::printf("  \"red_lines\": [\n");
  bool first_red = true;
  const int red_rounds = 32, red_ctas = sms * 16;
  // Which words of a line each warp's REDs update: all 32, one sector's 8, one
  // word, one of 8 words of a sector (by warp), one word of each of 4 sectors (by warp).
  struct RedShape {
    const char* name;
    unsigned lanes, spread, spread_stride;
  };
  const RedShape red_shapes[] = {{"line", 32, 1, 0}, {"sector", 8, 1, 0}, {"word", 1, 1, 0}, {"words_of_a_sector", 1, 8, 1}, {"sectors_of_a_line", 1, 4, 8}};
  struct RedPoint {
    const RedShape* shape;
    unsigned lines, line_stride;
  };
  std::vector<RedPoint> red_points;
  for (const RedShape& shape : red_shapes)
    for (unsigned lines : {1u, 8u, 32u, 256u, max_lines}) red_points.push_back({&shape, lines, 1});
  // Eight lines further apart: 4 KB and 64 KB.
  for (unsigned stride : {32u, 512u}) red_points.push_back({&red_shapes[2], 8, stride});
  for (const RedPoint& point : red_points) {
    const RedShape& shape = *point.shape;
    atomsim::workload::KernelTimes timer;
    for (int r = 0; r < 8; ++r)
      timer.time("red", r > 0, [&] {
        red_lines<<<red_ctas, 128>>>(d_target, point.lines, point.line_stride, red_rounds, shape.lanes, shape.spread, shape.spread_stride);
      });
    const double requests = double(red_ctas) * 4 * red_rounds, ms = timer.summary("red").median_ms;
    std::printf("%s    {\"words\": \"%s\", \"lanes\": %u, \"lines\": %u, \"line_stride\": %u, \"warps_per_sm\": 64, \"reds_per_warp\": %d, \"median_us\": %.2f, \"requests_per_us\": %.1f}",
                first_red ? "" : ",\n", shape.name, shape.lanes, point.lines, point.line_stride, red_rounds, ms * 1000.0, requests / (ms * 1000.0));
    first_red = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
