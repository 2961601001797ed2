// L1 data cache and LSU pipeline of one SM. It drains the sub-cores' LG
// queues one instruction at a time, coalesces lanes into 32-byte sectors and
// 128-byte lines, serves load hits, writes through, and sends atomics to the
// L2 (or combines reductions in the optional atomic buffer). Back-pressure
// from the interconnect stalls the pipeline and so fills the LG queues.
#pragma once

#include <algorithm>
#include <array>
#include <utility>

#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/cache/tag_array.hpp"
#include "models/interconnect/address_map.hpp"
#include "models/l1/atomic_buffer.hpp"
#include "models/messages.hpp"
#include "sim/engine/erasable_queue.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/port.hpp"
#include "sim/engine/stats.hpp"

namespace atomsim::model {

// The L1's statistics that reports read back (models/l1/README.md lists all).
namespace l1_stat {
inline constexpr StatId kAtomicLaneOpsIn{"l1", "atomic_lane_ops_in"};
inline constexpr StatId kAtomicOpsToL2{"l1", "atomic_ops_to_l2"};
inline constexpr StatId kAtomicBufferCombines{"l1", "atomic_buffer_combines"};
inline constexpr StatId kPipelineUtilization{"l1", "pipeline_utilization"};
inline constexpr StatId kLgQueueOccupancy{"lg_queue", kOccupancyStat};  // each sub-core's LG queue
}  // namespace l1_stat


// How long a store or reduction counts against its warp (l1.writes_held_until).
enum class WritesHeldUntil : std::uint8_t { Acknowledged, Sent };
inline constexpr std::array<std::pair<const char*, WritesHeldUntil>, 2> kWritesHeldUntilNames{
    {{"acknowledged", WritesHeldUntil::Acknowledged}, {"sent", WritesHeldUntil::Sent}}};

struct L1Params {
  std::uint64_t capacity_bytes = 256 << 10;
  std::uint32_t line_bytes = 128;
  std::uint32_t sector_bytes = 32;
  std::uint32_t ways = 4;
  Cycle hit_latency = 30;
  double sectors_per_cycle = 4;
  double atomic_instruction_cycles = 0;
  std::uint32_t atomic_header_bytes = 0;
  std::uint32_t returning_header_bytes = 0;
  std::uint32_t lg_queue_depth = 8;
  std::uint32_t max_inflight_instructions = 256;
  bool atomic_buffer = false;
  std::uint32_t atomic_buffer_entries = 64;
  WritesHeldUntil writes_held_until = WritesHeldUntil::Acknowledged;
  bool wait_on_pending_lines = false;
  double same_word_interval = 0;
  std::uint32_t waiting_atomic_instructions = 1;

  void declare(ParamBinder b) {
    b.integer("capacity_bytes", capacity_bytes, 1024, 1 << 24, "L1 data capacity (the part not used as shared memory)");
    b.integer("line_bytes", line_bytes, 32, 1024, "line size");
    b.integer("sector_bytes", sector_bytes, 4, 1024, "sector size: the unit of coalescing and of L2 traffic");
    b.integer("ways", ways, 1, 256, "associativity");
    b.integer("hit_latency", hit_latency, 1, 10000, "cycles from the L1 taking a load to its data returning on a hit");
    b.real("sectors_per_cycle", sectors_per_cycle, 0.01, 64, "sector (or atomic lane) accesses the L1 pipeline handles per cycle");
    b.real("atomic_instruction_cycles", atomic_instruction_cycles, 0, 1000,
           "fewest cycles the pipeline spends on an atomic or reduction instruction");
    b.integer("atomic_header_bytes", atomic_header_bytes, 0, 1024,
              "bytes a reduction request's header takes of its first flit: operands that fit beside it ride in that flit, "
              "otherwise the request takes it and a flit a sector it updates");
    b.integer("returning_header_bytes", returning_header_bytes, 0, 1024,
              "the same for an atomic request whose old values return (ATOM), on the SM's port only: past it the "
              "request takes a reduction's flits");
    b.integer("lg_queue_depth", lg_queue_depth, 1, 256, "LG (LSU) queue entries per sub-core");
    b.integer("max_inflight_instructions", max_inflight_instructions, 1, 4096, "memory instructions the L1 tracks at once");
    b.choice("writes_held_until", writes_held_until, kWritesHeldUntilNames,
             "how long a store or reduction counts against its warp (which cannot retire, nor give its CTA's place to "
             "the next, before): until the L2 acknowledges each of its requests, or until the L1 has sent them all "
             "into the interconnect; a fence waits for the acknowledgements either way");
    b.boolean("wait_on_pending_lines", wait_on_pending_lines,
              "a load missing on a line that an earlier load already asked the L2 for waits for that line's reply "
              "instead of sending a request of its own");
    b.real("same_word_interval", same_word_interval, 0, 1000,
           "cycles between two atomic requests of this SM that update a common word (rounds of one instruction, or "
           "of instructions of any of its warps): the later waits, requests to other words pass it; 0: none wait");
    b.integer("waiting_atomic_instructions", waiting_atomic_instructions, 1, 256,
              "atomic instructions whose requests may wait for their words at once (same_word_interval): while this many "
              "do, the pipeline takes no other instruction");
    ParamBinder lab = b.sub("atomic_buffer");
    lab.boolean("enabled", atomic_buffer, "LAB-style combining of reductions in the L1");
    lab.integer("entries", atomic_buffer_entries, 1, 1 << 16, "atomic buffer entries (one word each)");
  }
  // An atomic request's flits: one where its header and its lanes' operands
  // fit in a flit (a sector's bytes), otherwise that first flit and one a
  // sector it updates. red_issue probe: every SM's REDs of one sector's eight
  // words reach the slices at two thirds of the rate of one-word ones; one SM
  // sends a RED of a line's 32 words every 5.3 cycles (five flits), one of 32
  // one-word requests every 32.7 (a flit each), an ATOM of those every 64.5
  // (two each). red_requests probe, one SM (one_sm/, 4 to 32 warps on words of
  // their own): a request of one sector's four or eight words takes two
  // cycles of the SM's port, of one word in each of a line's four sectors five.
  // `returns`: an ATOM's request, with the larger header.
  std::uint32_t atomic_request_flits(std::uint32_t operand_bytes, std::uint32_t sectors, bool returns) const {
    const std::uint32_t header = returns ? returning_header_bytes : atomic_header_bytes;
    return header + operand_bytes <= sector_bytes ? 1 : 1 + sectors;
  }
};

class L1 : public Unit {
 public:
  L1(const sc_core::sc_module_name& name, const L1Params& p, std::uint16_t sm, std::uint32_t subcores,
     const AddressMap& map, LaneOpPool& pool, StatRegistry& stats);
  InPort<LsuOp>& lg_queue(std::uint32_t subcore) { return *lg_queues_[subcore]; }
  OutPort<Completion>& to_sm() { return to_sm_; }
  OutPort<MemPacket>& to_l2() { return to_l2_; }
  InPort<MemPacket>& from_l2() { return from_l2_; }
  InPort<KernelEnd>& kernel_end() { return kernel_end_; }

