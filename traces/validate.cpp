#include "traces/validate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <map>

#include "traces/format.hpp"
#include "traces/sass.hpp"
#include "traces/reader.hpp"

namespace atomsim::trace {

TraceSummary validate_trace(const std::string& path) {
  // The reader checks header, trailer, footer and kernel metadata; the scan
  // below then walks every chunk in file order.
  TraceReader reader(path);
  TraceSummary summary;
  summary.file_bytes = reader.file_size();
  summary.version_minor = reader.version_minor();
  std::ifstream in(path, std::ios::binary);
  auto fail = [&](std::uint64_t offset, const std::string& what) {
    throw TraceError(fmt::format("{}: byte offset {}: {}", path, offset, what));
  };
  for (std::size_t k = 0; k < reader.kernel_count(); ++k) {
    const KernelInfo& info = reader.kernel(k);
    KernelSummary ks;
    ks.name = info.name;
    ks.grid = info.grid;
    ks.block = info.block;
    ks.registers_per_thread = info.registers_per_thread;
    ks.shared_bytes = info.shared_bytes;
    ks.warps = info.total_warps();
    ks.static_instructions = info.program.size();
    for (const auto& inst : info.program) ks.with_control_bits += inst.control.present;
    ks.control_bits_usable = control_bits_usable(info);
    ks.ticket_order = !info.cta_order.empty();
    summary.kernels.push_back(ks);
  }
  // Records seen per (kernel, warp), and the segment each chain expects next.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> records_seen;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> expected_next;
  std::uint64_t trailer_at = summary.file_bytes - format::kTrailerSize;
  std::uint64_t offset = format::kFileHeaderSize;
  std::vector<unsigned char> packed, raw;
  WarpInst inst;
  while (offset < trailer_at) {
    unsigned char h[format::kChunkHeaderSize];
    if (trailer_at - offset < sizeof h) fail(offset, "truncated chunk header");
    in.seekg(static_cast<std::streamoff>(offset));
    in.read(reinterpret_cast<char*>(h), sizeof h);
    format::ChunkHeader header;
    if (auto err = format::decode_chunk_header(h, header); !err.empty()) fail(offset, err);
    if (trailer_at - offset - sizeof h < header.compressed_size) fail(offset, "chunk payload runs past the trailer");
    packed.resize(header.compressed_size);
    in.read(reinterpret_cast<char*>(packed.data()), static_cast<std::streamsize>(packed.size()));
    format::decompress(packed.data(), packed.size(), raw, header.raw_size, path, offset);
    ++summary.chunks;
    if (header.type == format::ChunkType::Segment) {
      if (header.kernel_index >= reader.kernel_count()) fail(offset, "segment of an unknown kernel");
      const KernelInfo& info = reader.kernel(header.kernel_index);
      if (header.warp_id >= info.total_warps()) fail(offset, "segment of an unknown warp");
      auto key = std::make_pair(header.kernel_index, header.warp_id);
      auto exp = expected_next.find(key);
      if (exp != expected_next.end() && exp->second != offset)
        fail(offset, fmt::format("segment chain of warp {} expected the next segment at byte offset {}", header.warp_id, exp->second));
      expected_next[key] = header.next_offset;
      KernelSummary& ks = summary.kernels[header.kernel_index];
      const format::Origin origin{&path, "segment", offset};
      format::ByteReader records(raw.data(), raw.size(), origin);
      std::uint32_t prev_index = format::kInitialPreviousIndex, prev_mask = format::kInitialPreviousMask;
      for (std::uint32_t r = 0; r < header.record_count; ++r) {
        format::decode_record(records, info.program, inst, prev_index, prev_mask);
        prev_index = inst.index;
        prev_mask = inst.active_mask;
        const StaticInst& s = info.program[inst.index];
        ++ks.warp_instructions;
        ks.thread_instructions += static_cast<std::uint64_t>(std::popcount(inst.active_mask));
        ++ks.by_class[static_cast<int>(s.op)];
        if (inst.value_lanes && (s.op == OpClass::LoadGlobal || s.op == OpClass::StoreGlobal))
          ++(s.op == OpClass::LoadGlobal ? ks.awaiting_loads : ks.storing_awaited);
        if (is_warp_sync(s.mnemonic) && inst.active_mask) {
          auto sync = ks.warp_syncs.find(s.pc);
          if (sync == ks.warp_syncs.end()) sync = ks.warp_syncs.emplace(s.pc, make_warp_sync_shape()).first;
          sync->second(inst.value_lanes ? static_cast<int>(inst.value[std::countr_zero(inst.value_lanes)]) : 1);
        }
        if (is_atomic(s.op) && inst.active_mask) {
          const int lanes = std::popcount(inst.active_mask);
          ks.atomic_lane_ops += static_cast<std::uint64_t>(lanes);
          std::array<std::uint64_t, 32> addresses;
          int n = 0;
          for (std::uint32_t m = inst.active_mask; m; m &= m - 1) addresses[n++] = inst.address[std::countr_zero(m)];
          std::sort(addresses.begin(), addresses.begin() + n);
          const auto distinct = std::unique(addresses.begin(), addresses.begin() + n) - addresses.begin();
          auto atomic = ks.atomics.find(s.pc);
          if (atomic == ks.atomics.end())
            atomic = ks.atomics.emplace(s.pc, KernelSummary::AtomicInstruction{s.mnemonic, make_atomic_shape()}).first;
          atomic->second.shape(lanes, static_cast<int>(distinct));
        }
      }
      if (!records.done()) fail(offset, "segment holds more bytes than its records");
      records_seen[key] += header.record_count;
      summary.raw_bytes += raw.size();
    }
    offset += sizeof h + header.compressed_size;
  }
  if (offset != trailer_at) fail(offset, "chunks overrun the trailer");
  for (const auto& [key, next] : expected_next)
    if (next != 0) fail(next, fmt::format("warp {} links to a segment that is not there", key.second));
  for (std::size_t k = 0; k < reader.kernel_count(); ++k) {
    const KernelInfo& info = reader.kernel(k);
    for (std::uint64_t w = 0; w < info.total_warps(); ++w) {
      auto it = records_seen.find({static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(w)});
      std::uint64_t seen = it == records_seen.end() ? 0 : it->second;
      if (seen != reader.warp_records(k, w))
        throw TraceError(fmt::format("{}: kernel {} warp {}: {} records in segments, index says {}", path, k, w, seen,
                                     reader.warp_records(k, w)));
    }
  }
  return summary;
}

}  // namespace atomsim::trace
