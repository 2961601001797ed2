// On-disk layout of trace format v1: constants, fixed headers and the
// byte-level codecs shared by the writer, the reader and the validator.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::trace::format {

inline constexpr char kFileMagic[8] = {'A', 'T', 'O', 'M', 'T', 'R', 'C', '\x1a'};
inline constexpr char kTrailerMagic[8] = {'A', 'T', 'O', 'M', 'E', 'N', 'D', '\x1a'};
inline constexpr std::uint16_t kVersionMajor = 1;
inline constexpr std::uint16_t kVersionMinor = 4;  // 1.1: the kernel chunk's control-bit section; 1.2: values on loads and stores; 1.3: masks on WARPSYNCs; 1.4: constant operands
inline constexpr std::uint32_t kChunkMagic = 0x4B484341;  // "ACHK"
inline constexpr std::size_t kFileHeaderSize = 32;
inline constexpr std::size_t kChunkHeaderSize = 48;
inline constexpr std::size_t kTrailerSize = 24;
inline constexpr std::uint32_t kMaxChunkBytes = 64u << 20;
// A segment closes once its raw records reach this size (bounds reader memory per warp).
inline constexpr std::size_t kSegmentTargetBytes = 4u << 10;

enum class ChunkType : std::uint8_t { Kernel = 1, Segment = 2, WarpIndex = 3, Footer = 4 };

// Record flag bits (see docs/trace-format.md).
inline constexpr std::uint8_t kExplicitIndex = 0x01;
inline constexpr std::uint8_t kExplicitMask = 0x02;
inline constexpr std::uint8_t kAddressShift = 2;  // two bits: AddressMode
inline constexpr std::uint8_t kValueShift = 4;    // two bits: ValueMode
inline constexpr std::uint8_t kKnownFlags = 0x3F;
enum class AddressMode : std::uint8_t { Uniform = 0, Strided = 1, Delta32 = 2, Full64 = 3 };
enum class ValueMode : std::uint8_t { None = 0, Uniform = 1, PerLane = 2 };

struct ChunkHeader {
  ChunkType type = ChunkType::Kernel;
  std::uint32_t compressed_size = 0;
  std::uint32_t raw_size = 0;
  std::uint32_t kernel_index = 0;
  std::uint32_t warp_id = 0;
  std::uint32_t record_count = 0;
  std::uint64_t next_offset = 0;
};

std::uint32_t fnv1a(const unsigned char* data, std::size_t size);
void encode_file_header(unsigned char out[kFileHeaderSize]);
// Returns an empty string when valid, else what is wrong.
std::string check_file_header(const unsigned char in[kFileHeaderSize]);
void encode_chunk_header(const ChunkHeader& h, unsigned char out[kChunkHeaderSize]);
std::string decode_chunk_header(const unsigned char in[kChunkHeaderSize], ChunkHeader& h);

std::vector<unsigned char> compress(const std::vector<unsigned char>& raw);
// Throws TraceError naming the file and the chunk's byte offset when the
// frame is damaged or sizes disagree.
void decompress(const unsigned char* data, std::size_t size, std::vector<unsigned char>& raw, std::size_t raw_size,
                const std::string& path, std::uint64_t offset);

// Little-endian byte builder and cursor.
class ByteWriter {
 public:
  std::vector<unsigned char> bytes;
  void u8(std::uint8_t v) { bytes.push_back(v); }
  void u16(std::uint16_t v) { raw(&v, 2); }
  void u32(std::uint32_t v) { raw(&v, 4); }
  void u64(std::uint64_t v) { raw(&v, 8); }
  void varint(std::uint64_t v) {
    while (v >= 0x80) { bytes.push_back(static_cast<unsigned char>(v | 0x80)); v >>= 7; }
    bytes.push_back(static_cast<unsigned char>(v));
  }
  void str(std::string_view s) { varint(s.size()); bytes.insert(bytes.end(), s.begin(), s.end()); }
  void raw(const void* p, std::size_t n) {
    auto* c = static_cast<const unsigned char*>(p);
    bytes.insert(bytes.end(), c, c + n);
  }
};

// Bounds-checked reader over a decompressed payload; failures throw TraceError
// naming the payload's origin and the offset inside it.
// Where a payload came from; formatted only when an error is reported.
struct Origin {
  const std::string* file = nullptr;
  const char* part = "payload";
  std::uint64_t offset = 0;
};

// Reads little-endian fields; errors name the origin, which the reader only
// refers to (it is read on failure alone, so it may live in cold memory).
class ByteReader {
 public:
  ByteReader(const unsigned char* data, std::size_t size, const Origin& origin)
      : data_(data), size_(size), origin_(&origin) {}
  ByteReader(const unsigned char*, std::size_t, Origin&&) = delete;  // the origin must outlive the reader
  std::uint8_t u8() { need(1); return data_[pos_++]; }
  std::uint16_t u16() { std::uint16_t v; copy(&v, 2); return v; }
  std::uint32_t u32() { std::uint32_t v; copy(&v, 4); return v; }
  std::uint64_t u64() { std::uint64_t v; copy(&v, 8); return v; }
  std::uint64_t varint();
  std::string str(std::size_t max_len = 1 << 16);
  bool done() const { return pos_ == size_; }
  std::size_t pos() const { return pos_; }
  std::size_t remaining() const { return size_ - pos_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void need(std::size_t n) const { if (size_ - pos_ < n) fail("record runs past the end of its chunk"); }
  void copy(void* out, std::size_t n) { need(n); std::memcpy(out, data_ + pos_, n); pos_ += n; }
  const unsigned char* data_;
  std::size_t size_;
  std::size_t pos_ = 0;
  const Origin* origin_;
};

std::vector<unsigned char> encode_kernel(const KernelInfo& k);
KernelInfo decode_kernel(ByteReader& in);

// Dynamic records. `previous_index`/`previous_mask` carry the warp's state.
// A record is a header (instruction index, active mask, encodings) followed by
// its operands; the two halves can be decoded separately.
struct RecordHeader {
  std::uint32_t index = 0;
  std::uint32_t active_mask = 0;
  std::uint8_t flags = 0;
};
void decode_record_header(ByteReader& in, const std::vector<StaticInst>& program, RecordHeader& header,
                          std::uint32_t previous_index, std::uint32_t previous_mask);
// Decodes (or, with null outputs, validates and skips) the operands of a
// record; returns the lanes that carry a value (WarpInst::value_lanes).
std::uint32_t decode_record_operands(ByteReader& in, const StaticInst& s, const RecordHeader& header,
                                     std::array<std::uint64_t, 32>* address, std::array<std::uint64_t, 32>* value);
void encode_record(ByteWriter& out, const StaticInst& s, const WarpInst& inst, std::uint32_t previous_index,
                   std::uint32_t previous_mask);
void decode_record(ByteReader& in, const std::vector<StaticInst>& program, WarpInst& inst,
                   std::uint32_t previous_index, std::uint32_t previous_mask);

}  // namespace atomsim::trace::format

namespace atomsim::trace::format {
// Record state at the start of every segment, so that segments decode alone.
inline constexpr std::uint32_t kInitialPreviousIndex = 0xFFFFFFFFu;
inline constexpr std::uint32_t kInitialPreviousMask = 0xFFFFFFFFu;
}  // namespace atomsim::trace::format
