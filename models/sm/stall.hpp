// Warp states in Nsight Compute's vocabulary: every resident warp is in
// exactly one of these on every cycle.
#pragma once

#include <cstdint>

namespace atomsim::model {

enum class WarpState : std::uint8_t {
  Selected,
  NotSelected,
  LgThrottle,
  MioThrottle,
  LongScoreboard,
  ShortScoreboard,
  Wait,
  MathPipeThrottle,
  Barrier,
  Membar,
  Drain,
  DispatchStall,
  BranchResolving,
  NoInstructions,
  Sleeping,
  ImcMiss,  // its instruction's constant-bank line is being filled
  Misc,
};
inline constexpr int kWarpStateCount = 17;

inline const char* warp_state_name(WarpState s) {
  static const char* names[kWarpStateCount] = {
      "selected",         "not_selected", "lg_throttle", "mio_throttle", "long_scoreboard", "short_scoreboard",
      "wait",             "math_pipe_throttle", "barrier", "membar",   "drain",           "dispatch_stall",
      "branch_resolving", "no_instructions",    "sleeping", "imc_miss", "misc"};
  return names[static_cast<int>(s)];
}

}  // namespace atomsim::model
