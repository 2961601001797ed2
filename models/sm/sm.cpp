#include "models/sm/sm.hpp"

#include <algorithm>
#include <bit>

#include "traces/sass.hpp"

namespace atomsim::model {

using trace::OpClass;

namespace {

// LsuReduced: a RED that the warp-reduction unit combines on its way to the LG queue.
enum class Route : std::uint8_t { Pipe, Mio, Lsu, LsuReduced, Barrier, Membar };
constexpr int kGeneralRegisters = 255;  // R0..R254; RZ is not a register
enum PipeIndex : std::uint8_t { kIntAlu, kFpAlu, kFma, kVote, kBranch, kMisc, kPipeCount };

// What the SM needs of a static instruction, compactly. Registers are renumbered
// densely per kernel (in order of first use) so that the registers a kernel
// uses share the first words of each warp's scoreboard. Two cache lines since
// the control bits joined (no cost measured: docs/performance.md).
struct alignas(64) InstTiming {
  OpClass op = OpClass::Misc;
  Route route = Route::Pipe;
  std::uint8_t pipe = kMisc;
  bool resolves_branch = false;
  bool syncs_lanes = false;  // a WARPSYNC: its lanes' masks say how long it holds the warp
  std::uint8_t num_src = 0;
  std::uint8_t num_dst = 0;
  bool operands_in_sets = true;  // every register is below RegSet::kLimit
  std::uint8_t shared_bytes_per_lane = 0;  // shared-memory instructions: what each lane moves
  bool coherent_load = false;              // served by the L2, past the L1 (trace::is_coherent_load)
  MioPipe mio_pipe = MioPipe::Shuffle;     // MIO instructions: which of the MIO's pipes
  float measured_mio_units = 0;            // what the GPU measured of MioOp::units (0: not measured)
  std::array<std::uint16_t, 6> src{};
  std::array<std::uint16_t, kMaxDestinations> dst{};
  std::uint16_t latency = 1;
  // The compiler's control bits, where the program has them and the
  // configuration uses them (sm.dependences): then they, not the registers,
  // say what the instruction waits for.
  bool control_bits = false;
  std::uint8_t stall = 1;
  std::uint8_t wait_mask = 0;
  std::uint8_t write_barrier = trace::ControlBits::kNoBarrier;
  std::uint8_t read_barrier = trace::ControlBits::kNoBarrier;
  RegSet src_set, dst_set;
};

// What the scheduler scans every evaluation, apart from the cold warp state.
struct WarpHot {
  std::uint16_t slot = 0;
  bool resident = false;
  bool dirty = true;       // something about the warp changed: classify it in full
  bool ready_when_timer_expires = false;  // a Wait/BranchResolving warp needs only its resource afterwards
  Route route = Route::Pipe;  // what its next instruction needs, once dependences are met
  std::uint8_t pipe = 0;
  WarpState state = WarpState::NoInstructions;
  Cycle unblock_at = kNever;
  std::uint64_t age = 0;
  // Per-instruction accounting (SmHooks::on_warp_cycles): the instruction the
  // warp is at and since when it has been in its state there.
  std::uint32_t instruction = kNoInstruction;
  Cycle since = 0;
  static constexpr std::uint32_t kNoInstruction = UINT32_MAX;
};

struct ReadRelease {
  std::uint16_t slot = 0;
  std::uint8_t barrier = trace::ControlBits::kNoBarrier;  // with control bits: freed by the read instead of the registers
  std::uint8_t count = 0;
  std::array<std::uint16_t, 6> regs{};
  std::uint64_t low_regs = 0;  // the registers below 64 (dense ids: usually all), as a mask
};

// An instruction in a sub-core's MIO queue. An LG instruction's LsuOp waits
// apart (Subcore::lg_payloads_), so that entries stay small to scan and move.
struct QueuedInstruction {
  bool to_lg = false;
  Cycle reduction_latency = 0;  // LG: the warp-reduction unit's, between reading the operands and the LG queue
  ReadRelease reads;
  MioOp mio;
};

}  // namespace

class Sm::Subcore {
 public:
  Subcore(Sm& sm, std::uint32_t index, StatGroup& stats)
      : sm_(sm), index_(index), scheduler_(make_scheduler(sm.params_.scheduler)),
        lg_payloads_(sm.params_.mio_queue_depth), lg_(sm), mio_(sm) {
    const SmParams& p = sm.params_;
    mio_queue_.reserve(p.mio_queue_depth);
    const PipeParams* pipes[kPipeCount] = {&p.int_alu, &p.fp_alu, &p.fma, &p.vote, &p.branch, &p.misc};
    for (int i = 0; i < kPipeCount; ++i) pipes_[i].set_rate(1.0 / pipes[i]->issue_interval);
    reducer_.set_rate(1.0 / p.warp_reduction.issue_interval);
    for (int s = 0; s < kWarpStateCount; ++s)
      stats.add_counter(std::string("stall.") + warp_state_name(static_cast<WarpState>(s)), &tallies_[s].warp_cycles,
                        "warp-cycles spent in this state");
    for (int c = 0; c < trace::kOpClassCount; ++c)
      stats.add_counter(std::string("issued.") + trace::op_class_name(static_cast<OpClass>(c)), &issued_by_class_[c],
                        "warp instructions issued of this class");
    stats.add_counter("warp_instructions", &warp_instructions_, "warp instructions issued");
    stats.add_counter("thread_instructions", &thread_instructions_, "thread instructions issued (active lanes)");
    stats.add_counter("atomic_lane_ops", &atomic_lane_ops_, "atomic lane operations issued by warps");
    stats.add_counter("atomic_warp_instructions", &atomic_instructions_, "ATOM and RED warp instructions issued");
    stats.add_counter("issue_cycles", &issue_cycles_, "cycles on which the scheduler issued");
    if (p.warp_reduction.enabled) {
      stats.add_counter("warp_reduction.instructions", &reduced_instructions_, "RED instructions the warp-reduction unit took");
      stats.add_counter("warp_reduction.lanes_combined", &lanes_combined_, "lanes it folded into another lane of the same word");
    }
  }

