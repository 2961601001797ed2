#include "models/l2/l2_slice.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace atomsim::model {

using trace::AtomicOp;
using trace::DataType;

L2Slice::L2Slice(const sc_core::sc_module_name& name, const L2Params& p, std::uint32_t index, const AddressMap& map,
                 LaneOpPool& pool, StatRegistry& stats)
    : Unit(name), params_(p), index_(index), map_(map), pool_(pool), tags_(p.slice_bytes, p.line_bytes, p.ways, p.sector_bytes),
      requests_(*this, p.input_buffer_flits), replies_(*this), to_dram_(*this), from_dram_(*this, p.mshrs + 1),
      to_other_partition_(*this), from_other_partition_(*this, p.input_buffer_flits),
      lookups_(p.lookups_per_cycle), rop_units_(p.rop_units_per_slice, RateServer(p.rop_ops_per_cycle)),
      rop_returns_(p.rop_units_per_slice, RateServer(p.rop_ops_per_cycle)),
      max_dirty_lines_(static_cast<std::uint64_t>(p.dirty_fraction * static_cast<double>(p.slice_bytes / p.line_bytes))),
      cleaning_draw_(0x9e3779b97f4a7c15ull ^ index),
      line_sectors_(tags_.all_sectors()), fetch_sectors_(p.fetch_bytes / p.sector_bytes) {
  StatGroup& g = stats.group("l2_slice", basename());
  requests_.register_stats(g, "input");
  from_other_partition_.register_stats(g, "input_from_other_partition");
  g.add_counter("hits", &hits_, "lookups that found their line");
  g.add_counter("misses", &misses_, "lookups that went to DRAM");
  g.add_counter("reads", &reads_, "read requests");
  g.add_counter("writes", &writes_, "write requests");
  g.add_counter("atomic_packets", &atomic_packets_, "atomic/reduction packets");
  g.add_counter(l2_slice_stat::kAtomicOps, &atomic_ops_, "atomic operations processed by the ROP units");
  g.add_counter("atomic_sectors", &atomic_sectors_,
                "sectors the atomic packets updated, a packet's counted once each (what the H100's "
                "lts__d_atomic_input_cycles_active counts: a cycle a sector a request)");
  g.add_counter(l2_slice_stat::kAtomicLaneUpdates, &atomic_updates_, "lane updates those operations carry (more than ops when L1 combined them)");
  g.add_counter("far_partition_requests", &far_requests_, "requests from SMs of the other partition");
  g.add_counter("atomic_replies_passed_back", &replies_passed_back_,
                "ATOM replies of this partition's SMs that came back over the link between the partitions, passed to the SM");
  g.add_counter("passed_on", &passed_on_, "atomics, and loads and stores that missed the copy here, passed on to their home slice in the other partition");
  g.add_counter("near_copy_hits", &near_copy_hits_, "loads of the other partition's lines served from the copy here");
  g.add_counter("near_copies_dropped", &near_copies_dropped_, "copies of the other partition's lines dropped as an atomic to the line passed on");
  g.add_counter("near_copy_misses", &near_copy_misses_, "loads and stores of the other partition's lines passed on (their lines copied here)");
  g.add_counter("writebacks", &writebacks_, "dirty lines written back to DRAM");
  g.add_counter("cleanings", &cleanings_, "of those, lines written back and kept, past the share of dirty lines a slice keeps");
  g.add_counter("awaiting_reads", &awaiting_reads_count_, "reads whose load the trace shows reading another warp's store, held until a store to their word was performed");
  g.add_counter("await_cycles", &await_cycles_, "cycles those reads were held");
  g.add_counter("awaits_released", &awaits_released_, "held reads answered before a store to their word, so that the simulation could go on");
  g.add_busy(l2_slice_stat::kLookupUtilization, lookups_.busy_scaled(), "busy fraction of the tag pipeline");
  g.add_busy(l2_slice_stat::kRopUtilization, &rop_busy_scaled_, "busy fraction of the ROP units' input (mean over units)");
  g.add_busy("rop_return_utilization", &rop_return_busy_scaled_, "busy fraction of the ROP units' return stages, which send ATOMs' old values (mean over units)");
}

