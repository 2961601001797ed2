// Probe of how a warp's float reduction (RED) becomes L1 and L2 requests when
// its lanes share words and sectors: every warp updates its own 4 KB region,
// lane l the word (l / lanes_per_word) * word_stride, `iterations` times.
// Run under Nsight Compute (red_requests_probe.sh): l1tex and lts request and
// sector counts per RED instruction, and the kernel's duration, per pattern.
#include "workloads/common/runner.cuh"

namespace {

__global__ void red_pattern(float* target, int lanes_per_word, int word_stride, int iterations) {
  const int lane = threadIdx.x & 31;
  const std::size_t warp = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  float* word = target + warp * 1024 + (lane / lanes_per_word) * word_stride;
  for (int i = 0; i < iterations; ++i) atomicAdd(word, 1.0f);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace atomsim::workload;
  program_name() = "red_requests";
  Options o(argc, argv, {{"blocks", "528"}, {"iterations", "64"}, {"threads", "256"}},
            "[--blocks B] [--iterations I] [--threads T]");
  const int blocks = static_cast<int>(o.integer("blocks", 1, 1 << 20));
  const int threads = static_cast<int>(o.integer("threads", 32, 1024));
  if (threads % 32) fail(2, "--threads %d is not a whole number of warps", threads);
  const int iterations = static_cast<int>(o.integer("iterations", 1, 1 << 20));
  require_gpu();
  float* target = nullptr;
  const std::size_t words = std::size_t(blocks) * (threads / 32) * 1024;
  WORKLOAD_CHECK(cudaMalloc(&target, words * sizeof(float)));
  // lanes per word x words between the words a warp updates: 1 = consecutive, 8 = one per sector, 32 = one per line
  const int patterns[][2] = {{1, 1}, {2, 1}, {4, 1}, {8, 1}, {32, 1}, {1, 8}, {2, 8}, {4, 8}, {1, 32}, {4, 32}};
  std::printf("{\"patterns\":[");
  for (std::size_t p = 0; p < sizeof patterns / sizeof patterns[0]; ++p) {
    WORKLOAD_CHECK(cudaMemset(target, 0, words * sizeof(float)));
    red_pattern<<<blocks, threads>>>(target, patterns[p][0], patterns[p][1], iterations);
    WORKLOAD_CHECK(cudaGetLastError());
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    // Every word a warp updates gained lanes_per_word * iterations.
    float first = 0;
    WORKLOAD_CHECK(cudaMemcpy(&first, target, sizeof first, cudaMemcpyDeviceToHost));
    if (first != float(patterns[p][0] * iterations)) fail(3, "pattern %zu: word 0 holds %g, expected %d", p, first, patterns[p][0] * iterations);
    std::printf("%s{\"lanes_per_word\":%d,\"word_stride\":%d}", p ? "," : "", patterns[p][0], patterns[p][1]);
  }
  std::printf("],\"blocks\":%d,\"threads\":%d,\"iterations\":%d}\n", blocks, threads, iterations);
  WORKLOAD_CHECK(cudaFree(target));
  return 0;
}