  OutPort<LsuOp>& lg() { return lg_; }
  OutPort<MioOp>& mio() { return mio_; }
  void add_slot(std::uint16_t slot) { hot_[warps_++] = WarpHot{slot}; }
  // Free warp slot of this sub-core, or UINT16_MAX.
  std::uint16_t free_slot() const {
    for (std::uint32_t i = 0; i < warps_; ++i)
      if (!hot_[i].resident) return hot_[i].slot;
    return UINT16_MAX;
  }
  void set_resident(std::uint16_t slot, bool resident, std::uint64_t age) {
    const std::uint32_t i = slot / sm_.params_.subcores;
    WarpHot& h = hot_[i];
    const std::uint64_t bit = std::uint64_t(1) << i;
    if (resident_bits_ & bit) {
      change_count(h.state, -1, accounted_until_);
      if (profiling()) end_stretch(h, h.state, accounted_until_);
    }
    clear_bits(bit);
    dirty_bits_ &= ~bit;
    resident_bits_ &= ~bit;
    h = WarpHot{slot};
    if (resident) {
      h.resident = true;
      h.age = age;
      h.since = accounted_until_;
      resident_bits_ |= bit;
      dirty_bits_ |= bit;
      change_count(h.state, +1, accounted_until_);
    }
    mark_dirty();
  }
  // Something changed for this warp (completion, operands read, barrier).
  void mark_warp_dirty(std::uint16_t slot) {
    const std::uint32_t i = slot / sm_.params_.subcores;
    hot_[i].dirty = true;
    dirty_bits_ |= std::uint64_t(1) << i;
    mark_dirty();
  }

  void set_program(const std::vector<InstTiming>* timing) { timing_ = timing; }

  // The L1's LG queue or the MIO's input freed slots: throttled warps and the
  // MIO queue's head may move.
  void collect_credits() {
    lg_.take_credits();
    mio_.take_credits();
    mark_dirty();
  }

  void evaluate(Cycle now) {
    if (now < accounted_until_) {  // already ran this cycle
      sm_.subcore_due_[index_] = now + 1;
      return;
    }
    if (!mio_queue_.empty()) dispatch_queue_head(now);
    // Unless nothing happened since the last pass classified the warps for
    // this very cycle, bring them to `now`.
    if (dirty_ || now != accounted_until_) update(now);
    accounted_until_ = now + 1;  // this evaluation accounts cycle `now` itself
    issued_slot_ = UINT16_MAX;
    if (eligible_bits_) {
      eligible_.clear();
      for (std::uint64_t m = eligible_bits_; m; m &= m - 1) {
        const WarpHot& h = hot_[std::countr_zero(m)];
        eligible_.push_back({h.slot, h.age});
      }
      {
        std::size_t chosen = scheduler_->pick(eligible_);
        issued_slot_ = eligible_[chosen].slot;
        mark_warp_dirty(issued_slot_);
        WarpHot& issued = hot_[issued_slot_ / sm_.params_.subcores];
        if (profiling()) {
          end_stretch(issued, issued.state, now);
          end_stretch(issued, WarpState::Selected, now + 1);
        }
        // The issued warp is selected for this one cycle; the other eligible
        // warps stay counted as not selected.
        change_count(WarpState::NotSelected, -1, now);
        change_count(WarpState::Selected, +1, now);
        change_count(WarpState::Selected, -1, now + 1);
        change_count(WarpState::NotSelected, +1, now + 1);
        ++issue_cycles_;
        issue(sm_.warp(issued_slot_), now);
        if (profiling()) {
          follow_instruction(issued);
          // A drained warp's PC is the one after its EXIT, where PC sampling finds it.
          if (sm_.warp(issued.slot).exited && issued.instruction + 1 < timing_->size()) ++issued.instruction;
        }
      }
    }
    // States from the next cycle on hold until something changes.
    dirty_ = false;
    const Cycle after = now + 1;
    update(after);
    Cycle next = eligible_bits_ ? after : kNever;
    for (std::uint64_t m = timer_bits_; m && next > after; m &= m - 1) next = std::min(next, hot_[std::countr_zero(m)].unblock_at);
    if (!mio_queue_.empty()) {
      // An instruction leaves next cycle if one can; otherwise the credit of the unit it waits for wakes us.
      if (next_to_leave() >= 0) next = after;
    }
    sm_.subcore_due_[index_] = dirty_ ? 0 : next;
  }

  // Brings accounting up to `now` for warps about to change residency: their
  // state counts change from then on.
  void settle(Cycle now) {
    accounted_until_ = std::max(accounted_until_, now);
    mark_dirty();
  }

 private:
  // Warp-cycles per state are summed lazily: a state's total is brought up to
  // date only when the number of warps in it changes, so a busy sub-core does
  // not touch every state's counter every cycle. Changes come in cycle order;
  // every warp leaves before statistics are read, which closes each sum.
  void change_count(WarpState state, int delta, Cycle from) {
    StateTally& tally = tallies_[static_cast<int>(state)];
    tally.warp_cycles += tally.warps * (from - tally.since);
    tally.since = from;
    tally.warps += static_cast<std::uint64_t>(static_cast<std::int64_t>(delta));
  }

  bool profiling() const { return static_cast<bool>(sm_.hooks_.on_warp_cycles); }
  // The warp's instruction from now on; a warp without one (waiting for the
  // next, or drained after EXIT) stays at the last it had, as PC samples do.
  void follow_instruction(WarpHot& h) const {
    const Warp& w = sm_.warp(h.slot);
    if (w.has_inst) h.instruction = w.index();
  }
  // Ends the warp's stretch in `state` at its instruction (none before its
  // first instruction arrives) at cycle t.
  void end_stretch(WarpHot& h, WarpState state, Cycle t) {
    if (h.instruction != WarpHot::kNoInstruction && t > h.since) sm_.hooks_.on_warp_cycles(h.instruction, state, t - h.since);
    h.since = t;
  }

