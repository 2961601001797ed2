// Does a reduction's memory scope change what it costs? The same float adds
// in three forms that compilers emit:
//   - "gpu":     red.relaxed.gpu.global.add.f32 (REDG.E.ADD.F32.FTZ.RN.STRONG.GPU,
//                as atomicAdd in PyTorch, CuPy and CUB),
//   - "sys":     red.relaxed.sys.global.add.f32 (REDG.E.ADD.F32.FTZ.RN.STRONG.SYS,
//                as XLA's scatters),
//   - "acq_rel": atom.global.gpu.acq_rel.add.f32 with its result unused (as
//                Triton writes tl.atomic_add),
// and "none", the same kernel without its reduction (what the launch, the
// index arithmetic and the exit cost alone). Onto 65,536 floats (256 KB, which
// the L2 holds after the warm-up), in three patterns:
//   - "spread": each lane a word of its own line (32 lines a warp instruction),
//   - "line":   a warp's lanes on the 32 words of one line,
//   - "hot":    every lane of every warp on one word,
// and two shapes:
//   - "burst":  2048 CTAs of 128 threads, one reduction a thread, one wave
//               (XLA's scatter-add of 2^18 updates);
//   - "steady": 264 CTAs of 256 threads (one wave, 2 an SM), 64 a thread.
// Each point: a warm-up launch, then 31 timed one at a time with events; the
// median microseconds. `red_scope ncu` launches every point once, untimed, in
// the order of the timed run's points, for Nsight Compute's L2 counts
// (workloads/latency/run_h100.sh).
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "workloads/common/runner.cuh"
#include "workloads/latency/probe.cuh"

namespace {

constexpr unsigned kWords = 65536;
constexpr int kTimed = 31;

enum Scope { kNone = 0, kGpu = 1, kSys = 2, kAcqRel = 3 };
const char* const kScopeNames[] = {"none", "gpu", "sys", "acq_rel"};
enum Pattern { kSpread = 0, kLine = 1, kHot = 2 };
const char* const kPatternNames[] = {"spread", "line", "hot"};

struct Shape {
  const char* name;
  int ctas, threads, reds;
};
const Shape kShapes[] = {{"burst", 2048, 128, 1}, {"steady", 264, 256, 64}};

template <Scope S>
__device__ __forceinline__ void reduce(float* address, float value) {
  if constexpr (S == kGpu) asm volatile("red.relaxed.gpu.global.add.f32 [%0], %1;" ::"l"(address), "f"(value) : "memory");
  if constexpr (S == kSys) asm volatile("red.relaxed.sys.global.add.f32 [%0], %1;" ::"l"(address), "f"(value) : "memory");
  if constexpr (S == kAcqRel) {
    float old;
    asm volatile("atom.global.gpu.acq_rel.add.f32 %0, [%1], %2;" : "=f"(old) : "l"(address), "f"(value) : "memory");
  }
}

// The word of update `i` of thread `t`: a multiplicative hash keeps a warp's
// lanes on distinct lines for "spread".
__device__ __forceinline__ unsigned word_of(Pattern pattern, unsigned t, unsigned i) {
  const unsigned lane = t & 31, warp = t >> 5;
  switch (pattern) {
    case kSpread: return ((t + i * 0x9E3779B9u) * 32u + ((warp * 7 + i) & 31)) & (kWords - 1);
    case kLine: return (((warp + i * 0x9E3779B9u) * 32u) + lane) & (kWords - 1);
    default: return 0;
  }
}

template <Scope S>
__global__ void red_scope(float* words, Pattern pattern, int reds, int* sink) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned sum = 0;
  for (int i = 0; i < reds; ++i) {
    const unsigned w = word_of(pattern, t, static_cast<unsigned>(i));
    if constexpr (S == kNone) sum += w;
    else reduce<S>(words + w, 1.0f);
  }
  if constexpr (S == kNone)
    if (sum == 0xFFFFFFFFu) *sink = 1;  // keeps the index arithmetic
}

using Kernel = void (*)(float*, Pattern, int, int*);
const Kernel kKernels[] = {red_scope<kNone>, red_scope<kGpu>, red_scope<kSys>, red_scope<kAcqRel>};

}  // namespace

int main(int argc, char** argv) {
  atomsim::workload::program_name() = "red_scope";
  const bool ncu_only = argc > 1 && std::strcmp(argv[1], "ncu") == 0;
  if (argc > 2 || (argc == 2 && !ncu_only)) atomsim::workload::fail(2, "usage: red_scope [ncu]");
  atomsim::workload::require_gpu();
  float* words;
  int* sink;
  WORKLOAD_CHECK(cudaMalloc(&words, kWords * sizeof(float)));
  WORKLOAD_CHECK(cudaMemset(words, 0, kWords * sizeof(float)));
  WORKLOAD_CHECK(cudaMalloc(&sink, sizeof(int)));
  if (!ncu_only) std::printf("{\n  %s,\n  \"points\": [\n", atomsim::workload::device_json().c_str());
  bool first = true;
  for (const Shape& shape : kShapes)
    for (Pattern pattern : {kSpread, kLine, kHot})
      for (Scope scope : {kNone, kGpu, kSys, kAcqRel}) {
        auto launch = [&] { kKernels[scope]<<<shape.ctas, shape.threads>>>(words, pattern, shape.reds, sink); };
        launch();
        WORKLOAD_CHECK(cudaGetLastError());
        WORKLOAD_CHECK(cudaDeviceSynchronize());
        if (ncu_only) continue;
        std::vector<double> us;
        for (int i = 0; i < kTimed; ++i) us.push_back(1000.0 * atomsim::workload::event_milliseconds(launch));
        const double updates = double(shape.ctas) * shape.threads * shape.reds;
        std::printf("%s    {\"shape\": \"%s\", \"pattern\": \"%s\", \"scope\": \"%s\", \"updates\": %.0f, \"kernel_us\": %.3f}",
                    first ? "" : ",\n", shape.name, kPatternNames[pattern], kScopeNames[scope], scope == kNone ? 0.0 : updates,
                    median(us));
        first = false;
      }
  if (!ncu_only) std::printf("\n  ]\n}\n");
  WORKLOAD_CHECK(cudaDeviceSynchronize());
  return 0;
}
