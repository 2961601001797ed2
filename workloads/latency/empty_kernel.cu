// Launch overhead probe: launches a kernel that does nothing, so that the GPU's
// own duration of it (measured by `atomsim-capture --pass timing`) is the fixed
// cost every kernel pays: front-end launch, CTA rasterization, and the
// completion flush. Usage: empty_kernel BLOCKS THREADS LAUNCHES
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel() {}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: empty_kernel BLOCKS THREADS LAUNCHES\n");
    return 2;
  }
  int blocks = std::atoi(argv[1]), threads = std::atoi(argv[2]), launches = std::atoi(argv[3]);
  for (int i = 0; i < launches; ++i) {
    empty_kernel<<<blocks, threads>>>();
    // One at a time, as the microbenchmark runner launches them.
    cudaError_t err = cudaDeviceSynchronize();
    if (err != cudaSuccess) {
      std::fprintf(stderr, "empty_kernel: %s\n", cudaGetErrorString(err));
      return 1;
    }
  }
  return 0;
}
