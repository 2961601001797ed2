#include "traces/reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace atomsim::trace {

// Positioned reads on one descriptor, shared by every open warp stream.
class TraceFile {
 public:
  explicit TraceFile(std::string path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_RDONLY);
    if (fd_ < 0) throw TraceError(fmt::format("{}: cannot open trace: {}", path_, std::strerror(errno)));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw TraceError(fmt::format("{}: not a regular file", path_));
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~TraceFile() { ::close(fd_); }
  const std::string& path() const { return path_; }
  std::uint64_t size() const { return size_; }

  [[noreturn]] void fail(std::uint64_t offset, const std::string& what) const {
    throw TraceError(fmt::format("{}: byte offset {}: {}", path_, offset, what));
  }

  void read(std::uint64_t offset, void* out, std::size_t n) const {
    if (offset > size_ || size_ - offset < n) fail(offset, fmt::format("truncated: {} bytes needed, file ends at {}", n, size_));
    auto* p = static_cast<unsigned char*>(out);
    while (n) {
      ssize_t got = ::pread(fd_, p, n, static_cast<off_t>(offset));
      if (got <= 0) fail(offset, "read error");
      p += got;
      offset += static_cast<std::uint64_t>(got);
      n -= static_cast<std::size_t>(got);
    }
  }

