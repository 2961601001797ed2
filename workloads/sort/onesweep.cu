// Onesweep LSD radix sort of 32-bit keys (optionally key-value pairs), after
// Adinets and Merrill, "Onesweep: A Faster Least Significant Digit Radix Sort
// for GPUs" (2022). Four 8-bit digit passes. One histogram kernel counts every
// pass's digits at once (shared-memory atomics, then one global atomic per
// bucket per block); a small kernel scans them into per-pass digit offsets.
// Each pass is then one scatter kernel: a block takes the next partition index
// from an atomic counter (so partitions run in the order they were handed
// out), ranks its keys per digit, publishes its per-digit counts in the
// partition descriptors and looks back over earlier partitions' descriptors
// (decoupled look-back) for each digit's exclusive prefix, then scatters.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "workloads/common/runner.cuh"

namespace {

using namespace atomsim::workload;

constexpr int kDigitBits = 8;
constexpr int kRadix = 1 << kDigitBits;
constexpr int kPasses = 32 / kDigitBits;
constexpr int kThreads = 256;  // one thread per digit in the look-back
constexpr int kWarps = kThreads / 32;
constexpr int kKeysPerThread = 15;
constexpr int kPartition = kThreads * kKeysPerThread;
constexpr int kHistogramThreads = 128;
constexpr int kHistogramKeysPerThread = 32;

// A partition descriptor per digit: 2 status bits over a 30-bit count.
constexpr std::uint32_t kNotReady = 0, kAggregate = 1u << 30, kInclusive = 2u << 30;
constexpr std::uint32_t kValueMask = (1u << 30) - 1;

__device__ __forceinline__ std::uint32_t digit_of(std::uint32_t key, int pass) {
  return (key >> (pass * kDigitBits)) & (kRadix - 1);
}

__global__ void onesweep_histogram(const std::uint32_t* keys, std::uint32_t n, std::uint32_t* histograms) {
  __shared__ std::uint32_t counts[kPasses][kRadix];
  for (int i = threadIdx.x; i < kPasses * kRadix; i += blockDim.x) (&counts[0][0])[i] = 0;
  __syncthreads();
  const std::uint64_t begin = std::uint64_t(blockIdx.x) * kHistogramThreads * kHistogramKeysPerThread;
  for (int k = 0; k < kHistogramKeysPerThread; ++k) {
    std::uint64_t i = begin + std::uint64_t(k) * kHistogramThreads + threadIdx.x;
    if (i >= n) break;
    std::uint32_t key = keys[i];
#pragma unroll
    for (int p = 0; p < kPasses; ++p) atomicAdd(&counts[p][digit_of(key, p)], 1u);
  }
  __syncthreads();
  for (int i = threadIdx.x; i < kPasses * kRadix; i += blockDim.x) {
    std::uint32_t c = (&counts[0][0])[i];
    if (c) atomicAdd(&histograms[i], c);
  }
}

// One block per pass: exclusive scan of its 256 digit counts.
__global__ void onesweep_scan(const std::uint32_t* histograms, std::uint32_t* offsets) {
  __shared__ std::uint32_t s[kRadix];
  const std::uint32_t* h = histograms + blockIdx.x * kRadix;
  s[threadIdx.x] = h[threadIdx.x];
  __syncthreads();
  for (int stride = 1; stride < kRadix; stride *= 2) {
    std::uint32_t v = threadIdx.x >= stride ? s[threadIdx.x - stride] : 0;
    __syncthreads();
    s[threadIdx.x] += v;
    __syncthreads();
  }
  offsets[blockIdx.x * kRadix + threadIdx.x] = s[threadIdx.x] - h[threadIdx.x];
}

template <bool kPairs>
__global__ void __launch_bounds__(kThreads) onesweep_scatter(const std::uint32_t* keys_in, std::uint32_t* keys_out,
                                                             const std::uint32_t* values_in, std::uint32_t* values_out,
                                                             std::uint32_t n, int pass, const std::uint32_t* digit_offsets,
                                                             std::uint32_t* partition_counter,
                                                             volatile std::uint32_t* descriptors) {
  __shared__ std::uint32_t partition_shared;
  __shared__ std::uint32_t warp_counts[kWarps][kRadix];  // then each warp's first rank per digit
  __shared__ std::uint32_t digit_base[kRadix];           // where this partition's keys of each digit go
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) partition_shared = atomicAdd(partition_counter, 1u);
  for (int i = threadIdx.x; i < kWarps * kRadix; i += kThreads) (&warp_counts[0][0])[i] = 0;
  __syncthreads();
  const std::uint32_t partition = partition_shared;

