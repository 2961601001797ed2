// One atomic histogram kernel launched the ways libraries launch kernels, for
// the capture suite (tools/capture/capture_suite.sh): with cudaLaunchKernelEx
// and a thread-block cluster attribute (as CUTLASS and Triton 3 launch),
// with cudaLaunchCooperativeKernel, and as a node of an explicitly built CUDA
// graph beside another kernel. Each mode launches it 4 times and checks the
// bins against a float64 sum on the host.
//
//   launch_apis --mode cluster|cooperative|explicit-graph [--elements N] [--bins B]
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "workloads/common/runner.cuh"

#define CHECK WORKLOAD_CHECK

__global__ void histogram(const unsigned* keys, const float* values, float* bins, int n, int nbins) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&bins[keys[i] % nbins], values[i]);
}

__global__ void scale(float* values, int n, float by) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) values[i] *= by;
}

int main(int argc, char** argv) {
  const atomsim::workload::Options options(argc, argv, {{"mode", ""}, {"elements", "1048576"}, {"bins", "4096"}},
                                           "launch_apis --mode cluster|cooperative|explicit-graph [--elements N] [--bins B]");
  const std::string mode = options.choice("mode", {"cluster", "cooperative", "explicit-graph"});
  int n = static_cast<int>(options.integer("elements", 1, 1 << 28));
  int nbins = static_cast<int>(options.integer("bins", 1, 1 << 24));
  std::vector<unsigned> keys(n);
  std::vector<float> values(n);
  unsigned s = 12345;
  for (int i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    keys[i] = s >> 8;
    values[i] = static_cast<float>((s >> 20) & 1023) / 1024.0f - 0.5f;
  }
  unsigned* d_keys;
  float *d_values, *d_bins;
  CHECK(cudaMalloc(&d_keys, n * sizeof(unsigned)));
  CHECK(cudaMalloc(&d_values, n * sizeof(float)));
  CHECK(cudaMalloc(&d_bins, nbins * sizeof(float)));
  CHECK(cudaMemcpy(d_keys, keys.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_values, values.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(d_bins, 0, nbins * sizeof(float)));
  const int threads = 256, blocks = 264;
  const int times = 4;
  double factor = times;
  if (mode == "cluster") {
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(blocks);
    config.blockDim = dim3(threads);
    cudaLaunchAttribute attribute{};
    attribute.id = cudaLaunchAttributeClusterDimension;
    attribute.val.clusterDim.x = 2;
    attribute.val.clusterDim.y = 1;
    attribute.val.clusterDim.z = 1;
    config.attrs = &attribute;
    config.numAttrs = 1;
    for (int t = 0; t < times; ++t) CHECK(cudaLaunchKernelEx(&config, histogram, d_keys, d_values, d_bins, n, nbins));
  } else if (mode == "cooperative") {
    void* args[] = {&d_keys, &d_values, &d_bins, &n, &nbins};
    for (int t = 0; t < times; ++t)
      CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<void*>(histogram), dim3(blocks), dim3(threads), args, 0, 0));
  } else {
    // scale(values, 1) then histogram, as two nodes of one graph, launched 4 times.
    cudaGraph_t graph;
    CHECK(cudaGraphCreate(&graph, 0));
    float one = 1.0f;
    void* scale_args[] = {&d_values, &n, &one};
    cudaKernelNodeParams scale_node{};
    scale_node.func = reinterpret_cast<void*>(scale);
    scale_node.gridDim = dim3((n + threads - 1) / threads);
    scale_node.blockDim = dim3(threads);
    scale_node.kernelParams = scale_args;
    void* histogram_args[] = {&d_keys, &d_values, &d_bins, &n, &nbins};
    cudaKernelNodeParams histogram_node = scale_node;
    histogram_node.func = reinterpret_cast<void*>(histogram);
    histogram_node.gridDim = dim3(blocks);
    histogram_node.kernelParams = histogram_args;
    cudaGraphNode_t first, second;
    CHECK(cudaGraphAddKernelNode(&first, graph, nullptr, 0, &scale_node));
    CHECK(cudaGraphAddKernelNode(&second, graph, &first, 1, &histogram_node));
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int t = 0; t < times; ++t) CHECK(cudaGraphLaunch(exec, 0));
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
  }
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  std::vector<float> bins(nbins);
  CHECK(cudaMemcpy(bins.data(), d_bins, nbins * sizeof(float), cudaMemcpyDeviceToHost));
  std::vector<double> reference(nbins, 0.0);
  for (int i = 0; i < n; ++i) reference[keys[i] % nbins] += values[i] * factor;
  double diff = 0, norm = 0, along = 0;
  for (int b = 0; b < nbins; ++b) {
    diff += (bins[b] - reference[b]) * (bins[b] - reference[b]);
    norm += reference[b] * reference[b];
    along += bins[b] * reference[b];
  }
  const double error = std::sqrt(diff / norm);
  // How many launches' worth the bins hold, to tell a lost launch from a repeated one.
  const double launches_in_result = times * along / norm;
  std::printf("{\"case\": \"launch-%s\", \"relative_error\": %.3g, \"launches_in_result\": %.3f, \"check\": \"%s\"}\n",
              mode.c_str(), error, launches_in_result, error < 1e-4 ? "passed" : "FAILED");
  return error < 1e-4 ? 0 : 1;
}