void L2Slice::schedule_reply(Cycle ready, const MemPacket& packet) {
  pending_replies_.push(ready, packet);
}

void L2Slice::apply(AtomicCell& cell, const LaneOp& op, AtomicOp kind, DataType type) {
  cell.type = type;
  cell.updates += op.updates;
  auto f32 = [](std::uint64_t bits) { float f; std::uint32_t b = static_cast<std::uint32_t>(bits); std::memcpy(&f, &b, 4); return f; };
  auto f32_bits = [](float f) { std::uint32_t b; std::memcpy(&b, &f, 4); return std::uint64_t(b); };
  auto f64 = [](std::uint64_t bits) { return std::bit_cast<double>(bits); };
  const std::uint64_t mask = trace::value_bytes(type) == 8 ? ~0ull : 0xFFFFFFFFull;
  std::uint64_t a = cell.bits, b = op.value & mask;
  switch (kind) {
    case AtomicOp::Add:
      if (type == DataType::F32) cell.bits = f32_bits(f32(a) + f32(b));
      else if (type == DataType::F64) cell.bits = std::bit_cast<std::uint64_t>(f64(a) + f64(b));
      else if (trace::holds_float_pair(type)) cell.bits = trace::add_f32x2(a, b);
      else cell.bits = (a + b) & mask;
      break;
    case AtomicOp::Min: case AtomicOp::Max: {
      bool take;
      if (type == DataType::F32) take = kind == AtomicOp::Min ? f32(b) < f32(a) : f32(b) > f32(a);
      else if (type == DataType::S32) take = kind == AtomicOp::Min ? std::int32_t(b) < std::int32_t(a) : std::int32_t(b) > std::int32_t(a);
      else if (type == DataType::S64) take = kind == AtomicOp::Min ? std::int64_t(b) < std::int64_t(a) : std::int64_t(b) > std::int64_t(a);
      else take = kind == AtomicOp::Min ? b < a : b > a;
      // Traces carry no initial memory contents: a word's first update defines it.
      if (take || cell.updates == op.updates) cell.bits = b;
      break;
    }
    case AtomicOp::And: cell.bits = a & b; break;
    case AtomicOp::Or: cell.bits = a | b; break;
    case AtomicOp::Xor: cell.bits = a ^ b; break;
    case AtomicOp::Exch: cell.bits = b; break;
    case AtomicOp::Inc: cell.bits = a >= b ? 0 : (a + 1) & mask; break;
    case AtomicOp::Dec: cell.bits = (a == 0 || a > b) ? b : (a - 1) & mask; break;
    case AtomicOp::Cas: case AtomicOp::None: break;  // v1 traces carry no compare operand
  }
}

void L2Slice::preload(std::uint64_t line) { tags_.insert(line, false); }

Cycle L2Slice::occupy_counted(RateServer& stage, Cycle start, double cost, std::uint64_t& busy_scaled) {
  const std::uint64_t before = *stage.busy_scaled();
  const Cycle done = stage.occupy(start, 1, cost);
  busy_scaled += (*stage.busy_scaled() - before) / rop_units_.size();
  return done;
}

