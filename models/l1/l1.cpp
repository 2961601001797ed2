#include "models/l1/l1.hpp"

#include <algorithm>
#include <bit>
#include <utility>

#include "models/atomic_update.hpp"

namespace atomsim::model {

using trace::OpClass;

L1::L1(const sc_core::sc_module_name& name, const L1Params& p, std::uint16_t sm, std::uint32_t subcores,
       const AddressMap& map, LaneOpPool& pool, StatRegistry& stats)
    : Unit(name), params_(p), sm_(sm), map_(map), pool_(pool), tags_(p.capacity_bytes, p.line_bytes, p.ways),
      to_sm_(*this), to_l2_(*this), from_l2_(*this, 1024), kernel_end_(*this, 4), pipeline_(p.sectors_per_cycle),
      inflight_(p.max_inflight_instructions), writes_complete_when_sent_(p.writes_held_until == WritesHeldUntil::Sent) {
  if (!std::has_single_bit(p.line_bytes)) throw std::invalid_argument("l1: line size must be a power of two");
  line_shift_ = static_cast<unsigned>(std::countr_zero(p.line_bytes));
  if (p.atomic_buffer) atomic_buffer_.emplace(p.atomic_buffer_entries);
  pool.set_owner_unit(sm, *this);
  StatGroup& g = stats.group("l1", basename());
  for (std::uint32_t s = 0; s < subcores; ++s) {
    lg_queues_.push_back(std::make_unique<InPort<LsuOp>>(*this, p.lg_queue_depth));
    lg_queues_.back()->register_stats(stats.group(std::string(l1_stat::kLgQueueOccupancy.group), std::string(basename()) + "." + std::to_string(s)));
  }
  for (std::uint32_t i = 0; i < p.max_inflight_instructions; ++i) free_inflight_.push_back(p.max_inflight_instructions - 1 - i);
  g.add_counter("instructions", &instructions_, "memory instructions taken from the LG queues");
  g.add_counter("load_sectors", &load_sectors_, "sectors read by loads");
  g.add_counter("load_line_hits", &load_hits_, "load line lookups that hit");
  g.add_counter("load_line_misses", &load_misses_, "load line lookups that missed");
  g.add_counter("load_line_pending_hits", &load_pending_hits_,
                "load line lookups that found their line on its way from the L2 and waited for it (wait_on_pending_lines)");
  g.add_counter("coherent_load_lines", &coherent_load_lines_,
                "lines of loads of GPU or system scope (.STRONG.GPU/.SYS), passed to the L2 without a lookup");
  g.add_counter("store_sectors", &store_sectors_, "sectors written through to L2");
  g.add_counter(l1_stat::kAtomicLaneOpsIn, &atomic_lane_ops_in_, "atomic lane operations arriving from warps");
  g.add_counter(l1_stat::kAtomicOpsToL2, &atomic_ops_to_l2_, "atomic operations leaving the L1 for L2");
  g.add_counter("atomic_packets_to_l2", &atomic_packets_to_l2_, "atomic packets leaving the L1");
  g.add_counter(l1_stat::kAtomicBufferCombines, &buffered_combines_, "updates combined into a buffered entry");
  g.add_counter("atomic_buffer_evictions", &buffer_evictions_, "entries sent to L2 to make room");
  g.add_counter("atomic_invalidations", &atomic_invalidations_, "lines dropped because an atomic or reduction updated them in the L2");
  g.add_counter("backpressure_cycles", &stall_cycles_, "cycles the pipeline waited on the interconnect");
  g.add_integral("inflight_instructions", &inflight_integral_, "time-averaged instructions awaiting L2");
  g.add_busy(l1_stat::kPipelineUtilization, pipeline_.busy_scaled(), "busy fraction of the L1 pipeline");
}

std::uint32_t L1::allocate_inflight(const LsuOp& op) {
  std::uint32_t slot = free_inflight_.back();
  free_inflight_.pop_back();
  Inflight& f = inflight_[slot];
  f.valid = true;
  f.remaining = 0;
  f.coherent_load = op.coherent_load;
  f.completion = Completion{};
  f.completion.warp_slot = op.warp_slot;
  f.completion.write_barrier = op.write_barrier;
  if (op.op == OpClass::LoadGlobal || op.op == OpClass::Atom) {
    f.completion.kind = Completion::Kind::Registers;
    f.completion.num_dst = op.num_dst;
    f.completion.dst = op.dst;
    f.completion.also_acks_memory = true;
  } else {
    f.completion.kind = Completion::Kind::MemoryAck;
  }
  Cycle now = Unit::now();
  inflight_integral_ += inflight_level_ * (now - inflight_changed_);
  inflight_changed_ = now;
  ++inflight_level_;
  return slot;
}

void L1::send_completion(const Completion& c, Cycle ready) {
  Cycle now = Unit::now();
  if (completion_backlog_.empty() && to_sm_.try_send(c, ready > now + 1 ? ready - now - 1 : 0)) return;
  completion_backlog_.emplace_back(ready, c);
}

void L1::complete(std::uint32_t slot, Cycle ready) {
  Inflight& f = inflight_[slot];
  send_completion(f.completion, ready);
  f.valid = false;
  free_inflight_.push_back(slot);
  Cycle now = Unit::now();
  inflight_integral_ += inflight_level_ * (now - inflight_changed_);
  inflight_changed_ = now;
  --inflight_level_;
}

void L1::collect_sectors(const LsuOp& op, bool coverage) {
  scratch_.clear();
  const std::uint64_t sector_mask = ~std::uint64_t(params_.sector_bytes - 1);
  for (std::uint32_t m = op.active_mask; m; m &= m - 1) {
    std::uint64_t a = op.address[std::countr_zero(m)];
    for (std::uint64_t s = a & sector_mask; s <= ((a + op.access_bytes - 1) & sector_mask); s += params_.sector_bytes)
      scratch_.push_back(s);
  }
  std::sort(scratch_.begin(), scratch_.end());
  scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
  if (!coverage) return;
  // Bytes of each sector the lanes write, counting a byte written by several lanes once.
  covered_.assign(scratch_.size(), 0);
  spans_.clear();
  for (std::uint32_t m = op.active_mask; m; m &= m - 1) spans_.push_back(op.address[std::countr_zero(m)]);
  std::sort(spans_.begin(), spans_.end());
  std::size_t sector = 0;
  std::uint64_t covered_to = 0;  // the first byte past those counted
  for (const std::uint64_t a : spans_) {
    const std::uint64_t end = a + op.access_bytes;
    for (std::uint64_t begin = std::max(a, covered_to); begin < end;) {
      while (scratch_[sector] + params_.sector_bytes <= begin) ++sector;
      const std::uint64_t stop = std::min(end, scratch_[sector] + params_.sector_bytes);
      covered_[sector] += static_cast<std::uint32_t>(stop - begin);
      begin = stop;
    }
    covered_to = std::max(covered_to, end);
  }
}

void L1::attach_values(const LsuOp& op, MemPacket& p) {
  LaneOp* ops = nullptr;
  for (std::uint32_t m = op.value_lanes; m; m &= m - 1) {
    const int lane = std::countr_zero(m);
    if (map_.line_of(op.address[lane]) != p.line) continue;
    if (!ops) {
      p.ops = pool_.acquire(sm_);
      ops = pool_.ops(p.ops);
    }
    ops[p.op_count++] = LaneOp{op.address[lane], op.value[lane], 1};
  }
}

template <class Served>
std::uint32_t L1::request_lines(const LsuOp& op, MemPacket::Kind kind, std::uint32_t slot, Served served_here) {
  std::uint32_t packets = 0;
  for (std::size_t i = 0; i < scratch_.size();) {
    std::uint64_t line = map_.line_of(scratch_[i]);
    std::uint8_t sectors = 0, sector_mask = 0, partial = 0;
    std::uint16_t partial_bytes = 0;
    for (; i < scratch_.size() && map_.line_of(scratch_[i]) == line; ++i) {
      const std::uint8_t bit = static_cast<std::uint8_t>(1u << ((scratch_[i] - line) / params_.sector_bytes));
      ++sectors;
      sector_mask |= bit;
      if (kind == MemPacket::Kind::Write && covered_[i] < params_.sector_bytes) {
        partial |= bit;
        partial_bytes = static_cast<std::uint16_t>(partial_bytes + covered_[i]);
      }
    }
    if (served_here(line)) continue;
    MemPacket p;
    p.kind = kind;
    p.source = sm_;
    // A load of GPU or system scope is served where the line's stores are
    // performed, its home slice, never from another partition's copy.
    p.destination = static_cast<std::uint16_t>(op.coherent_load ? map_.slice_of(line) : map_.cache_slice(line, sm_));
    p.request = kind == MemPacket::Kind::Write && writes_complete_when_sent_ ? slot | kSentCompletes : slot;
    p.line = line;
    p.sectors = sectors;
    p.sector_mask = sector_mask;
    p.partial_sectors = partial;
    p.partial_bytes = partial_bytes;
    if (op.value_lanes) attach_values(op, p);
    queue_request(p);
    ++packets;
  }
  inflight_[slot].remaining += packets;
  return packets;
}

void L1::issue_loads(LsuOp& op, std::uint32_t slot, Cycle now) {
  collect_sectors(op, false);
  load_sectors_ += scratch_.size();
  Cycle done = pipeline_.occupy(now, std::max<std::size_t>(1, scratch_.size()));
  request_lines(op, MemPacket::Kind::Read, slot, [&](std::uint64_t line) {
    if (op.coherent_load) {
      ++coherent_load_lines_;
      return false;
    }
    if (tags_.access(line)) {
      ++load_hits_;
      return true;
    }
    if (!params_.wait_on_pending_lines) {
      ++load_misses_;
      return false;
    }
    auto [pending, first] = pending_lines_.try_emplace(line);
    pending->second.push_back(slot);
    if (first) {
      ++load_misses_;
      return false;
    }
    // The line's reply completes this slot's share of it (handle_reply).
    ++load_pending_hits_;
    ++inflight_[slot].remaining;
    return true;
  });
  if (inflight_[slot].remaining == 0) complete(slot, done + params_.hit_latency);
}

void L1::issue_stores(LsuOp& op, std::uint32_t slot, Cycle now) {
  collect_sectors(op, true);
  store_sectors_ += scratch_.size();
  Cycle done = pipeline_.occupy(now, std::max<std::size_t>(1, scratch_.size()));
  // Write-through without allocation: every line goes to L2.
  outstanding_writes_ += request_lines(op, MemPacket::Kind::Write, slot, [](std::uint64_t) { return false; });
  if (inflight_[slot].remaining == 0) complete(slot, done + params_.hit_latency);
}

void L1::send_evicted(const BufferedUpdate& update) {
  MemPacket p;
  p.kind = MemPacket::Kind::Reduction;
  p.source = sm_;
  p.line = map_.line_of(update.op.address);
  p.destination = static_cast<std::uint16_t>(map_.entry_slice(p.line, sm_));
  p.request = kFlushRequest;
  p.atomic_op = update.kind;
  p.atomic_type = update.type;
  p.ops = pool_.acquire(sm_);
  pool_.ops(p.ops)[0] = update.op;
  p.op_count = 1;
  p.sector_mask = static_cast<std::uint8_t>(1u << ((update.op.address - p.line) / params_.sector_bytes));
  p.atomic_flits = static_cast<std::uint8_t>(params_.atomic_request_flits(trace::operand_bytes(update.type), p.sectors, false));
  queue_request(p);
  ++outstanding_writes_;
  ++atomic_ops_to_l2_;
  ++atomic_packets_to_l2_;
}

void L1::flush_atomic_buffer() {
  if (!atomic_buffer_) return;
  for (const BufferedUpdate& u : atomic_buffer_->drain()) send_evicted(u);
}

void L1::issue_atomics(LsuOp& op, std::uint32_t slot, Cycle now) {
  const std::uint32_t lanes = static_cast<std::uint32_t>(std::popcount(op.active_mask));
  atomic_lane_ops_in_ += lanes;
  Inflight& f = inflight_[slot];
  const bool buffered = atomic_buffer_ && op.op == OpClass::Red && combinable_update(op.atomic_op, op.atomic_type);
  if (buffered) {
    // Every lane is its own access to the buffer.
    Cycle done = pipeline_.occupy(now, std::max<std::uint32_t>(1, lanes));
    for (std::uint32_t m = op.active_mask; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      std::uint64_t before = atomic_buffer_->combined();
      auto evicted = atomic_buffer_->absorb(BufferedUpdate{LaneOp{op.address[lane], op.value[lane], op.updates[lane]}, op.atomic_op, op.atomic_type});
      buffered_combines_ += atomic_buffer_->combined() - before;
      if (evicted) {
        ++buffer_evictions_;
        send_evicted(*evicted);
      }
    }
    complete(slot, done + params_.hit_latency);
    return;
  }
  // The H100 sends, per line, one request per round, a round taking at most
  // one lane of each word in lane order, and carrying the sectors its lanes
  // touch; the L1 works once per sector sent (workloads/microbench/red_requests.cu:
  // requests per instruction = per line the most lanes sharing one word, L1 and
  // L2 sectors = the sectors of every round, exact on all ten patterns probed).
  // A lane's request is its line and its round (how many earlier lanes share
  // its word), one key: lines are at least 32 bytes, so a round (below 32)
  // fits in a line address's low bits. Sorted keys send lines in address
  // order and each line's rounds in turn, a request's lanes in lane order.
  struct LaneKey {
    std::uint64_t key;
    std::uint32_t lane;
    bool operator<(const LaneKey& o) const { return key != o.key ? key < o.key : lane < o.lane; }
  };
  std::array<LaneKey, 32> by_key;
  std::uint32_t n = 0;
  for (std::uint32_t m = op.active_mask; m; m &= m - 1) {
    const std::uint32_t lane = static_cast<std::uint32_t>(std::countr_zero(m));
    by_key[n++] = LaneKey{op.address[lane], lane};
  }
  std::sort(by_key.begin(), by_key.begin() + n);  // by word, then lane: a word's lanes in round order
  for (std::uint32_t i = 0; i < n;) {
    std::uint32_t j = i;
    const std::uint64_t word = by_key[i].key;
    for (; j < n && by_key[j].key == word; ++j) by_key[j].key = map_.line_of(word) | (j - i);
    i = j;
  }
  std::sort(by_key.begin(), by_key.begin() + n);
  std::uint64_t sectors_sent = 0;
  for (std::uint32_t i = 0; i < n;) {
    const std::uint64_t key = by_key[i].key;
    const std::uint64_t line = map_.line_of(key);
    // The update is made in the L2: a copy of the line here would be stale to
    // the same thread's next load, which must see it.
    if (tags_.invalidate(line)) ++atomic_invalidations_;
    MemPacket p;
    p.kind = op.op == OpClass::Atom ? MemPacket::Kind::Atomic : MemPacket::Kind::Reduction;
    p.source = sm_;
    p.destination = static_cast<std::uint16_t>(map_.entry_slice(line, sm_));
    p.request = p.kind == MemPacket::Kind::Reduction && writes_complete_when_sent_ ? slot | kSentCompletes : slot;
    p.line = line;
    p.atomic_op = op.atomic_op;
    p.atomic_type = op.atomic_type;
    p.ops = pool_.acquire(sm_);
    LaneOp* ops = pool_.ops(p.ops);
    std::uint32_t op_count = 0;
    std::uint64_t sector_mask = 0;
    for (; i < n && by_key[i].key == key; ++i) {
      const std::uint32_t lane = by_key[i].lane;
      if (atomic_buffer_) {
        // An atomic that bypasses the buffer must follow any buffered update of its word.
        if (auto pending = atomic_buffer_->take(op.address[lane])) send_evicted(*pending);
      }
      ops[op_count++] = LaneOp{op.address[lane], op.value[lane], op.updates[lane]};
      sector_mask |= std::uint64_t(1) << (((op.address[lane] - line) / params_.sector_bytes) % 64);
    }
    p.op_count = static_cast<std::uint16_t>(op_count);
    p.sectors = static_cast<std::uint8_t>(std::popcount(sector_mask));
    p.sector_mask = static_cast<std::uint8_t>(sector_mask);
    p.atomic_flits = static_cast<std::uint8_t>(params_.atomic_request_flits(op_count * op.access_bytes, p.sectors, false));
    // An ATOM's larger header costs flits of the SM's port only: past it, an
    // ATOM request takes the slices' input and the link between the
    // partitions a RED's flits (red_requests probe, every SM: equal
    // lts__xbar2lts and lts__ltcfabric2lts cycles for the requests of both).
    if (p.kind == MemPacket::Kind::Atomic)
      p.port_extra_flits = static_cast<std::uint8_t>(
          params_.atomic_request_flits(op_count * op.access_bytes, p.sectors, true) - p.atomic_flits);
    sectors_sent += p.sectors;
    atomic_ops_to_l2_ += op_count;
    ++atomic_packets_to_l2_;
    queue_request(p);
    ++f.remaining;
    ++outstanding_writes_;
  }
  // An atomic instruction holds the pipeline for a while whatever its sectors
  // (red_issue probe: one SM takes a RED of one word or of one sector's eight
  // in 2.6 cycles; a line's 32 words, five flits, in 5.3, as the link sends them).
  const double sector_accesses = std::max(params_.atomic_instruction_cycles * params_.sectors_per_cycle,
                                          static_cast<double>(std::max<std::uint64_t>(1, sectors_sent)));
  Cycle done = pipeline_.occupy(now, 1, sector_accesses);
  if (f.remaining == 0) complete(slot, done + params_.hit_latency);
}

void L1::take_instruction(LsuOp& op, Cycle now) {
  ++instructions_;
  switch (op.kind) {
    case LsuOp::Kind::Membar:
      flush_atomic_buffer();
      membar_waiters_.push_back(op.warp_slot);
      return;
    case LsuOp::Kind::BarrierFlush:
      flush_atomic_buffer();
      return;
    case LsuOp::Kind::Memory:
      break;
  }
  std::uint32_t slot = allocate_inflight(op);
  switch (op.op) {
    case OpClass::LoadGlobal: issue_loads(op, slot, now); break;
    case OpClass::StoreGlobal: issue_stores(op, slot, now); break;
    default: issue_atomics(op, slot, now); break;
  }
}

void L1::handle_reply(const MemPacket& reply, Cycle now) {
  if (reply.kind != MemPacket::Kind::ReadReply) {
    --outstanding_writes_;
  } else if (!inflight_[reply.request].coherent_load) {
    tags_.insert(reply.line, false);
    if (auto pending = pending_lines_.find(reply.line); pending != pending_lines_.end()) {
      // The slot that asked is among the waiters.
      for (std::uint32_t slot : pending->second)
        if (--inflight_[slot].remaining == 0) complete(slot, now + 1);
      pending_lines_.erase(pending);
      return;
    }
  }
  if (reply.request & kSentCompletes) return;  // a flush, or a request whose instruction completed when sent
  Inflight& f = inflight_[reply.request];
  if (--f.remaining == 0) complete(reply.request, now + 1);
}

std::uint64_t L1::words_of(const MemPacket& p) const {
  const LaneOp* ops = pool_.ops(p.ops);
  const std::uint64_t words_each = std::max<std::uint32_t>(1, trace::operand_bytes(p.atomic_type) / 4);
  std::uint64_t words = 0;
  for (std::uint32_t i = 0; i < p.op_count; ++i)
    for (std::uint64_t w = (ops[i].address - p.line) / 4, end = w + words_each; w < end; ++w) words |= std::uint64_t(1) << (w % 64);
  return words;
}

void L1::complete_if_sent(std::uint32_t request, Cycle now) {
  if (request == kFlushRequest || !(request & kSentCompletes)) return;
  const std::uint32_t slot = request & ~kSentCompletes;
  if (--inflight_[slot].remaining == 0) complete(slot, now + 1);
}

const L1::RecentUpdate* L1::recent_update(std::uint64_t line, Cycle now) const {
  const std::size_t home = recent_home(line);
  for (std::size_t k = 0; k < kRecentProbes; ++k) {
    const RecentUpdate& r = recent_updates_[(home + k) % kRecentLines];
    if (r.line == line && r.free_at > now * RateServer::kScale) return &r;
  }
  return nullptr;
}

bool L1::note_update(std::uint64_t line, std::uint64_t words, std::uint64_t free_at, Cycle now) {
  const std::size_t home = recent_home(line);
  RecentUpdate* slot = nullptr;
  for (std::size_t k = 0; k < kRecentProbes; ++k) {
    RecentUpdate& r = recent_updates_[(home + k) % kRecentLines];
    const bool live = r.free_at > now * RateServer::kScale;
    if (r.line == line && live) {
      r.words |= words;
      r.free_at = std::max(r.free_at, free_at);
      return true;
    }
    // Else a free entry, or failing one the entry freeing first.
    const bool slot_live = slot && slot->free_at > now * RateServer::kScale;
    if (!slot || (slot_live && (!live || r.free_at < slot->free_at))) slot = &r;
  }
  const bool took_live = slot->free_at > now * RateServer::kScale;
  *slot = RecentUpdate{line, words, free_at};
  return !took_live;
}

void L1::queue_request(const MemPacket& p) {
  outgoing_instructions_ += outgoing_.empty() || outgoing_.back().request != p.request;
  outgoing_.push_back(p);
  outgoing_keys_.push_back({p.line | (p.is_atomic() ? 1 : 0),
                            p.is_atomic() && params_.same_word_interval > 0 ? words_of(p) : ~std::uint64_t(0)});
}

void L1::erase_outgoing(std::size_t index) {
  const auto it = outgoing_.begin() + static_cast<std::ptrdiff_t>(index);
  const std::uint32_t request = it->request;
  const bool same_before = it != outgoing_.begin() && std::prev(it)->request == request;
  const bool same_after = std::next(it) != outgoing_.end() && std::next(it)->request == request;
  // Its instruction leaves with its last request; neighbours of one other
  // instruction on both sides join into one run again.
  if (!same_before && !same_after) {
    --outgoing_instructions_;
    if (it != outgoing_.begin() && std::next(it) != outgoing_.end() && std::prev(it)->request == std::next(it)->request)
      --outgoing_instructions_;
  }
  outgoing_.erase(index);
  outgoing_keys_.erase(index);
}

bool L1::send_outgoing(Cycle now) {
  constexpr std::uint64_t kScale = RateServer::kScale;
  const bool spaced = params_.same_word_interval > 0;
  const auto interval = static_cast<std::uint64_t>(params_.same_word_interval * kScale + 0.5);
  std::size_t index = 0;
  if (still_waiting_ != kLookAgain && now < wake_for_words_) {
    index = still_waiting_;
  } else {
    waiting_.clear();
    wake_for_words_ = kNever;
  }
  // Whether the requests left waiting before the one looked at would still wait, looked at again.
  bool unchanged = true;
  // The last line's recent updates, as looked up: a hot line's requests
  // queue one after another (nine in ten looked at on the sparse write
  // baseline), and nothing changes the entries but a request sent.
  std::uint64_t looked_up_line = ~std::uint64_t(0);
  const RecentUpdate* looked_up = nullptr;
  for (auto key = outgoing_keys_.begin() + static_cast<std::ptrdiff_t>(index); key != outgoing_keys_.end();) {
    const std::uint64_t line = key->line();
    const bool atomic = key->atomic();
    const std::uint64_t words = key->words;
    std::uint64_t start = now * kScale;
    if (spaced) {
      bool waits = false;
      bool waits_for_recent = false;
      if (atomic) {
        if (line != looked_up_line) {
          looked_up = recent_update(line, now);
          looked_up_line = line;
        }
        if (const RecentUpdate* r = looked_up; r && (r->words & words)) start = std::max(start, r->free_at);
        if (start >= (now + 1) * kScale) {
          waits = waits_for_recent = true;
          wake_for_words_ = std::min(wake_for_words_, start / kScale);
        }
      }
      // Updates of a word leave in order, and nothing passes an update of its line.
      for (auto w = waiting_.begin(); !waits && w != waiting_.end(); ++w) waits = w->line == line && (w->words & words);
      if (waits) {
        // An instruction's rounds on one line come together: one entry holds them.
        if (!waiting_.empty() && waiting_.back().line == line) waiting_.back().words |= words;
        else waiting_.push_back({line, words});
        const std::uint64_t bits = key->line_bits;
        ++key;
        // The atomics to the same line right behind it whose words the same
        // recent updates hold wait as long, and join its entry.
        if (waits_for_recent)
          for (; key != outgoing_keys_.end() && key->line_bits == bits && (looked_up->words & key->words); ++key)
            waiting_.back().words |= key->words;
        continue;
      }
    }
    index = static_cast<std::size_t>(key - outgoing_keys_.begin());
    const MemPacket& p = outgoing_[index];
    if (!to_l2_.try_send(p)) {
      ++stall_cycles_;
      still_waiting_ = unchanged ? index : kLookAgain;
      return true;
    }
    if (spaced && atomic) {
      looked_up_line = ~std::uint64_t(0);
      const bool own_entry = note_update(line, words, start + interval, now);
      unchanged &= own_entry && std::none_of(waiting_.begin(), waiting_.end(), [&](const WaitingLine& w) { return w.line == line; });
    }
    const std::uint32_t request = p.request;
    erase_outgoing(index);
    key = outgoing_keys_.begin() + static_cast<std::ptrdiff_t>(index);
    complete_if_sent(request, now);
  }
  still_waiting_ = unchanged ? outgoing_.size() : kLookAgain;
  return false;
}

bool L1::room_to_take() const {
  if (free_inflight_.empty()) return false;
  // What is left waits for its words (send_outgoing). A flush's requests
  // at the front belong to no instruction.
  const bool flush_first = !outgoing_.empty() && outgoing_.front().request == kFlushRequest;
  return outgoing_instructions_ - flush_first < params_.waiting_atomic_instructions;
}

void L1::evaluate() {
  const Cycle now = Unit::now();
  while (!completion_backlog_.empty()) {
    auto& [ready, c] = completion_backlog_.front();
    if (!to_sm_.try_send(c, ready > now + 1 ? ready - now - 1 : 0)) break;
    completion_backlog_.pop_front();
  }
  while (from_l2_.ready(now)) {
    handle_reply(from_l2_.front(), now);
    from_l2_.pop();
  }
  while (kernel_end_.ready(now)) {
    kernel_end_.pop();
    flush_atomic_buffer();
  }

  // Send what the pipeline produced; the interconnect's credit wakes us when blocked.
  bool blocked = send_outgoing(now);

  // Take the next instruction once the pipeline is free and nothing waits to
  // leave but requests waiting for their words; its requests leave in the
  // same cycle.
  if (!blocked && room_to_take() && pipeline_.free(now)) {
    const std::uint32_t n = static_cast<std::uint32_t>(lg_queues_.size());
    for (std::uint32_t k = 0; k < n; ++k) {
      InPort<LsuOp>& q = *lg_queues_[(round_robin_ + k) % n];
      if (!q.ready(now)) continue;
      round_robin_ = (round_robin_ + k + 1) % n;
      take_instruction(q.front(), now);
      q.pop();  // the credit tells the sub-core its source registers were read
      blocked = send_outgoing(now);
      break;
    }
  }
  if (!membar_waiters_.empty() && outstanding_writes_ == 0 && outgoing_.empty()) {
    for (std::uint16_t warp : membar_waiters_) {
      Completion c;
      c.kind = Completion::Kind::MembarDone;
      c.warp_slot = warp;
      send_completion(c, now + 1);
    }
    membar_waiters_.clear();
  }
  // Blocked sends and a full completion port wake us through their credits;
  // a full in-flight table through the L2's replies.
  Cycle next = kNever;
  if (!outgoing_.empty() && !blocked) next = wake_for_words_;
  if (!blocked && room_to_take()) {
    Cycle take_at = std::max(pipeline_.free_at(), now + 1);
    for (auto& q : lg_queues_)
      if (!q->empty()) next = std::min(next, std::max(q->next_ready(), take_at));
  }
  next = std::min(next, from_l2_.next_ready());
  if (next != kNever) wake_at(next);
}

}  // namespace atomsim::model
