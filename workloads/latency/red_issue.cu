// What limits the REDs an SM sends, and whether a warp leaves before its REDs
// are applied.
// Part one: one CTA of W warps on one SM or on every SM; each warp issues 64
// independent REDs back to back onto lines that no other RED of the launch
// touches at the time (a 32 MB window the L2 holds, so no slice is crowded):
// 32 lanes on one line (four sectors), 8 lanes on one sector, one lane, or 32
// lanes on 32 lines. Per CTA (clock64): from its warps' first RED to the last
// warp's last RED issued, and to the last warp's __threadfence() returning
// (its REDs applied). Reports REDs per SM cycle issued and applied (median
// over the CTAs and over 7 launches after a warm-up) and the kernel's time.
// The same for ATOMs whose old values the warp sums (as compiled, three and
// then five in flight a warp before it waits for their values):
// what returning a value costs the SM and the slices beyond a RED.
// Part two: one CTA per SM (its shared memory allows no second), two waves of
// CTAs; each warp issues 0, 1, 4 or 16 REDs, then the CTA records when its
// last RED was issued and exits. The REDs go one lane to a line of its own,
// or all 32 lanes of every warp of every SM to one word (tens of thousands of
// requests queued at one slice). Per SM, the cycles from the first wave's last
// RED issued to the second wave's CTA starting (10th, 50th and 90th
// percentiles over SMs), and a first CTA's time to its last RED: without
// REDs, what a CTA's exit and the next one's start cost; with a few uncrowded
// REDs, whether the exit waits for their round trip; with the crowded word,
// whether it waits for the queue ahead of them.
// Part three: the round trip of an atomic that returns, on an idle GPU: one
// warp, one lane, 256 dependent ATOMs (each one's address depends on the
// previous one's old value) onto lines of their own that the L2 holds, against
// the same chain of loads. Cycles per step (clock64), median of 7 launches.
// Part four: how long a memory instruction's operands hold its warp: one warp
// (or one on each sub-core) sends 256 REDs or stores, one at a time, each to
// the line after the last, the pointer advanced in the register the
// instruction reads its address from (so the advance waits until the
// instruction has read it). Cycles per step, 32 lanes or one lane active.
// Part five: a CTA's period on its SM, with nothing after its REDs to
// record: one CTA per SM, two waves; thread 0 stores the SM and its start
// clock first, then every warp issues 0, 1, 4 or 16 REDs (a line per lane, or
// one word from every SM) and exits, or thread 0 stores its clock once more
// and exits. Per SM, cycles from one CTA's start to the next one's
// (percentiles over SMs): what a CTA's exit and the next one's start cost,
// and what its REDs, or a store at its end, add.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "workloads/common/runner.cuh"
#include "workloads/latency/probe.cuh"