  void mark_dirty() {
    dirty_ = true;
    sm_.subcore_due_[index_] = 0;
  }

  // Brings to cycle t the warps whose state can have changed: those marked
  // dirty, those competing for a resource (eligible or throttled) and those
  // whose timer has run out. State counts are kept up to date as states change.
  void update(Cycle t) {
    // Queue room is read once per pass; a throttled warp is revisited only when
    // its queue has room again.
    lg_room_ = lg_payloads_.size() + lg_.messages_in_flight() < sm_.params_.lg_issue_limit;
    mio_room_ = mio_queue_.size() < sm_.params_.mio_queue_depth;
    // MIO-pipe instructions in the queue are those that are not LG; those sent on wait in the MIO's input.
    mio_pipe_room_ = mio_queue_.size() - lg_payloads_.size() + mio_.messages_in_flight() < sm_.params_.mio_pipe_limit;
    std::uint64_t candidates = dirty_bits_ | eligible_bits_;
    if (lg_room_) candidates |= lg_bits_;
    if (mio_room_) candidates |= mio_bits_;
    for (std::uint64_t m = timer_bits_; m; m &= m - 1)
      if (hot_[std::countr_zero(m)].unblock_at <= t) candidates |= m & (~m + 1);
    dirty_bits_ = 0;
    for (std::uint64_t m = candidates & resident_bits_; m; m &= m - 1) {
      const int i = std::countr_zero(m);
      WarpHot& h = hot_[i];
      const WarpState before = h.state;
      refresh(h, t);
      if (h.state == before) continue;
      change_count(before, -1, t);
      change_count(h.state, +1, t);
      if (profiling()) {
        end_stretch(h, before, t);
        follow_instruction(h);
      }
      const std::uint64_t bit = std::uint64_t(1) << i;
      clear_bits(bit);
      switch (h.state) {
        case WarpState::NotSelected: eligible_bits_ |= bit; break;
        // The LG queue's credits wake a warp it holds; a busy warp-reduction unit frees up at a known cycle.
        case WarpState::LgThrottle: (h.unblock_at == kNever ? lg_bits_ : timer_bits_) |= bit; break;
        case WarpState::MioThrottle: mio_bits_ |= bit; break;
        case WarpState::Wait: case WarpState::BranchResolving: case WarpState::MathPipeThrottle:
          timer_bits_ |= bit;
          break;
        default:
          break;
      }
    }
    if (lg_bits_) lg_.watch_credits();
    if (mio_bits_ && !mio_pipe_room_) mio_.watch_credits();
  }

  void clear_bits(std::uint64_t bit) {
    eligible_bits_ &= ~bit;
    lg_bits_ &= ~bit;
    mio_bits_ &= ~bit;
    timer_bits_ &= ~bit;
  }

  // Brings a warp's state to cycle t. A warp is reclassified in full only when
  // marked dirty or when its timer ran out; an eligible or throttled warp only
  // rechecks the shared resource it needs; other stalls last until an event
  // marks the warp dirty. This keeps the per-cycle pass off the cold warp state.
  void refresh(WarpHot& h, Cycle t) {
    switch (h.state) {
      case WarpState::NotSelected: case WarpState::LgThrottle: case WarpState::MioThrottle:
        if (!h.dirty) { structural(h, t); return; }
        break;
      case WarpState::Wait: case WarpState::BranchResolving: case WarpState::MathPipeThrottle:
        if (h.dirty) break;
        if (t < h.unblock_at) return;
        if (h.ready_when_timer_expires || h.state == WarpState::MathPipeThrottle) { structural(h, t); return; }
        break;
      default:
        if (!h.dirty) return;
        break;
    }
    classify(sm_.warp(h.slot), h, t);
  }

  // Whether the resource the next instruction needs is free; dependences are met.
  void structural(WarpHot& h, Cycle t) {
    h.unblock_at = kNever;
    h.state = WarpState::NotSelected;
    switch (h.route) {
      case Route::Pipe:
        if (!pipes_[h.pipe].free(t)) {
          h.state = WarpState::MathPipeThrottle;
          h.unblock_at = pipes_[h.pipe].free_at();
        }
        break;
      case Route::Mio:
        if (!mio_room_ || !mio_pipe_room_) h.state = WarpState::MioThrottle;
        break;
      case Route::Lsu: case Route::Membar:
        h.state = lg_throttle_state();
        break;
      case Route::LsuReduced:
        h.state = lg_throttle_state();
        if (h.state == WarpState::NotSelected && !reducer_.free(t)) {
          h.state = WarpState::LgThrottle;
          h.unblock_at = reducer_.free_at();
        }
        break;
      case Route::Barrier:
        if (sm_.kernel_.flush_atomics_at_barrier) h.state = lg_throttle_state();
        break;
    }
  }

  // An LG instruction needs a place among the sub-core's LG instructions in
  // flight, then one in the MIO queue it passes through.
  WarpState lg_throttle_state() const {
    if (!lg_room_) return WarpState::LgThrottle;
    return mio_room_ ? WarpState::NotSelected : WarpState::MioThrottle;
  }

