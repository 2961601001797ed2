// While host profiling or weighing (sim/engine/unit.cpp): what each thread
// spent in its parts of a window.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/engine/evaluation_workers.hpp"

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

}  // namespace atomsim::detail