namespace {

constexpr int kReds = 64;                      // per warp, part one
constexpr unsigned kWindowLines = 1u << 18;    // 32 MB of lines the L2 holds

__device__ __forceinline__ long long clock_now() {
  long long t;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  return t;
}

// A RED as written, one request per lane: atomicAdd would let the compiler
// fold a warp's lanes on one word into one RED, or emit an ATOM whose result
// is dropped.
__device__ __forceinline__ void red_add(unsigned* address, unsigned value) {
  asm volatile("red.relaxed.gpu.global.add.u32 [%0], %1;" ::"l"(address), "r"(value) : "memory");
}

__device__ __forceinline__ unsigned smid() {
  unsigned id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

// An ATOM whose old value the caller uses, one request per lane.
__device__ __forceinline__ unsigned atom_add(unsigned* address, unsigned value) {
  unsigned old;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(address), "r"(value) : "memory");
  return old;
}

// spans[cta] = {issue span, applied span}; RETURNS: ATOMs instead of REDs,
// the issue span lasting until the last one's value has returned.
template <bool RETURNS>
__global__ void red_issue(unsigned* target, unsigned lanes, unsigned lines_per_red, long long* spans) {
  __shared__ long long first_start, last_issue, last_applied;
  if (threadIdx.x == 0) first_start = 0x7fffffffffffffffll, last_issue = 0, last_applied = 0;
  __syncthreads();
  const unsigned lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const unsigned long long warp = blockIdx.x * warps + threadIdx.x / 32;
  unsigned returned = 0;
  const long long start = clock_now();
  if (lane < lanes) {
#pragma unroll 8
    for (int r = 0; r < kReds; ++r) {
      const unsigned long long red = warp * kReds + r;
      const unsigned line = static_cast<unsigned>((red * lines_per_red + (lines_per_red > 1 ? lane : 0)) % kWindowLines);
      unsigned* address = &target[std::size_t(line) * 32 + (lines_per_red > 1 ? 0 : lane)];
      if constexpr (RETURNS) returned += atom_add(address, 1u);
      else red_add(address, 1u);
    }
  }
  const long long issued = clock_now();
  __threadfence();
  const long long applied = clock_now();
  if (lane == 0) {
    atomicMin(&first_start, start);
    atomicMax(&last_issue, issued);
    atomicMax(&last_applied, applied);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    spans[2 * blockIdx.x] = last_issue - first_start;
    spans[2 * blockIdx.x + 1] = last_applied - first_start;
  }
  if (returned == 0x9e3779b9u) spans[0] = returned;  // keeps the ATOMs' results
}

// Parts two and five: each thread's REDS REDs, each lane onto a line of its
// own, or every lane of every SM onto one word.
template <int REDS>
__device__ __forceinline__ void red_burst(unsigned* target, bool one_word) {
  const unsigned lane = threadIdx.x % 32;
  const unsigned long long thread = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int r = 0; r < REDS; ++r) {
    const unsigned line = static_cast<unsigned>((thread * REDS + r) % kWindowLines);
    red_add(one_word ? &target[0] : &target[std::size_t(line) * 32 + lane % 32], 1u);
  }
}

// records[cta] = {sm, start, last RED issued}.
template <int REDS>
__global__ void red_then_exit(unsigned* target, bool one_word, long long* records) {
  extern __shared__ unsigned padding[];  // one CTA per SM
  __shared__ long long last_issue;
  const long long start = clock_now();
  if (threadIdx.x == 0) last_issue = 0, padding[0] = 0;
  __syncthreads();
  red_burst<REDS>(target, one_word);
  const long long issued = clock_now();
  if (threadIdx.x % 32 == 0) atomicMax(&last_issue, issued);
  __syncthreads();
  if (threadIdx.x == 0) {
    records[3 * blockIdx.x] = smid();
    records[3 * blockIdx.x + 1] = start;
    records[3 * blockIdx.x + 2] = last_issue;
  }
}

constexpr int kChain = 256;

// records[2 * cta] = {sm, start}; with STORE_AT_END, ends[cta] = thread 0's clock after the REDs.
template <int REDS, bool STORE_AT_END>
__global__ void cta_period(unsigned* target, bool one_word, long long* records, long long* ends) {
  extern __shared__ unsigned padding[];  // one CTA per SM
  const long long start = clock_now();
  if (threadIdx.x == 0) {
    records[2 * blockIdx.x] = smid();
    records[2 * blockIdx.x + 1] = start;
    padding[0] = 0;
  }
  red_burst<REDS>(target, one_word);
  if (STORE_AT_END && threadIdx.x == 0) ends[blockIdx.x] = clock_now();
}

// cycles[0] = cycles per dependent step. Lines 997 apart: none shares a line or, mostly, a slice with the one before.
template <bool ATOMIC>
__global__ void atomic_chain(unsigned* target, long long* cycles) {
  unsigned old = 0;
  const long long start = clock_now();
  for (int i = 0; i < kChain; ++i) {
    unsigned* p = &target[std::size_t((unsigned(i) * 997u) % kWindowLines) * 32 + (old >> 30)];
    if constexpr (ATOMIC) {
      old = atomicAdd(p, 1u);
    } else {
      asm volatile("ld.global.cg.u32 %0, [%1];" : "=r"(old) : "l"(p) : "memory");
    }
  }
  const long long end = clock_now();
  cycles[0] = (end - start) / kChain;
  if (old == 0x9e3779b9u) cycles[1] = old;  // keeps the chain
}

