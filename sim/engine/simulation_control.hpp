// How a simulation runs on the host: its evaluation threads, the cycles its
// domains run apart, and where its host time goes. Set by the GPU top and the
// command line, never by a model (the wake calendar in unit.cpp reads them).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/unit.hpp"

namespace atomsim {

// Threads that evaluate the units due in a cycle (1: the calendar's own).
// Results do not depend on it.
void set_evaluation_threads(unsigned threads);
// Cycles the calendar's domains run apart (1: every unit sees what the others
// did at the end of each cycle). Results depend on it; see above.
void set_window_cycles(Cycle cycles);
// How many times, in this process, the calendar has dealt the domains out
// again by what their evaluations cost (only with several threads).
std::uint64_t units_dealt_by_cost();

// Host time, per unit and per thread, for finding where a simulation's host
// time goes. Not a result: it differs from run to run, and the results never
// depend on whether it is measured.
struct UnitHostCost {
  std::string unit;     // the unit's name
  std::uint32_t thread;  // its home thread (in long windows others may run some of its evaluations)
  std::uint64_t evaluations;
  double evaluate_seconds;  // its evaluations
  double apply_seconds;     // what other units' evaluations did to it, applied on its thread
  double seconds() const { return evaluate_seconds + apply_seconds; }
};
struct HostProfile {
  std::vector<UnitHostCost> units;
  std::vector<double> thread_busy_seconds;  // each thread's evaluations and applications, bookkeeping included
  std::vector<double> thread_apply_seconds; // the part of it spent applying what the windows staged
  double window_seconds = 0;                // the windows from first to last, as the calendar's thread saw them
  // The part of it from each window's last evaluation to its end (each
  // thread applies what the window before staged for it at a window's start,
  // beside the others' evaluations; after its evaluations it only files its
  // domains again).
  double apply_step_seconds = 0;
  // Each window's slowest thread in evaluating and in applying, summed.
  double slowest_evaluate_seconds = 0, slowest_apply_seconds = 0;
  std::uint64_t windows = 0;
  // Each window's longest single domain run, summed, and in how many windows
  // each domain (named by its first unit) ran longest.
  double longest_domain_seconds = 0;
  std::vector<std::pair<std::string, std::uint64_t>> longest_domains;
};
// Starts measuring afresh (or stops).
void set_host_profiling(bool on);
// What was measured since profiling started or was last taken; measuring
// goes on afresh. Empty when profiling is off.
HostProfile take_host_profile();

// When a simulation stops with work left: the units whose input buffers hold
// the oldest waiting messages, oldest first (at most `units`), one line, e.g.
// "oldest waiting messages: l2_slice_3 input 0 since cycle 812 (4 messages,
// 4 of 4 flits); ...". Empty when no buffer holds a message.
std::string describe_waiting_messages(std::size_t units = 4);

// Starts a fresh SystemC context so that several simulations can run one after
// another in the same process (the CLI runs three variants; tests run many).
void reset_simulation_context();

}  // namespace atomsim
