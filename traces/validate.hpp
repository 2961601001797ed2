// Whole-file check of a trace: every chunk from the first byte to the
// trailer, every record decoded, every warp's segment chain matched with its
// index. Used by `atomsim trace validate` and `atomsim trace info`.
#pragma once

#include <boost/histogram.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::trace {

// How one atomic instruction was executed: per warp instruction, its active
// lanes (1-32) against the distinct addresses they updated (1-32). Few
// addresses among many lanes is the regime warp-level reduction (DISTWAR)
// serves; as many addresses as lanes, the one it cannot help.
inline auto make_atomic_shape() {
  return boost::histogram::make_histogram(boost::histogram::axis::integer<>(1, 33, "active lanes"),
                                          boost::histogram::axis::integer<>(1, 33, "distinct addresses"));
}
using AtomicShape = decltype(make_atomic_shape());

// How many different masks the lanes of one WARPSYNC named per execution
// (1-32): the passes it takes (docs/trace-format.md, format 1.3).
inline auto make_warp_sync_shape() { return boost::histogram::make_histogram(boost::histogram::axis::integer<>(1, 33, "masks")); }
using WarpSyncShape = decltype(make_warp_sync_shape());

struct KernelSummary {
  std::string name;
  Dim3 grid, block;
  std::uint32_t registers_per_thread = 0, shared_bytes = 0;
  std::uint64_t warps = 0;
  std::uint64_t static_instructions = 0;
  std::uint64_t with_control_bits = 0;  // static instructions whose control bits the trace carries
  bool control_bits_usable = false;     // trace::control_bits_usable
  std::uint64_t warp_instructions = 0;
  std::uint64_t thread_instructions = 0;
  std::array<std::uint64_t, kOpClassCount> by_class{};
  std::uint64_t atomic_lane_ops = 0;
  bool ticket_order = false;            // the kernel carries the order its CTAs started in (KernelInfo::cta_order)
  std::uint64_t awaiting_loads = 0;     // load warp instructions that wait for another warp's store (value lanes)
  std::uint64_t storing_awaited = 0;    // store warp instructions those loads wait for
  struct AtomicInstruction {
    std::string mnemonic;
    AtomicShape shape;
  };
  std::map<std::uint64_t, AtomicInstruction> atomics;  // per atomic instruction, by pc
  std::map<std::uint64_t, WarpSyncShape> warp_syncs;   // per WARPSYNC (not the collective form), by pc
};

struct TraceSummary {
  std::uint16_t version_minor = 0;  // of format v1, as the file's header says
  std::uint64_t file_bytes = 0;
  std::uint64_t raw_bytes = 0;  // decompressed record payload
  std::uint64_t chunks = 0;
  std::vector<KernelSummary> kernels;
};

// Throws TraceError naming the file and byte offset of the first problem.
TraceSummary validate_trace(const std::string& path);

}  // namespace atomsim::trace