// cycles[warp] = cycles per step.
template <bool STORE>
__global__ void operand_hold(unsigned* target, unsigned lanes, long long* cycles) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned* p = target + std::size_t(warp) * kChain * 32 * 2 + lane;
  const long long start = clock_now();
  if (lane < lanes) {
#pragma unroll 1
    for (int i = 0; i < kChain; ++i) {
      if constexpr (STORE) asm volatile("st.global.u32 [%0], %1;" ::"l"(p), "r"(1u) : "memory");
      else red_add(p, 1u);
      p += 32;
    }
  }
  const long long end = clock_now();
  if (lane == 0) cycles[warp] = (end - start) / kChain;
}

// The 10th, 50th and 90th percentiles of per-SM spans, each appended to its series.
void add_percentiles(std::vector<double> spans, std::vector<double>& low, std::vector<double>& mid, std::vector<double>& high) {
  std::sort(spans.begin(), spans.end());
  low.push_back(spans[spans.size() / 10]);
  mid.push_back(median(spans));
  high.push_back(spans[spans.size() * 9 / 10]);
}

struct Shape {
  const char* name;
  unsigned lanes, lines_per_red;
};

struct IssueRates {
  double issued, applied, kernel_us;  // per SM cycle (medians over CTAs, then over launches), and the kernel's median time
};

// Part one at one point: 7 launches after a warm-up.
IssueRates issue_rates(bool returns, const Shape& shape, int ctas, int warps, unsigned* target, long long* spans) {
  std::vector<double> issue_rate, applied_rate;
  atomsim::workload::KernelTimes timer;
  std::vector<long long> host(2 * ctas);
  for (int run = 0; run < 8; ++run) {
    timer.time("red", run > 0, [&] {
      if (returns) red_issue<true><<<ctas, warps * 32>>>(target, shape.lanes, shape.lines_per_red, spans);
      else red_issue<false><<<ctas, warps * 32>>>(target, shape.lanes, shape.lines_per_red, spans);
    });
    if (run == 0) continue;
    WORKLOAD_CHECK(cudaMemcpy(host.data(), spans, host.size() * sizeof(long long), cudaMemcpyDeviceToHost));
    std::vector<double> issue, applied;
    for (int c = 0; c < ctas; ++c) {
      issue.push_back(double(warps) * kReds / double(host[2 * c]));
      applied.push_back(double(warps) * kReds / double(host[2 * c + 1]));
    }
    issue_rate.push_back(median(issue));
    applied_rate.push_back(median(applied));
  }
  return {median(issue_rate), median(applied_rate), timer.summary("red").median_ms * 1000.0};
}

}  // namespace

