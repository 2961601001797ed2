// A Unit is one hardware component: a SystemC module with a single evaluation
// method that runs only when something may have changed for it. Units never
// tick idly: they ask to be woken at a future cycle (a timer of their own) and
// are woken by their input ports when a message arrives. Wake-ups go through
// one calendar per simulation (a SystemC process driven by one event), which
// keeps scheduling O(1) however many units are busy in a cycle; units due in
// the same cycle run in the order they asked, so runs are reproducible.
#pragma once

#include <systemc>

#include <cstdint>
#include <limits>
#include <string>

namespace atomsim {

using Cycle = std::uint64_t;
inline constexpr Cycle kNever = std::numeric_limits<Cycle>::max();

// One simulated cycle is one nanosecond of SystemC time; clock ratios between
// units are expressed through rates, not through SystemC clocks.
inline constexpr std::uint64_t kPicosecondsPerCycle = 1000;

inline Cycle current_cycle() { return sc_core::sc_time_stamp().value() / kPicosecondsPerCycle; }

namespace detail {
// The cycle units are being evaluated in, set by the wake calendar; cheaper
// than asking SystemC for the time on every port operation.
extern Cycle evaluation_cycle;
}  // namespace detail

class WakeCalendar;

class Unit : public sc_core::sc_module {
 public:
  explicit Unit(const sc_core::sc_module_name& name);

  // Ensures evaluate() runs at `cycle` (or earlier). Cheap when already due sooner.
  void wake_at(Cycle cycle);
  // The current cycle, for use inside evaluate() (and the port operations it makes).
  static Cycle now() { return detail::evaluation_cycle; }

 protected:
  virtual void evaluate() = 0;

 private:
  friend class WakeCalendar;
  WakeCalendar& calendar_;
  Cycle pending_wake_ = kNever;
};

// Starts a fresh SystemC context so that several simulations can run one after
// another in the same process (the CLI runs three variants; tests run many).
void reset_simulation_context();

}  // namespace atomsim
