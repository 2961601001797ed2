// Stores under load: every SM's warps stream stores, each warp instruction
// writing WIDTH words per lane, `lanes_per_line` lanes to a line, so an
// instruction covers 32 / lanes_per_line lines: one word per line (a sector
// written in part, the way a radix sort's scatter writes), 16 bytes per line
// (in part), a whole sector per line (8 words, or 2 lanes of 16 bytes), or a
// whole line. The lines of the GPU's store sequence are scattered over the
// window by an odd multiplier (every line once per pass), so they spread over
// the L2 slices as a scatter's do. The window is the L2's 8 MB (written by the
// launch before, so every line is in the L2) or 2 GB after a flush (every
// line new). It reports line requests and bytes each SM sends per SM cycle
// (clock64 per warp, the median warp) and the GPU's bytes per nanosecond
// (events), on all SMs and on a few (what one SM can send against what the
// slices take). Warm-up launch first, median of repeats.
// The split points write a sector in eight parts: each pass over the window
// (every line once) stores the next word of the line's first sector, into
// windows of 8 MB to 2 GB after a flush that leaves the L2 holding clean lines
// only; whether the L2 reads a sector it lacks when a store first writes part
// of it, and how much of a window of written lines it keeps, show in DRAM's
// counts (Nsight Compute). The 64 MB and 2 GB windows also run with 8 and 16
// warps an SM (does the rate follow the stores in flight, or a unit's
// limit?), and a mixed point has two warps in three write whole sectors of a
// second window, so that DRAM writes two sectors for each it reads with no
// line kept in the L2 (is a mix of reads and writes that leans to writes what
// slows DRAM?).
// `stores ncu` runs each point's launch once, for Nsight Compute; `stores
// split [ncu]` the split points alone.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "workloads/latency/probe.cuh"
#include "workloads/latency/streamed_memory.cuh"

constexpr int kStores = 4;           // stores a trip, unrolled
constexpr int kWarpsPerSm = 32;      // four CTAs of eight warps
constexpr int kWarpsPerCta = 8;

template <int WIDTH>
struct Words;
template <>
struct Words<1> {
  using type = unsigned;
};
template <>
struct Words<4> {
  using type = uint4;
};

template <int WIDTH>
__global__ void stream_stores(unsigned* data, unsigned window_lines_mask, unsigned lanes_per_line, int iterations, long long* cycles) {
  using Word = typename Words<WIDTH>::type;
  const unsigned warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  const unsigned lines_per_store = 32 / lanes_per_line;
  // Sequence number of this lane's line in the GPU's k-th store of trip t.
  unsigned sequence = warp * lines_per_store + lane / lanes_per_line;
  const unsigned sequence_step = warps * lines_per_store;
  const unsigned offset_words = (lane % lanes_per_line) * WIDTH;
  Word value{};
  reinterpret_cast<unsigned*>(&value)[0] = lane;
  const long long t0 = clock64();
#pragma unroll 1
  for (int t = 0; t < iterations; ++t) {
#pragma unroll
    for (int k = 0; k < kStores; ++k) {
      const unsigned line = (sequence * 2654435761u) & window_lines_mask;
      *reinterpret_cast<Word*>(data + line * 32 + offset_words) = value;
      sequence += sequence_step;
    }
  }
  const long long t1 = clock64();
  if (lane == 0) cycles[warp] = t1 - t0;
}

// The line a split point's `sequence` lands on: every line of a window of
// `window_lines` once a pass (the multiplier, a prime, shares no factor with
// the window's lines).
__device__ unsigned scattered_line(unsigned sequence, unsigned window_lines) {
  return unsigned(std::uint64_t(sequence % window_lines) * 2654435761u % window_lines);
}