  void classify(const Warp& w, WarpHot& h, Cycle t) {
    h.dirty = false;
    h.ready_when_timer_expires = false;
    h.unblock_at = kNever;
    if (w.exited) { h.state = WarpState::Drain; return; }
    if (w.at_barrier) { h.state = WarpState::Barrier; return; }
    if (w.waiting_membar) { h.state = WarpState::Membar; return; }
    if (!w.has_inst) { h.state = WarpState::NoInstructions; return; }
    // Dependences of the next instruction: an event-driven block (a result or
    // operand read still owed by the LSU or MIO) or the time fixed-latency
    // results are ready.
    const InstTiming& tm = (*timing_)[w.index()];
    const Scoreboard& sb = w.scoreboard;
    WarpState blocked = WarpState::NotSelected;
    Cycle ready = 0;
    if (tm.control_bits) {
      if (const std::uint8_t held = w.barriers.held(tm.wait_mask))
        blocked = w.barriers.held_by_lg(held) ? WarpState::LongScoreboard : WarpState::ShortScoreboard;
      ready = w.barriers.free_at(tm.wait_mask);
    } else if (tm.operands_in_sets && !sb.pending_in(Scoreboard::LongWrite, Scoreboard::ShortWrite, tm.src_set) &&
        !sb.pending_in(Scoreboard::LongWrite, Scoreboard::LongRead, tm.dst_set) &&
        !sb.pending_in(Scoreboard::ShortWrite, Scoreboard::ShortRead, tm.dst_set)) {
      // The common case: nothing owed by the LSU or MIO.
      ready = sb.ready_at(RegSet{tm.src_set.lo | tm.dst_set.lo, tm.src_set.hi | tm.dst_set.hi});
    } else {
      // The first operand found pending names the stall, as the hardware reports one reason.
      for (int i = 0; i < tm.num_src && blocked == WarpState::NotSelected; ++i) {
        auto r = tm.src[i];
        if (sb.pending(Scoreboard::LongWrite, r)) blocked = WarpState::LongScoreboard;
        else if (sb.pending(Scoreboard::ShortWrite, r)) blocked = WarpState::ShortScoreboard;
        ready = std::max(ready, sb.ready_at(r));
      }
      for (int i = 0; i < tm.num_dst && blocked == WarpState::NotSelected; ++i) {
        auto r = tm.dst[i];
        if (sb.pending_any(Scoreboard::LongWrite, Scoreboard::LongRead, r)) blocked = WarpState::LongScoreboard;
        else if (sb.pending_any(Scoreboard::ShortWrite, Scoreboard::ShortRead, r)) blocked = WarpState::ShortScoreboard;
        ready = std::max(ready, sb.ready_at(r));
      }
    }
    h.route = tm.route;
    h.pipe = tm.pipe;
    if (t < w.next_issue) {
      h.state = w.resolving_branch ? WarpState::BranchResolving : WarpState::Wait;
      h.unblock_at = w.next_issue;
      // When nothing else holds the warp, the timer's end needs no full reclassification.
      h.ready_when_timer_expires = blocked == WarpState::NotSelected && ready <= w.next_issue;
      return;
    }
    if (blocked != WarpState::NotSelected) {
      h.state = blocked;
      return;
    }
    if (ready > t) {
      h.state = WarpState::Wait;
      h.unblock_at = ready;
      h.ready_when_timer_expires = true;
      return;
    }
    structural(h, t);
  }

  // The MIO queue's instructions read their operands as they leave it, one
  // per cycle, each for the MIO or the L1's LG queue. Those bound for the L1's
  // data path (global and shared memory) leave in issue order, so that an LG
  // instruction waiting for room in the LG queue holds up the shared-memory
  // instructions behind it; the other MIO instructions pass them.
  void dispatch_queue_head(Cycle now) {
    const int i = next_to_leave();
    if (i < 0) return;
    QueuedInstruction& e = mio_queue_[i];
    if (e.to_lg) {
      // The LG queue stays in order behind a RED still being reduced.
      lg_in_order_from_ = std::max(lg_in_order_from_, now + e.reduction_latency);
      // LG instructions leave in issue order, so this one's payload is the oldest.
      lg_.try_send(std::move(lg_payloads_.front()), lg_in_order_from_ - now);
      lg_payloads_.pop_front();
    } else {
      mio_.try_send(e.mio);
    }
    const ReadRelease reads = e.reads;
    const bool is_long = e.to_lg;
    // A full queue's departure gives the warps it throttled a place.
    if (mio_queue_.size() == sm_.params_.mio_queue_depth) mark_dirty();
    mio_queue_.erase(mio_queue_.begin() + i);
    release_operands(reads, is_long, now);
  }

  // The queue entry that leaves next, or -1; a blocked destination is asked to wake us when it frees room.
  int next_to_leave() {
    const bool lg_room = lg_.has_room(1), mio_room = mio_.has_room(1);
    bool data_path_blocked = false;
    for (std::size_t i = 0; i < mio_queue_.size(); ++i) {
      const QueuedInstruction& e = mio_queue_[i];
      const bool data_path = e.to_lg || e.mio.op == OpClass::Shared;
      if (data_path && data_path_blocked) continue;
      if (e.to_lg ? lg_room : mio_room) return static_cast<int>(i);
      if (e.to_lg) lg_.watch_credits();
      else mio_.watch_credits();
      data_path_blocked |= data_path;
    }
    return -1;
  }

  // A source register stays owed while another queued instruction of the warp still reads it.
  void release_operands(const ReadRelease& r, bool is_long, Cycle now) {
    Warp& w = sm_.warp(r.slot);
    if (r.barrier != trace::ControlBits::kNoBarrier) {
      if (w.barriers.release(r.barrier, is_long)) {
        mark_warp_dirty(r.slot);
        sm_.maybe_retire(w, now + 1);  // an exited warp stays until its barriers are free
      }
      return;
    }
    const auto kind = is_long ? Scoreboard::LongRead : Scoreboard::ShortRead;
    bool released = false;
    std::uint64_t still_read_low = 0;
    for (const QueuedInstruction& q : mio_queue_)
      if (q.reads.slot == r.slot) still_read_low |= q.reads.low_regs;
    for (int i = 0; i < r.count; ++i) {
      const std::uint16_t reg = r.regs[i];
      bool still_read = reg < 64 ? ((still_read_low >> reg) & 1) != 0 : false;
      if (reg >= 64)
        for (std::size_t q = 0; q < mio_queue_.size() && !still_read; ++q) {
          const ReadRelease& other = mio_queue_[q].reads;
          if (other.slot == r.slot)
            for (int j = 0; j < other.count && !still_read; ++j) still_read = other.regs[j] == reg;
        }
      if (!still_read && w.scoreboard.pending(kind, reg)) {
        w.scoreboard.clear(kind, reg);
        released = true;
      }
    }
    // Only a register no longer owed can change what the warp waits for.
    if (released) mark_warp_dirty(r.slot);
  }

