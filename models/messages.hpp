// The vocabulary units speak through their ports. A unit knows these message
// types, never the unit on the other side of a port.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include "sim/engine/unit.hpp"
#include "traces/trace.hpp"

namespace atomsim::model {

// Registers one instruction writes, at most: a 128-bit load fills four.
inline constexpr int kMaxDestinations = 4;

// The MIO pipe an instruction takes: bit manipulation (BREV, FLO, POPC) and
// the other instructions the compiler gives a result barrier without a pipe of
// their own (S2R, LDC) share one with warp-wide reductions (REDUX), whose
// results come later; matches (MATCH) share the shuffles' pipe with a latency
// of their own.
enum class MioPipe : std::uint8_t { Shuffle, Match, Shared, Sfu, Bits, Redux };

// A warp instruction handed from a sub-core to the MIO (shared memory,
// shuffles, special math, bit manipulation).
struct MioOp {
  std::uint16_t warp_slot = 0;
  trace::OpClass op = trace::OpClass::Shuffle;
  MioPipe pipe = MioPipe::Shuffle;
  // Passes through its MIO pipe: for shared memory its wavefronts (128-byte pieces of register
  // data, or as the GPU measured them with its banks' conflicts), for MATCH.ANY the distinct
  // values among its lanes (as measured); one for anything else. A mean where measured.
  float units = 1;
  std::uint8_t num_dst = 0;
  std::array<std::uint16_t, kMaxDestinations> dst{};
  std::uint8_t write_barrier = trace::ControlBits::kNoBarrier;  // the warp's dependency barrier its completion frees
  std::uint32_t flits() const { return 1; }
};

// A warp instruction placed in the LSU (LG) queue toward the L1.
struct LsuOp {
  enum class Kind : std::uint8_t { Memory, Membar, BarrierFlush };
  Kind kind = Kind::Memory;
  std::uint16_t warp_slot = 0;
  trace::OpClass op = trace::OpClass::LoadGlobal;
  std::uint8_t access_bytes = 4;
  bool coherent_load = false;  // a load of GPU or system scope: the L2 serves it, the L1 keeps no copy
  trace::AtomicOp atomic_op = trace::AtomicOp::None;
  trace::DataType atomic_type = trace::DataType::None;
  std::uint8_t num_dst = 0;
  std::array<std::uint16_t, kMaxDestinations> dst{};
  std::uint8_t write_barrier = trace::ControlBits::kNoBarrier;  // the warp's dependency barrier its completion frees
  std::uint32_t active_mask = 0;
  // Lanes whose value counts: an atomic's operands; a store's written value or
  // a coherent load's awaited one, for words a load of the trace waited on.
  std::uint32_t value_lanes = 0;
  std::array<std::uint64_t, 32> address{};
  std::array<std::uint64_t, 32> value{};
  // Lane updates each lane carries: 1, or more where a warp-reduction unit combined lanes into it.
  std::array<std::uint8_t, 32> updates = [] {
    std::array<std::uint8_t, 32> one_each;
    one_each.fill(1);
    return one_each;
  }();
  std::uint32_t flits() const { return 1; }
};

// Result or acknowledgement returned to the SM for one instruction.
struct Completion {
  enum class Kind : std::uint8_t { Registers, MemoryAck, MembarDone };
  Kind kind = Kind::Registers;
  std::uint16_t warp_slot = 0;
  std::uint8_t num_dst = 0;
  std::array<std::uint16_t, kMaxDestinations> dst{};
  bool also_acks_memory = false;  // a load/atomic result also retires the memory op
  std::uint8_t write_barrier = trace::ControlBits::kNoBarrier;  // the instruction's, freed by this completion
  std::uint32_t flits() const { return 1; }
};

// One lane's atomic update (or several combined by an L1 atomic buffer).
struct LaneOp {
  std::uint64_t address = 0;
  std::uint64_t value = 0;
  std::uint32_t updates = 1;  // lane updates folded into this one
};

// Operation lists travel by handle so that packets stay small in buffers. A
// handle names a fixed slot of 32 operations (a request holds at most one lane
// per word of a line) in chunks that never move, so a slot's address is one
// step from its handle and stays valid while more are acquired; the packet
// carries the count (MemPacket::op_count). Each owner (an L1) acquires from a
// shelf of its own, so owners evaluated on different threads never share one;
// a slot given back by another unit returns to its shelf at the cycle's end.
class LaneOpPool final : public CycleEndEffect {
 public:
  static constexpr std::uint32_t kSlotOps = 32;
  explicit LaneOpPool(std::uint32_t owners) : shelves_(owners) {
    if (owners > (1u << kOwnerBits)) throw std::invalid_argument("too many owners for a lane operation pool");
  }
  std::uint32_t acquire(std::uint32_t owner) {
    Shelf& shelf = shelves_[owner];
    std::uint32_t slot;
    if (shelf.free.empty()) {
      if (shelf.slots == kChunks * kChunkSlots)
        throw std::runtime_error("lane operation pool: more requests in flight than an L1 can hold");
      if (shelf.slots % kChunkSlots == 0) shelf.chunks[shelf.slots / kChunkSlots] = std::make_unique<Slot[]>(kChunkSlots);
      slot = shelf.slots++;
    } else {
      slot = shelf.free.back();
      shelf.free.pop_back();
    }
    return owner << kSlotBits | slot;
  }
  LaneOp* ops(std::uint32_t handle) {
    const std::uint32_t slot = handle & kSlotMask;
    return shelves_[handle >> kSlotBits].chunks[slot / kChunkSlots][slot % kChunkSlots].data();
  }
  // The unit that acquires from `owner`'s shelf, whose thread takes back its slots.
  void set_owner_unit(std::uint32_t owner, const Unit& unit) { shelves_[owner].unit = &unit; }
  void release(std::uint32_t handle) { defer_to_cycle_end(*this, handle, shelves_[handle >> kSlotBits].unit); }
  void apply_at_cycle_end(std::uint64_t handle, const std::uint64_t*) override {
    shelves_[handle >> kSlotBits].free.push_back(static_cast<std::uint32_t>(handle) & kSlotMask);
  }