Cycle L2Slice::run_atomic(MemPacket& packet, Cycle start) {
  const LaneOp* ops = pool_.ops(packet.ops);
  const std::size_t op_count = packet.op_count;
  // A unit takes requests at its rate in arrival order. A request costs its
  // sectors and the request overhead, an ATOM no more than a RED: the H100's
  // atomic units count the same input cycles for both on every probed pattern
  // (traces/datasets/h100/latency/ncu-l2-slices.csv). A word's updates wait for nothing
  // of their own: one word updated from every SM goes at the slice's rate
  // (shared_banks probe, part five), and words that crowd are slow because
  // they share a slice.
  const std::size_t u = (packet.line / params_.line_bytes) % rop_units_.size();
  Cycle done = occupy_counted(rop_units_[u], start, packet.sectors + params_.rop_request_overhead, rop_busy_scaled_);
  // An ATOM's old values leave through the unit's return stage, one at a
  // time, while the unit takes the next requests.
  if (packet.kind == MemPacket::Kind::Atomic)
    done = occupy_counted(rop_returns_[u], done, static_cast<double>(op_count) * params_.rop_returned_value_cost,
                          rop_return_busy_scaled_);
  for (std::size_t i = 0; i < op_count; ++i) {
    if (keep_atomic_values_) apply(memory_[ops[i].address], ops[i], packet.atomic_op, packet.atomic_type);
    atomic_updates_ += ops[i].updates;
  }
  atomic_ops_ += op_count;
  atomic_sectors_ += packet.sectors;
  ++atomic_packets_;
  return done + params_.rop_latency + (packet.kind == MemPacket::Kind::Atomic ? params_.rop_return_latency : 0);
}

Cycle L2Slice::far_reply_latency(const MemPacket& packet, bool from_dram) const {
  // An atomic from the other partition paid its way here on the link between
  // the partitions, and so did a load or store a near copy passed on.
  if (packet.is_atomic() || map_.partition_of_sm(packet.source) == map_.partition_of_slice(index_)) return 0;
  return (packet.via_partition_link ? 0 : params_.far_partition_latency) + (from_dram ? params_.far_partition_miss_latency : 0);
}

bool L2Slice::accept_near_copy(MemPacket& packet, Cycle now) {
  const Cycle start = std::max(now, lookups_.free_at());
  if (packet.kind == MemPacket::Kind::Read && !(packet.sector_mask & ~tags_.access_sectors(packet.line).value_or(0))) {
    ++near_copy_hits_;
    ++hits_;
    serve(packet, start + 1, false);
    lookups_.occupy(now, 1);
    return true;
  }
  MemPacket onward = packet;
  onward.destination = static_cast<std::uint16_t>(map_.slice_of(packet.line));
  onward.via_partition_link = true;
  if (!to_other_partition_.try_send(onward)) return false;  // woken by the link's credit
  // The copy keeps what the home slice returns (clean: the home holds the
  // data). A store updates a copy the slice holds but makes none (stores
  // probe, split points: a 32 MB window written from every SM misses 2.7% of
  // its writes, which copies in both partitions would leave no room for).
  if (packet.kind != MemPacket::Kind::Write || tags_.contains(packet.line))
    if (auto victim = tags_.fill(packet.line, packet.sector_mask); victim && victim->dirty) write_back(*victim);
  lookups_.occupy(now, 1);
  ++near_copy_misses_;
  ++passed_on_;
  return true;
}

bool L2Slice::awaited_words_written(const MemPacket& read) const {
  const LaneOp* ops = pool_.ops(read.ops);
  for (std::size_t i = 0; i < read.op_count; ++i)
    if (!written_words_.count(ops[i].address)) return false;
  return true;
}

void L2Slice::reply_to_read(const MemPacket& read, Cycle ready) {
  // The request stays as it came: its input port returns credit by its flits.
  MemPacket reply = read;
  if (reply.op_count) {
    pool_.release(reply.ops);
    reply.op_count = 0;
  }
  reply.destination = read.source;
  reply.source = static_cast<std::uint16_t>(index_);
  reply.kind = MemPacket::Kind::ReadReply;
  schedule_reply(ready, reply);
}

void L2Slice::record_written_words(const MemPacket& write, Cycle now) {
  const LaneOp* ops = pool_.ops(write.ops);
  for (std::size_t i = 0; i < write.op_count; ++i) written_words_.insert(ops[i].address);
  pool_.release(write.ops);
  // A read answered now sees the value a lookup later, as a poll sent now would.
  for (auto it = awaiting_reads_.begin(); it != awaiting_reads_.end();) {
    if (!awaited_words_written(it->packet)) {
      ++it;
      continue;
    }
    await_cycles_ += now - it->since;
    reply_to_read(it->packet, now + params_.hit_latency + it->extra);
    it = awaiting_reads_.erase(it);
  }
}