// The split points: one word a line, the pass over the window (every line
// once) picking the word of the line's first sector. With `mixed`, the warps
// but every third instead write whole sectors, two lanes of 16 bytes a line,
// into a second window as large after the first.
__global__ void split_stores(unsigned* data, unsigned window_lines, int iterations, long long* cycles, bool mixed) {
  const unsigned warps = gridDim.x * blockDim.x / 32, warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  const long long t0 = clock64();
  if (mixed && warp % 3 != 0) {
    unsigned sequence = warp * 16 + lane / 2;
    const uint4 value{lane, 0, 0, 0};
#pragma unroll 1
    for (int t = 0; t < iterations; ++t) {
#pragma unroll
      for (int k = 0; k < kStores; ++k) {
        const unsigned line = window_lines + scattered_line(sequence, window_lines);
        *reinterpret_cast<uint4*>(data + std::size_t(line) * 32 + (lane % 2) * 4) = value;
        sequence += warps * 16;
      }
    }
  } else {
    unsigned sequence = warp * 32 + lane;
#pragma unroll 1
    for (int t = 0; t < iterations; ++t) {
#pragma unroll
      for (int k = 0; k < kStores; ++k) {
        data[std::size_t(scattered_line(sequence, window_lines)) * 32 + (sequence / window_lines) % 8] = lane;
        sequence += warps * 32;
      }
    }
  }
  const long long t1 = clock64();
  if (lane == 0) cycles[warp] = t1 - t0;
}

struct Shape {
  bool to_dram;
  int width_words, lanes_per_line, active_sms;
};

template <int WIDTH>
LaunchRates measure(const StreamedMemory& memory, const Shape& s, long long* d_cycles, int repeats) {
  const int ctas = s.active_sms * (kWarpsPerSm / kWarpsPerCta), warps = ctas * kWarpsPerCta;
  const unsigned lines_per_store = 32 / s.lanes_per_line;
  // About 64K line requests per SM, at least 4 trips.
  const int iterations = std::max(4, int(65536 / (kWarpsPerSm * kStores * lines_per_store)));
  const double requests_per_sm = double(kWarpsPerSm) * iterations * kStores * lines_per_store;
  const double bytes = double(warps) * iterations * kStores * 32 * WIDTH * 4;
  const std::size_t window_bytes = s.to_dram ? StreamedMemory::kDramBytes : StreamedMemory::kL2WindowBytes;
  const unsigned window_lines_mask = unsigned(window_bytes / 128 - 1);
  std::vector<long long> c(warps);
  return repeated_launches(
      [&](int r) {
        if (s.to_dram) memory.flush_l2(r);
        return timed_launch(
            [&] { stream_stores<WIDTH><<<ctas, 32 * kWarpsPerCta>>>(memory.data, window_lines_mask, s.lanes_per_line, iterations, d_cycles); },
            d_cycles, c);
      },
      repeats, c, requests_per_sm, bytes, 32.0 * WIDTH * 4 / lines_per_store);
}

struct SplitShape {
  std::size_t window_mb;
  int warps_per_sm;
  bool mixed;  // two warps in three write whole sectors of a second window
};

// 65,536 line requests an SM (the mixed point's warps of whole sectors a half
// of it each), after a flush that leaves the L2 holding clean lines only.
LaunchRates measure_split(const StreamedMemory& memory, const SplitShape& s, int sms, long long* d_cycles, int repeats) {
  const int ctas = sms * (s.warps_per_sm / kWarpsPerCta), warps = ctas * kWarpsPerCta;
  const int iterations = 65536 / (s.warps_per_sm * kStores * 32);
  const int whole_sector_warps = s.mixed ? warps - (warps + 2) / 3 : 0;
  const double lines = double(iterations) * kStores * (32.0 * (warps - whole_sector_warps) + 16.0 * whole_sector_warps);
  const double bytes = double(iterations) * kStores * 32 * 4 * (warps - whole_sector_warps) + double(iterations) * kStores * 32 * 16 * whole_sector_warps;
  const unsigned window_lines = unsigned((s.window_mb << 20) / 128);
  std::vector<long long> c(warps);
  return repeated_launches(
      [&](int) {
        memory.flush_l2_clean(sms);
        return timed_launch([&] { split_stores<<<ctas, 32 * kWarpsPerCta>>>(memory.data, window_lines, iterations, d_cycles, s.mixed); },
                            d_cycles, c);
      },
      repeats, c, lines / sms, bytes, bytes / lines);
}

