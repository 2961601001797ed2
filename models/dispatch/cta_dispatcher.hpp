// Compute work distributor: hands CTAs to SMs as occupancy allows (first a
// full wave, breadth-first over SMs, then one new CTA per completed CTA) and,
// once every CTA's completion has been counted, tells the memory side that the
// kernel ended. A finished CTA's place is free as soon as the dispatcher hears
// of it; counting it towards the kernel's end goes one CTA at a time per SM.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/messages.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/port.hpp"
#include "traces/trace.hpp"

namespace atomsim::model {

struct SmLimits {
  std::uint32_t max_warps;
  std::uint32_t max_ctas;
  std::uint32_t registers;
  std::uint32_t register_allocation_unit;
  std::uint64_t shared_memory_bytes;
};

// CTAs of this kernel one SM can hold at once; 0 when one does not fit.
std::uint32_t ctas_per_sm(const trace::KernelInfo& kernel, const SmLimits& limits);

// Which CTA's trace the k-th CTA to start replays (dispatch.cta_order).
enum class CtaOrder : std::uint8_t { Trace, Grid };
inline constexpr std::array<std::pair<const char*, CtaOrder>, 2> kCtaOrderNames{
    {{"trace", CtaOrder::Trace}, {"grid", CtaOrder::Grid}}};

struct DispatchParams {
  Cycle launch_latency = 0;       // kernel launch until the first CTA can be handed out
  Cycle cta_launch_interval = 0;  // an SM takes one new CTA per interval (0: any number at once)
  double warp_launch_interval = 0;  // or per its warps, if longer
  Cycle cta_done_latency = 1;     // a CTA's last warp retiring until the dispatcher may reuse its place
  Cycle cta_completion_interval = 0;  // an SM's finished CTAs count towards the kernel's end one per interval
  CtaOrder cta_order = CtaOrder::Trace;
  void declare(ParamBinder b) {
    b.choice("cta_order", cta_order, kCtaOrderNames,
             "which CTA's trace the k-th CTA to start replays: trace, the order the GPU started them in where the trace "
             "knows it (a kernel whose CTAs draw tickets from a counter, docs/trace-format.md), else grid order; grid, "
             "always the k-th of the grid");
    b.integer("launch_latency", launch_latency, 0, 1000000, "cycles from a kernel's launch to its first CTA dispatch");
    b.integer("cta_launch_interval", cta_launch_interval, 0, 100000, "least cycles between two CTA launches on one SM");
    b.real("warp_launch_interval", warp_launch_interval, 0, 1000,
           "cycles a CTA's launch takes on its SM per warp it has, where that is longer than cta_launch_interval");
    b.integer("cta_done_latency", cta_done_latency, 1, 100000,
              "cycles from a CTA's last warp retiring to the dispatcher learning that its place on the SM is free");
    b.integer("cta_completion_interval", cta_completion_interval, 0, 100000,
              "cycles each finished CTA of an SM takes to count towards the kernel's end, one at a time per SM (its place "
              "is free without waiting for this)");
  }
};

class CtaDispatcher : public Unit {
 public:
  CtaDispatcher(const sc_core::sc_module_name& name, const DispatchParams& p, std::uint32_t sms, std::uint32_t l1s,
                StatRegistry& stats);
  OutPort<CtaLaunch>& to_sm(std::uint32_t sm) { return *to_sm_[sm]; }
  InPort<CtaDone>& from_sm(std::uint32_t sm) { return *from_sm_[sm]; }
  OutPort<KernelEnd>& kernel_end(std::uint32_t l1) { return *kernel_end_[l1]; }

  // `order`: the CTAs in the order to start them (trace::KernelInfo::cta_order); empty, grid order.
  void begin_kernel(std::uint64_t ctas, std::uint32_t per_sm, std::uint32_t warps_per_cta,
                    std::vector<std::uint64_t> order = {});
  // The k-th CTA this kernel starts.
  std::uint64_t cta_started(std::uint64_t k) const { return order_.empty() ? k : order_[k]; }
  // Called between stretches of simulation (sampled simulation): the next
  // `count` CTAs in start order never start and count as finished, and the
  // one after them takes the next free place. Returns the start index of the first.
  std::uint64_t skip(std::uint64_t count);
  // CTAs started or skipped so far.
  std::uint64_t dispatched() const { return next_cta_; }
  bool kernel_done() const { return end_sent_; }
  std::uint64_t finished() const { return finished_; }
  std::uint64_t total() const { return total_; }

 protected:
  void evaluate() override;

 private:
  bool launch_one(std::uint32_t sm, Cycle now);
  DispatchParams p_;
  std::vector<std::unique_ptr<OutPort<CtaLaunch>>> to_sm_;
  std::vector<std::unique_ptr<InPort<CtaDone>>> from_sm_;
  std::vector<std::unique_ptr<OutPort<KernelEnd>>> kernel_end_;
  std::uint64_t total_ = 0, next_cta_ = 0, finished_ = 0;
  std::vector<std::uint64_t> order_;
  std::vector<std::uint32_t> free_slots_;  // CTAs each SM can still take
  std::vector<Cycle> ready_at_;            // when each SM can take its next CTA
  std::vector<Cycle> next_completion_;     // the earliest each SM's next finished CTA can be counted
  Cycle launch_interval_ = 0;              // this kernel's, from its CTAs' size
  Cycle counted_until_ = 0;                // when the last finished CTA so far is counted
  bool end_sent_ = false;
  std::uint64_t launched_ = 0;
};

}  // namespace atomsim::model
