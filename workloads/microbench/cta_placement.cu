// Probe of where the GPU's CTA scheduler puts the CTAs of a small launch:
// each CTA's thread 0 records the SM it runs on (%smid), then the CTA spins
// for `spin_cycles` so that no CTA ends before the launch's last starts (all
// land as the first wave would). Prints one JSON line per launch size:
// {"blocks":B,"threads":T,"sm":[SM of CTA 0, 1, ...]}. On the H100 two SMs
// share a TPC (SMs 2k and 2k+1), which red_requests rows of 8 to 53 CTAs
// need to know. On a GPU machine, from the repository root:
//   nvcc -O3 -arch=sm_90 -I. -o cta_placement workloads/microbench/cta_placement.cu
//   ./cta_placement --threads 256 > cta_placement-t256.jsonl
#include "workloads/common/runner.cuh"

#include <vector>

namespace {

__global__ void where(unsigned* sm_of_cta, long long spin_cycles) {
  if (threadIdx.x == 0) {
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    sm_of_cta[blockIdx.x] = sm;
  }
  const long long start = clock64();
  while (clock64() - start < spin_cycles) {
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace atomsim::workload;
  program_name() = "cta_placement";
  Options o(argc, argv, {{"threads", "256"}, {"spin-cycles", "200000"}}, "[--threads T] [--spin-cycles C]");
  const int threads = static_cast<int>(o.integer("threads", 32, 1024));
  const long long spin = o.integer("spin-cycles", 0, 1ll << 34);
  require_gpu();
  const int sizes[] = {1, 8, 16, 33, 53, 66, 132, 264, 528};
  unsigned* sm_of_cta = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&sm_of_cta, 528 * sizeof(unsigned)));
  for (int blocks : sizes) {
    WORKLOAD_CHECK(cudaMemset(sm_of_cta, 0xFF, 528 * sizeof(unsigned)));
    where<<<blocks, threads>>>(sm_of_cta, spin);
    WORKLOAD_CHECK(cudaGetLastError());
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    std::vector<unsigned> sm(blocks);
    WORKLOAD_CHECK(cudaMemcpy(sm.data(), sm_of_cta, blocks * sizeof(unsigned), cudaMemcpyDeviceToHost));
    std::printf("{\"blocks\":%d,\"threads\":%d,\"sm\":[", blocks, threads);
    for (int b = 0; b < blocks; ++b) {
      if (sm[b] == 0xFFFFFFFFu) fail(3, "CTA %d of %d recorded no SM", b, blocks);
      std::printf("%s%u", b ? "," : "", sm[b]);
    }
    std::printf("]}\n");
  }
  WORKLOAD_CHECK(cudaFree(sm_of_cta));
  return 0;
}