  static ReadRelease operand_reads(Warp& w, const InstTiming& s, bool is_long) {
    ReadRelease r;
    r.slot = w.slot;
    if (s.control_bits) {
      if (s.read_barrier != trace::ControlBits::kNoBarrier) {
        r.barrier = s.read_barrier;
        w.barriers.hold(r.barrier, is_long);
      }
      return r;
    }
    for (int i = 0; i < s.num_src; ++i) {
      r.regs[r.count++] = s.src[i];
      if (s.src[i] < 64) r.low_regs |= std::uint64_t(1) << s.src[i];
      w.scoreboard.set(is_long ? Scoreboard::LongRead : Scoreboard::ShortRead, s.src[i]);
    }
    return r;
  }

  void queue_lsu(Warp& w, const InstTiming& tm, LsuOp::Kind kind, ReadRelease reads, Cycle now) {
    const trace::StaticInst& s = sm_.kernel_.info->program[w.index()];
    QueuedInstruction& q = mio_queue_.emplace_back();  // issue checked that there is room
    q.to_lg = true;
    q.reads = reads;
    lg_payloads_.push_back(LsuOp{});
    LsuOp& op = lg_payloads_.at(lg_payloads_.size() - 1);
    op.kind = kind;
    op.warp_slot = w.slot;
    op.op = s.op;
    op.access_bytes = s.access_bytes;
    op.coherent_load = tm.coherent_load;
    op.atomic_op = s.atomic_op;
    op.atomic_type = s.atomic_type;
    op.num_dst = tm.num_dst;
    op.dst = tm.dst;
    if (kind == LsuOp::Kind::Memory) op.write_barrier = hold_write_barrier(w, tm, true);
    op.active_mask = w.active_mask();
    if (kind == LsuOp::Kind::Memory) {
      op.value_lanes = w.stream.operands(op.address, op.value);
      if (const std::uint64_t offset = sm_.placement_offset_)
        for (std::uint32_t m = op.active_mask; m; m &= m - 1) op.address[std::countr_zero(m)] += offset;
      if (trace::is_atomic(s.op) && sm_.hooks_.on_atomic) sm_.hooks_.on_atomic(s, op.active_mask, op.address, op.value);
    }
    if (tm.route == Route::LsuReduced) {
      ++reduced_instructions_;
      lanes_combined_ += combine_same_word_lanes(op);
      reducer_.occupy(now, 1);
      q.reduction_latency = sm_.params_.warp_reduction.latency;
    }
  }

  // How many different masks a WARPSYNC's lanes named, as its record carries
  // them (convergence probe: a pass for each; the reader admits 2 to 32); one
  // where it carries none.
  static std::uint32_t warp_sync_masks(const Warp& w) {
    std::array<std::uint64_t, 32> address, masks;
    const std::uint32_t lanes = w.stream.operands(address, masks);
    return lanes ? static_cast<std::uint32_t>(masks[std::countr_zero(lanes)]) : 1;
  }

  // The dependency barrier an MIO or LG instruction's completion frees, held from issue.
  static std::uint8_t hold_write_barrier(Warp& w, const InstTiming& tm, bool lg) {
    if (!tm.control_bits || tm.write_barrier == trace::ControlBits::kNoBarrier) return trace::ControlBits::kNoBarrier;
    w.barriers.hold(tm.write_barrier, lg);
    return tm.write_barrier;
  }

  void issue(Warp& w, Cycle now) {
    const InstTiming& tm = (*timing_)[w.index()];
    ++warp_instructions_;
    ++issued_by_class_[static_cast<int>(tm.op)];
    const std::uint32_t lanes = static_cast<std::uint32_t>(std::popcount(w.active_mask()));
    thread_instructions_ += lanes;
    w.resolving_branch = false;
    switch (tm.route) {
      case Route::Pipe:
        pipes_[tm.pipe].occupy(now, 1);
        if (!tm.control_bits)
          for (int i = 0; i < tm.num_dst; ++i) w.scoreboard.add_result(tm.dst[i], now + tm.latency, now);
        else if (tm.write_barrier != trace::ControlBits::kNoBarrier)
          w.barriers.hold_until(tm.write_barrier, now + tm.latency);
        if (tm.resolves_branch) {
          w.resolving_branch = true;
          w.next_issue = now + tm.latency + (tm.syncs_lanes ? (warp_sync_masks(w) - 1) * sm_.params_.warp_sync_pass_cycles : 0);
        }
        break;
      case Route::Mio: {
        MioOp op;
        op.warp_slot = w.slot;
        op.op = tm.op;
        op.pipe = tm.mio_pipe;
        op.num_dst = tm.num_dst;
        op.dst = tm.dst;
        if (tm.measured_mio_units > 0)
          op.units = tm.measured_mio_units;
        else if (tm.shared_bytes_per_lane > 0)
          op.units = static_cast<float>(std::max(1u, (lanes * tm.shared_bytes_per_lane + 127) / 128));
        if (tm.control_bits) op.write_barrier = hold_write_barrier(w, tm, false);
        else for (int i = 0; i < tm.num_dst; ++i) w.scoreboard.set(Scoreboard::ShortWrite, tm.dst[i]);
        QueuedInstruction& q = mio_queue_.emplace_back();  // issue checked that there is room
        q.to_lg = false;
        q.reads = operand_reads(w, tm, false);
        q.mio = op;
        break;
      }
      case Route::Lsu: case Route::LsuReduced:
        if (!tm.control_bits && (tm.op == OpClass::LoadGlobal || tm.op == OpClass::Atom))
          for (int i = 0; i < tm.num_dst; ++i) w.scoreboard.set(Scoreboard::LongWrite, tm.dst[i]);
        if (trace::is_atomic(tm.op)) {
          atomic_lane_ops_ += lanes;
          ++atomic_instructions_;
        }
        ++w.outstanding_memory;
        queue_lsu(w, tm, LsuOp::Kind::Memory, operand_reads(w, tm, true), now);
        break;
      case Route::Membar:
        w.waiting_membar = true;
        queue_lsu(w, tm, LsuOp::Kind::Membar, ReadRelease{.slot = w.slot}, now);
        break;
      case Route::Barrier:
        if (sm_.kernel_.flush_atomics_at_barrier) queue_lsu(w, tm, LsuOp::Kind::BarrierFlush, ReadRelease{.slot = w.slot}, now);
        w.at_barrier = true;
        break;
    }
    // The compiler's stall count, where the program has one, is the interval to the warp's next instruction.
    w.next_issue = std::max(w.next_issue, now + (tm.control_bits ? std::max<Cycle>(1, tm.stall) : sm_.params_.min_reissue_interval));
    fetch(w);
    if (!w.has_inst) {  // lanes leave through guarded EXITs; the warp is done when its stream ends
      w.exited = true;
      sm_.warp_exited(w, now, /*resident_through=*/now + 1);
      return;
    }
    if (w.at_barrier) sm_.warp_at_barrier(w, now);
  }