  // Each warp takes a contiguous run of the partition, so ranks keep the input order (stable).
  std::uint32_t key[kKeysPerThread], rank[kKeysPerThread];
  const std::uint64_t first = std::uint64_t(partition) * kPartition + std::uint64_t(warp) * 32 * kKeysPerThread;
  for (int k = 0; k < kKeysPerThread; ++k) {
    const std::uint64_t i = first + std::uint64_t(k) * 32 + lane;
    const bool valid = i < n;
    key[k] = valid ? keys_in[i] : 0xffffffffu;
    const std::uint32_t active = __ballot_sync(0xffffffffu, valid);
    if (!valid) continue;
    const std::uint32_t d = digit_of(key[k], pass);
    const std::uint32_t peers = __match_any_sync(active, d);
    const std::uint32_t before = __popc(peers & ((1u << lane) - 1));
    rank[k] = warp_counts[warp][d] + before;
    __syncwarp(active);
    if (before == 0) warp_counts[warp][d] += __popc(peers);
    __syncwarp(active);
  }
  __syncthreads();

  // Thread d: the partition's count of digit d, and each warp's first rank for it.
  const std::uint32_t d = threadIdx.x;
  std::uint32_t total = 0;
  for (int w = 0; w < kWarps; ++w) {
    std::uint32_t c = warp_counts[w][d];
    warp_counts[w][d] = total;
    total += c;
  }
  // Decoupled look-back for digit d.
  volatile std::uint32_t* mine = descriptors + std::uint64_t(partition) * kRadix + d;
  std::uint32_t exclusive = 0;
  if (partition == 0) {
    *mine = kInclusive | total;
  } else {
    *mine = kAggregate | total;
    for (std::int64_t p = std::int64_t(partition) - 1; p >= 0; --p) {
      std::uint32_t v;
      do v = descriptors[std::uint64_t(p) * kRadix + d];
      while ((v & ~kValueMask) == kNotReady);
      exclusive += v & kValueMask;
      if ((v & ~kValueMask) == kInclusive) break;
    }
    __threadfence();
    *mine = kInclusive | (exclusive + total);
  }
  digit_base[d] = digit_offsets[pass * kRadix + d] + exclusive;
  __syncthreads();

  for (int k = 0; k < kKeysPerThread; ++k) {
    const std::uint64_t i = first + std::uint64_t(k) * 32 + lane;
    if (i >= n) break;
    const std::uint32_t dk = digit_of(key[k], pass);
    const std::uint32_t to = digit_base[dk] + warp_counts[warp][dk] + rank[k];
    keys_out[to] = key[k];
    if constexpr (kPairs) values_out[to] = values_in[i];
  }
}

struct Buffers {
  std::uint32_t *keys = nullptr, *keys_alt = nullptr, *values = nullptr, *values_alt = nullptr;
  std::uint32_t *histograms = nullptr, *offsets = nullptr, *counters = nullptr, *descriptors = nullptr;
};

