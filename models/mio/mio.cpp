#include "models/mio/mio.hpp"

#include <algorithm>
#include <cmath>

namespace atomsim::model {

Mio::Mio(const sc_core::sc_module_name& name, const MioParams& p, std::uint32_t subcores, StatRegistry& stats)
    : Unit(name), params_(p), to_sm_(*this), dispatch_(p.dispatch_per_cycle), shuffle_(p.shuffles_per_cycle), match_(p.matches_per_cycle),
      shared_(p.shared_per_cycle), sfu_(p.sfu_per_cycle), bits_(p.bits_per_cycle) {
  StatGroup& g = stats.group("mio", basename());
  for (std::uint32_t s = 0; s < subcores; ++s) {
    queues_.push_back(std::make_unique<InPort<MioOp>>(*this, p.queue_depth));
    subcore_limits_.push_back({RateServer(p.subcore_shuffles_per_cycle), RateServer(p.subcore_matches_per_cycle), RateServer(p.subcore_bits_per_cycle)});
    passed_match_.push_back(0);
    queues_.back()->register_stats(stats.group(std::string(mio_stat::kQueueOccupancy.group), std::string(basename()) + "." + std::to_string(s)));
  }
  g.add_counter("instructions", &instructions_, "instructions dispatched");
  g.add_counter("match_passes", &passes_, "shuffles and bit-manipulation instructions that went before a MATCH or REDUX queued ahead of them");
  g.add_busy("shuffle_utilization", shuffle_.busy_scaled(), "busy fraction of the shuffle pipe");
  g.add_busy("match_utilization", match_.busy_scaled(), "busy fraction of the MATCH and REDUX pipe (with the shuffles passing through it)");
  g.add_busy("shared_utilization", shared_.busy_scaled(), "busy fraction of the shared-memory pipe");
  g.add_busy("sfu_utilization", sfu_.busy_scaled(), "busy fraction of the special-function pipe");
  g.add_busy("bits_utilization", bits_.busy_scaled(), "busy fraction of the bit-manipulation pipe");
}

RateServer& Mio::pipe_for(MioPipe pipe) {
  switch (pipe) {
    case MioPipe::Shared: return shared_;
    case MioPipe::Sfu: return sfu_;
    case MioPipe::Bits: return bits_;
    case MioPipe::Redux:
    case MioPipe::Match: return match_;
    case MioPipe::Shuffle: break;
  }
  return shuffle_;
}

// An instruction of several passes (a shared access's wavefronts, a match's
// values) has its result when the last pass is through.
Cycle Mio::result_latency(const MioOp& op) const {
  const double more = std::max(0.0, static_cast<double>(op.units) - 1);
  switch (op.pipe) {
    case MioPipe::Shared: return params_.shared_latency + static_cast<Cycle>(std::lround(more * params_.shared_wavefront_latency));
    case MioPipe::Sfu: return params_.sfu_latency;
    case MioPipe::Bits: return params_.bits_latency;
    case MioPipe::Redux: return params_.redux_latency;
    case MioPipe::Match: return params_.match_latency + static_cast<Cycle>(std::lround(more * params_.match_value_latency));
    case MioPipe::Shuffle: break;
  }
  return params_.shuffle_latency;
}

RateServer* Mio::subcore_limit(std::uint32_t subcore, MioPipe pipe) {
  switch (pipe) {
    case MioPipe::Shuffle: return &subcore_limits_[subcore][0];
    case MioPipe::Match:
    case MioPipe::Redux: return &subcore_limits_[subcore][1];
    case MioPipe::Bits: return &subcore_limits_[subcore][2];
    case MioPipe::Shared:
    case MioPipe::Sfu: break;
  }
  return nullptr;
}

// The latency probe's MATCH.ANY chain beside warps of shuffles on its
// sub-core waits about as long as 14 and 22 shuffles take (two and three
// warps of 8 chains), where three warps on another sub-core cost it nothing
// (docs/notes/2026-11-24-sm-issue-and-mio.md, "Where a match waits among shuffles"): the shuffles
// queued behind a match go first, up to a bound, and BREV, FLO and POPC with
// them (the microbenchmark's SW-S then waits after its match, where the
// H100's samples have it, instead of at the FLO behind the match).
void Mio::let_pass_a_match(std::uint32_t subcore, Cycle now) {
  if (params_.passing_a_match == 0 || passed_match_[subcore] >= params_.passing_a_match) return;
  InPort<MioOp>& q = *queues_[subcore];
  const MioPipe head = q.front().pipe;
  if (head != MioPipe::Match && head != MioPipe::Redux) return;
  if (q.bring_forward(now, [](const MioOp& op) { return op.pipe == MioPipe::Shuffle || op.pipe == MioPipe::Bits; })) {
    ++passed_match_[subcore];
    ++passes_;
  }
}

void Mio::evaluate() {
  const Cycle now = Unit::now();
  const std::uint32_t n = static_cast<std::uint32_t>(queues_.size());
  Cycle next = kNever;
  while (dispatch_.free(now)) {
    bool took = false;
    for (std::uint32_t k = 0; k < n; ++k) {
      const std::uint32_t subcore = (round_robin_ + k) % n;
      InPort<MioOp>& q = *queues_[subcore];
      if (!q.ready(now)) continue;
      let_pass_a_match(subcore, now);
      RateServer& pipe = pipe_for(q.front().pipe);
      if (!pipe.free(now)) continue;
      // A shuffle also needs a moment of the match pipe, a cycle after its
      // dispatch: the two share the stage that moves values between lanes.
      const bool shuffle = q.front().pipe == MioPipe::Shuffle && params_.match_pipe_per_shuffle > 0;
      RateServer* limit = subcore_limit(subcore, q.front().pipe);
      if ((limit && !limit->free(now)) || (shuffle && !match_.free(now + 1))) continue;
      const MioOp& op = q.front();
      if (op.num_dst > 0 || op.write_barrier != trace::ControlBits::kNoBarrier) {
        Completion c;
        c.kind = Completion::Kind::Registers;
        c.warp_slot = op.warp_slot;
        c.num_dst = op.num_dst;
        c.dst = op.dst;
        c.write_barrier = op.write_barrier;
        if (!to_sm_.try_send(c, result_latency(op) - 1)) return;  // woken by the SM's credit
      }
      dispatch_.occupy(now, 1);
      pipe.occupy(now, 1, op.units);
      if (limit) limit->occupy(now, 1);
      if (shuffle) match_.occupy(now + 1, 1, params_.match_pipe_per_shuffle);
      ++instructions_;
      if (op.pipe == MioPipe::Match || op.pipe == MioPipe::Redux) passed_match_[subcore] = 0;
      q.pop();
      round_robin_ = (round_robin_ + k + 1) % n;
      took = true;
      break;
    }
    if (!took) break;
  }
  for (std::uint32_t subcore = 0; subcore < n; ++subcore) {
    const auto& q = queues_[subcore];
    if (q->empty()) continue;
    Cycle pipe_free = pipe_for(q->front().pipe).free_at();
    if (RateServer* limit = subcore_limit(subcore, q->front().pipe)) pipe_free = std::max(pipe_free, limit->free_at());
    if (q->front().pipe == MioPipe::Shuffle && params_.match_pipe_per_shuffle > 0)
      pipe_free = std::max(pipe_free, std::max<Cycle>(match_.free_at(), 1) - 1);
    next = std::min(next, std::max({q->next_ready(), dispatch_.free_at(), pipe_free, now + 1}));
  }
  if (next != kNever) wake_at(next);
}

}  // namespace atomsim::model
