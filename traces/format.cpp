#include "traces/format.hpp"

#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_d_forceIgnoreChecksum
#include <zstd.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <memory>

namespace atomsim::trace {

const char* op_class_name(OpClass op) {
  static const char* names[kOpClassCount] = {"int_alu", "fp_alu",  "fma",      "sfu",      "branch", "shared",
                                             "shuffle", "vote",    "ldg",      "stg",      "atom",   "red",
                                             "bar",     "membar",  "exit",     "misc"};
  auto i = static_cast<unsigned>(op);
  return i < kOpClassCount ? names[i] : "invalid";
}

const char* atomic_op_name(AtomicOp op) {
  static const char* names[] = {"none", "add", "min", "max", "inc", "dec", "and", "or", "xor", "exch", "cas"};
  auto i = static_cast<unsigned>(op);
  return i < std::size(names) ? names[i] : "invalid";
}

std::uint64_t add_f32x2(std::uint64_t a, std::uint64_t b) {
  auto half = [](std::uint64_t bits, int i) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits >> (32 * i))); };
  auto bits = [](float f) { return static_cast<std::uint64_t>(std::bit_cast<std::uint32_t>(f)); };
  return bits(half(a, 0) + half(b, 0)) | bits(half(a, 1) + half(b, 1)) << 32;
}

const char* data_type_name(DataType t) {
  static const char* names[] = {"none", "u32", "s32", "u64", "s64", "f32", "f64", "f16x2", "bf16x2", "f32x2", "f32x4"};
  auto i = static_cast<unsigned>(t);
  return i < std::size(names) ? names[i] : "invalid";
}

