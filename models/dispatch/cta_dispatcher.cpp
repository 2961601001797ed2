#include "models/dispatch/cta_dispatcher.hpp"

#include <algorithm>

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

CtaDispatcher::CtaDispatcher(const sc_core::sc_module_name& name, std::uint32_t sms, std::uint32_t l1s,
                             StatRegistry& stats)
    : Unit(name) {
  for (std::uint32_t i = 0; i < sms; ++i) {
    to_sm_.push_back(std::make_unique<OutPort<CtaLaunch>>(*this));
    from_sm_.push_back(std::make_unique<InPort<CtaDone>>(*this, 256));
  }
  for (std::uint32_t i = 0; i < l1s; ++i) kernel_end_.push_back(std::make_unique<OutPort<KernelEnd>>(*this));
  stats.group("dispatcher", "").add_counter("ctas_launched", &launched_, "CTAs handed to SMs");
}

void CtaDispatcher::begin_kernel(std::uint64_t ctas, std::uint32_t per_sm) {
  total_ = ctas;
  per_sm_ = per_sm;
  next_cta_ = finished_ = 0;
  end_sent_ = false;
  initial_wave_pending_ = true;
  wake_at(current_cycle());  // called between kernels, outside any evaluation
}

bool CtaDispatcher::launch_next(std::uint32_t sm) {
  if (next_cta_ >= total_) return false;
  if (!to_sm_[sm]->try_send(CtaLaunch{next_cta_})) return false;
  ++next_cta_;
  ++launched_;
  return true;
}

void CtaDispatcher::evaluate() {
  const Cycle now = Unit::now();
  if (initial_wave_pending_) {
    initial_wave_pending_ = false;
    for (std::uint32_t round = 0; round < per_sm_; ++round)
      for (std::uint32_t sm = 0; sm < to_sm_.size(); ++sm) launch_next(sm);
  }
  Cycle next = kNever;
  for (std::uint32_t sm = 0; sm < from_sm_.size(); ++sm) {
    InPort<CtaDone>& in = *from_sm_[sm];
    while (in.ready(now)) {
      in.pop();
      ++finished_;
      launch_next(sm);
    }
    next = std::min(next, in.next_ready());
  }
  if (finished_ == total_ && !end_sent_) {
    end_sent_ = true;
    for (auto& port : kernel_end_) port->try_send(KernelEnd{});
  }
  if (next != kNever) wake_at(next);
}

}  // namespace atomsim::model