void L2Slice::release_awaiting_read(Cycle now) {
  AwaitingRead& oldest = awaiting_reads_.front();
  await_cycles_ += now - oldest.since;
  ++awaits_released_;
  reply_to_read(oldest.packet, now + params_.hit_latency + oldest.extra);
  awaiting_reads_.pop_front();
  wake_at(now);
}

void L2Slice::serve(MemPacket& packet, Cycle start, bool from_dram) {
  const Cycle extra = far_reply_latency(packet, from_dram);
  if (packet.kind == MemPacket::Kind::Read) {
    ++reads_;
    // A load the trace shows seeing another warp's store waits for that store,
    // however long its warp spun on the GPU.
    if (packet.op_count && !awaited_words_written(packet)) {
      ++awaiting_reads_count_;
      awaiting_reads_.push_back(AwaitingRead{packet, start, extra});
      return;
    }
    reply_to_read(packet, start + params_.hit_latency + extra);
    return;
  }
  MemPacket reply = packet;
  reply.destination = packet.source;
  reply.source = static_cast<std::uint16_t>(index_);
  switch (packet.kind) {
    case MemPacket::Kind::Write:
      ++writes_;
      write_sectors(packet);
      if (packet.op_count) {
        record_written_words(packet, start);
        reply.op_count = 0;
      }
      reply.kind = MemPacket::Kind::WriteAck;
      schedule_reply(start + params_.hit_latency + extra, reply);
      break;
    case MemPacket::Kind::Atomic:
    case MemPacket::Kind::Reduction: {
      Cycle done = run_atomic(packet, start);
      write_sectors(packet);
      reply.kind = packet.kind == MemPacket::Kind::Atomic ? MemPacket::Kind::AtomicReply : MemPacket::Kind::ReductionAck;
      pool_.release(packet.ops);
      if (reply.kind == MemPacket::Kind::AtomicReply && map_.partition_of_sm(packet.source) != map_.partition_of_slice(index_)) {
        // An ATOM's old values go back the way it came: over the link between
        // the partitions to the slice it entered at, which passes them to the
        // SM (red_requests probe, every SM: the links into the far slices
        // carry a far ATOM's request and then its reply's sectors, a RED's
        // request alone; traces/datasets/h100/microbench/red_requests/path).
        reply.destination = static_cast<std::uint16_t>(map_.entry_slice(packet.line, packet.source));
        reply.source = packet.source;
        reply.via_partition_link = true;
      }
      schedule_reply(done + extra, reply);
      break;
    }
    default:
      break;
  }
}

bool L2Slice::pass_on(const MemPacket& packet, Cycle now) {
  MemPacket onward = packet;
  onward.destination = static_cast<std::uint16_t>(map_.slice_of(packet.line));
  if (!to_other_partition_.try_send(onward)) return false;  // woken by the link's credit
  lookups_.occupy(now, packet.sectors, params_.far_partition_extra_lookups);
  ++passed_on_;
  // The home slice updates the line: a copy kept here is stale, and this
  // partition's next load of it goes to the home slice (corpus, fit half:
  // loads of lines that atomics update miss their near copies, lts__t_sectors_op_read_lookup_miss).
  if (params_.far_lines_cached_near && tags_.invalidate(packet.line)) ++near_copies_dropped_;
  return true;
}

