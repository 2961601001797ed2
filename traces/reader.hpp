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

// A warp's first segment, read and decompressed ahead of opening the warp
// (WarpPrefetcher); checked against the warp when the warp is opened.
struct WarpSegment {
  std::uint64_t offset = 0;  // none when 0 (a warp without records)
  format::ChunkHeader header{};
  std::vector<unsigned char> raw;
};

class WarpStream {
 public:
  WarpStream() = default;
  // Movable, not copyable: data_ points into the stream's own buffer.
  WarpStream(const WarpStream&) = delete;
  WarpStream& operator=(const WarpStream&) = delete;
  WarpStream(WarpStream&&) = default;
  WarpStream& operator=(WarpStream&&) = default;
  // Decodes the next record into `inst`; false at the end of the warp's stream.
  bool next(WarpInst& inst);
  // Moves to the next record, decoding only its header (index(), active_mask());
  // its operands can then be read with operands() until the following call.
  // False at the end of the warp's stream.
  bool advance();
  std::uint32_t index() const { return header_.index; }
  std::uint32_t active_mask() const { return header_.active_mask; }
  // Records moved to so far, the current one included, and all the warp has.
  std::uint64_t position() const { return records_read_ - segment_left_; }
  std::uint64_t records() const { return expected_records_; }
  // A stream at the same record that moves on by itself (sampled simulation
  // looks ahead on one before the warp takes it).
  WarpStream clone() const;
  // Returns the lanes that carry a value (WarpInst::value_lanes).
  std::uint32_t operands(std::array<std::uint64_t, 32>& address, std::array<std::uint64_t, 32>& value) const;

 private:
  friend class TraceReader;
  void load_segment(std::uint64_t offset);
  // Makes the segment in raw_, read from `offset`, the current one, after
  // checking that it is the next of this warp's.
  void adopt_segment(std::uint64_t offset, const format::ChunkHeader& header);
  // What every record touches comes first, in 44 bytes: a simulator keeps
  // thousands of streams open and reads one record of each at a time.
  const unsigned char* data_ = nullptr;  // the segment's decompressed bytes (raw_)
  const KernelInfo* kernel_ = nullptr;
  std::uint32_t size_ = 0;
  std::uint32_t pos_ = 0;
  std::uint32_t operand_pos_ = 0;
  std::uint32_t segment_left_ = 0;
  // The current record; at the start of a segment, what its first record is encoded against.
  format::RecordHeader header_{format::kInitialPreviousIndex, format::kInitialPreviousMask, 0};
  format::Origin origin_;  // file, "segment", the segment's offset: named by errors only
  std::vector<unsigned char> raw_;
  std::shared_ptr<TraceFile> file_;
  std::uint64_t records_read_ = 0;  // in the segments loaded so far
  std::uint32_t kernel_index_ = 0;
  std::uint32_t warp_id_ = 0;
  std::uint64_t expected_records_ = 0;
  std::uint64_t next_segment_ = 0;
};

class TraceReader {
 public:
  explicit TraceReader(const std::string& path);
  const std::string& path() const;
  std::uint64_t file_size() const;
  std::size_t kernel_count() const { return kernels_.size(); }
  // The format version the file was written in (its header's minor; the major is always this build's).
  std::uint16_t version_minor() const { return version_minor_; }
  const KernelInfo& kernel(std::size_t i) const { return kernels_.at(i); }
  // Number of records the index promises for a warp.
  std::uint64_t warp_records(std::size_t kernel, std::uint64_t warp);
  // Opens a warp's stream; with `first`, its first segment as read_first_segment
  // read it, which the stream takes over. Safe from several threads once the
  // kernel's warp index has been read (by any call of these for the kernel).
  WarpStream open_warp(std::size_t kernel, std::uint64_t warp, WarpSegment* first = nullptr);
  WarpSegment read_first_segment(std::size_t kernel, std::uint64_t warp);

 private:
  struct WarpEntry {
    std::uint64_t first_segment;
    std::uint64_t records;
  };
  const std::vector<WarpEntry>& index(std::size_t kernel);

  std::shared_ptr<TraceFile> file_;
  std::uint16_t version_minor_ = 0;
  std::vector<KernelInfo> kernels_;
  std::vector<std::uint64_t> index_offsets_;
  std::size_t cached_index_kernel_ = SIZE_MAX;
  std::vector<WarpEntry> cached_index_;
};

}  // namespace atomsim::trace
