// One L2 slice: a tag pipeline that accepts requests at the L2 clock, MSHRs
// for misses to DRAM, and ROP atomic units that apply atomics functionally.
// An atomic from an SM of the other partition enters at a slice of the SM's
// partition, which looks it up and passes it on through the link between the
// partitions to its home slice, where it is applied.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "models/cache/tag_array.hpp"
#include "models/interconnect/address_map.hpp"
#include "models/l2/atomic_memory.hpp"
#include "models/messages.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/port.hpp"
#include "sim/engine/release_queue.hpp"
#include "sim/engine/stats.hpp"

namespace atomsim::model {

// The slices' statistics that reports read back (models/l2/README.md lists all).
namespace l2_slice_stat {
inline constexpr StatId kAtomicOps{"l2_slice", "atomic_ops"};
inline constexpr StatId kAtomicLaneUpdates{"l2_slice", "atomic_lane_updates"};
inline constexpr StatId kLookupUtilization{"l2_slice", "lookup_utilization"};
inline constexpr StatId kRopUtilization{"l2_slice", "rop_utilization"};
}  // namespace l2_slice_stat


// What the slices hold when a kernel starts (l2.start).
enum class L2Start : std::uint8_t { Cold, Footprint };
inline constexpr std::array<std::pair<const char*, L2Start>, 2> kL2StartNames{
    {{"cold", L2Start::Cold}, {"footprint", L2Start::Footprint}}};

struct L2Params {
  std::uint32_t slices = 1;
  std::uint32_t partitions = 1;
  std::uint64_t slice_bytes = 1 << 20;
  std::uint32_t line_bytes = 128;
  std::uint32_t sector_bytes = 32;
  std::uint32_t fetch_bytes = 128;
  std::uint32_t interleave_bytes = 128;
  std::uint32_t ways = 16;
  AddressHash hash = AddressHash::Xor;
  double lookups_per_cycle = 1;
  Cycle hit_latency = 1;
  std::uint32_t mshrs = 64;
  std::uint32_t input_buffer_flits = 64;
  double far_partition_extra_lookups = 0;
  Cycle far_partition_latency = 0;
  Cycle far_partition_miss_latency = 0;
  std::uint32_t rop_units_per_slice = 1;
  double rop_ops_per_cycle = 1;
  double rop_request_overhead = 0;
  Cycle rop_latency = 1;
  Cycle rop_return_latency = 0;
  double rop_returned_value_cost = 0;
  L2Start start = L2Start::Cold;
  bool far_lines_cached_near = false;
  double dirty_fraction = 1;