namespace format {

static_assert(std::endian::native == std::endian::little, "trace codecs assume a little-endian host");

std::uint32_t fnv1a(const unsigned char* data, std::size_t size) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

namespace {
// Fuzz builds (tests/fuzz) accept any checksum, so that mutated bytes reach
// the decoders the checksums guard; every other build verifies them.
#ifdef ATOMSIM_FUZZING
constexpr bool kVerifyChecksums = false;
#else
constexpr bool kVerifyChecksums = true;
#endif

template <class T>
void put(unsigned char* out, std::size_t at, T v) { std::memcpy(out + at, &v, sizeof(T)); }
template <class T>
T get(const unsigned char* in, std::size_t at) { T v; std::memcpy(&v, in + at, sizeof(T)); return v; }
}  // namespace

void encode_file_header(unsigned char out[kFileHeaderSize]) {
  std::memset(out, 0, kFileHeaderSize);
  std::memcpy(out, kFileMagic, 8);
  put<std::uint16_t>(out, 8, kVersionMajor);
  put<std::uint16_t>(out, 10, kVersionMinor);
  put<std::uint32_t>(out, 28, fnv1a(out, 28));
}

std::string check_file_header(const unsigned char in[kFileHeaderSize]) {
  if (std::memcmp(in, kFileMagic, 8) != 0) return "not an atomsim trace (bad magic)";
  if (kVerifyChecksums && get<std::uint32_t>(in, 28) != fnv1a(in, 28)) return "file header checksum mismatch";
  auto major = get<std::uint16_t>(in, 8);
  auto minor = get<std::uint16_t>(in, 10);
  if (major != kVersionMajor)
    return fmt::format("unsupported trace version {}.{} (this build reads {}.x)", major, minor, kVersionMajor);
  if (get<std::uint32_t>(in, 12) != 0) return "unknown file flags";
  return {};
}

void encode_chunk_header(const ChunkHeader& h, unsigned char out[kChunkHeaderSize]) {
  std::memset(out, 0, kChunkHeaderSize);
  put<std::uint32_t>(out, 0, kChunkMagic);
  put<std::uint8_t>(out, 4, static_cast<std::uint8_t>(h.type));
  put<std::uint32_t>(out, 8, h.compressed_size);
  put<std::uint32_t>(out, 12, h.raw_size);
  put<std::uint32_t>(out, 16, h.kernel_index);
  put<std::uint32_t>(out, 20, h.warp_id);
  put<std::uint32_t>(out, 24, h.record_count);
  put<std::uint64_t>(out, 32, h.next_offset);
  put<std::uint32_t>(out, 44, fnv1a(out, 44));
}

std::string decode_chunk_header(const unsigned char in[kChunkHeaderSize], ChunkHeader& h) {
  if (get<std::uint32_t>(in, 0) != kChunkMagic) return "bad chunk magic";
  if (kVerifyChecksums && get<std::uint32_t>(in, 44) != fnv1a(in, 44)) return "chunk header checksum mismatch";
  auto type = get<std::uint8_t>(in, 4);
  if (type < 1 || type > 4) return fmt::format("unknown chunk type {}", type);
  h.type = static_cast<ChunkType>(type);
  h.compressed_size = get<std::uint32_t>(in, 8);
  h.raw_size = get<std::uint32_t>(in, 12);
  h.kernel_index = get<std::uint32_t>(in, 16);
  h.warp_id = get<std::uint32_t>(in, 20);
  h.record_count = get<std::uint32_t>(in, 24);
  h.next_offset = get<std::uint64_t>(in, 32);
  if (h.compressed_size > kMaxChunkBytes || h.raw_size > kMaxChunkBytes) return "chunk size out of range";
  return {};
}

std::vector<unsigned char> compress(const std::vector<unsigned char>& raw) {
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_checksumFlag, 1);
  std::vector<unsigned char> out(ZSTD_compressBound(raw.size()));
  std::size_t n = ZSTD_compress2(ctx, out.data(), out.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(ctx);
  if (ZSTD_isError(n)) throw TraceError(std::string("zstd compression failed: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

void decompress(const unsigned char* data, std::size_t size, std::vector<unsigned char>& raw, std::size_t raw_size,
                const std::string& path, std::uint64_t offset) {
  raw.resize(raw_size);
  static thread_local const std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> context = [] {
    std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> c(ZSTD_createDCtx(), &ZSTD_freeDCtx);
    if (!kVerifyChecksums) ZSTD_DCtx_setParameter(c.get(), ZSTD_d_forceIgnoreChecksum, ZSTD_d_ignoreChecksum);
    return c;
  }();
  std::size_t n = ZSTD_decompressDCtx(context.get(), raw.data(), raw_size, data, size);
  if (ZSTD_isError(n))
    throw TraceError(fmt::format("{}: byte offset {}: corrupt chunk payload ({})", path, offset, ZSTD_getErrorName(n)));
  if (n != raw_size)
    throw TraceError(fmt::format("{}: byte offset {}: chunk payload size {} differs from header {}", path, offset, n, raw_size));
}

std::uint64_t ByteReader::varint() {
  std::uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    std::uint8_t b = u8();
    v |= std::uint64_t(b & 0x7F) << shift;
    if (!(b & 0x80)) return v;
  }
  fail("malformed varint");
}

std::string ByteReader::str(std::size_t max_len) {
  std::uint64_t n = varint();
  if (n > max_len) fail("string length out of range");
  need(n);
  std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return s;
}

void ByteReader::fail(const std::string& what) const {
  throw TraceError(fmt::format("{}: {} at byte offset {} (payload byte {}): {}", origin_->file ? *origin_->file : "<memory>",
                               origin_->part, origin_->offset, pos_, what));
}

namespace {
constexpr std::uint8_t kControlSection = 1;
constexpr std::uint8_t kCtaOrderSection = 2;
constexpr std::uint8_t kConstantSection = 3;
constexpr std::uint32_t kNoControl = 0xffffffffu;  // an instruction whose encoding the producer did not know
}  // namespace

std::vector<unsigned char> encode_kernel(const KernelInfo& k) {
  ByteWriter w;
  w.str(k.name);
  for (auto d : {k.grid, k.block}) { w.u32(d.x); w.u32(d.y); w.u32(d.z); }
  w.u32(k.registers_per_thread);
  w.u32(k.shared_bytes);
  w.varint(k.program.size());
  for (const auto& s : k.program) {
    w.varint(s.pc);
    w.u8(static_cast<std::uint8_t>(s.op));
    w.str(s.mnemonic);
    w.u8(s.num_dst);
    w.u8(s.num_src);
    for (int i = 0; i < s.num_dst; ++i) w.u16(s.dst[i]);
    for (int i = 0; i < s.num_src; ++i) w.u16(s.src[i]);
    w.u8(s.access_bytes);
    w.u8(static_cast<std::uint8_t>(s.atomic_op));
    w.u8(static_cast<std::uint8_t>(s.atomic_type));
  }
  // Version 1.1: the compiler's control bits, when the producer knew them.
  if (std::any_of(k.program.begin(), k.program.end(), [](const StaticInst& s) { return s.control.present; })) {
    w.u8(kControlSection);
    for (const auto& s : k.program) w.u32(s.control.present ? s.control.raw : kNoControl);
  }
  // Version 1.2: the order the CTAs drew their tickets in.
  if (!k.cta_order.empty()) {
    w.u8(kCtaOrderSection);
    for (const std::uint64_t cta : k.cta_order) w.varint(cta);
  }
  // Version 1.4: the constant-bank operands, where the producer knew them.
  if (std::any_of(k.program.begin(), k.program.end(), [](const StaticInst& s) { return s.constant.present; })) {
    w.u8(kConstantSection);
    for (const auto& s : k.program) w.varint(s.constant.present ? std::uint64_t(s.constant.key()) + 1 : 0);
  }
  return w.bytes;
}

KernelInfo decode_kernel(ByteReader& in) {
  KernelInfo k;
  k.name = in.str();
  for (Dim3* d : {&k.grid, &k.block}) {
    d->x = in.u32(); d->y = in.u32(); d->z = in.u32();
    if (d->x == 0 || d->y == 0 || d->z == 0) in.fail("zero launch dimension");
  }
  if (k.block.count() > 1024) in.fail("block larger than 1024 threads");
  k.registers_per_thread = in.u32();
  k.shared_bytes = in.u32();
  std::uint64_t n = in.varint();
  if (n == 0 || n > (1u << 24)) in.fail("program size out of range");
  k.program.resize(n);
  for (auto& s : k.program) {
    s.pc = in.varint();
    auto op = in.u8();
    if (op >= kOpClassCount) in.fail(fmt::format("unknown op class {}", op));
    s.op = static_cast<OpClass>(op);
    s.mnemonic = in.str(256);
    s.num_dst = in.u8();
    s.num_src = in.u8();
    if (s.num_dst > s.dst.size() || s.num_src > s.src.size()) in.fail("too many register operands");
    for (int i = 0; i < s.num_dst; ++i) if ((s.dst[i] = in.u16()) >= reg::kSpace) in.fail("register id out of range");
    for (int i = 0; i < s.num_src; ++i) if ((s.src[i] = in.u16()) >= reg::kSpace) in.fail("register id out of range");
    s.access_bytes = in.u8();
    auto aop = in.u8();
    auto aty = in.u8();
    if (aop > static_cast<int>(AtomicOp::Cas) || aty > static_cast<int>(DataType::F32x4)) in.fail("unknown atomic kind");
    s.atomic_op = static_cast<AtomicOp>(aop);
    s.atomic_type = static_cast<DataType>(aty);
    if (is_global_memory(s.op) && (s.access_bytes == 0 || s.access_bytes > 16)) in.fail("memory access width out of range");
    if (is_atomic(s.op) && s.atomic_op == AtomicOp::None) in.fail("atomic instruction without an operation");
  }
  std::uint8_t last_section = 0;
  while (!in.done()) {
    const std::uint8_t section = in.u8();
    if (section <= last_section) in.fail(fmt::format("section {} after section {}", section, last_section));
    last_section = section;
    if (section == kControlSection) {
      for (auto& s : k.program) {
        const std::uint32_t raw = in.u32();
        if (raw == kNoControl) continue;
        if (raw & ~ControlBits::kMask) in.fail("control bits out of range");
        s.control = ControlBits{raw, true};
      }
    } else if (section == kCtaOrderSection) {
      const std::uint64_t ctas = k.grid.count();
      if (ctas > in.remaining()) in.fail(fmt::format("CTA order of {} CTAs longer than its section", ctas));
      std::vector<bool> named(ctas, false);
      k.cta_order.resize(ctas);
      for (std::uint64_t& cta : k.cta_order) {
        cta = in.varint();
        if (cta >= ctas || named[cta]) in.fail(fmt::format("CTA order names CTA {} twice or outside the grid of {}", cta, ctas));
        named[cta] = true;
      }
    } else if (section == kConstantSection) {
      for (auto& s : k.program) {
        const std::uint64_t stored = in.varint();
        if (stored == 0) continue;
        const std::uint64_t key = stored - 1;
        if ((key >> 16) > ConstantOperand::kMaxBank) in.fail(fmt::format("constant bank {} out of range", key >> 16));
        s.constant = ConstantOperand::from_key(static_cast<std::uint32_t>(key));
      }
    } else {
      in.fail(fmt::format("unknown section {} after the program", section));
    }
  }
  return k;
}

namespace {
AddressMode choose_address_mode(const WarpInst& inst, std::uint64_t& base, std::int64_t& stride) {
  std::uint32_t mask = inst.active_mask;
  if (mask == 0) { base = 0; return AddressMode::Uniform; }
  int first = std::countr_zero(mask);
  base = inst.address[first];
  bool uniform = true, fits32 = true;
  for (std::uint32_t m = mask; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    std::int64_t d = static_cast<std::int64_t>(inst.address[lane] - base);
    uniform &= d == 0;
    fits32 &= d >= INT32_MIN && d <= INT32_MAX;
  }
  if (uniform) return AddressMode::Uniform;
  std::uint32_t rest = mask & (mask - 1);
  int second = std::countr_zero(rest);
  std::int64_t diff = static_cast<std::int64_t>(inst.address[second] - base);
  if (diff % (second - first) == 0) {
    stride = diff / (second - first);
    bool strided = stride >= INT32_MIN && stride <= INT32_MAX;
    for (std::uint32_t m = mask; m && strided; m &= m - 1) {
      int lane = std::countr_zero(m);
      strided = inst.address[lane] == base + static_cast<std::uint64_t>(stride * (lane - first));
    }
    if (strided) {
      base -= static_cast<std::uint64_t>(stride * first);
      return AddressMode::Strided;
    }
  }
  return fits32 ? AddressMode::Delta32 : AddressMode::Full64;
}
}  // namespace

void encode_record(ByteWriter& out, const StaticInst& s, const WarpInst& inst, std::uint32_t previous_index,
                   std::uint32_t previous_mask) {
  std::uint8_t flags = 0;
  bool explicit_index = inst.index != previous_index + 1;
  bool explicit_mask = inst.active_mask != previous_mask;
  if (explicit_index) flags |= kExplicitIndex;
  if (explicit_mask) flags |= kExplicitMask;
  std::uint64_t base = 0;
  std::int64_t stride = 0;
  AddressMode amode = AddressMode::Uniform;
  ValueMode vmode = ValueMode::None;
  const bool memory = is_global_memory(s.op);
  const std::uint32_t mask = inst.active_mask;
  if (memory) {
    amode = choose_address_mode(inst, base, stride);
    flags |= static_cast<std::uint8_t>(amode) << kAddressShift;
  }
  // An atomic's values are its active lanes'; a load's or a store's, those of value_lanes.
  const std::uint32_t value_lanes = is_atomic(s.op) ? mask : carries_values(s.op, s.mnemonic) ? inst.value_lanes & mask : 0;
  if (value_lanes) {
    vmode = ValueMode::Uniform;
    std::uint64_t v0 = inst.value[std::countr_zero(value_lanes)];
    for (std::uint32_t m = value_lanes; m; m &= m - 1)
      if (inst.value[std::countr_zero(m)] != v0) { vmode = ValueMode::PerLane; break; }
    flags |= static_cast<std::uint8_t>(vmode) << kValueShift;
  }
  out.u8(flags);
  if (explicit_index) out.varint(inst.index);
  if (explicit_mask) out.u32(mask);
  if (memory) {
    switch (amode) {
      case AddressMode::Uniform: out.u64(base); break;
      case AddressMode::Strided: out.u64(base); out.u32(static_cast<std::uint32_t>(static_cast<std::int32_t>(stride))); break;
      case AddressMode::Delta32:
        out.u64(base);
        for (std::uint32_t m = mask; m; m &= m - 1)
          out.u32(static_cast<std::uint32_t>(static_cast<std::int32_t>(inst.address[std::countr_zero(m)] - base)));
        break;
      case AddressMode::Full64:
        for (std::uint32_t m = mask; m; m &= m - 1) out.u64(inst.address[std::countr_zero(m)]);
        break;
    }
  }
  const bool wide = s.access_bytes > 4;
  if (vmode != ValueMode::None && !is_atomic(s.op)) out.u32(value_lanes);
  if (vmode == ValueMode::Uniform) {
    out.u64(inst.value[std::countr_zero(value_lanes)]);
  } else if (vmode == ValueMode::PerLane) {
    for (std::uint32_t m = value_lanes; m; m &= m - 1) {
      std::uint64_t v = inst.value[std::countr_zero(m)];
      if (wide) out.u64(v); else out.u32(static_cast<std::uint32_t>(v));
    }
  }
}

void decode_record_header(ByteReader& in, const std::vector<StaticInst>& program, RecordHeader& header,
                          std::uint32_t previous_index, std::uint32_t previous_mask) {
  std::uint8_t flags = in.u8();
  if (flags & ~kKnownFlags) in.fail(fmt::format("unknown record flags 0x{:02x}", flags));
  std::uint64_t index = (flags & kExplicitIndex) ? in.varint() : std::uint32_t(previous_index + 1);
  if (index >= program.size()) in.fail(fmt::format("instruction index {} outside the program ({} instructions)", index, program.size()));
  header.index = static_cast<std::uint32_t>(index);
  header.active_mask = (flags & kExplicitMask) ? in.u32() : previous_mask;
  header.flags = flags;
  const StaticInst& s = program[index];
  auto amode = static_cast<AddressMode>((flags >> kAddressShift) & 3);
  auto vmode = static_cast<ValueMode>((flags >> kValueShift) & 3);
  if (!is_global_memory(s.op) && amode != AddressMode::Uniform) in.fail("address mode on a non-memory instruction");
  if (vmode != ValueMode::None && !carries_values(s.op, s.mnemonic))
    in.fail("values on an instruction that is neither a global memory access nor a WARPSYNC");
  if (vmode == static_cast<ValueMode>(3)) in.fail("unknown value mode");
  if (is_atomic(s.op) && header.active_mask && vmode == ValueMode::None) in.fail("atomic instruction without operand values");
}

std::uint32_t decode_record_operands(ByteReader& in, const StaticInst& s, const RecordHeader& header,
                                     std::array<std::uint64_t, 32>* address, std::array<std::uint64_t, 32>* value) {
  const std::uint32_t mask = header.active_mask;
  auto amode = static_cast<AddressMode>((header.flags >> kAddressShift) & 3);
  auto vmode = static_cast<ValueMode>((header.flags >> kValueShift) & 3);
  std::array<std::uint64_t, 32> scratch;
  std::array<std::uint64_t, 32>& addr = address ? *address : scratch;
  if (is_global_memory(s.op)) {
    switch (amode) {
      case AddressMode::Uniform: {
        std::uint64_t a = in.u64();
        for (std::uint32_t m = mask; m; m &= m - 1) addr[std::countr_zero(m)] = a;
        break;
      }
      case AddressMode::Strided: {
        std::uint64_t a = in.u64();
        std::int64_t stride = static_cast<std::int32_t>(in.u32());
        for (std::uint32_t m = mask; m; m &= m - 1) {
          int lane = std::countr_zero(m);
          addr[lane] = a + static_cast<std::uint64_t>(stride * lane);
        }
        break;
      }
      case AddressMode::Delta32: {
        std::uint64_t a = in.u64();
        for (std::uint32_t m = mask; m; m &= m - 1)
          addr[std::countr_zero(m)] = a + static_cast<std::uint64_t>(std::int64_t(static_cast<std::int32_t>(in.u32())));
        break;
      }
      case AddressMode::Full64:
        for (std::uint32_t m = mask; m; m &= m - 1) addr[std::countr_zero(m)] = in.u64();
        break;
    }
  }
  if (vmode == ValueMode::None) return 0;
  std::uint32_t value_lanes = mask;
  if (!is_atomic(s.op)) {
    value_lanes = in.u32();
    if (!value_lanes || (value_lanes & ~mask)) in.fail(fmt::format("value lanes 0x{:08x} not among the active lanes 0x{:08x}", value_lanes, mask));
  }
  std::array<std::uint64_t, 32>& val = value ? *value : scratch;
  const bool wide = s.access_bytes > 4;
  if (vmode == ValueMode::Uniform) {
    std::uint64_t v = in.u64();
    for (std::uint32_t m = value_lanes; m; m &= m - 1) val[std::countr_zero(m)] = v;
  } else {
    for (std::uint32_t m = value_lanes; m; m &= m - 1) val[std::countr_zero(m)] = wide ? in.u64() : in.u32();
  }
  if (is_warp_sync(s.mnemonic))
    for (std::uint32_t m = value_lanes; m; m &= m - 1)
      if (const std::uint64_t masks = val[std::countr_zero(m)]; masks < 2 || masks > 32 || masks != val[std::countr_zero(value_lanes)])
        in.fail(fmt::format("a WARPSYNC's lanes name {} masks (2 to 32, the same on every lane)", masks));
  return value_lanes;
}

void decode_record(ByteReader& in, const std::vector<StaticInst>& program, WarpInst& inst,
                   std::uint32_t previous_index, std::uint32_t previous_mask) {
  RecordHeader header;
  decode_record_header(in, program, header, previous_index, previous_mask);
  inst.index = header.index;
  inst.active_mask = header.active_mask;
  inst.value_lanes = decode_record_operands(in, program[header.index], header, &inst.address, &inst.value);
}

}  // namespace format
}  // namespace atomsim::trace
