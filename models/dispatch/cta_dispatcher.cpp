#include "models/dispatch/cta_dispatcher.hpp"

#include <algorithm>
#include <cmath>

namespace atomsim::model {

std::uint32_t ctas_per_sm(const trace::KernelInfo& kernel, const SmLimits& limits) {
  const std::uint64_t warps = kernel.warps_per_cta();
  std::uint64_t n = std::min<std::uint64_t>(limits.max_ctas, limits.max_warps / warps);
  const std::uint64_t unit = limits.register_allocation_unit;
  const std::uint64_t regs_per_warp = (std::uint64_t(kernel.registers_per_thread) * 32 + unit - 1) / unit * unit;
  if (regs_per_warp > 0) n = std::min<std::uint64_t>(n, limits.registers / (regs_per_warp * warps));
  if (kernel.shared_bytes > 0) n = std::min<std::uint64_t>(n, limits.shared_memory_bytes / kernel.shared_bytes);
  return static_cast<std::uint32_t>(n);
}

CtaDispatcher::CtaDispatcher(const sc_core::sc_module_name& name, const DispatchParams& p, std::uint32_t sms,
                             std::uint32_t l1s, StatRegistry& stats)
    : Unit(name), p_(p), free_slots_(sms), ready_at_(sms), next_completion_(sms) {
  for (std::uint32_t i = 0; i < sms; ++i) {
    to_sm_.push_back(std::make_unique<OutPort<CtaLaunch>>(*this));
    from_sm_.push_back(std::make_unique<InPort<CtaDone>>(*this, 256));
  }
  for (std::uint32_t i = 0; i < l1s; ++i) kernel_end_.push_back(std::make_unique<OutPort<KernelEnd>>(*this));
  stats.group("dispatcher", "").add_counter("ctas_launched", &launched_, "CTAs handed to SMs");
}

// Called between kernels, outside any evaluation.
void CtaDispatcher::begin_kernel(std::uint64_t ctas, std::uint32_t per_sm, std::uint32_t warps_per_cta,
                                 std::vector<std::uint64_t> order) {
  total_ = ctas;
  order_ = p_.cta_order == CtaOrder::Trace ? std::move(order) : std::vector<std::uint64_t>{};
  next_cta_ = finished_ = 0;
  end_sent_ = false;
  launch_interval_ = std::max(p_.cta_launch_interval,
                              static_cast<Cycle>(std::lround(p_.warp_launch_interval * warps_per_cta)));
  const Cycle first = current_cycle() + p_.launch_latency;
  counted_until_ = first;
  std::fill(free_slots_.begin(), free_slots_.end(), per_sm);
  std::fill(ready_at_.begin(), ready_at_.end(), first);
  std::fill(next_completion_.begin(), next_completion_.end(), first);
  wake_at(first);
}

std::uint64_t CtaDispatcher::skip(std::uint64_t count) {
  const std::uint64_t first = next_cta_;
  count = std::min(count, total_ - next_cta_);
  next_cta_ += count;
  finished_ += count;
  return first;
}

bool CtaDispatcher::launch_one(std::uint32_t sm, Cycle now) {
  if (free_slots_[sm] == 0 || next_cta_ >= total_ || ready_at_[sm] > now) return false;
  if (!to_sm_[sm]->try_send(CtaLaunch{cta_started(next_cta_)})) return false;  // the SM wakes us when it frees a slot
  ++next_cta_;
  ++launched_;
  --free_slots_[sm];
  ready_at_[sm] = now + launch_interval_;
  return true;
}

void CtaDispatcher::evaluate() {
  const Cycle now = Unit::now();
  Cycle next = kNever;
  for (std::uint32_t sm = 0; sm < from_sm_.size(); ++sm) {
    InPort<CtaDone>& in = *from_sm_[sm];
    while (in.ready(now)) {
      in.pop();
      ++finished_;
      ++free_slots_[sm];
      const Cycle counted = std::max(now, next_completion_[sm]);
      next_completion_[sm] = counted + p_.cta_completion_interval;
      counted_until_ = std::max(counted_until_, counted);
    }
    next = std::min(next, in.next_ready());
  }
  // Passes of one CTA per SM, so a wave spreads breadth-first over the SMs.
  for (bool launched = true; launched;) {
    launched = false;
    for (std::uint32_t sm = 0; sm < to_sm_.size(); ++sm) launched |= launch_one(sm, now);
  }
  if (next_cta_ < total_)
    for (std::uint32_t sm = 0; sm < to_sm_.size(); ++sm)
      if (free_slots_[sm] > 0 && ready_at_[sm] > now) next = std::min(next, ready_at_[sm]);
  if (finished_ == total_ && !end_sent_) {
    if (counted_until_ > now) {
      next = std::min(next, counted_until_);
    } else {
      end_sent_ = true;
      for (auto& port : kernel_end_) port->try_send(KernelEnd{});
    }
  }
  if (next != kNever) wake_at(next);
}

}  // namespace atomsim::model
