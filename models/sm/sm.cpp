#include "models/sm/sm.hpp"

#include "models/sm/subcore.hpp"

namespace atomsim::model {

Sm::Sm(const sc_core::sc_module_name& name, const SmParams& p, std::uint64_t placement_offset, StatRegistry& stats)
    : Unit(name), params_(p), placement_offset_(placement_offset), constant_fills_(params_.constant_cache), warps_(p.max_warps),
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
  // A launch writes its parameters afresh: no constant line carries over.
  constant_fills_.begin_kernel();
  for (auto& sc : subcores_) sc->begin_kernel(&kernel_.program->timing);
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

std::vector<Sm::IssuingWarp> Sm::issuing_warps() const {
  std::vector<IssuingWarp> found;
  for (const CtaSlot& c : ctas_) {
    if (!c.active) continue;
    for (std::uint16_t slot : c.warps) {
      const Warp& w = warps_[slot];
      if (w.resident && w.has_inst && !w.exited) found.push_back({c.cta, slot, w.launched_at});
    }
  }
  return found;
}

void Sm::move_stream_on(std::uint16_t slot, trace::WarpStream stream) {
  Warp& w = warps_[slot];
  if (stream.index() != w.stream.index()) throw std::logic_error("Sm::move_stream_on: a stream at another instruction");
  w.stream = std::move(stream);
  subcore_of(slot).mark_warp_dirty(slot);
  wake_at(current_cycle() + 1);
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