 protected:
  void evaluate() override;

 private:
  struct Inflight {
    Completion completion;
    std::uint32_t remaining = 0;
    bool valid = false;
    bool coherent_load = false;  // its replies leave nothing in the L1
  };
  static constexpr std::uint32_t kFlushRequest = 0xFFFFFFFFu;
  // Marks the request of a store or reduction whose instruction completes once
  // sent (writes_held_until = "sent"): its acknowledgement only counts for fences.
  static constexpr std::uint32_t kSentCompletes = 0x80000000u;

  void take_instruction(LsuOp& op, Cycle now);
  // Sorted, distinct sectors the active lanes touch, into scratch_; with
  // `coverage`, the bytes of each the lanes write into covered_.
  void collect_sectors(const LsuOp& op, bool coverage);
  // One request per line of the sectors in scratch_ that `served_here(line)`
  // does not answer; returns how many were sent.
  template <class Served>
  std::uint32_t request_lines(const LsuOp& op, MemPacket::Kind kind, std::uint32_t slot, Served served_here);
  // Gives a request the values its lanes on `line` wrote or await (LsuOp::value_lanes).
  void attach_values(const LsuOp& op, MemPacket& p);
  void issue_loads(LsuOp& op, std::uint32_t slot, Cycle now);
  void issue_stores(LsuOp& op, std::uint32_t slot, Cycle now);
  void issue_atomics(LsuOp& op, std::uint32_t slot, Cycle now);
  void send_evicted(const BufferedUpdate& update);
  // Sends what may leave of outgoing_ in order, stopping where the
  // interconnect refuses; an atomic request whose words this SM updated less
  // than same_word_interval ago (or that follows one waiting for them) stays,
  // and those behind it go on. Returns whether the interconnect refused.
  bool send_outgoing(Cycle now);
  // The words of its line an atomic request updates, a bit each of 4 bytes.
  std::uint64_t words_of(const MemPacket& p) const;
  void queue_request(const MemPacket& p);
  void complete_if_sent(std::uint32_t request, Cycle now);
  // Whether the pipeline may take an instruction: a slot is free, and no more
  // instructions than waiting_atomic_instructions have requests waiting.
  bool room_to_take() const;
  void flush_atomic_buffer();
  void handle_reply(const MemPacket& reply, Cycle now);
  void complete(std::uint32_t slot, Cycle ready);
  void send_completion(const Completion& c, Cycle ready);
  std::uint32_t allocate_inflight(const LsuOp& op);

