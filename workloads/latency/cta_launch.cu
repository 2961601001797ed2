// How fast an SM takes in CTAs, and whether a CTA's size matters. Every CTA
// does nothing but its thread 0 reading the SM's clock first and storing it
// with the SM's id.
//   - "spacing": K CTAs an SM of T threads, all resident at once (one wave).
//     Per SM, the spacing of its CTAs' starts (the median of consecutive
//     differences, so the SM's place in the dispatcher's order drops out).
//   - "refill": two waves of K CTAs an SM of T threads, K * T the SM's 2,048
//     threads, so a second-wave CTA takes the place of a finished one. Per
//     SM, the spacing of the first wave's starts and of the second wave's, and
//     from the first wave's last start to the second wave's first.
// The 10th, 50th and 90th percentiles over SMs, medians over eight launches
// after a warm-up.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "workloads/common/runner.cuh"
#include "workloads/latency/probe.cuh"

namespace {

constexpr int kLaunches = 9;  // a warm-up, then eight timed

__global__ void cta_start(long long* starts, unsigned* sm_ids) {
  if (threadIdx.x != 0) return;
  long long t;
  unsigned sm;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  starts[blockIdx.x] = t;
  sm_ids[blockIdx.x] = sm;
}

double median_gap(const long long* starts, std::size_t n) {
  std::vector<double> gaps;
  for (std::size_t i = 1; i < n; ++i) gaps.push_back(double(starts[i] - starts[i - 1]));
  return median(gaps);
}

// Per-SM figures of one launch, each appended to its series as p10/median/p90.
struct Series {
  std::vector<double> low, mid, high;
  void add(std::vector<double> per_sm) {
    std::sort(per_sm.begin(), per_sm.end());
    low.push_back(per_sm[per_sm.size() / 10]);
    mid.push_back(median(per_sm));
    high.push_back(per_sm[per_sm.size() * 9 / 10]);
  }
  void print(const char* name) const {
    std::printf("\"%s_cycles\": %.1f, \"%s_p10_cycles\": %.1f, \"%s_p90_cycles\": %.1f", name, median(mid), name, median(low), name,
                median(high));
  }
};

// Runs `ctas` CTAs of `threads` and returns each SM's starts, sorted.
std::vector<std::vector<long long>> starts_by_sm(int ctas, int threads, int sms, long long* starts, unsigned* sm_ids) {
  std::vector<long long> host_starts(ctas);
  std::vector<unsigned> host_sms(ctas);
  cta_start<<<ctas, threads>>>(starts, sm_ids);
  WORKLOAD_CHECK(cudaGetLastError());
  WORKLOAD_CHECK(cudaMemcpy(host_starts.data(), starts, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
  WORKLOAD_CHECK(cudaMemcpy(host_sms.data(), sm_ids, ctas * sizeof(unsigned), cudaMemcpyDeviceToHost));
  std::vector<std::vector<long long>> by_sm(sms);
  for (int c = 0; c < ctas; ++c) by_sm[host_sms[c] % sms].push_back(host_starts[c]);
  for (auto& s : by_sm) std::sort(s.begin(), s.end());
  return by_sm;
}

}  // namespace

int main() {
  atomsim::workload::program_name() = "cta_launch";
  atomsim::workload::require_gpu();
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int max_threads = prop.maxThreadsPerMultiProcessor, max_ctas = prop.maxBlocksPerMultiProcessor;
  long long* starts;
  unsigned* sm_ids;
  const int most_ctas = 2 * sms * max_ctas;  // two waves of the most CTAs an SM holds
  WORKLOAD_CHECK(cudaMalloc(&starts, most_ctas * sizeof(long long)));
  WORKLOAD_CHECK(cudaMalloc(&sm_ids, most_ctas * sizeof(unsigned)));
  std::printf("{\n  %s, \"sms\": %d,\n  \"spacing\": [\n", atomsim::workload::device_json().c_str(), sms);
  bool first = true;
  for (int threads : {32, 64, 128, 256, 512, 1024})
    for (int per_sm : {2, 4, 8, 16, 32}) {
      if (per_sm * threads > max_threads || per_sm > max_ctas) continue;
      Series spacing;
      int placed_evenly = 0;
      for (int launch = 0; launch < kLaunches; ++launch) {
        const auto by_sm = starts_by_sm(sms * per_sm, threads, sms, starts, sm_ids);
        if (launch == 0) continue;
        std::vector<double> per_sm_spacing;
        for (const auto& s : by_sm) {
          placed_evenly += s.size() == std::size_t(per_sm);
          if (s.size() >= 2) per_sm_spacing.push_back(median_gap(s.data(), s.size()));
        }
        spacing.add(per_sm_spacing);
      }
      std::printf("%s    {\"threads\": %d, \"ctas_per_sm\": %d, ", first ? "" : ",\n", threads, per_sm);
      spacing.print("spacing");
      std::printf(", \"sms_with_k_ctas\": %.1f}", double(placed_evenly) / (kLaunches - 1));
      first = false;
    }
  std::printf("\n  ],\n  \"refill\": [\n");
  first = true;
  for (int threads : {64, 128, 256, 512, 1024}) {
    const int per_sm = max_threads / threads;
    if (per_sm > max_ctas) continue;
    Series first_wave, second_wave, between;
    int placed_evenly = 0;
    for (int launch = 0; launch < kLaunches; ++launch) {
      const auto by_sm = starts_by_sm(2 * sms * per_sm, threads, sms, starts, sm_ids);
      if (launch == 0) continue;
      std::vector<double> a, b, gap;
      for (const auto& s : by_sm) {
        if (s.size() != std::size_t(2 * per_sm)) continue;
        ++placed_evenly;
        a.push_back(median_gap(s.data(), per_sm));
        b.push_back(median_gap(s.data() + per_sm, per_sm));
        gap.push_back(double(s[per_sm] - s[per_sm - 1]));
      }
      if (a.empty()) atomsim::workload::fail(1, "no SM ran %d CTAs of %d threads", 2 * per_sm, threads);
      first_wave.add(a);
      second_wave.add(b);
      between.add(gap);
    }
    std::printf("%s    {\"threads\": %d, \"ctas_per_sm\": %d, ", first ? "" : ",\n", threads, per_sm);
    first_wave.print("first_wave_spacing");
    std::printf(", ");
    second_wave.print("second_wave_spacing");
    std::printf(", ");
    between.print("first_to_second_wave");
    std::printf(", \"sms_with_2k_ctas\": %.1f}", double(placed_evenly) / (kLaunches - 1));
    first = false;
  }
  std::printf("\n  ]\n}\n");
  return 0;
}