 public:
  static void fetch(Warp& w) { w.has_inst = w.stream.advance(); }

 private:
  // What every evaluation reads comes first, in as few cache lines as may be:
  // the masks over the warps' scheduling state (bit i is hot_[i]), then what
  // an issue touches; the per-warp state follows.
  std::uint64_t resident_bits_ = 0;
  std::uint64_t dirty_bits_ = 0;       // marked by an event
  std::uint64_t eligible_bits_ = 0;    // recheck their resource each pass
  std::uint64_t lg_bits_ = 0;          // LG queue full: recheck when it has room
  std::uint64_t mio_bits_ = 0;         // MIO queue full: recheck when it has room
  std::uint64_t timer_bits_ = 0;       // waiting for a known cycle
  Cycle accounted_until_ = 0;
  std::uint32_t warps_ = 0;
  bool lg_room_ = true;
  bool mio_room_ = true;
  bool mio_pipe_room_ = true;
  bool dirty_ = false;
  std::uint16_t issued_slot_ = UINT16_MAX;
  Sm& sm_;
  const std::uint32_t index_;
  std::unique_ptr<WarpScheduler> scheduler_;
  const std::vector<InstTiming>* timing_ = nullptr;
  std::uint64_t warp_instructions_ = 0, thread_instructions_ = 0, issue_cycles_ = 0, atomic_lane_ops_ = 0,
                atomic_instructions_ = 0, reduced_instructions_ = 0, lanes_combined_ = 0;
  RateServer pipes_[kPipeCount];
  RateServer reducer_;  // the warp-reduction unit (SmParams::warp_reduction)
  Cycle lg_in_order_from_ = 0;  // the last LG queue entry's arrival at the L1
  // Issued MIO and LG instructions in issue order, operands not yet read.
  std::vector<QueuedInstruction> mio_queue_;
  RingBuffer<LsuOp> lg_payloads_;  // of the LG instructions in mio_queue_, oldest first
  OutPort<LsuOp> lg_;
  OutPort<MioOp> mio_;
  std::vector<SchedulerCandidate> eligible_;
  struct StateTally {  // one state's warps and warp-cycles, in one place as they change together
    std::uint64_t warps = 0;
    std::uint64_t warp_cycles = 0;  // up to `since`
    Cycle since = 0;
  };
  std::array<StateTally, kWarpStateCount> tallies_{};
  std::array<std::uint64_t, trace::kOpClassCount> issued_by_class_{};
  std::array<WarpHot, 64> hot_;  // this sub-core's warp slots; the first warps_ are used
};

namespace {
std::vector<InstTiming> decode_timing(const trace::KernelInfo& k, const SmParams& p) {
  std::vector<InstTiming> out;
  out.reserve(k.program.size());
  std::array<std::uint16_t, trace::reg::kSpace> dense;
  dense.fill(UINT16_MAX);
  std::uint16_t next_dense = 0;
  auto renumber = [&](std::uint16_t reg) {
    if (dense[reg] == UINT16_MAX) dense[reg] = next_dense++;
    return dense[reg];
  };
  const bool control_bits = p.dependences == "control_bits" && trace::control_bits_usable(k);
  for (const auto& s : k.program) {
    InstTiming t;
    t.op = s.op;
    if (control_bits) {
      t.control_bits = true;
      t.stall = s.control.stall();
      t.wait_mask = s.control.wait_mask();
      t.write_barrier = s.control.write_barrier();
      t.read_barrier = s.control.read_barrier();
    }
    t.num_src = s.num_src;
    t.num_dst = s.num_dst;
    for (int i = 0; i < s.num_src; ++i) t.src[i] = renumber(s.src[i]);
    for (int i = 0; i < s.num_dst; ++i) t.dst[i] = renumber(s.dst[i]);
    // A 64- or 128-bit load writes a pair or quad of consecutive registers;
    // the trace names the first (captures before this rule named only a pair for global loads).
    if ((s.op == OpClass::LoadGlobal || (s.op == OpClass::Shared && trace::opcode_base(s.mnemonic) == "LDS")) &&
        s.num_dst >= 1 && s.dst[0] < kGeneralRegisters) {
      const int registers = std::clamp(trace::access_width(s.mnemonic) / 4, 1, kMaxDestinations);
      for (int i = 1; i < registers; ++i)
        if (s.dst[0] + i < kGeneralRegisters) t.dst[i] = renumber(static_cast<std::uint16_t>(s.dst[0] + i));
      t.num_dst = static_cast<std::uint8_t>(std::max<int>(t.num_dst, registers));
    }
    if (s.op == OpClass::Shared) t.shared_bytes_per_lane = trace::access_width(s.mnemonic);
    t.coherent_load = trace::is_coherent_load(s);
    t.measured_mio_units = s.op == OpClass::Shared ? s.shared_wavefronts : s.match_values;
    for (int i = 0; i < s.num_src; ++i) t.src_set.add(t.src[i]), t.operands_in_sets &= t.src[i] < RegSet::kLimit;
    for (int i = 0; i < s.num_dst; ++i) t.dst_set.add(t.dst[i]), t.operands_in_sets &= t.dst[i] < RegSet::kLimit;
    auto pipe = [&](PipeIndex i, const PipeParams& pp) { t.route = Route::Pipe; t.pipe = i; t.latency = pp.latency; };
    switch (s.op) {
      case OpClass::IntAlu: pipe(kIntAlu, p.int_alu); break;
      case OpClass::FpAlu: pipe(kFpAlu, p.fp_alu); break;
      case OpClass::Fma: pipe(kFma, p.fma); break;
      case OpClass::Vote: pipe(kVote, p.vote); break;
      case OpClass::Misc: pipe(kMisc, p.misc); break;
      case OpClass::Branch: {
        pipe(kBranch, p.branch);
        // What may move the warp's pc or change its lanes holds its next
        // instruction until that is known: control transfers, a join of
        // divergent lanes (BSYNC: the convergence probe's divergent loop takes
        // 96 cycles a trip without that and 106 with it, 107.3 on the H100),
        // WARPSYNC and YIELD, after which the H100's PC samples show
        // branch_resolving too (the sparse write's warp variant, the sort's
        // look-back). A BSSY only records where the lanes will join.
        const std::string_view m = s.mnemonic;
        t.syncs_lanes = trace::is_warp_sync(m);
        t.resolves_branch = m.empty() || m.starts_with("BRA") || m.starts_with("BRX") || m.starts_with("JMP") ||
                            m.starts_with("CALL") || m.starts_with("RET") || m.starts_with("WARPSYNC") ||
                            m.starts_with("BSYNC") || m.starts_with("YIELD");
        if (t.resolves_branch) t.latency = static_cast<std::uint16_t>(t.syncs_lanes ? p.warp_sync_latency : p.branch_resolve_latency);
        break;
      }
      case OpClass::Sfu: case OpClass::Shared: case OpClass::Shuffle: t.route = Route::Mio; break;
      case OpClass::LoadGlobal: case OpClass::StoreGlobal: case OpClass::Atom: case OpClass::Red:
        t.route = p.warp_reduction.enabled && warp_reducible(s.op, s.atomic_op, s.atomic_type) ? Route::LsuReduced : Route::Lsu;
        break;
      case OpClass::Barrier: t.route = Route::Barrier; break;
      case OpClass::Membar: t.route = Route::Membar; break;
      case OpClass::Exit:
        // The lanes a predicated EXIT leaves go on once the warp's lanes are known
        // (PC samples of the sparse restrict's warp variant: branch_resolving after it).
        pipe(kBranch, p.branch);
        t.resolves_branch = true;
        t.latency = p.branch_resolve_latency;
        break;
    }
    // The compiler gives a result barrier only to instructions of variable
    // latency: on the GPU those leave through the MIO (S2R, LDC, BREV, FLO,
    // POPC, REDUX ...), whatever pipe their kind suggests.
    if (t.control_bits && t.route == Route::Pipe && t.write_barrier != trace::ControlBits::kNoBarrier &&
        s.op != OpClass::Branch && s.op != OpClass::Exit)
      t.route = Route::Mio;
    t.mio_pipe = s.op == OpClass::Shared ? MioPipe::Shared
               : s.op == OpClass::Sfu ? MioPipe::Sfu
               : s.op == OpClass::Shuffle ? (trace::opcode_base(s.mnemonic) == "MATCH" ? MioPipe::Match : MioPipe::Shuffle)
               : trace::opcode_base(s.mnemonic) == "REDUX" ? MioPipe::Redux : MioPipe::Bits;
    out.push_back(t);
  }
  return out;
}
}  // namespace

struct SmProgram {
  std::vector<InstTiming> timing;
};

std::shared_ptr<const SmProgram> decode_program(const trace::KernelInfo& kernel, const SmParams& params) {
  return std::make_shared<const SmProgram>(SmProgram{decode_timing(kernel, params)});
}

}  // namespace atomsim::model

