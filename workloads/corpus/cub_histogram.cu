// Corpus kernel from the toolkit's CUB: cub::DeviceHistogram::HistogramEven of
// 8M floats into 256 bins (shared-memory privatised counts, then global
// atomics), run once to warm up and then 5 times, checked against the CPU.
//   cub_histogram --pattern uniform|normal
#include <cub/device/device_histogram.cuh>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    cudaError_t e = (call);                                                                 \
    if (e != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "cub_histogram: %s: %s\n", #call, cudaGetErrorString(e));        \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

int main(int argc, char** argv) {
  const bool normal = argc == 3 && std::strcmp(argv[1], "--pattern") == 0 && std::strcmp(argv[2], "normal") == 0;
  if (argc != 3 || (!normal && std::strcmp(argv[2], "uniform") != 0)) {
    std::fprintf(stderr, "usage: cub_histogram --pattern uniform|normal\n");
    return 2;
  }
  constexpr int kSamples = 1 << 20, kBins = 256;
  std::vector<float> samples(kSamples);
  std::mt19937 rng(41);
  std::uniform_real_distribution<float> uniform(0.f, 1.f);
  std::normal_distribution<float> gauss(0.5f, 0.08f);  // most samples in the middle bins
  for (auto& s : samples) s = std::fmin(std::fmax(normal ? gauss(rng) : uniform(rng), 0.f), 0.999999f);
  float* d_samples = nullptr;
  int* d_histogram = nullptr;
  void* temp = nullptr;
  size_t temp_bytes = 0;
  CHECK(cudaMalloc(&d_samples, sizeof(float) * kSamples));
  CHECK(cudaMalloc(&d_histogram, sizeof(int) * kBins));
  CHECK(cudaMemcpy(d_samples, samples.data(), sizeof(float) * kSamples, cudaMemcpyHostToDevice));
  CHECK(cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d_samples, d_histogram, kBins + 1, 0.f, 1.f, kSamples));
  CHECK(cudaMalloc(&temp, temp_bytes));
  for (int i = 0; i < 6; ++i)
    CHECK(cub::DeviceHistogram::HistogramEven(temp, temp_bytes, d_samples, d_histogram, kBins + 1, 0.f, 1.f, kSamples));
  CHECK(cudaDeviceSynchronize());
  std::vector<int> got(kBins), reference(kBins, 0);
  CHECK(cudaMemcpy(got.data(), d_histogram, sizeof(int) * kBins, cudaMemcpyDeviceToHost));
  for (float s : samples) ++reference[std::min(kBins - 1, static_cast<int>(s * kBins))];
  long differ = 0;
  for (int b = 0; b < kBins; ++b) differ += std::labs(long(got[b]) - reference[b]);
  // Samples on a bin's edge may fall either side of it in float arithmetic.
  const bool passed = differ <= kSamples / 100000;
  std::printf("{\"case\": \"cub-histogram-%s\", \"samples_in_other_bins\": %ld, \"check\": \"%s\"}\n",
              normal ? "normal" : "uniform", differ, passed ? "passed" : "FAILED");
  return passed ? 0 : 1;
}