  // Reads and checks a chunk header, then its decompressed payload.
  format::ChunkHeader read_chunk(std::uint64_t offset, format::ChunkType expected, std::vector<unsigned char>& raw) const {
    unsigned char h[format::kChunkHeaderSize];
    read(offset, h, sizeof h);
    format::ChunkHeader header;
    if (auto err = format::decode_chunk_header(h, header); !err.empty()) fail(offset, err);
    if (header.type != expected)
      fail(offset, fmt::format("expected chunk type {}, found {}", int(expected), int(header.type)));
    static thread_local std::vector<unsigned char> packed;
    packed.resize(header.compressed_size);
    read(offset + sizeof h, packed.data(), packed.size());
    format::decompress(packed.data(), packed.size(), raw, header.raw_size, path_, offset);
    return header;
  }

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

TraceReader::TraceReader(const std::string& path) : file_(std::make_shared<TraceFile>(path)) {
  const TraceFile& f = *file_;
  if (f.size() < format::kFileHeaderSize) f.fail(f.size(), "truncated: shorter than the file header");
  unsigned char header[format::kFileHeaderSize];
  f.read(0, header, sizeof header);
  if (auto err = format::check_file_header(header); !err.empty()) f.fail(0, err);
  std::memcpy(&version_minor_, header + 10, sizeof version_minor_);
  if (f.size() < format::kFileHeaderSize + format::kTrailerSize) f.fail(f.size(), "truncated: no trailer");
  unsigned char trailer[format::kTrailerSize];
  std::uint64_t trailer_at = f.size() - format::kTrailerSize;
  f.read(trailer_at, trailer, sizeof trailer);
  if (std::memcmp(trailer + 16, format::kTrailerMagic, 8) != 0)
    f.fail(trailer_at, "truncated or unfinished trace: no trailer at the end of the file");
  std::uint64_t footer_offset, recorded_size;
  std::memcpy(&footer_offset, trailer, 8);
  std::memcpy(&recorded_size, trailer + 8, 8);
  if (recorded_size != f.size()) f.fail(trailer_at, fmt::format("trailer records file size {}, file has {}", recorded_size, f.size()));
  if (footer_offset < format::kFileHeaderSize || footer_offset >= trailer_at) f.fail(trailer_at, "footer offset out of range");

  std::vector<unsigned char> raw;
  f.read_chunk(footer_offset, format::ChunkType::Footer, raw);
  const format::Origin footer_origin{&f.path(), "footer", footer_offset};
  format::ByteReader footer(raw.data(), raw.size(), footer_origin);
  std::uint64_t kernels = footer.varint();
  if (kernels > (1u << 20)) footer.fail("kernel count out of range");
  for (std::uint64_t k = 0; k < kernels; ++k) {
    std::uint64_t kernel_offset = footer.u64();
    std::uint64_t index_offset = footer.u64();
    if (kernel_offset >= footer_offset || index_offset >= footer_offset) footer.fail("kernel offsets out of range");
    std::vector<unsigned char> kraw;
    auto kh = f.read_chunk(kernel_offset, format::ChunkType::Kernel, kraw);
    if (kh.kernel_index != k) f.fail(kernel_offset, "kernel chunk out of order");
    const format::Origin kernel_origin{&f.path(), "kernel chunk", kernel_offset};
    format::ByteReader kin(kraw.data(), kraw.size(), kernel_origin);
    kernels_.push_back(format::decode_kernel(kin));
    if (!kin.done()) kin.fail("trailing bytes after kernel metadata");
    index_offsets_.push_back(index_offset);
  }
  if (!footer.done()) footer.fail("trailing bytes in footer");
}

const std::string& TraceReader::path() const { return file_->path(); }
std::uint64_t TraceReader::file_size() const { return file_->size(); }

const std::vector<TraceReader::WarpEntry>& TraceReader::index(std::size_t kernel) {
  if (kernel >= kernels_.size()) throw TraceError(fmt::format("{}: no kernel {}", path(), kernel));
  if (cached_index_kernel_ == kernel) return cached_index_;
  std::vector<unsigned char> raw;
  std::uint64_t offset = index_offsets_[kernel];
  auto h = file_->read_chunk(offset, format::ChunkType::WarpIndex, raw);
  if (h.kernel_index != kernel) file_->fail(offset, "warp index belongs to another kernel");
  const format::Origin origin{&path(), "warp index", offset};
  format::ByteReader in(raw.data(), raw.size(), origin);
  std::uint64_t warps = in.varint();
  if (warps != kernels_[kernel].total_warps())
    in.fail(fmt::format("index lists {} warps, launch has {}", warps, kernels_[kernel].total_warps()));
  cached_index_.clear();
  cached_index_.reserve(warps);
  for (std::uint64_t w = 0; w < warps; ++w) {
    WarpEntry e{in.u64(), in.u64()};
    if ((e.records == 0) != (e.first_segment == 0) || e.first_segment >= file_->size())
      in.fail(fmt::format("warp {} has an inconsistent index entry", w));
    cached_index_.push_back(e);
  }
  cached_index_kernel_ = kernel;
  return cached_index_;
}

std::uint64_t TraceReader::warp_records(std::size_t kernel, std::uint64_t warp) { return index(kernel).at(warp).records; }

WarpSegment TraceReader::read_first_segment(std::size_t kernel, std::uint64_t warp) {
  const auto& idx = index(kernel);
  if (warp >= idx.size()) throw TraceError(fmt::format("{}: kernel {} has no warp {}", path(), kernel, warp));
  WarpSegment segment;
  segment.offset = idx[warp].first_segment;
  if (segment.offset) segment.header = file_->read_chunk(segment.offset, format::ChunkType::Segment, segment.raw);
  return segment;
}

WarpStream TraceReader::open_warp(std::size_t kernel, std::uint64_t warp, WarpSegment* first) {
  const auto& idx = index(kernel);
  if (warp >= idx.size()) throw TraceError(fmt::format("{}: kernel {} has no warp {}", path(), kernel, warp));
  WarpStream s;
  s.file_ = file_;
  s.origin_ = {&file_->path(), "segment", 0};
  s.kernel_ = &kernels_[kernel];
  s.kernel_index_ = static_cast<std::uint32_t>(kernel);
  s.warp_id_ = static_cast<std::uint32_t>(warp);
  s.expected_records_ = idx[warp].records;
  s.next_segment_ = idx[warp].first_segment;
  if (first && first->offset && first->offset == s.next_segment_) {
    s.raw_.swap(first->raw);
    s.adopt_segment(first->offset, first->header);
  }
  return s;
}

WarpStream WarpStream::clone() const {
  WarpStream s;
  s.raw_ = raw_;
  s.data_ = data_ ? s.raw_.data() : nullptr;
  s.kernel_ = kernel_;
  s.size_ = size_;
  s.pos_ = pos_;
  s.operand_pos_ = operand_pos_;
  s.segment_left_ = segment_left_;
  s.header_ = header_;
  s.origin_ = origin_;
  s.file_ = file_;
  s.records_read_ = records_read_;
  s.kernel_index_ = kernel_index_;
  s.warp_id_ = warp_id_;
  s.expected_records_ = expected_records_;
  s.next_segment_ = next_segment_;
  return s;
}

void WarpStream::load_segment(std::uint64_t offset) { adopt_segment(offset, file_->read_chunk(offset, format::ChunkType::Segment, raw_)); }

void WarpStream::adopt_segment(std::uint64_t offset, const format::ChunkHeader& h) {
  if (h.kernel_index != kernel_index_ || h.warp_id != warp_id_)
    file_->fail(offset, fmt::format("segment belongs to kernel {} warp {}, expected kernel {} warp {}", h.kernel_index,
                                    h.warp_id, kernel_index_, warp_id_));
  if (h.record_count == 0) file_->fail(offset, "empty segment");
  if (h.next_offset != 0 && h.next_offset <= offset) file_->fail(offset, "segment chain does not move forward");
  if (raw_.size() > UINT32_MAX) file_->fail(offset, "segment larger than 4 GiB");
  origin_.offset = offset;
  next_segment_ = h.next_offset;
  segment_left_ = h.record_count;
  records_read_ += h.record_count;
  data_ = raw_.data();
  size_ = static_cast<std::uint32_t>(raw_.size());
  pos_ = 0;
  // Each segment's first record is encoded against these.
  header_.index = format::kInitialPreviousIndex;
  header_.active_mask = format::kInitialPreviousMask;
}

bool WarpStream::advance() {
  if (segment_left_ == 0) {
    if (pos_ != size_) file_->fail(origin_.offset, "segment holds more bytes than its records");
    if (next_segment_ == 0) {
      if (records_read_ != expected_records_)
        file_->fail(origin_.offset, fmt::format("warp {} ends after {} records, index promises {}", warp_id_,
                                                records_read_, expected_records_));
      return false;
    }
    load_segment(next_segment_);
  }
  format::ByteReader in(data_ + pos_, size_ - pos_, origin_);
  format::decode_record_header(in, kernel_->program, header_, header_.index, header_.active_mask);
  operand_pos_ = pos_ + static_cast<std::uint32_t>(in.pos());
  format::decode_record_operands(in, kernel_->program[header_.index], header_, nullptr, nullptr);
  pos_ += static_cast<std::uint32_t>(in.pos());
  // The next record of this warp is read only when the warp issues again, long
  // after its bytes have left the cache: ask for them now.
  __builtin_prefetch(data_ + std::min(pos_, size_ - 1));
  --segment_left_;
  return true;
}

std::uint32_t WarpStream::operands(std::array<std::uint64_t, 32>& address, std::array<std::uint64_t, 32>& value) const {
  format::ByteReader in(data_ + operand_pos_, size_ - operand_pos_, origin_);
  return format::decode_record_operands(in, kernel_->program[header_.index], header_, &address, &value);
}

bool WarpStream::next(WarpInst& inst) {
  if (!advance()) return false;
  inst.index = header_.index;
  inst.active_mask = header_.active_mask;
  inst.value_lanes = operands(inst.address, inst.value);
  return true;
}

}  // namespace atomsim::trace
