// Per-warp state held by a sub-core: the instruction buffer fed from the
// trace, the scoreboard and what the warp waits on.
#pragma once

#include <array>
#include <cstdint>

#include "models/sm/stall.hpp"
#include "sim/engine/unit.hpp"
#include "traces/reader.hpp"

namespace atomsim::model {

struct Warp {
  bool resident = false;
  std::uint16_t slot = 0;
  std::uint32_t cta_slot = 0;
  std::uint64_t age = 0;
  Cycle launched_at = 0;
  trace::WarpStream stream;
  trace::WarpInst inst;
  bool has_inst = false;
  bool exited = false;
  bool at_barrier = false;
  bool waiting_membar = false;
  std::uint32_t outstanding_memory = 0;
  Cycle next_issue = 0;
  bool resolving_branch = false;
  // Scoreboard. Writes pending from the LSU (long) or MIO (short), and source
  // registers not yet read by those units (a later write must wait for them).
  std::array<std::uint8_t, trace::reg::kSpace> long_write{};
  std::array<std::uint8_t, trace::reg::kSpace> long_read{};
  std::array<std::uint8_t, trace::reg::kSpace> short_write{};
  std::array<std::uint8_t, trace::reg::kSpace> short_read{};
  std::array<Cycle, trace::reg::kSpace> ready_at{};  // fixed-latency results
  // Classification cache for the cycle `classified_for`.
  WarpState state = WarpState::NoInstructions;
  Cycle unblock_at = kNever;
  Cycle classified_for = kNever;
};

}  // namespace atomsim::model
