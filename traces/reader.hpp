// Random-access reader for trace format v1. Opening reads the header, trailer,
// footer and every kernel's metadata; instruction records are read lazily per
// warp, one segment at a time, so memory depends on how many warps are read at
// once, never on how long the trace is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "traces/format.hpp"
#include "traces/trace.hpp"

namespace atomsim::trace {

class TraceFile;  // shared file handle

class WarpStream {
 public:
  WarpStream() = default;
  // Decodes the next record into `inst`; false at the end of the warp's stream.
  bool next(WarpInst& inst);
  // Decodes only the next record's header; its operands can then be read with
  // operands() until the following call.
  bool next_instruction(std::uint32_t& index, std::uint32_t& active_mask);
  void operands(std::array<std::uint64_t, 32>& address, std::array<std::uint64_t, 32>& value) const;

 private:
  friend class TraceReader;
  void load_segment(std::uint64_t offset);
  bool advance();
  // What every record touches comes first: a simulator keeps thousands of
  // streams open and reads one record of each at a time.
  std::vector<unsigned char> raw_;
  std::size_t pos_ = 0;
  std::size_t operand_pos_ = 0;
  std::uint32_t segment_left_ = 0;
  std::uint32_t previous_index_ = format::kInitialPreviousIndex;
  std::uint32_t previous_mask_ = format::kInitialPreviousMask;
  format::RecordHeader header_;
  const KernelInfo* kernel_ = nullptr;
  std::shared_ptr<TraceFile> file_;
  std::uint64_t records_read_ = 0;
  std::uint32_t kernel_index_ = 0;
  std::uint32_t warp_id_ = 0;
  std::uint64_t expected_records_ = 0;
  std::uint64_t segment_offset_ = 0;
  std::uint64_t next_segment_ = 0;
};

class TraceReader {
 public:
  explicit TraceReader(const std::string& path);
  const std::string& path() const;
  std::uint64_t file_size() const;
  std::size_t kernel_count() const { return kernels_.size(); }
  const KernelInfo& kernel(std::size_t i) const { return kernels_.at(i); }
  // Number of records the index promises for a warp.
  std::uint64_t warp_records(std::size_t kernel, std::uint64_t warp);
  WarpStream open_warp(std::size_t kernel, std::uint64_t warp);

 private:
  struct WarpEntry {
    std::uint64_t first_segment;
    std::uint64_t records;
  };
  const std::vector<WarpEntry>& index(std::size_t kernel);

  std::shared_ptr<TraceFile> file_;
  std::vector<KernelInfo> kernels_;
  std::vector<std::uint64_t> index_offsets_;
  std::size_t cached_index_kernel_ = SIZE_MAX;
  std::vector<WarpEntry> cached_index_;
};

}  // namespace atomsim::trace