// One sort; with `per_kernel`, each kernel is timed on its own (which adds a
// synchronisation after each, so the whole sort is timed in separate runs).
void sort_once(Buffers& b, std::uint32_t n, bool pairs, KernelTimes* per_kernel, bool keep) {
  auto run = [&](const std::string& name, auto launch) {
    if (per_kernel) per_kernel->time(name, keep, launch);
    else launch();
  };
  const std::uint32_t partitions = (n + kPartition - 1) / kPartition;
  const std::uint32_t histogram_blocks = (n + kHistogramThreads * kHistogramKeysPerThread - 1) / (kHistogramThreads * kHistogramKeysPerThread);
  WORKLOAD_CHECK(cudaMemsetAsync(b.histograms, 0, kPasses * kRadix * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMemsetAsync(b.counters, 0, kPasses * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMemsetAsync(b.descriptors, 0, std::size_t(kPasses) * partitions * kRadix * sizeof(std::uint32_t)));
  run("onesweep_histogram", [&] { onesweep_histogram<<<histogram_blocks, kHistogramThreads>>>(b.keys, n, b.histograms); });
  run("onesweep_scan", [&] { onesweep_scan<<<kPasses, kRadix>>>(b.histograms, b.offsets); });
  for (int pass = 0; pass < kPasses; ++pass) {
    std::uint32_t* descriptors = b.descriptors + std::size_t(pass) * partitions * kRadix;
    run("onesweep_scatter_pass" + std::to_string(pass), [&] {
      if (pairs)
        onesweep_scatter<true><<<partitions, kThreads>>>(b.keys, b.keys_alt, b.values, b.values_alt, n, pass, b.offsets,
                                                          b.counters + pass, descriptors);
      else
        onesweep_scatter<false><<<partitions, kThreads>>>(b.keys, b.keys_alt, nullptr, nullptr, n, pass, b.offsets,
                                                           b.counters + pass, descriptors);
    });
    std::swap(b.keys, b.keys_alt);
    std::swap(b.values, b.values_alt);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o(argc, argv,
            {{"keys", "16777216"}, {"pairs", "0"}, {"distribution", "uniform"}, {"seed", "1"}, {"warmup", "3"}, {"repeat", "21"}},
            "[--keys N] [--pairs 0|1] [--distribution uniform|narrow] [--seed S] [--warmup W] [--repeat R]");
  const auto n = static_cast<std::uint32_t>(o.integer("keys", 1, kValueMask));
  const bool pairs = o.integer("pairs", 0, 1) == 1;
  const std::string distribution = o.choice("distribution", {"uniform", "narrow"});
  const auto seed = static_cast<std::uint32_t>(o.integer("seed", 0, 0xffffffffLL));
  const int warmup = static_cast<int>(o.integer("warmup", 0, 1000)), repeat = static_cast<int>(o.integer("repeat", 1, 10000));
  require_gpu();

  // "narrow": 8 distinct high bytes, so that a few digits take most keys (atomic contention).
  std::vector<std::uint32_t> keys(n), values(n);
  std::mt19937 rng(seed);
  for (std::uint32_t i = 0; i < n; ++i) {
    keys[i] = rng();
    if (distribution == "narrow") keys[i] = (keys[i] & 0x07ffffffu) | ((keys[i] & 7u) << 29);
    values[i] = i;
  }
  const std::uint32_t partitions = (n + kPartition - 1) / kPartition;
  Buffers b;
  const std::size_t bytes = std::size_t(n) * sizeof(std::uint32_t);
  WORKLOAD_CHECK(cudaMalloc(&b.keys, bytes));
  WORKLOAD_CHECK(cudaMalloc(&b.keys_alt, bytes));
  if (pairs) {
    WORKLOAD_CHECK(cudaMalloc(&b.values, bytes));
    WORKLOAD_CHECK(cudaMalloc(&b.values_alt, bytes));
  }
  WORKLOAD_CHECK(cudaMalloc(&b.histograms, kPasses * kRadix * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&b.offsets, kPasses * kRadix * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&b.counters, kPasses * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&b.descriptors, std::size_t(kPasses) * partitions * kRadix * sizeof(std::uint32_t)));

  KernelTimes times;
  auto upload = [&] {
    WORKLOAD_CHECK(cudaMemcpy(b.keys, keys.data(), bytes, cudaMemcpyHostToDevice));
    if (pairs) WORKLOAD_CHECK(cudaMemcpy(b.values, values.data(), bytes, cudaMemcpyHostToDevice));
  };
  for (int r = 0; r < warmup + repeat; ++r) {
    const bool keep = r >= warmup;
    upload();
    times.time("sort", keep, [&] { sort_once(b, n, pairs, nullptr, keep); });
    upload();
    sort_once(b, n, pairs, &times, keep);
  }

  // Check against a stable CPU sort of the same input.
  std::vector<std::uint32_t> got(n), got_values(pairs ? n : 0);
  WORKLOAD_CHECK(cudaMemcpy(got.data(), b.keys, bytes, cudaMemcpyDeviceToHost));
  if (pairs) WORKLOAD_CHECK(cudaMemcpy(got_values.data(), b.values, bytes, cudaMemcpyDeviceToHost));
  std::vector<std::uint32_t> order(n);
  for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t c) { return keys[a] < keys[c]; });
  std::uint64_t wrong = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    if (got[i] != keys[order[i]]) ++wrong;
    else if (pairs && got_values[i] != order[i]) ++wrong;
  }
  std::printf("{\"workload\":\"sort\",\"algorithm\":\"onesweep\",\"keys\":%u,\"pairs\":%s,\"distribution\":\"%s\",\"seed\":%u,"
              "\"partitions\":%u,\"warmup\":%d,\"repeat\":%d,%s,\"kernels\":%s,\"mismatches\":%llu,\"correct\":%s}\n",
              n, pairs ? "true" : "false", distribution.c_str(), seed, partitions, warmup, repeat, device_json().c_str(),
              times.json().c_str(), static_cast<unsigned long long>(wrong), wrong == 0 ? "true" : "false");
  if (wrong) fail(3, "%llu of %u keys out of place after sorting", static_cast<unsigned long long>(wrong), n);
  return 0;
}