  void declare(ParamBinder b) {
    b.integer("slices", slices, 1, 4096, "L2 slices (LTS units) in the GPU");
    b.integer("partitions", partitions, 1, 16, "L2 partitions; a load or store to a slice of another partition than its SM's pays the far-partition costs, an atomic enters at a slice of its SM's partition that passes it on");
    b.integer("slice_bytes", slice_bytes, 1024, 1ll << 26, "capacity of one slice (the model keeps every line's tag)");
    b.integer("line_bytes", line_bytes, 32, 1024, "line size");
    b.integer("sector_bytes", sector_bytes, 4, 1024,
              "sector size: what a line's data is held, read from DRAM and written back in (at most 8 a line)");
    b.integer("fetch_bytes", fetch_bytes, 4, 1024,
              "what a load or an atomic that misses reads from DRAM: the sectors its line lacks in each aligned piece of "
              "this many bytes that holds a sector it needs (a power of two from a sector to a line); a store written in "
              "part reads only the sectors it writes in part");
    b.integer("interleave_bytes", interleave_bytes, 32, 1 << 20,
              "consecutive bytes one slice holds before the address hash moves to another (a power of two, at least a line)");
    b.integer("ways", ways, 1, 256, "associativity");
    b.choice("hash", hash, kAddressHashNames, "address-to-slice hash");
    b.real("lookups_per_cycle", lookups_per_cycle, 0.001, 64, "tag lookups per SM cycle per slice (one per L2 clock)");
    b.integer("hit_latency", hit_latency, 1, 10000, "cycles from lookup to reply for a hit");
    b.integer("mshrs", mshrs, 1, 4096, "outstanding line misses per slice");
    b.integer("input_buffer_flits", input_buffer_flits, 1, 4096, "request flits buffered at the slice input");
    b.real("far_partition_extra_lookups", far_partition_extra_lookups, 0, 8, "extra lookups a load or store from the other partition costs at its slice, per flit, and an atomic at the slice that passes it on, per sector (a fraction costs that share of a lookup's time)");
    b.integer("far_partition_latency", far_partition_latency, 0, 10000, "extra cycles for a load or store from the other partition (an atomic pays interconnect.partition instead)");
    b.integer("far_partition_miss_latency", far_partition_miss_latency, 0, 10000,
              "further cycles for a request from the other partition whose line came from DRAM (the near partition's miss "
              "goes on to the far one)");
    b.integer("rop_units_per_slice", rop_units_per_slice, 1, 64, "ROP atomic units per slice");
    b.real("rop_ops_per_cycle", rop_ops_per_cycle, 0.001, 64, "sectors of atomic requests one ROP unit applies per SM cycle (a request's lanes in one sector together)");
    b.real("rop_request_overhead", rop_request_overhead, 0, 16,
           "ROP time each atomic request costs beyond its sectors, in sectors of reduction time");
    b.integer("rop_latency", rop_latency, 1, 10000, "cycles from an atomic's start in the ROP to its reply");
    b.integer("rop_return_latency", rop_return_latency, 0, 10000,
              "further cycles before the reply of an atomic that returns the old values (ATOM), beyond a reduction's acknowledgement");
    b.real("rop_returned_value_cost", rop_returned_value_cost, 0, 16,
           "time each old value an atomic returns (ATOM) takes in its ROP unit's return stage, which works behind the unit's "
           "input, in sectors of reduction time");
    b.boolean("far_lines_cached_near", far_lines_cached_near,
              "a load or store enters the L2 at a slice of its SM's partition, which keeps a copy of a line of the other "
              "partition: it serves it when it holds it, else passes the request on to the home slice over the link between "
              "the partitions (a store updates a near copy the slice holds, clean, but makes none; an atomic passed on drops it)");
    b.real("dirty_fraction", dirty_fraction, 0.001, 1,
           "share of a slice's lines that may hold dirty data: past it, a dirty line drawn at random is written back "
           "and kept, clean (1: dirty lines are written back only when evicted)");
    b.choice("start", start, kL2StartNames,
             "the slices' contents when a kernel starts: cold, what earlier kernels of the run left (nothing for the first); "
             "footprint, also every line the kernel's global memory instructions touch, put in in trace order (as after "
             "earlier launches over the same data)");
  }
  AddressMapParams address_map() const {
    return {slices, partitions, line_bytes, interleave_bytes, hash, far_lines_cached_near};
  }
};

class L2Slice : public Unit {
 public:
  L2Slice(const sc_core::sc_module_name& name, const L2Params& p, std::uint32_t index, const AddressMap& map,
          LaneOpPool& pool, StatRegistry& stats);
  InPort<MemPacket>& requests() { return requests_; }
  OutPort<MemPacket>& replies() { return replies_; }
  OutPort<DramRequest>& to_dram() { return to_dram_; }
  InPort<DramRequest>& from_dram() { return from_dram_; }
  // Atomics entering here for a home slice in the other partition, and those
  // arriving from the other partition for this one.
  OutPort<MemPacket>& to_other_partition() { return to_other_partition_; }
  InPort<MemPacket>& from_other_partition() { return from_other_partition_; }
  const AtomicMemory& atomic_memory() const { return memory_; }
  // Whether the ROP units apply each lane's update to the words' values
  // (atomic_memory), which only a functional check of the atomics reads: a
  // run that does not check keeps no image of a kernel's scattered words.
  void keep_atomic_values(bool keep) { keep_atomic_values_ = keep; }
  // Puts a line in the cache before a kernel starts, clean (the set's least recently used line makes room).
  void preload(std::uint64_t line);
  // When the read that has waited longest here for a value began waiting; kNever when none waits.
  Cycle oldest_awaiting_read() const { return awaiting_reads_.empty() ? kNever : awaiting_reads_.front().since; }
  // Replies to that read at `now` as if its values were written. For a
  // simulation that would otherwise stop: the trace's value came from outside
  // the kernel, or the replay took an order no GPU run could have taken.
  void release_awaiting_read(Cycle now);

 protected:
  void evaluate() override;

