// Small kernels whose warps diverge in the ways real kernels do, to check that
// a captured trace rebuilds every warp's stream (docs/capture.md, the warp
// join): each is captured on the GPU with the trace and count passes and the
// faithfulness check sets them beside each other. Every kernel's result is
// checked against the CPU.
//  - early_exit: lanes return early on a data-dependent condition; the rest
//    add to one of 64 counters.
//  - lane_loops: each lane loops a data-dependent number of times (0-15),
//    loading as it goes, then adds its sum.
//  - nested: two levels of data-dependent branches, with an inner loop of
//    atomics and a store on the other side.
//  - partial_atomics: a quarter of the lanes add to one of 8 words, so warp
//    instructions carry few lanes and many share an address.
//  - sync_under_divergence: inside a data-dependent branch the active lanes
//    group by key with __match_any_sync, reduce with __reduce_add_sync, and
//    the group's leader adds the group's count (warp-synchronous intrinsics
//    over a partial mask).
//  - sparse_loop: a loop with a uniform trip count in which a lane adds in an
//    iteration only with probability 1/16, so many iterations of a warp
//    report nothing at all.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "workloads/common/hash.cuh"
#include "workloads/common/runner.cuh"

namespace {

using namespace atomsim::workload;

constexpr int kLoopIterations = 6;

__global__ void early_exit(const std::uint32_t* data, std::uint32_t n, std::uint32_t* out) {
  std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t v = data[i];
  if (v % 3 == 0) return;
  atomicAdd(&out[v % 64], 1u);
}

__global__ void lane_loops(const std::uint32_t* data, std::uint32_t n, std::uint32_t* out) {
  std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t trips = data[i] & 15u, sum = 0;
  for (std::uint32_t t = 0; t < trips; ++t) sum += data[(i * 7 + t) % n] >> 20;
  atomicAdd(&out[i % 32], sum);
}

__global__ void nested(const std::uint32_t* data, std::uint32_t n, std::uint32_t* out, std::uint32_t* stored) {
  std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t v = data[i];
  if (v & 1u) {
    if (v & 2u) {
      atomicAdd(&out[0], 1u);
    } else {
      for (std::uint32_t k = 0; k < ((v >> 2) & 3u); ++k) atomicAdd(&out[1 + k], 1u);
    }
  } else if (v & 4u) {
    stored[i] = v;
  }
}

__global__ void partial_atomics(const std::uint32_t* data, std::uint32_t n, std::uint32_t* out) {
  std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t v = data[i];
  if ((v & 3u) == 0) atomicAdd(&out[(v >> 4) & 7u], v >> 24);
}

__global__ void sync_under_divergence(const std::uint32_t* data, std::uint32_t n, std::uint32_t* out) {
  std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;  // n is a multiple of 32: whole warps only
  std::uint32_t v = data[i];
  if (v & 1u) {
    const std::uint32_t active = __activemask();
    const std::uint32_t key = (v >> 1) & 7u;
    const std::uint32_t peers = __match_any_sync(active, key);
    const std::uint32_t total = __reduce_add_sync(active, v >> 28);
    if ((threadIdx.x & 31u) == static_cast<std::uint32_t>(__ffs(peers) - 1)) {
      atomicAdd(&out[key], static_cast<std::uint32_t>(__popc(peers)));
    }
    if ((threadIdx.x & 31u) == static_cast<std::uint32_t>(__ffs(active) - 1)) atomicAdd(&out[8], total);
  }
}

__global__ void sparse_loop(const std::uint32_t* data, std::uint32_t n, std::uint32_t* out) {
  std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  std::uint32_t v = data[i];
  for (int it = 0; it < kLoopIterations; ++it)
    if (mix32(v + it) % 16u == 0) atomicAdd(&out[(v + it) % 16u], 1u);
}

// The CPU's result for each kernel (the device's must equal it exactly: integer adds).
std::vector<std::uint32_t> expected(const std::string& kernel, const std::vector<std::uint32_t>& data,
                                    std::vector<std::uint32_t>* stored) {
  const std::uint32_t n = static_cast<std::uint32_t>(data.size());
  std::vector<std::uint32_t> out(64, 0);
  for (std::uint32_t i = 0; i < n; ++i) {
    std::uint32_t v = data[i];
    if (kernel == "early_exit") {
      if (v % 3 != 0) out[v % 64]++;
    } else if (kernel == "lane_loops") {
      std::uint32_t sum = 0;
      for (std::uint32_t t = 0; t < (v & 15u); ++t) sum += data[(i * 7 + t) % n] >> 20;
      out[i % 32] += sum;
    } else if (kernel == "nested") {
      if (v & 1u) {
        if (v & 2u) out[0]++;
        else
          for (std::uint32_t k = 0; k < ((v >> 2) & 3u); ++k) out[1 + k]++;
      } else if (v & 4u) {
        (*stored)[i] = v;
      }
    } else if (kernel == "partial_atomics") {
      if ((v & 3u) == 0) out[(v >> 4) & 7u] += v >> 24;
    } else if (kernel == "sync_under_divergence") {
      if (v & 1u) {
        out[(v >> 1) & 7u]++;
        out[8] += v >> 28;
      }
    } else if (kernel == "sparse_loop") {
      for (int it = 0; it < kLoopIterations; ++it)
        if (mix32(v + it) % 16u == 0) out[(v + it) % 16u]++;
    }
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt(argc, argv, {{"kernel", "all"}, {"threads", "65536"}, {"seed", "1"}, {"repeat", "2"}},
              "[--kernel all|early_exit|lane_loops|nested|partial_atomics|sync_under_divergence|sparse_loop] "
              "[--threads N] [--seed S] [--repeat R]");
  const std::vector<std::string> kernels = {"early_exit", "lane_loops", "nested", "partial_atomics",
                                            "sync_under_divergence", "sparse_loop"};
  std::vector<std::string> all = kernels;
  all.push_back("all");
  const std::string which = opt.choice("kernel", all);
  const std::uint32_t n = static_cast<std::uint32_t>(opt.integer("threads", 32, 1 << 26) / 32 * 32);
  const int repeat = static_cast<int>(opt.integer("repeat", 1, 1000));
  require_gpu();

  std::mt19937 rng(static_cast<std::uint32_t>(opt.integer("seed", 0, 1u << 31)));
  std::vector<std::uint32_t> data(n);
  for (auto& v : data) v = rng();
  std::uint32_t *d_data = nullptr, *d_out = nullptr, *d_stored = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&d_data, n * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&d_out, 64 * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&d_stored, n * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMemcpy(d_data, data.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice));

  const unsigned threads = 256, blocks = (n + threads - 1) / threads;
  int failures = 0;
  std::printf("{%s,\"threads\":%u,\"kernels\":{", device_json().c_str(), n);
  bool first = true;
  for (const std::string& k : kernels) {
    if (which != "all" && which != k) continue;
    std::vector<std::uint32_t> got(64), stored(n);
    for (int r = 0; r < repeat; ++r) {  // each launch starts from zeroed outputs; the last is checked
      WORKLOAD_CHECK(cudaMemset(d_out, 0, 64 * sizeof(std::uint32_t)));
      WORKLOAD_CHECK(cudaMemset(d_stored, 0, n * sizeof(std::uint32_t)));
      if (k == "early_exit") early_exit<<<blocks, threads>>>(d_data, n, d_out);
      if (k == "lane_loops") lane_loops<<<blocks, threads>>>(d_data, n, d_out);
      if (k == "nested") nested<<<blocks, threads>>>(d_data, n, d_out, d_stored);
      if (k == "partial_atomics") partial_atomics<<<blocks, threads>>>(d_data, n, d_out);
      if (k == "sync_under_divergence") sync_under_divergence<<<blocks, threads>>>(d_data, n, d_out);
      if (k == "sparse_loop") sparse_loop<<<blocks, threads>>>(d_data, n, d_out);
      WORKLOAD_CHECK(cudaGetLastError());
      WORKLOAD_CHECK(cudaDeviceSynchronize());
    }
    WORKLOAD_CHECK(cudaMemcpy(got.data(), d_out, 64 * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    WORKLOAD_CHECK(cudaMemcpy(stored.data(), d_stored, n * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    std::vector<std::uint32_t> want_stored(n, 0);
    bool ok = got == expected(k, data, &want_stored) && stored == want_stored;
    failures += !ok;
    std::printf("%s\"%s\":{\"check\":\"%s\"}", first ? "" : ",", k.c_str(), ok ? "passed" : "FAILED");
    first = false;
  }
  std::printf("}}\n");
  if (failures) fail(3, "%d kernel(s) disagree with the CPU", failures);
  return 0;
}
