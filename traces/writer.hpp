// Streaming writer for trace format v1. Output goes to "<path>.partial" and is
// renamed to <path> only by finish(), so a failed producer never leaves a
// half-written trace under the final name.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "traces/format.hpp"
#include "traces/trace.hpp"

namespace atomsim::trace {

class TraceWriter {
 public:
  explicit TraceWriter(std::string path);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void begin_kernel(const KernelInfo& kernel);
  // Warps may be appended in any interleaving; each warp's records stay ordered.
  void append(std::uint64_t warp_id, const WarpInst& inst);
  // Optional: flushes a warp that will receive no more records, freeing its buffer.
  void end_warp(std::uint64_t warp_id);
  void end_kernel();
  void finish();

 private:
  struct WarpState {
    format::ByteWriter buffer;
    std::uint32_t segment_records = 0;
    std::uint32_t previous_index = format::kInitialPreviousIndex;
    std::uint32_t previous_mask = format::kInitialPreviousMask;
    std::uint64_t first_segment = 0;
    std::uint64_t last_segment = 0;
    std::uint64_t records = 0;
  };
  void flush_segment(std::uint64_t warp_id, WarpState& w);
  std::uint64_t write_chunk(format::ChunkHeader header, const std::vector<unsigned char>& raw);
  void write_at(std::uint64_t offset, const void* data, std::size_t size);
  [[noreturn]] void fail(const std::string& what);

  std::string path_;
  std::string partial_path_;
  std::FILE* file_ = nullptr;
  std::uint64_t end_offset_ = 0;
  bool in_kernel_ = false;
  KernelInfo kernel_;
  std::vector<WarpState> warps_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> kernel_offsets_;  // kernel chunk, warp index chunk
  std::uint64_t current_kernel_chunk_ = 0;
};

}  // namespace atomsim::trace