 private:
  // Returns false when the packet cannot be taken now (resources busy).
  bool accept(MemPacket& packet, Cycle now);
  // The sectors the packet's line, holding `valid`, must read from DRAM
  // before it is served (a write first allocates its line).
  SectorMask sectors_to_read(const MemPacket& packet, SectorMask valid);
  // Reads `sectors` of the packet's line from DRAM, or joins the read of the
  // line in flight, and parks the packet until it is back; false when no
  // MSHR or DRAM queue space is free.
  bool fetch(const MemPacket& packet, SectorMask sectors);
  std::uint32_t sector_bytes(SectorMask sectors) const { return std::popcount(sectors) * params_.sector_bytes; }
  bool pass_on(const MemPacket& packet, Cycle now);
  // An atomic that entered here for its home slice in the other partition.
  bool passes_on(const MemPacket& packet) const { return packet.is_atomic() && map_.slice_of(packet.line) != index_; }
  // An ATOM's reply to an SM of the other partition, which returns over the
  // link between the partitions (marked so by serve).
  static bool returns_over_link(const MemPacket& reply) {
    return reply.kind == MemPacket::Kind::AtomicReply && reply.via_partition_link;
  }
  // Such a reply arrived here: on to its SM.
  void pass_back(MemPacket& reply, Cycle now);
  // A load or store of this partition's SMs for a line of the other
  // partition: served from the copy here, or passed on to the home slice.
  bool accept_near_copy(MemPacket& packet, Cycle now);
  void serve(MemPacket& packet, Cycle start, bool from_dram);
  // Extra cycles a load's or store's reply takes back to an SM of the other partition.
  Cycle far_reply_latency(const MemPacket& packet, bool from_dram) const;
  // Words loads wait on (MemPacket::ops of reads and writes): a read is
  // answered once every word it awaits has been written.
  bool awaited_words_written(const MemPacket& read) const;
  void reply_to_read(const MemPacket& read, Cycle ready);
  void record_written_words(const MemPacket& write, Cycle now);
  Cycle run_atomic(MemPacket& packet, Cycle start);
  // Occupies one of a slice's ROP stages (a unit's input or return stage) and
  // adds its busy time, as a share of all units, to the stage kind's statistic.
  Cycle occupy_counted(RateServer& stage, Cycle start, double cost, std::uint64_t& busy_scaled);
  void apply(AtomicCell& cell, const LaneOp& op, trace::AtomicOp kind, trace::DataType type);
  void schedule_reply(Cycle ready, const MemPacket& packet);
  // Dirty victims wait here when the DRAM queue is full: none is lost, and
  // misses wait behind them.
  void write_back(const TagArray::Victim& victim);
  void send_writebacks();
  // Marks the packet's sectors written and, past the share of dirty lines a
  // slice keeps, writes back dirty lines drawn at random, kept clean.
  void write_sectors(const MemPacket& packet);

  const L2Params params_;
  const std::uint32_t index_;
  const AddressMap& map_;
  LaneOpPool& pool_;
  TagArray tags_;
  InPort<MemPacket> requests_;
  OutPort<MemPacket> replies_;
  OutPort<DramRequest> to_dram_;
  InPort<DramRequest> from_dram_;
  OutPort<MemPacket> to_other_partition_;
  InPort<MemPacket> from_other_partition_;
  RateServer lookups_;
  std::vector<RateServer> rop_units_;
  std::vector<RateServer> rop_returns_;
  std::unordered_map<std::uint64_t, std::vector<MemPacket>> mshrs_;
  std::deque<TagArray::Victim> pending_writebacks_;
  const std::uint64_t max_dirty_lines_;
  std::uint64_t cleaning_draw_;  // xorshift state: which dirty line goes back next
  const SectorMask line_sectors_;
  const std::uint32_t fetch_sectors_;  // sectors in an aligned piece a miss reads whole
  std::vector<MemPacket> refilled_;  // packets whose line arrived, replayed before new requests
  ReleaseQueue<MemPacket> pending_replies_;  // by cycle, then in the order scheduled
  bool far_turn_ = false;  // whether the other partition's atomics go first next
  AtomicMemory memory_;
  bool keep_atomic_values_ = true;
  // The words that loads await which stores have written so far.
  std::unordered_set<std::uint64_t> written_words_;
  struct AwaitingRead {
    MemPacket packet;
    Cycle since;
    Cycle extra;  // far_reply_latency
  };
  std::deque<AwaitingRead> awaiting_reads_;

  std::uint64_t hits_ = 0, misses_ = 0, reads_ = 0, writes_ = 0, atomic_packets_ = 0, atomic_ops_ = 0, atomic_sectors_ = 0,
                replies_passed_back_ = 0, atomic_updates_ = 0, far_requests_ = 0, passed_on_ = 0, writebacks_ = 0, cleanings_ = 0, rop_busy_scaled_ = 0,
                rop_return_busy_scaled_ = 0, near_copy_hits_ = 0, near_copy_misses_ = 0, near_copies_dropped_ = 0, awaiting_reads_count_ = 0, await_cycles_ = 0, awaits_released_ = 0;
};

}  // namespace atomsim::model
