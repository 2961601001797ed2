// DRAM under mixes of reads and writes: every SM's 32 warps each loop over
// READS loads and WRITES stores of 32, 64 or 128 bytes a line (two, four or
// eight lanes of 16 bytes, from the line's start), the loads' lines scattered by an odd
// multiplier over one gigabyte and the stores' over a second, after a flush
// that leaves the L2 holding clean lines only. No line is read or written
// twice within the L2's reach, so every load is a sector read from DRAM and
// every store a sector DRAM writes when its line leaves: the mix of reads and
// writes DRAM serves is READS : WRITES, from reads alone to writes alone. Does
// DRAM take a sector at the same cost whatever the mix (the model's channels
// do), or do writes among reads cost more? The loads of an iteration are all
// issued before the stores and before any is used, so that each warp keeps
// READS loads in flight. It reports the GPU's line accesses a nanosecond
// (events, the launch's accesses over its time) and each SM's a cycle
// (clock64, the median warp). Warm-up launch first, median of repeats.
// `dram_mix [ncu] [GRANULARITY]`: with ncu, each point runs once for Nsight
// Compute's DRAM counts; GRANULARITY (32, 64 or 128) sets the L2's fetch
// granularity hint (cudaLimitMaxL2FetchGranularity), which decides how much of
// a line a load that misses reads from DRAM. A last point has every lane add
// to the first word of a line of its own (REDs, 4 in flight a warp): what an
// atomic that misses reads from DRAM.
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "workloads/latency/probe.cuh"
#include "workloads/latency/streamed_memory.cuh"

constexpr int kWarpsPerSm = 32;  // four CTAs of eight warps
constexpr int kWarpsPerCta = 8;
constexpr unsigned kWindowLines = (1u << 30) / 128;  // a gigabyte each for loads and stores
constexpr unsigned kSentinel = 0x9e3779b9u;

template <int READS, int WRITES, int BYTES>
__global__ void mixed_sectors(unsigned* data, int iterations, long long* cycles, unsigned* sink) {
  constexpr unsigned kLanesPerLine = BYTES / 16, kLinesPerInst = 32 / kLanesPerLine;
  const unsigned warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  unsigned read_sequence = warp * kLinesPerInst + lane / kLanesPerLine, write_sequence = read_sequence;
  const unsigned step = warps * kLinesPerInst, offset = (lane % kLanesPerLine) * 4;
  const uint4 value{lane, 1, 2, 3};
  uint4 sum{};
  const long long t0 = clock64();
#pragma unroll 1
  for (int t = 0; t < iterations; ++t) {
    uint4 loaded[READS > 0 ? READS : 1];
#pragma unroll
    for (int k = 0; k < READS; ++k) {
      const unsigned line = (read_sequence * 2654435761u) & (kWindowLines - 1);
      loaded[k] = *reinterpret_cast<const uint4*>(data + std::size_t(line) * 32 + offset);
      read_sequence += step;
    }
#pragma unroll
    for (int k = 0; k < WRITES; ++k) {
      const unsigned line = kWindowLines + ((write_sequence * 2654435761u) & (kWindowLines - 1));
      *reinterpret_cast<uint4*>(data + std::size_t(line) * 32 + offset) = value;
      write_sequence += step;
    }
#pragma unroll
    for (int k = 0; k < READS; ++k) sum.x ^= loaded[k].x ^ loaded[k].y ^ loaded[k].z ^ loaded[k].w;
  }
  const long long t1 = clock64();
  if (sum.x == kSentinel) *sink = sum.x;
  if (lane == 0) cycles[warp] = t1 - t0;
}

__global__ void scattered_reds(unsigned* data, int iterations, long long* cycles) {
  const unsigned warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  unsigned sequence = warp * 32 + lane;
  const long long t0 = clock64();
#pragma unroll 1
  for (int t = 0; t < iterations; ++t) {
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      atomicAdd(data + std::size_t((sequence * 2654435761u) & (kWindowLines - 1)) * 32, 1u);
      sequence += warps * 32;
    }
  }
  const long long t1 = clock64();
  if (lane == 0) cycles[warp] = t1 - t0;
}

// Runs each point after a clean flush (repeated_launches: the first launch a
// warm-up) and prints the median warp's line accesses an SM cycle and the
// GPU's a nanosecond (events) with the point's own fields.
struct Runner {
  const StreamedMemory& memory;
  int sms;
  long long* d_cycles;
  int repeats;
  bool ncu_only;
  int granularity;
  const char* separator = "";

