// Probe of how a warp's float reduction (RED) becomes L1 and L2 requests when
// its lanes share words and sectors: every warp updates its own 4 KB region,
// lane l the word (l / lanes_per_word) * word_stride, `iterations` times.
// Run under Nsight Compute (red_requests_probe.sh): l1tex and lts request and
// sector counts per RED instruction, and the kernel's duration, per pattern.
//
// Two options ask what a warp's update waits for before it may update the
// same words again: --warps-per-region W lets W consecutive warps share one
// region (is the wait the warp's or the words'?), --regions R has a warp go
// round R regions of its own, update i in region i mod R (does an update to
// other words wait too?). --op store writes the words instead; --op atom
// adds with atomics whose old values the warp sums (ATOMs, not REDs).
#include "workloads/common/runner.cuh"

namespace {

__global__ void red_pattern(float* target, int lanes_per_word, int word_stride, int iterations) {
  const int lane = threadIdx.x & 31;
  const std::size_t warp = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  float* word = target + warp * 1024 + (lane / lanes_per_word) * word_stride;
  for (int i = 0; i < iterations; ++i) atomicAdd(word, 1.0f);
}

enum class Update { Red, Store, Atom };

// regions is a power of two.
template <Update kUpdate>
__global__ void shared_regions(float* target, int lanes_per_word, int word_stride, int iterations, int warps_per_region, int regions) {
  const int lane = threadIdx.x & 31;
  const std::size_t warp = (std::size_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  float* word = target + (warp / warps_per_region) * 1024 * regions + (lane / lanes_per_word) * word_stride;
  float old = 0;
  for (int i = 0; i < iterations; ++i) {
    float* at = word + (i & (regions - 1)) * 1024;
    if (kUpdate == Update::Store) asm volatile("st.global.f32 [%0], %1;" ::"l"(at), "f"(float(i)) : "memory");  // a plain STG, none dropped
    else if (kUpdate == Update::Atom) old += atomicAdd(at, 1.0f);
    else atomicAdd(at, 1.0f);
  }
  if (kUpdate == Update::Atom && old < 0) target[0] = old;  // never: the old values are used, so the atomics return them
}

}  // namespace

int main(int argc, char** argv) {
  using namespace atomsim::workload;
  program_name() = "red_requests";
  Options o(argc, argv,
            {{"blocks", "528"}, {"iterations", "64"}, {"threads", "256"}, {"warps-per-region", "1"}, {"regions", "1"}, {"op", "red"}},
            "[--blocks B] [--iterations I] [--threads T] [--warps-per-region W] [--regions R] [--op red|store|atom]");
  const int blocks = static_cast<int>(o.integer("blocks", 1, 1 << 20));
  const int threads = static_cast<int>(o.integer("threads", 32, 1024));
  if (threads % 32) fail(2, "--threads %d is not a whole number of warps", threads);
  const int iterations = static_cast<int>(o.integer("iterations", 1, 1 << 20));
  const int warps_per_region = static_cast<int>(o.integer("warps-per-region", 1, 32));
  if ((threads / 32) % warps_per_region) fail(2, "--warps-per-region %d does not divide a CTA's %d warps", warps_per_region, threads / 32);
  const int regions = static_cast<int>(o.integer("regions", 1, 64));
  if (regions & (regions - 1)) fail(2, "--regions %d is not a power of two", regions);
  if (iterations % regions) fail(2, "--iterations %d is not a multiple of --regions %d", iterations, regions);
  const std::string op = o.choice("op", {"red", "store", "atom"});
  const bool store = op == "store";
  const bool default_kernel = warps_per_region == 1 && regions == 1 && op == "red";
  require_gpu();
  float* target = nullptr;
  const std::size_t words = std::size_t(blocks) * (threads / 32) / warps_per_region * 1024 * regions;
  WORKLOAD_CHECK(cudaMalloc(&target, words * sizeof(float)));
  // lanes per word x words between the words a warp updates: 1 = consecutive, 8 = one per sector, 32 = one per line
  const int patterns[][2] = {{1, 1}, {2, 1}, {4, 1}, {8, 1}, {32, 1}, {1, 8}, {2, 8}, {4, 8}, {1, 32}, {4, 32}};
  std::printf("{\"patterns\":[");
  for (std::size_t p = 0; p < sizeof patterns / sizeof patterns[0]; ++p) {
    const int lanes_per_word = patterns[p][0], word_stride = patterns[p][1];
    WORKLOAD_CHECK(cudaMemset(target, 0, words * sizeof(float)));
    if (default_kernel) red_pattern<<<blocks, threads>>>(target, lanes_per_word, word_stride, iterations);
    else if (store) shared_regions<Update::Store><<<blocks, threads>>>(target, lanes_per_word, word_stride, iterations, warps_per_region, regions);
    else if (op == "atom") shared_regions<Update::Atom><<<blocks, threads>>>(target, lanes_per_word, word_stride, iterations, warps_per_region, regions);
    else shared_regions<Update::Red><<<blocks, threads>>>(target, lanes_per_word, word_stride, iterations, warps_per_region, regions);
    WORKLOAD_CHECK(cudaGetLastError());
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    // REDs: every word a region's warps update gained lanes_per_word * iterations / regions from each;
    // stores: the last store to region 0 wrote the last iteration that lands there.
    float first = 0;
    WORKLOAD_CHECK(cudaMemcpy(&first, target, sizeof first, cudaMemcpyDeviceToHost));
    const float expected = store ? float(iterations - regions) : float(warps_per_region * lanes_per_word * (iterations / regions));
    if (first != expected) fail(3, "pattern %zu: word 0 holds %g, expected %g", p, first, expected);
    std::printf("%s{\"lanes_per_word\":%d,\"word_stride\":%d}", p ? "," : "", lanes_per_word, word_stride);
  }
  std::printf("],\"blocks\":%d,\"threads\":%d,\"iterations\":%d", blocks, threads, iterations);
  if (!default_kernel)
    std::printf(",\"kernel\":\"shared_regions\",\"warps_per_region\":%d,\"regions\":%d,\"op\":\"%s\"", warps_per_region, regions,
                op.c_str());
  std::printf("}\n");
  WORKLOAD_CHECK(cudaFree(target));
  return 0;
}