namespace atomsim::model {

Sm::Sm(const sc_core::sc_module_name& name, const SmParams& p, std::uint64_t placement_offset, StatRegistry& stats)
    : Unit(name), params_(p), placement_offset_(placement_offset), warps_(p.max_warps),
      subcore_due_(p.subcores, kNever), credits_(p.subcores),
      ctas_(p.max_ctas), lsu_completions_(*this, 4096), mio_completions_(*this, 4096), cta_launch_(*this, 256),
      cta_done_(*this) {
  StatGroup& sm_stats = stats.group("sm", basename());
  for (std::uint32_t s = 0; s < p.subcores; ++s) {
    subcores_.push_back(std::make_unique<Subcore>(*this, s, stats.group("smsp", std::string(basename()) + "." + std::to_string(s))));
    subcores_.back()->lg().count_credits_in(credits_[s].lg);
    subcores_.back()->mio().count_credits_in(credits_[s].mio);
  }
  for (std::uint16_t slot = 0; slot < p.max_warps; ++slot) {
    warps_[slot].slot = slot;
    subcores_[slot % p.subcores]->add_slot(slot);
  }
  sm_stats.add_integral("resident_warps", &residency_integral_, "time-averaged resident warps");
  sm_stats.add_constant("max_warps", p.max_warps, "warp slots");
  sm_stats.add_counter("ctas_completed", &ctas_completed_, "CTAs run to completion");
}

Sm::~Sm() = default;

OutPort<LsuOp>& Sm::lg_queue(std::uint32_t subcore) { return subcores_.at(subcore)->lg(); }
OutPort<MioOp>& Sm::mio_queue(std::uint32_t subcore) { return subcores_.at(subcore)->mio(); }
Sm::Subcore& Sm::subcore_of(std::uint16_t slot) { return *subcores_[slot % params_.subcores]; }

void Sm::begin_kernel(const KernelContext& kernel) {
  kernel_ = kernel;
  if (!kernel.program) throw std::logic_error("Sm::begin_kernel: the kernel's program was not decoded");
  for (auto& sc : subcores_) sc->set_program(&kernel_.program->timing);
}

void Sm::launch_cta(std::uint64_t cta, Cycle now) {
  const std::uint32_t warps_per_cta = kernel_.info->warps_per_cta();
  auto slot_it = std::find_if(ctas_.begin(), ctas_.end(), [](const CtaSlot& c) { return !c.active; });
  if (slot_it == ctas_.end()) throw trace::TraceError("internal: CTA dispatched to a full SM");
  CtaSlot& c = *slot_it;
  c = CtaSlot{true, cta, 0, 0, 0, {}};
  if (hooks_.on_cta) hooks_.on_cta(cta, true, now);
  for (std::uint32_t i = 0; i < warps_per_cta; ++i) {
    // Warp i of a CTA runs on sub-core i mod subcores, as on NVIDIA GPUs.
    std::uint16_t chosen = UINT16_MAX;
    for (std::uint32_t k = 0; k < params_.subcores && chosen == UINT16_MAX; ++k)
      chosen = subcores_[(i + k) % params_.subcores]->free_slot();
    if (chosen == UINT16_MAX) throw trace::TraceError("internal: no free warp slot for a dispatched CTA");
    Warp& w = warps_[chosen];
    subcore_of(chosen).settle(now);
    std::uint16_t slot = w.slot;
    w.~Warp();
    new (&w) Warp();
    w.slot = slot;
    w.resident = true;
    w.cta_slot = static_cast<std::uint32_t>(slot_it - ctas_.begin());
    subcore_of(slot).set_resident(slot, true, launch_sequence_++);
    w.stream = kernel_.open_warp(cta * warps_per_cta + i);
    w.next_issue = now;
    Subcore::fetch(w);
    w.launched_at = now;
    c.warps.push_back(slot);
    ++c.live_warps;
    ++c.resident_warps;
    if (!w.has_inst) {
      w.exited = true;
      warp_exited(w, now, now);
    }
  }
}

void Sm::warp_exited(Warp& w, Cycle now, Cycle resident_through) {
  CtaSlot& c = ctas_[w.cta_slot];
  --c.live_warps;
  check_barrier(c, now);
  maybe_retire(w, resident_through);
}

void Sm::warp_at_barrier(Warp& w, Cycle now) {
  CtaSlot& c = ctas_[w.cta_slot];
  ++c.at_barrier;
  check_barrier(c, now);
}

void Sm::check_barrier(CtaSlot& c, Cycle now) {
  if (c.at_barrier == 0 || c.at_barrier < c.live_warps) return;
  for (std::uint16_t s : c.warps) {
    Warp& w = warps_[s];
    if (w.resident && w.at_barrier) {
      w.at_barrier = false;
      w.next_issue = std::max(w.next_issue, now + 1);
      subcore_of(s).mark_warp_dirty(s);
    }
  }
  c.at_barrier = 0;
}

void Sm::maybe_retire(Warp& w, Cycle end) {
  if (!w.exited || w.outstanding_memory > 0 || w.barriers.any_held() || !w.resident) return;
  // A warp retiring during its sub-core's evaluation was accounted for that
  // cycle by the evaluation itself; otherwise bring accounting up to `end`.
  subcore_of(w.slot).settle(end);
  w.resident = false;
  subcore_of(w.slot).set_resident(w.slot, false, 0);
  w.stream = trace::WarpStream();
  residency_integral_ += end - w.launched_at;
  CtaSlot& c = ctas_[w.cta_slot];
  if (--c.resident_warps == 0) {
    c.active = false;
    ++ctas_completed_;
    if (hooks_.on_cta) hooks_.on_cta(c.cta, false, end);
    CtaDone done{c.cta};
    if (!done_backlog_.empty() || !cta_done_.try_send(done)) done_backlog_.push_back(done);
  }
}

void Sm::handle_completion(const Completion& c, bool from_lsu, Cycle now) {
  Warp& w = warps_[c.warp_slot];
  if (c.write_barrier != trace::ControlBits::kNoBarrier) w.barriers.release(c.write_barrier, from_lsu);
  switch (c.kind) {
    case Completion::Kind::Registers:
      for (int i = 0; i < c.num_dst; ++i)
        w.scoreboard.clear(from_lsu ? Scoreboard::LongWrite : Scoreboard::ShortWrite, c.dst[i]);
      if (c.also_acks_memory) --w.outstanding_memory;
      break;
    case Completion::Kind::MemoryAck:
      --w.outstanding_memory;
      break;
    case Completion::Kind::MembarDone:
      w.waiting_membar = false;
      break;
  }
  subcore_of(c.warp_slot).mark_warp_dirty(c.warp_slot);
  maybe_retire(w, now);
}

void Sm::evaluate() {
  const Cycle now = Unit::now();
  try {
    while (!done_backlog_.empty() && cta_done_.try_send(done_backlog_.front())) done_backlog_.pop_front();
    while (cta_launch_.ready(now)) {
      launch_cta(cta_launch_.front().cta, now);
      cta_launch_.pop();
    }
    while (lsu_completions_.ready(now)) {
      handle_completion(lsu_completions_.front(), true, now);
      lsu_completions_.pop();
    }
    while (mio_completions_.ready(now)) {
      handle_completion(mio_completions_.front(), false, now);
      mio_completions_.pop();
    }
    Cycle next = std::min({lsu_completions_.next_ready(), mio_completions_.next_ready(), cta_launch_.next_ready()});
    for (std::uint32_t i = 0; i < subcores_.size(); ++i) {
      if (credits_[i].lg.messages | credits_[i].mio.messages) subcores_[i]->collect_credits();
      if (subcore_due_[i] <= now) subcores_[i]->evaluate(now);
      next = std::min(next, subcore_due_[i]);
    }
    if (next != kNever) wake_at(std::max(next, now + 1));
  } catch (const trace::TraceError& e) {
    error_ = e.what();
    request_stop();
  }
}

}  // namespace atomsim::model
