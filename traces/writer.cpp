#include "traces/writer.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace atomsim::trace {

TraceWriter::TraceWriter(std::string path) : path_(std::move(path)), partial_path_(path_ + ".partial") {
  file_ = std::fopen(partial_path_.c_str(), "w+b");
  if (!file_) throw TraceError(fmt::format("{}: cannot create trace: {}", path_, std::strerror(errno)));
  unsigned char header[format::kFileHeaderSize];
  format::encode_file_header(header);
  write_at(0, header, sizeof header);
  end_offset_ = sizeof header;
}

TraceWriter::~TraceWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(partial_path_.c_str());
  }
}

void TraceWriter::fail(const std::string& what) {
  throw TraceError(fmt::format("{}: {}", path_, what));
}

void TraceWriter::write_at(std::uint64_t offset, const void* data, std::size_t size) {
  if (fseeko(file_, static_cast<off_t>(offset), SEEK_SET) != 0 || std::fwrite(data, 1, size, file_) != size)
    fail(fmt::format("write failed at byte offset {}: {}", offset, std::strerror(errno)));
}

std::uint64_t TraceWriter::write_chunk(format::ChunkHeader header, const std::vector<unsigned char>& raw) {
  std::vector<unsigned char> packed = format::compress(raw);
  if (raw.size() > format::kMaxChunkBytes || packed.size() > format::kMaxChunkBytes) fail("chunk too large");
  header.raw_size = static_cast<std::uint32_t>(raw.size());
  header.compressed_size = static_cast<std::uint32_t>(packed.size());
  unsigned char h[format::kChunkHeaderSize];
  format::encode_chunk_header(header, h);
  std::uint64_t offset = end_offset_;
  write_at(offset, h, sizeof h);
  write_at(offset + sizeof h, packed.data(), packed.size());
  end_offset_ = offset + sizeof h + packed.size();
  return offset;
}

void TraceWriter::begin_kernel(const KernelInfo& kernel) {
  if (in_kernel_) fail("begin_kernel while a kernel is open");
  if (kernel.program.empty()) fail("kernel '" + kernel.name + "' has an empty program");
  if (kernel.total_warps() > UINT32_MAX) fail("kernel has too many warps for format v1");
  kernel_ = kernel;
  in_kernel_ = true;
  warps_.assign(kernel.total_warps(), WarpState{});
  format::ChunkHeader h;
  h.type = format::ChunkType::Kernel;
  h.kernel_index = static_cast<std::uint32_t>(kernel_offsets_.size());
  current_kernel_chunk_ = write_chunk(h, format::encode_kernel(kernel));
}

void TraceWriter::append(std::uint64_t warp_id, const WarpInst& inst) {
  if (!in_kernel_) fail("append outside a kernel");
  if (warp_id >= warps_.size()) fail(fmt::format("warp {} outside the kernel's {} warps", warp_id, warps_.size()));
  if (inst.index >= kernel_.program.size()) fail(fmt::format("instruction index {} outside the program", inst.index));
  WarpState& w = warps_[warp_id];
  format::encode_record(w.buffer, kernel_.program[inst.index], inst, w.previous_index, w.previous_mask);
  w.previous_index = inst.index;
  w.previous_mask = inst.active_mask;
  ++w.segment_records;
  ++w.records;
  if (w.buffer.bytes.size() >= format::kSegmentTargetBytes) flush_segment(warp_id, w);
}

void TraceWriter::flush_segment(std::uint64_t warp_id, WarpState& w) {
  if (w.segment_records == 0) return;
  format::ChunkHeader h;
  h.type = format::ChunkType::Segment;
  h.kernel_index = static_cast<std::uint32_t>(kernel_offsets_.size());
  h.warp_id = static_cast<std::uint32_t>(warp_id);
  h.record_count = w.segment_records;
  std::uint64_t offset = write_chunk(h, w.buffer.bytes);
  if (w.last_segment) {
    // Link the warp's previous segment to this one (its header is rewritten whole).
    unsigned char raw[format::kChunkHeaderSize];
    if (fseeko(file_, static_cast<off_t>(w.last_segment), SEEK_SET) != 0 || std::fread(raw, 1, sizeof raw, file_) != sizeof raw)
      fail(fmt::format("cannot reread segment header at byte offset {}", w.last_segment));
    format::ChunkHeader previous;
    if (auto err = format::decode_chunk_header(raw, previous); !err.empty()) fail(err);
    previous.next_offset = offset;
    format::encode_chunk_header(previous, raw);
    write_at(w.last_segment, raw, sizeof raw);
  } else {
    w.first_segment = offset;
  }
  w.last_segment = offset;
  w.buffer.bytes.clear();
  w.buffer.bytes.shrink_to_fit();
  w.segment_records = 0;
  w.previous_index = format::kInitialPreviousIndex;
  w.previous_mask = format::kInitialPreviousMask;
}

void TraceWriter::end_warp(std::uint64_t warp_id) {
  if (!in_kernel_ || warp_id >= warps_.size()) fail("end_warp for an unknown warp");
  flush_segment(warp_id, warps_[warp_id]);
}

void TraceWriter::end_kernel() {
  if (!in_kernel_) fail("end_kernel without begin_kernel");
  format::ByteWriter index;
  index.varint(warps_.size());
  for (std::uint64_t i = 0; i < warps_.size(); ++i) {
    flush_segment(i, warps_[i]);
    index.u64(warps_[i].first_segment);
    index.u64(warps_[i].records);
  }
  format::ChunkHeader h;
  h.type = format::ChunkType::WarpIndex;
  h.kernel_index = static_cast<std::uint32_t>(kernel_offsets_.size());
  std::uint64_t index_offset = write_chunk(h, index.bytes);
  kernel_offsets_.emplace_back(current_kernel_chunk_, index_offset);
  warps_.clear();
  warps_.shrink_to_fit();
  in_kernel_ = false;
}

void TraceWriter::finish() {
  if (in_kernel_) fail("finish with a kernel still open");
  if (!file_) fail("finish called twice");
  format::ByteWriter footer;
  footer.varint(kernel_offsets_.size());
  for (auto [k, i] : kernel_offsets_) { footer.u64(k); footer.u64(i); }
  format::ChunkHeader h;
  h.type = format::ChunkType::Footer;
  std::uint64_t footer_offset = write_chunk(h, footer.bytes);
  format::ByteWriter trailer;
  trailer.u64(footer_offset);
  trailer.u64(end_offset_ + format::kTrailerSize);
  trailer.raw(format::kTrailerMagic, 8);
  write_at(end_offset_, trailer.bytes.data(), trailer.bytes.size());
  if (std::fflush(file_) != 0 || std::fclose(file_) != 0) {
    file_ = nullptr;
    std::remove(partial_path_.c_str());
    fail("cannot flush trace to disk");
  }
  file_ = nullptr;
  if (std::rename(partial_path_.c_str(), path_.c_str()) != 0) {
    std::remove(partial_path_.c_str());
    fail(fmt::format("cannot rename {} into place: {}", partial_path_, std::strerror(errno)));
  }
}

}  // namespace atomsim::trace