SectorMask L2Slice::sectors_to_read(const MemPacket& packet, SectorMask valid) {
  if (packet.kind == MemPacket::Kind::Write) {
    // A write allocates its line and needs only the sectors it writes in part
    // (stores probe: every 4-byte store to a line no launch wrote read one
    // sector from DRAM, stores of whole sectors none).
    if (!valid)
      if (auto victim = tags_.allocate(packet.line); victim && victim->dirty) write_back(*victim);
    return packet.partial_sectors & ~valid;
  }
  // A read or an atomic reads what its line lacks of each aligned piece that
  // holds a sector it lacks (dram_mix probe: a 32-byte load that misses reads
  // 64 bytes, with the fetch granularity at 32 bytes its sector alone).
  const unsigned piece = (1u << fetch_sectors_) - 1;
  unsigned pieces = 0;
  for (unsigned lacking = packet.sector_mask & ~valid & 0xFFu; lacking; lacking &= lacking - 1)
    pieces |= piece << (static_cast<unsigned>(std::countr_zero(lacking)) / fetch_sectors_ * fetch_sectors_);
  return static_cast<SectorMask>(pieces & line_sectors_ & ~valid);
}

bool L2Slice::fetch(const MemPacket& packet, SectorMask sectors) {
  auto it = mshrs_.find(packet.line);
  if (it == mshrs_.end()) {
    // Woken by a line back from DRAM, or by the DRAM queue's credit.
    if (mshrs_.size() >= params_.mshrs || !pending_writebacks_.empty()) return false;
    if (!to_dram_.try_send(DramRequest{false, static_cast<std::uint16_t>(index_), packet.line, sector_bytes(sectors), sectors}))
      return false;
    it = mshrs_.emplace(packet.line, std::vector<MemPacket>{}).first;
  }
  it->second.push_back(packet);
  return true;
}

void L2Slice::pass_back(MemPacket& reply, Cycle now) {
  reply.destination = reply.source;
  reply.source = static_cast<std::uint16_t>(index_);
  reply.via_partition_link = false;
  ++replies_passed_back_;
  schedule_reply(now, reply);
}

bool L2Slice::accept(MemPacket& packet, Cycle now) {
  if (packet.kind == MemPacket::Kind::AtomicReply) {  // from the other partition, for one of this partition's SMs
    pass_back(packet, now);
    return true;
  }
  // An atomic is looked up once a sector it updates; a read or a write once
  // (stores probe, ncu-stores.csv: whole-line stores into the L2 keep its tag
  // pipeline as busy per request as one-sector stores, 40.7% at 0.348 requests
  // an L2 clock against 94.4% at 0.795, while the crossbar into the slice is 93% busy).
  if (passes_on(packet)) return pass_on(packet, now);
  const bool atomic = packet.is_atomic();
  if (!atomic && map_.slice_of(packet.line) != index_) return accept_near_copy(packet, now);
  const std::uint64_t lookups = atomic ? packet.sectors : 1;
  // A request from the other partition costs its extra lookups as a
  // fraction of the tag pipeline's time, not rounded per request; an atomic
  // paid them at the slice that passed it on.
  double lookup_weight = 1;
  const bool far = map_.partition_of_sm(packet.source) != map_.partition_of_slice(index_);
  // (A load or store passed on from a near copy was looked up there first.)
  if (far && !atomic && !packet.via_partition_link) lookup_weight += params_.far_partition_extra_lookups;
  Cycle start = std::max(now, lookups_.free_at());
  // A write that would make room for its line waits while evicted lines wait
  // for the DRAM queue (woken by its credit): DRAM's pace holds the writes back.
  const std::optional<SectorMask> valid = tags_.access_sectors(packet.line);
  if (!valid && packet.kind == MemPacket::Kind::Write && !pending_writebacks_.empty()) return false;
  if (const SectorMask missing = sectors_to_read(packet, valid.value_or(0))) {
    if (!fetch(packet, missing)) return false;
    ++misses_;
  } else {
    ++hits_;
    serve(packet, start + 1, false);
  }
  lookups_.occupy(now, lookups, lookup_weight);
  far_requests_ += far;
  return true;
}

