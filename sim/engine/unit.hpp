// A Unit is one hardware component: a SystemC module with a single evaluation
// method that runs only when something may have changed for it. Units never
// tick idly: they ask to be woken at a future cycle (a timer of their own) and
// are woken by their input ports when a message arrives. Wake-ups go through
// one calendar per simulation (a SystemC process driven by one event), which
// keeps scheduling O(1) however many units are busy in a cycle.
//
// Units due in one cycle see each other only as the cycle began: what an
// evaluation does to another unit (a message sent, buffer space freed, a
// shared slot given back) is staged and applied once every unit due has run.
// The order units run in within a cycle therefore cannot change a result, and
// the calendar may run them on several threads (set_evaluation_threads) with
// results bit-identical to one thread's.
//
// Units joined by links shorter than the calendar's window (set_window_cycles)
// form a domain. The calendar runs the window's cycles domain by domain, each
// domain's on one thread with no wait between cycles; what a unit does to a
// unit of another domain takes effect at the window's end. A message across
// domains takes at least a window to arrive, so only freed buffer space is
// seen later than with a window of one cycle: at the window's end, at most
// window - 1 cycles late. The windows depend on the units alone, never on the
// threads.
#pragma once

#include <systemc>

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/engine/cycle.hpp"
#include "sim/engine/staged_effects.hpp"

namespace atomsim {

class WakeCalendar;

// Stops the simulation at the end of the current cycle (SystemC's sc_stop may
// be called only from the calendar's thread).
void request_stop();

// What a unit's input buffer says about the messages it holds, for the
// deadlock report (the ports themselves are typed by message; see port.hpp).
class MessageBuffer {
 public:
  virtual std::size_t waiting_messages() const = 0;
  // The arrival cycle of the oldest message held; kNever when empty.
  virtual Cycle oldest_arrival() const = 0;
  virtual std::uint32_t occupied_flits() const = 0;
  virtual std::uint32_t capacity_flits() const = 0;

 protected:
  ~MessageBuffer() = default;
};

class Unit : public sc_core::sc_module {
 public:
  explicit Unit(const sc_core::sc_module_name& name);
  ~Unit() override;

  // Ensures evaluate() runs at `cycle` (or earlier). Cheap when already due sooner.
  void wake_at(Cycle cycle) {
    if (cycle < pending_wake_) schedule_wake(cycle);
  }
  // The current cycle, for use inside evaluate() (and the port operations it makes).
  static Cycle now() { return detail::evaluation_cycle; }

  // The thread that evaluates this unit and applies what others do to it.
  std::uint32_t thread() const { return thread_; }
  // The domain it runs in (see above).
  std::uint32_t domain() const { return domain_; }
  // Its place in construction order.
  std::uint32_t order() const { return order_; }

  // Input buffers register themselves with the unit that owns them.
  void add_input(const MessageBuffer& buffer) { inputs_.push_back(&buffer); }
  // Ports tell the calendar whom they join and how long their messages take:
  // units joined by a link shorter than the window share a domain.
  void link_to(const Unit& receiver, Cycle latency);
  const std::vector<const MessageBuffer*>& inputs() const { return inputs_; }

 protected:
  virtual void evaluate() = 0;

 private:
  friend class WakeCalendar;
  void schedule_wake(Cycle cycle);
  // Read by every thread that sends this unit something (defer_to_cycle_end),
  // so kept on a host cache line apart from what its own thread writes while
  // it runs: a sender reads a clean shared line instead of taking the line
  // from the unit's core on every message.
  alignas(64) WakeCalendar& calendar_;
  std::uint32_t order_;  // construction order: whose error is reported when several units fail in one cycle
  std::uint32_t thread_ = 0;
  std::uint32_t domain_ = 0;  // dense index among the calendar's domains
  std::vector<const MessageBuffer*> inputs_;
  alignas(64) Cycle pending_wake_ = kNever;
  // Host time its evaluations and the effects applied to it took while the
  // calendar weighed them: bookkeeping of the schedule, not the unit's state.
  mutable std::uint64_t cost_ = 0;
  // The same, and its evaluations, while host profiling is on.
  struct HostUse {
    std::uint64_t evaluations = 0, evaluate_ticks = 0, apply_ticks = 0;
  };
  mutable HostUse host_use_;
};

// Applies `effect` with `value` at the end of the current cycle, or of the
// window when `changed` (the unit whose state it changes; null: the
// calendar's) lies in another domain than the unit evaluated, on the thread of
// `changed`, when called from an evaluation; at once otherwise.
inline void defer_to_cycle_end(CycleEndEffect& effect, std::uint32_t value, const Unit* changed) {
  if (detail::StagedEffects* staged = detail::staged_effects)
    staged->for_unit(changed).stage(effect, value, changed ? changed->order() : detail::StagedEffects::kCalendar);
  else
    effect.apply_at_cycle_end(value, nullptr);
}

// The same for an effect that carries a word (`stamp`) and a copy of
// `payload` (trivially copyable) after it, which it reads from the payloads
// it is given when applied: a message behind its arrival cycle, copied once
// from the sender's buffer.
template <class T>
void defer_with_payload(CycleEndEffect& effect, std::uint64_t stamp, const T& payload, const Unit* changed) {
  static_assert(std::is_trivially_copyable_v<T>, "a payload is copied as bytes");
  if (detail::StagedEffects* staged = detail::staged_effects) {
    staged->for_unit(changed).stage_with_payload(effect, stamp, &payload, sizeof(T),
                                                 changed ? changed->order() : detail::StagedEffects::kCalendar);
  } else {
    std::uint64_t words[1 + (sizeof(T) + 7) / 8];
    words[0] = stamp;
    std::memcpy(words + 1, &payload, sizeof(T));
    effect.apply_at_cycle_end(0, words);
  }
}

inline detail::StagedEffects::Effects& detail::StagedEffects::for_unit(const Unit* changed) {
  return changed && changed->domain() == evaluating_domain ? within_domain
                                                            : effects_for[staging_base + (changed ? changed->thread() : 0)];
}

}  // namespace atomsim