 private:
  static constexpr std::uint32_t kOwnerBits = 10, kSlotBits = 32 - kOwnerBits, kSlotMask = (1u << kSlotBits) - 1;
  static constexpr std::uint32_t kChunkSlots = 64, kChunks = 1024;
  using Slot = std::array<LaneOp, kSlotOps>;
  struct alignas(64) Shelf {
    std::array<std::unique_ptr<Slot[]>, kChunks> chunks;  // fixed, so that readers never see it move
    std::uint32_t slots = 0;
    std::vector<std::uint32_t> free;
    const Unit* unit = nullptr;
  };
  std::vector<Shelf> shelves_;
};

// Traffic between L1s and L2 slices (through the crossbars) and to DRAM.
struct MemPacket {
  enum class Kind : std::uint8_t { Read, Write, Atomic, Reduction, ReadReply, WriteAck, AtomicReply, ReductionAck };
  // Fields ordered so that a packet takes 32 bytes: every packet crosses
  // threads at least twice, and its copies are what a crossbar's thread reads.
  std::uint64_t line = 0;         // line-aligned address
  std::uint32_t request = 0;      // requester's tag, echoed in the reply
  // LaneOpPool handle: an atomic's lane operations; a write's values and a
  // read's awaited values of words that loads wait on (reads and writes with op_count > 0).
  std::uint32_t ops = 0;
  std::uint16_t source = 0;       // SM (requests) or slice (replies)
  std::uint16_t destination = 0;  // slice (requests) or SM (replies): the crossbar routes on it
  std::uint16_t op_count = 0;     // lane operations in the packet (at most one per word)
  std::uint16_t partial_bytes = 0;   // writes: the bytes they write in those sectors
  Kind kind = Kind::Read;
  std::uint8_t sectors = 1;       // sectors carried (reads, writes, read replies, atomics and their replies)
  trace::AtomicOp atomic_op = trace::AtomicOp::None;
  trace::DataType atomic_type = trace::DataType::None;
  std::uint8_t atomic_flits = 1;  // an atomic request's flits: a header and its lanes' operands
  std::uint8_t sector_mask = 0;   // requests: which of the line's sectors they read, write or update (bit i: sector i)
  std::uint8_t partial_sectors = 0;  // writes: the sectors of sector_mask written only in part
  std::uint8_t port_extra_flits : 7 = 0;  // what an ATOM's larger header adds on the SM's port (L1Params::returning_header_bytes)
  bool via_partition_link : 1 = false;    // a load or store a slice of the SM's partition passed on to the home slice
  bool is_atomic() const { return kind == Kind::Atomic || kind == Kind::Reduction; }
  // Toward the slices a flit carries a sector's bytes. A write sends its whole
  // sectors a flit each and, where it writes sectors in part, their bytes
  // packed behind a flit of byte masks: stores probe, the crossbar into the
  // slices is busy twice as long for scattered 4-byte stores as for whole
  // sectors at the same rate (ncu-stores.csv, lts__xbar2lts_cycles_active);
  // red_requests probe, one SM: a lone warp stores a word into each of a
  // line's four sectors, eight lines a store, every 19.5 cycles as it stores
  // a line's 32 words (one_sm/ncu-t32-store-*.csv), not in the 64 that two
  // flits a partial sector would take.
  static constexpr std::uint32_t kFlitBytes = 32;
  std::uint32_t flits() const {
    switch (kind) {
      case Kind::Write: {
        const std::uint32_t partial = static_cast<std::uint32_t>(std::popcount(partial_sectors));
        return sectors - partial + (partial ? 1 + (partial_bytes + kFlitBytes - 1) / kFlitBytes : 0);
      }
      case Kind::ReadReply: case Kind::AtomicReply: return sectors;
      case Kind::Atomic: case Kind::Reduction: return atomic_flits;
      default: return 1;
    }
  }
  // Flits on the link into the crossbar from the unit that sent it (an SM's port).
  std::uint32_t sender_port_flits() const { return flits() + port_extra_flits; }
};
static_assert(sizeof(MemPacket) == 32);

struct DramRequest {
  bool write = false;
  std::uint16_t slice = 0;
  std::uint64_t line = 0;
  std::uint32_t bytes = 128;
  std::uint8_t sectors = 0;  // which of the line's sectors it reads or writes
  std::uint32_t flits() const { return 1; }
};

// Work distribution between the CTA dispatcher and SMs.
struct CtaLaunch {
  std::uint64_t cta = 0;
  std::uint32_t flits() const { return 1; }
};
struct CtaDone {
  std::uint64_t cta = 0;
  std::uint32_t flits() const { return 1; }
};
// Broadcast at kernel end so buffers holding deferred work (LAB) drain.
struct KernelEnd {
  std::uint32_t flits() const { return 1; }
};

}  // namespace atomsim::model
