// One sub-core (SMSP) of an SM: its warp scheduler, scoreboard, fixed-latency
// pipes and the in-order MIO queue through which MIO and LG instructions leave.
// Included only by sm.cpp: its member functions stay inline there, as the SM
// calls them on every evaluation.
#pragma once

#include <algorithm>
#include <bit>

#include "models/sm/program.hpp"
#include "models/sm/sm.hpp"
#include "traces/sass.hpp"

namespace atomsim::model {

// What the scheduler scans every evaluation, apart from the cold warp state.
struct WarpHot {
  std::uint16_t slot = 0;
  bool resident = false;
  bool dirty = true;       // something about the warp changed: classify it in full
  bool ready_when_timer_expires = false;  // a Wait/BranchResolving warp needs only its resource afterwards
  Route route = Route::Pipe;  // what its next instruction needs, once dependences are met
  std::uint8_t pipe = 0;
  std::uint32_t constant_line = kNoConstantLine;
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

class Sm::Subcore {
 public:
  Subcore(Sm& sm, std::uint32_t index, StatGroup& stats)
      : sm_(sm), index_(index), scheduler_(make_scheduler(sm.params_.scheduler)),
        lg_payloads_(sm.params_.mio_queue_depth), lg_(sm), mio_(sm), constants_(sm.params_.constant_cache) {
    const SmParams& p = sm.params_;
    mio_queue_.reserve(p.mio_queue_depth);
    const PipeParams* pipes[kPipeCount] = {&p.int_alu, &p.fp_alu, &p.fma, &p.vote, &p.branch, &p.misc};
    for (int i = 0; i < kPipeCount; ++i) pipes_[i].set_rate(1.0 / pipes[i]->issue_interval);
    reducer_.set_rate(1.0 / p.warp_reduction.issue_interval);
    for (int s = 0; s < kWarpStateCount; ++s)
      stats.add_counter(smsp_stat::stall_name(warp_state_name(static_cast<WarpState>(s))), &tallies_[s].warp_cycles,
                        "warp-cycles spent in this state");
    for (int c = 0; c < trace::kOpClassCount; ++c)
      stats.add_counter(smsp_stat::issued_name(trace::op_class_name(static_cast<OpClass>(c))), &issued_by_class_[c],
                        "warp instructions issued of this class");
    stats.add_counter(smsp_stat::kWarpInstructions, &warp_instructions_, "warp instructions issued");
    stats.add_counter(smsp_stat::kThreadInstructions, &thread_instructions_, "thread instructions issued (active lanes)");
    stats.add_counter(smsp_stat::kAtomicLaneOps, &atomic_lane_ops_, "atomic lane operations issued by warps");
    stats.add_counter(smsp_stat::kAtomicWarpInstructions, &atomic_instructions_, "ATOM and RED warp instructions issued");
    stats.add_counter(smsp_stat::kIssueCycles, &issue_cycles_, "cycles on which the scheduler issued");
    if (p.warp_reduction.enabled) {
      stats.add_counter("warp_reduction.instructions", &reduced_instructions_, "RED instructions the warp-reduction unit took");
      stats.add_counter("warp_reduction.lanes_combined", &lanes_combined_, "lanes it folded into another lane of the same word");
    }
    if (p.constant_cache.enabled)
      stats.add_counter("constant_cache.fills", constants_.fills_counter(), "constant lines this sub-core's cache asked for");
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

  void begin_kernel(const std::vector<InstTiming>* timing) {
    timing_ = timing;
    constants_.clear();
  }

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
        case WarpState::Wait: case WarpState::BranchResolving: case WarpState::MathPipeThrottle: case WarpState::ImcMiss:
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
      case WarpState::Wait: case WarpState::BranchResolving: case WarpState::MathPipeThrottle: case WarpState::ImcMiss:
        if (h.dirty) break;
        if (t < h.unblock_at) return;
        if (h.ready_when_timer_expires || h.state == WarpState::MathPipeThrottle || h.state == WarpState::ImcMiss) {
          structural(h, t);
          return;
        }
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
    if (h.constant_line != kNoConstantLine) {
      const Cycle held = constants_.ready_at(h.constant_line, t, sm_.constant_fills_);
      if (held > t) {
        h.state = WarpState::ImcMiss;
        h.unblock_at = held;
        return;
      }
      // Held: an eligible warp need not look again each pass until it issues.
      h.constant_line = kNoConstantLine;
    }
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
    h.constant_line = tm.constant_line;
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
  ConstantCache constants_;  // SmParams::constant_cache
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

}  // namespace atomsim::model