  const L1Params params_;
  const std::uint16_t sm_;
  const AddressMap& map_;
  LaneOpPool& pool_;
  TagArray tags_;
  std::optional<AtomicBuffer> atomic_buffer_;
  std::vector<std::unique_ptr<InPort<LsuOp>>> lg_queues_;
  OutPort<Completion> to_sm_;
  OutPort<MemPacket> to_l2_;
  InPort<MemPacket> from_l2_;
  InPort<KernelEnd> kernel_end_;
  RateServer pipeline_;
  std::uint32_t round_robin_ = 0;
  // The requests waiting to leave, in order, and beside them what a pass
  // over them reads of each: a pass looks at every request left waiting for
  // its words, and reads 16 bytes of it instead of its packet.
  struct OutgoingKey {
    std::uint64_t line_bits = 0;  // its line, with bit 0 set for an atomic (lines are at least 32 bytes)
    std::uint64_t words = 0;      // an atomic's (words_of), where its updates are spaced; else all
    std::uint64_t line() const { return line_bits & ~std::uint64_t(1); }
    bool atomic() const { return line_bits & 1; }
  };
  ErasableQueue<MemPacket> outgoing_;
  ErasableQueue<OutgoingKey> outgoing_keys_;
  // How many requests at the front of outgoing_ the last pass left waiting
  // for their words, when the next pass may take them as still waiting and
  // begin after them with waiting_ and wake_for_words_ as they were: until
  // wake_for_words_ (their time-waits still hold) and while no update has
  // changed what their lines' entries say (updates leave only in a pass; one
  // sent to such a line, or taking another line's live entry, makes the next
  // pass look at every request again). Requests are only ever queued behind
  // them. Without it, a pass per credit or per queued instruction would look
  // at every waiting request again.
  std::size_t still_waiting_ = kLookAgain;
  static constexpr std::size_t kLookAgain = ~std::size_t(0);
  // Runs of requests of one instruction (its `request` tag) in outgoing_:
  // an instruction's requests are queued together.
  std::uint32_t outgoing_instructions_ = 0;
  // Takes the request at `index` out of outgoing_, keeping outgoing_instructions_.
  void erase_outgoing(std::size_t index);
  // Lines atomic requests updated within same_word_interval: the words they
  // updated and when the next update of those may leave (RateServer's scaled
  // cycles), one entry a line in a small hash table (a few probes from the
  // line's home), as only a few cycles' sends are live at once.
  struct RecentUpdate {
    std::uint64_t line = 0, words = 0, free_at = 0;
  };
  static constexpr std::size_t kRecentLines = 256, kRecentProbes = 4;
  unsigned line_shift_ = 0;  // log2 of the line size: looked at for every request that waits for its words
  std::array<RecentUpdate, kRecentLines> recent_updates_{};
  std::size_t recent_home(std::uint64_t line) const {  // the top 8 bits of a multiplicative hash: 256 homes
    static_assert(kRecentLines == 256);
    return static_cast<std::size_t>(((line >> line_shift_) * 0x9E3779B97F4A7C15ull) >> 56);
  }
  // The line's live entry, if any.
  const RecentUpdate* recent_update(std::uint64_t line, Cycle now) const;
  // Adds an update of `words` to the line's entry (or takes one: a free entry,
  // else the one freeing first). Returns false when that entry was another
  // line's, still live.
  bool note_update(std::uint64_t line, std::uint64_t words, std::uint64_t free_at, Cycle now);
  // Scratch of send_outgoing: the lines of the requests left waiting, in
  // order, and the words they update (all, for a load or store).
  struct WaitingLine {
    std::uint64_t line = 0, words = 0;
  };
  std::vector<WaitingLine> waiting_;
  Cycle wake_for_words_ = kNever;      // when the first request left waiting for its words may leave
  std::deque<std::pair<Cycle, Completion>> completion_backlog_;
  std::vector<Inflight> inflight_;
  std::vector<std::uint32_t> free_inflight_;
  std::uint64_t outstanding_writes_ = 0;  // stores, atomics and flushes not yet acknowledged
  const bool writes_complete_when_sent_;
  std::vector<std::uint16_t> membar_waiters_;
  std::vector<std::uint64_t> scratch_;
  std::vector<std::uint32_t> covered_;
  std::vector<std::uint64_t> spans_;  // the lanes' addresses, sorted
  // Lines asked of the L2 by loads and not yet back, each with the in-flight
  // slots waiting for it (the one that asked first), when loads wait on them.
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> pending_lines_;

  std::uint64_t instructions_ = 0, load_sectors_ = 0, load_hits_ = 0, load_misses_ = 0, load_pending_hits_ = 0, coherent_load_lines_ = 0,
                store_sectors_ = 0,
                atomic_lane_ops_in_ = 0, atomic_ops_to_l2_ = 0, atomic_packets_to_l2_ = 0, buffered_combines_ = 0,
                buffer_evictions_ = 0, atomic_invalidations_ = 0, stall_cycles_ = 0, inflight_level_ = 0, inflight_integral_ = 0;
  Cycle inflight_changed_ = 0;
};

}  // namespace atomsim::model