void L2Slice::write_sectors(const MemPacket& packet) {
  if (!tags_.write(packet.line, packet.sector_mask) || params_.dirty_fraction >= 1) return;
  // Which lines go back is drawn at random, not the oldest first (L2
  // capacity probe's write pass: the H100 writes back 4, 36, 71 and 92% of a
  // 16, 24, 32 and 48 MB footprint rewritten, where the oldest first writes
  // back none or all of it).
  while (tags_.dirty_lines() > max_dirty_lines_) {
    cleaning_draw_ ^= cleaning_draw_ << 13;
    cleaning_draw_ ^= cleaning_draw_ >> 7;
    cleaning_draw_ ^= cleaning_draw_ << 17;
    ++cleanings_;
    write_back(*tags_.clean_from(cleaning_draw_));
  }
}

void L2Slice::write_back(const TagArray::Victim& victim) {
  ++writebacks_;
  pending_writebacks_.push_back(victim);
  send_writebacks();
}

void L2Slice::send_writebacks() {
  while (!pending_writebacks_.empty()) {
    const TagArray::Victim& v = pending_writebacks_.front();
    if (!to_dram_.try_send(DramRequest{true, static_cast<std::uint16_t>(index_), v.line, sector_bytes(v.dirty), v.dirty})) break;
    pending_writebacks_.pop_front();
  }
}

void L2Slice::evaluate() {
  const Cycle now = Unit::now();
  send_writebacks();
  // Sectors back from DRAM release the requests waiting on them; one that
  // needs sectors a later request's fetch did not bring fetches again.
  while (from_dram_.ready(now)) {
    const DramRequest back = from_dram_.front();
    from_dram_.pop();
    if (auto victim = tags_.fill(back.line, back.sectors); victim && victim->dirty) write_back(*victim);
    auto it = mshrs_.find(back.line);
    if (it != mshrs_.end()) {
      for (auto& p : it->second) refilled_.push_back(p);
      mshrs_.erase(it);
    }
  }
  std::size_t kept = 0;
  for (auto& p : refilled_) {
    const SectorMask missing = sectors_to_read(p, tags_.valid_sectors(p.line));
    if (!missing) serve(p, now, true);
    else if (!fetch(p, missing)) refilled_[kept++] = p;  // retried when the DRAM queue or an MSHR frees
  }
  refilled_.resize(kept);

  // The SMs' requests and the atomics passed on from the other partition take
  // turns, so that neither partition's SMs hold the other's back at a slice
  // both crowd. A head that cannot be taken leaves its turn to the other input.
  while (lookups_.free(now)) {
    InPort<MemPacket>* const first = far_turn_ ? &from_other_partition_ : &requests_;
    InPort<MemPacket>* const second = far_turn_ ? &requests_ : &from_other_partition_;
    InPort<MemPacket>* taken = nullptr;
    for (InPort<MemPacket>* input : {first, second})
      if (input->ready(now) && accept(input->front(), now)) {
        taken = input;
        break;
      }
    if (!taken) break;
    taken->pop();
    far_turn_ = taken == &requests_;
  }
  // The next request's lane operations were written by an L1 long ago; fetch
  // them into the host's cache while the other units run.
  if (!requests_.empty() && requests_.front().op_count) __builtin_prefetch(pool_.ops(requests_.front().ops));

  while (!pending_replies_.empty() && pending_replies_.next_ready() <= now) {
    const MemPacket& reply = pending_replies_.next();
    OutPort<MemPacket>& port = returns_over_link(reply) ? to_other_partition_ : replies_;
    if (!port.try_send(reply)) break;  // woken by the link's credit
    pending_replies_.pop();
  }

  Cycle next = kNever;
  if (!pending_replies_.empty() && pending_replies_.next_ready() > now) next = pending_replies_.next_ready();
  // A ready head left with the tag pipeline free was refused: it waits for a
  // line back from DRAM, or for credit on the DRAM queue or on the link between
  // the partitions, each of which wakes this slice.
  for (const InPort<MemPacket>* input : {&from_other_partition_, &requests_})
    if (!input->empty() && !(input->ready(now) && lookups_.free(now)))
      next = std::min(next, std::max({input->next_ready(), lookups_.free_at(), now + 1}));
  next = std::min(next, from_dram_.next_ready());
  if (next != kNever) wake_at(next);
}

}  // namespace atomsim::model