  int ctas() const { return sms * (kWarpsPerSm / kWarpsPerCta); }
  template <class Launch>
  void point(Launch launch, double accesses_per_sm, const std::string& fields) {
    std::vector<long long> c(size_t(ctas()) * kWarpsPerCta);
    const LaunchRates rates = repeated_launches(
        [&](int) {
          memory.flush_l2_clean(sms);
          return timed_launch(launch, d_cycles, c);
        },
        repeats, c, accesses_per_sm, accesses_per_sm * sms, 1);
    if (ncu_only) return;
    std::printf("%s    {\"granularity\": %d, %s, \"accesses_per_sm\": %.0f, \"accesses_per_sm_cycle\": %.4f, \"accesses_per_ns\": %.3f}",
                separator, granularity, fields.c_str(), accesses_per_sm, rates.units_per_sm_cycle, rates.amount_per_ns);
    separator = ",\n";
  }
  // 512 load or store instructions a warp (8,192 line accesses an SM of
  // 32-byte points, 34.6 M sectors on 132 SMs, over a gigabyte each way at the
  // mixes of both): long enough that the L2's first filling with written
  // lines, and the dirty lines it holds at the end, are a few percent.
  template <int READS, int WRITES, int BYTES>
  void mixed() {
    const int iterations = 512 / (READS + WRITES);
    point([&] { mixed_sectors<READS, WRITES, BYTES><<<ctas(), 32 * kWarpsPerCta>>>(memory.data, iterations, d_cycles, memory.scratch); },
          double(kWarpsPerSm) * iterations * (32 * 16 / BYTES) * (READS + WRITES),
          "\"bytes\": " + std::to_string(BYTES) + ", \"reads\": " + std::to_string(READS) + ", \"writes\": " + std::to_string(WRITES));
  }
  // 64 trips of 4 REDs a warp, 262,144 lines an SM.
  void reds() {
    const int iterations = 64;
    point([&] { scattered_reds<<<ctas(), 32 * kWarpsPerCta>>>(memory.data, iterations, d_cycles); },
          double(kWarpsPerSm) * iterations * 4 * 32, "\"op\": \"red\", \"bytes\": 4, \"reads\": 0, \"writes\": 0");
  }
};

int main(int argc, char** argv) {
  atomsim::workload::program_name() = "dram_mix";
  bool ncu_only = false;
  int granularity = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "ncu") == 0)
      ncu_only = true;
    else if (std::strcmp(argv[i], "32") == 0 || std::strcmp(argv[i], "64") == 0 || std::strcmp(argv[i], "128") == 0)
      granularity = std::atoi(argv[i]);
    else
      atomsim::workload::fail(2, "usage: dram_mix [ncu] [32|64|128]");
  }
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  if (granularity) WORKLOAD_CHECK(cudaDeviceSetLimit(cudaLimitMaxL2FetchGranularity, granularity));
  std::size_t limit = 0;
  WORKLOAD_CHECK(cudaDeviceGetLimit(&limit, cudaLimitMaxL2FetchGranularity));
  granularity = static_cast<int>(limit);
  const StreamedMemory memory;
  long long* d_cycles;
  WORKLOAD_CHECK(cudaMalloc(&d_cycles, size_t(sms) * kWarpsPerSm * sizeof(long long)));
  const int repeats = ncu_only ? 2 : 6;
  if (!ncu_only) std::printf("{\n  \"sms\": %d,\n  \"warps_per_sm\": %d,\n  \"points\": [\n", sms, kWarpsPerSm);
  Runner run{memory, sms, d_cycles, repeats, ncu_only, granularity};
  run.mixed<4, 0, 32>();
  run.mixed<3, 1, 32>();
  run.mixed<2, 1, 32>();
  run.mixed<1, 1, 32>();
  run.mixed<1, 2, 32>();
  run.mixed<1, 3, 32>();
  run.mixed<0, 2, 32>();
  run.mixed<4, 0, 64>();
  run.mixed<1, 1, 64>();
  run.mixed<0, 2, 64>();
  run.mixed<4, 0, 128>();
  run.mixed<1, 1, 128>();
  run.mixed<0, 2, 128>();
  run.reds();
  if (!ncu_only) std::printf("\n  ]\n}\n");
  return 0;
}