int main() {
  atomsim::workload::program_name() = "red_issue";
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  unsigned* target;
  long long* spans;
  WORKLOAD_CHECK(cudaMalloc(&target, std::size_t(kWindowLines) * 128));
  WORKLOAD_CHECK(cudaMemset(target, 0, std::size_t(kWindowLines) * 128));
  WORKLOAD_CHECK(cudaMalloc(&spans, 3 * 2 * sms * sizeof(long long)));

  std::printf("{\n  \"device\": \"%s\", \"sms\": %d,\n  \"issue\": [\n", prop.name, sms);
  const Shape shapes[] = {{"line", 32, 1}, {"sector", 8, 1}, {"word", 1, 1}, {"lines", 32, 32}};
  bool first = true;
  for (bool returns : {false, true})
    for (const Shape& shape : shapes)
      for (int ctas : {1, sms})
        for (int warps : {1, 4, 16, 32}) {
          const IssueRates r = issue_rates(returns, shape, ctas, warps, target, spans);
          std::printf("%s    {\"op\": \"%s\", \"shape\": \"%s\", \"lanes\": %u, \"lines_per_red\": %u, \"ctas\": %d, \"warps\": %d, \"reds_per_warp\": %d, "
                      "\"issued_per_sm_cycle\": %.4f, \"applied_per_sm_cycle\": %.4f, \"kernel_us\": %.2f}",
                      first ? "" : ",\n", returns ? "atom" : "red", shape.name, shape.lanes, shape.lines_per_red, ctas, warps, kReds, r.issued,
                      r.applied, r.kernel_us);
          first = false;
        }
  std::printf("\n  ],\n  \"exit\": [\n");

  // Part two: a CTA's shared memory leaves room for no second one on its SM.
  long long* records;
  const int ctas = 2 * sms;
  WORKLOAD_CHECK(cudaMalloc(&records, 3 * ctas * sizeof(long long)));
  struct ExitShape {
    bool one_word;
    int warps, reds;
    void (*kernel)(unsigned*, bool, long long*);
  };
  const ExitShape exit_shapes[] = {{false, 4, 4, red_then_exit<4>},  {true, 4, 4, red_then_exit<4>},
                                   {false, 1, 0, red_then_exit<0>},  {false, 4, 0, red_then_exit<0>},
                                   {false, 1, 1, red_then_exit<1>},  {false, 4, 1, red_then_exit<1>},
                                   {false, 1, 4, red_then_exit<4>},  {false, 4, 16, red_then_exit<16>}};
  first = true;
  for (const ExitShape& shape : exit_shapes) {
    const int padding = one_cta_per_sm(reinterpret_cast<const void*>(shape.kernel), shape.warps, "part two");
    std::vector<double> gaps_per_run, low_gaps_per_run, high_gaps_per_run, to_last_red_per_run;
    atomsim::workload::KernelTimes timer;
    std::vector<long long> host(3 * ctas);
    for (int run = 0; run < 8; ++run) {
      timer.time("exit", run > 0, [&] { shape.kernel<<<ctas, 32 * shape.warps, padding>>>(target, shape.one_word, records); });
      if (run == 0) continue;
      WORKLOAD_CHECK(cudaMemcpy(host.data(), records, host.size() * sizeof(long long), cudaMemcpyDeviceToHost));
      // Per SM, its CTAs in the order they started: the gap from one's last
      // RED to the next one's start, and a first CTA's time to its last RED.
      std::vector<std::vector<std::pair<long long, long long>>> by_sm(sms);
      for (int c = 0; c < ctas; ++c) by_sm[host[3 * c] % sms].push_back({host[3 * c + 1], host[3 * c + 2]});
      std::vector<double> gaps, to_last_red;
      for (auto& runs : by_sm) {
        std::sort(runs.begin(), runs.end());
        if (!runs.empty()) to_last_red.push_back(double(runs[0].second - runs[0].first));
        for (std::size_t i = 1; i < runs.size(); ++i) gaps.push_back(double(runs[i].first - runs[i - 1].second));
      }
      add_percentiles(gaps, low_gaps_per_run, gaps_per_run, high_gaps_per_run);
      to_last_red_per_run.push_back(median(to_last_red));
    }
    std::printf("%s    {\"reds\": \"%s\", \"ctas\": %d, \"warps_per_cta\": %d, \"reds_per_warp\": %d, "
                "\"next_cta_start_after_last_red_cycles\": %.0f, \"next_cta_start_after_last_red_p10_cycles\": %.0f, "
                "\"next_cta_start_after_last_red_p90_cycles\": %.0f, \"first_cta_start_to_last_red_cycles\": %.0f, "
                "\"kernel_us\": %.2f}",
                first ? "" : ",\n", shape.one_word ? "one_word_from_every_sm" : "a_line_per_lane", ctas, shape.warps,
                shape.reds, median(gaps_per_run), median(low_gaps_per_run), median(high_gaps_per_run),
                median(to_last_red_per_run), timer.summary("exit").median_ms * 1000.0);
    first = false;
  }
  std::printf("\n  ],\n  \"round_trip\": {");
  first = true;
  for (bool atomic : {true, false}) {
    std::vector<double> steps;
    std::vector<long long> host(2);
    for (int run = 0; run < 8; ++run) {
      if (atomic) atomic_chain<true><<<1, 1>>>(target, spans);
      else atomic_chain<false><<<1, 1>>>(target, spans);
      WORKLOAD_CHECK(cudaGetLastError());
      WORKLOAD_CHECK(cudaMemcpy(host.data(), spans, 2 * sizeof(long long), cudaMemcpyDeviceToHost));
      if (run > 0) steps.push_back(double(host[0]));
    }
    std::printf("%s\"%s\": %.1f", first ? "" : ", ", atomic ? "atom_cycles" : "load_cg_cycles", median(steps));
    first = false;
  }
  std::printf(", \"unit\": \"SM cycles per dependent step, one lane, lines the L2 holds\"},\n  \"operand_hold\": [\n");
  first = true;
  for (bool store : {false, true})
    for (unsigned lanes : {32u, 1u})
      for (int warps : {1, 4}) {
        std::vector<double> steps;
        std::vector<long long> host(warps);
        for (int run = 0; run < 8; ++run) {
          if (store) operand_hold<true><<<1, warps * 32>>>(target, lanes, spans);
          else operand_hold<false><<<1, warps * 32>>>(target, lanes, spans);
          WORKLOAD_CHECK(cudaGetLastError());
          WORKLOAD_CHECK(cudaMemcpy(host.data(), spans, warps * sizeof(long long), cudaMemcpyDeviceToHost));
          if (run > 0) steps.push_back(median(std::vector<double>(host.begin(), host.end())));
        }
        std::printf("%s    {\"op\": \"%s\", \"lanes\": %u, \"warps\": %d, \"cycles_per_step\": %.1f}", first ? "" : ",\n",
                    store ? "store" : "red", lanes, warps, median(steps));
        first = false;
      }
  std::printf("\n  ],\n  \"cta_period\": [\n");
  struct PeriodShape {
    bool one_word;
    int warps, reds;
    bool store_at_end;
    void (*kernel)(unsigned*, bool, long long*, long long*);
  };
  const PeriodShape period_shapes[] = {
      {false, 1, 0, false, cta_period<0, false>}, {false, 1, 0, true, cta_period<0, true>},
      {false, 4, 0, false, cta_period<0, false>}, {false, 1, 1, false, cta_period<1, false>},
      {false, 1, 4, false, cta_period<4, false>}, {false, 4, 1, false, cta_period<1, false>},
      {false, 4, 4, false, cta_period<4, false>}, {false, 4, 16, false, cta_period<16, false>},
      {true, 4, 4, false, cta_period<4, false>}};
  long long* ends;
  WORKLOAD_CHECK(cudaMalloc(&ends, ctas * sizeof(long long)));
  first = true;
  for (const PeriodShape& shape : period_shapes) {
    const int padding = one_cta_per_sm(reinterpret_cast<const void*>(shape.kernel), shape.warps, "part five");
    std::vector<double> low, mid, high;
    std::vector<long long> host(2 * ctas);
    for (int run = 0; run < 8; ++run) {
      shape.kernel<<<ctas, 32 * shape.warps, padding>>>(target, shape.one_word, records, ends);
      WORKLOAD_CHECK(cudaGetLastError());
      if (run == 0) continue;
      WORKLOAD_CHECK(cudaMemcpy(host.data(), records, host.size() * sizeof(long long), cudaMemcpyDeviceToHost));
      std::vector<std::vector<long long>> starts(sms);
      for (int c = 0; c < ctas; ++c) starts[host[2 * c] % sms].push_back(host[2 * c + 1]);
      std::vector<double> periods;
      for (auto& s : starts) {
        std::sort(s.begin(), s.end());
        for (std::size_t i = 1; i < s.size(); ++i) periods.push_back(double(s[i] - s[i - 1]));
      }
      add_percentiles(periods, low, mid, high);
    }
    std::printf("%s    {\"reds\": \"%s\", \"ctas\": %d, \"warps_per_cta\": %d, \"reds_per_warp\": %d, \"store_at_end\": %s, "
                "\"period_p10_cycles\": %.0f, \"period_cycles\": %.0f, \"period_p90_cycles\": %.0f}",
                first ? "" : ",\n", shape.one_word ? "one_word_from_every_sm" : "a_line_per_lane", ctas, shape.warps, shape.reds,
                shape.store_at_end ? "true" : "false", median(low), median(mid), median(high));
    first = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
