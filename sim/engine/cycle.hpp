// Simulated time: cycles, and the cycle the units are evaluated in.
#pragma once

#include <systemc>

#include <cstdint>
#include <limits>

namespace atomsim {

using Cycle = std::uint64_t;
inline constexpr Cycle kNever = std::numeric_limits<Cycle>::max();

// One simulated cycle is one nanosecond of SystemC time; clock ratios between
// units are expressed through rates, not through SystemC clocks.
inline constexpr std::uint64_t kPicosecondsPerCycle = 1000;

inline Cycle current_cycle() { return sc_core::sc_time_stamp().value() / kPicosecondsPerCycle; }

namespace detail {
// The cycle units are being evaluated in, set by the wake calendar; cheaper
// than asking SystemC for the time on every port operation. Per thread: within
// a window each thread's domains run their own cycles.
inline thread_local Cycle evaluation_cycle = 0;
}  // namespace detail

}  // namespace atomsim
