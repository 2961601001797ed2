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
// counts (Nsight Compute).
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
__global__ void stream_stores(unsigned* data, unsigned window_lines_mask, unsigned lanes_per_line, int iterations, long long* cycles,
                              int split_shift) {
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
      // Split points: the pass over the window picks the sector's word.
      const unsigned word = split_shift < 0 ? offset_words : (sequence >> split_shift) & 7;
      *reinterpret_cast<Word*>(data + line * 32 + word) = value;
      sequence += sequence_step;
    }
  }
  const long long t1 = clock64();
  if (lane == 0) cycles[warp] = t1 - t0;
}

struct Shape {
  bool to_dram;
  int width_words, lanes_per_line, active_sms;
  std::size_t split_window_bytes = 0;  // a split point's window (0: not one)
};

struct Point {
  double requests_per_sm_cycle, bytes_per_sm_cycle, bytes_per_ns;
};

template <int WIDTH>
Point measure(const StreamedMemory& memory, const Shape& s, long long* d_cycles, int repeats) {
  const int ctas = s.active_sms * (kWarpsPerSm / kWarpsPerCta), warps = ctas * kWarpsPerCta;
  const unsigned lines_per_store = 32 / s.lanes_per_line;
  // About 64K line requests per SM, at least 4 trips.
  const int iterations = std::max(4, int(65536 / (kWarpsPerSm * kStores * lines_per_store)));
  const double requests_per_sm = double(kWarpsPerSm) * iterations * kStores * lines_per_store;
  const double bytes = double(warps) * iterations * kStores * 32 * WIDTH * 4;
  const std::size_t window_bytes =
      s.split_window_bytes ? s.split_window_bytes : s.to_dram ? StreamedMemory::kDramBytes : StreamedMemory::kL2WindowBytes;
  const unsigned window_lines_mask = unsigned(window_bytes / 128 - 1);
  const int split_shift = s.split_window_bytes ? __builtin_ctzll(window_bytes / 128) : -1;
  std::vector<double> per_cycle, per_ns;
  std::vector<long long> c(warps);
  for (int r = 0; r < repeats; ++r) {
    if (s.split_window_bytes)
      memory.flush_l2_clean(s.active_sms);
    else if (s.to_dram)
      memory.flush_l2(r);
    const float ms = timed_launch(
        [&] {
          stream_stores<WIDTH><<<ctas, 32 * kWarpsPerCta>>>(memory.data, window_lines_mask, s.lanes_per_line, iterations, d_cycles,
                                                            split_shift);
        },
        d_cycles, c);
    if (r == 0 && repeats > 1) continue;  // warm-up
    std::sort(c.begin(), c.end());
    per_cycle.push_back(requests_per_sm / static_cast<double>(c[c.size() / 2]));
    per_ns.push_back(bytes / (ms * 1e6));
  }
  const double requests = median(per_cycle);
  return {requests, requests / lines_per_store * 32 * WIDTH * 4, median(per_ns)};
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
  for (const std::size_t mb : {8, 16, 32, 64, 2048}) shapes.push_back({true, 1, 1, sms, mb << 20});
  if (!ncu_only) std::printf("{\n  \"sms\": %d,\n  \"warps_per_sm\": %d,\n  \"stores_in_flight\": %d,\n  \"points\": [\n", sms, kWarpsPerSm, kStores);
  bool first = true;
  for (const Shape& s : shapes) {
    const int repeats = ncu_only ? 2 : 8;
    const Point p = s.width_words == 1 ? measure<1>(memory, s, d_cycles, repeats) : measure<4>(memory, s, d_cycles, repeats);
    if (ncu_only) continue;
    std::printf("%s    {\"target\": \"%s\", \"bytes_per_lane\": %d, \"lanes_per_line\": %d, \"active_sms\": %d, ",
                first ? "" : ",\n", s.split_window_bytes ? "split" : s.to_dram ? "dram" : "l2", 4 * s.width_words, s.lanes_per_line,
                s.active_sms);
    if (s.split_window_bytes) std::printf("\"window_mb\": %zu, ", s.split_window_bytes >> 20);
    std::printf("\"requests_per_sm_cycle\": %.4f, \"bytes_per_sm_cycle\": %.2f, \"bytes_per_ns\": %.1f}", p.requests_per_sm_cycle,
                p.bytes_per_sm_cycle, p.bytes_per_ns);
    first = false;
  }
  if (!ncu_only) std::printf("\n  ]\n}\n");
  return 0;
}
