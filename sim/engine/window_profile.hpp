// While host profiling (sim/engine/unit.cpp): what each thread spent in its
// parts of each window, and what the windows took together.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine/evaluation_workers.hpp"
#include "sim/engine/simulation_control.hpp"

namespace atomsim::detail {

struct alignas(64) ThreadBusy {  // a line each: written by its thread
  std::uint64_t evaluate_ticks = 0, apply_ticks = 0;
  std::uint64_t last_evaluate = 0, last_apply = 0;  // its parts of the window just run
  std::uint64_t evaluated_at = 0;  // when it finished evaluating in that window
  // Its longest single domain run in the window's evaluations, and which domain that was.
  std::uint64_t longest_run = 0;
  std::uint32_t longest_domain = 0;
  void note_run(std::uint64_t ticks, std::uint32_t domain) {
    if (ticks > longest_run) longest_run = ticks, longest_domain = domain;
  }
  void note_evaluate(std::uint64_t ticks) { evaluate_ticks += ticks, last_evaluate = ticks, evaluated_at = host_ticks(); }
  void note_apply(std::uint64_t ticks) { apply_ticks += ticks, last_apply = ticks; }
  void note_filing(std::uint64_t ticks) { apply_ticks += ticks, last_apply += ticks; }
};
// While host profiling: what the window just run took of the threads' time
// in evaluating (or applying), the slowest thread's part when they ran
// together, else all parts.
inline std::uint64_t window_parts(const std::vector<ThreadBusy>& thread_busy, bool together,
                                  std::uint64_t ThreadBusy::*part) {
  std::uint64_t slowest = 0, all = 0;
  for (const ThreadBusy& busy : thread_busy) slowest = std::max(slowest, busy.*part), all += busy.*part;
  return together ? slowest : all;
}

// The windows' part of a host profile, gathered window by window.
class WindowProfile {
 public:
  std::vector<ThreadBusy>& threads() { return threads_; }
  void prepare(unsigned threads) {
    if (threads_.size() != threads) threads_.assign(threads, ThreadBusy{});
  }
  // After a window that began at `begun` (ticks): how long its evaluations
  // ran (to the last thread's finish) and what followed them, and its
  // longest single domain run, on whichever thread: no sharing of domains
  // among threads brings the evaluations below it.
  void note_window(std::uint64_t begun, bool together, std::size_t domains) {
    std::uint64_t evaluated = 0;
    for (const ThreadBusy& busy : threads_) evaluated = std::max(evaluated, busy.evaluated_at);
    const std::uint64_t now = host_ticks();
    apply_step_ticks_ += now - evaluated;
    slowest_evaluate_ticks_ += window_parts(threads_, together, &ThreadBusy::last_evaluate);
    slowest_apply_ticks_ += window_parts(threads_, together, &ThreadBusy::last_apply);
    window_ticks_ += now - begun;
    ++windows_;
    const ThreadBusy* longest = &threads_[0];
    for (const ThreadBusy& busy : threads_)
      if (busy.longest_run > longest->longest_run) longest = &busy;
    if (longest->longest_run == 0) return;
    longest_run_ticks_ += longest->longest_run;
    if (windows_longest_.size() != domains) windows_longest_.assign(domains, 0);
    ++windows_longest_[longest->longest_domain];
  }
  // Moves what was gathered into `profile`, in seconds, and starts afresh;
  // `domain_name(d)` names a domain that ran longest in some window.
  template <class DomainName>
  void take(HostProfile& profile, double seconds_per_tick, DomainName domain_name) {
    for (ThreadBusy& busy : threads_) {
      const std::uint64_t apply = std::exchange(busy.apply_ticks, 0);
      profile.thread_busy_seconds.push_back((std::exchange(busy.evaluate_ticks, 0) + apply) * seconds_per_tick);
      profile.thread_apply_seconds.push_back(apply * seconds_per_tick);
    }
    profile.window_seconds = std::exchange(window_ticks_, 0) * seconds_per_tick;
    profile.apply_step_seconds = std::exchange(apply_step_ticks_, 0) * seconds_per_tick;
    profile.slowest_evaluate_seconds = std::exchange(slowest_evaluate_ticks_, 0) * seconds_per_tick;
    profile.slowest_apply_seconds = std::exchange(slowest_apply_ticks_, 0) * seconds_per_tick;
    profile.windows = std::exchange(windows_, 0);
    profile.longest_domain_seconds = std::exchange(longest_run_ticks_, 0) * seconds_per_tick;
    for (std::uint32_t d = 0; d < windows_longest_.size(); ++d)
      if (windows_longest_[d] > 0) {
        const char* name = domain_name(d);
        if (name) profile.longest_domains.push_back({name, windows_longest_[d]});
      }
    windows_longest_.clear();
  }

 private:
  std::vector<ThreadBusy> threads_;  // each thread's time in its parts of windows
  std::uint64_t window_ticks_ = 0;
  std::uint64_t apply_step_ticks_ = 0;
  std::uint64_t slowest_evaluate_ticks_ = 0, slowest_apply_ticks_ = 0;  // each window's slowest thread in each step
  std::uint64_t longest_run_ticks_ = 0;         // each window's longest single domain run
  std::vector<std::uint64_t> windows_longest_;  // per domain, the windows in which its run was the longest
  std::uint64_t windows_ = 0;
};

}  // namespace atomsim::detail