int main(int argc, char** argv) {
  atomsim::workload::program_name() = "stores";
  bool split_only = false, ncu_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "split") == 0 && i == 1)
      split_only = true;
    else if (std::strcmp(argv[i], "ncu") == 0 && i == argc - 1)
      ncu_only = true;
    else
      atomsim::workload::fail(2, "usage: stores [split] [ncu]");
  }
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const StreamedMemory memory;
  long long* d_cycles;
  WORKLOAD_CHECK(cudaMalloc(&d_cycles, size_t(sms) * kWarpsPerSm * sizeof(long long)));
  // Word, 16 bytes, a sector (8 words or 2 x 16 bytes) and a line per line,
  // into the L2 and into DRAM, on every SM; the word and sector patterns also
  // on 16 and 33 SMs.
  std::vector<Shape> shapes;
  for (const bool to_dram : {false, true}) {
    for (const auto& [width, lanes] : {std::pair{1, 1}, {4, 1}, {1, 8}, {4, 2}, {1, 32}}) shapes.push_back({to_dram, width, lanes, sms});
    for (const int active : {16, 33})
      for (const auto& [width, lanes] : {std::pair{1, 1}, {4, 2}}) shapes.push_back({to_dram, width, lanes, active});
  }
  if (split_only) shapes.clear();
  // The split points: windows around the L2's size and past it, the 64 MB and
  // 2 GB windows with fewer warps too, and the mixed point (two windows of 1 GB).
  std::vector<SplitShape> split_shapes;
  for (const std::size_t mb : {8, 16, 32, 48, 64, 96, 128, 256, 2048}) split_shapes.push_back({mb, kWarpsPerSm, false});
  for (const std::size_t mb : {64, 2048})
    for (const int warps : {8, 16}) split_shapes.push_back({mb, warps, false});
  split_shapes.push_back({1024, kWarpsPerSm, true});
  if (!ncu_only) std::printf("{\n  \"sms\": %d,\n  \"warps_per_sm\": %d,\n  \"stores_in_flight\": %d,\n  \"points\": [\n", sms, kWarpsPerSm, kStores);
  const int repeats = ncu_only ? 2 : 8;
  const char* separator = "";
  auto print = [&](const LaunchRates& p) {
    std::printf("\"requests_per_sm_cycle\": %.4f, \"bytes_per_sm_cycle\": %.2f, \"bytes_per_ns\": %.1f}", p.units_per_sm_cycle,
                p.amount_per_sm_cycle, p.amount_per_ns);
    separator = ",\n";
  };
  for (const Shape& s : shapes) {
    const LaunchRates p = s.width_words == 1 ? measure<1>(memory, s, d_cycles, repeats) : measure<4>(memory, s, d_cycles, repeats);
    if (ncu_only) continue;
    std::printf("%s    {\"target\": \"%s\", \"bytes_per_lane\": %d, \"lanes_per_line\": %d, \"active_sms\": %d, ", separator,
                s.to_dram ? "dram" : "l2", 4 * s.width_words, s.lanes_per_line, s.active_sms);
    print(p);
  }
  for (const SplitShape& s : split_shapes) {
    const LaunchRates p = measure_split(memory, s, sms, d_cycles, repeats);
    if (ncu_only) continue;
    std::printf("%s    {\"target\": \"split\", \"window_mb\": %zu, \"warps_per_sm\": %d, \"mixed\": %s, \"active_sms\": %d, ", separator,
                s.window_mb, s.warps_per_sm, s.mixed ? "true" : "false", sms);
    print(p);
  }
  if (!ncu_only) std::printf("\n  ]\n}\n");
  return 0;
}
