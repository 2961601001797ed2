#include "sim/engine/unit.hpp"

namespace atomsim {

Unit::Unit(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
  sc_core::sc_spawn_options options;
  options.spawn_method();
  options.dont_initialize();
  options.set_sensitivity(&wake_event_);
  sc_core::sc_spawn([this] { on_wake(); }, sc_core::sc_gen_unique_name("evaluate"), &options);
}

void Unit::wake_at(Cycle cycle) {
  Cycle now_cycle = now();
  if (cycle < now_cycle) cycle = now_cycle;
  if (cycle >= pending_wake_) return;
  pending_wake_ = cycle;
  if (cycle == now_cycle)
    wake_event_.notify(sc_core::SC_ZERO_TIME);
  else
    wake_event_.notify(sc_core::sc_time::from_value((cycle - now_cycle) * kPicosecondsPerCycle));
}

void Unit::on_wake() {
  // A wake may fire for an earlier request than the one recorded when a
  // later-cancelled notification raced; evaluate() recomputes what it needs.
  pending_wake_ = kNever;
  evaluate();
}

void reset_simulation_context() {
  // SystemC offers no public reset; replacing the global context is the
  // documented way simulators and test harnesses re-elaborate in one process.
  // The previous context is leaked deliberately: deleting it runs destructors
  // of modules that the caller has already destroyed.
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
}

}  // namespace atomsim
