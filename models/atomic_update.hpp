// Combining two updates of one word into one, for units that merge atomics
// before the L2 applies them (the L1 atomic buffer, the warp-reduction unit).
#pragma once

#include <cstdint>

#include "traces/trace.hpp"

namespace atomsim::model {

// Whether updates of this kind may be combined: commutative and associative,
// up to floating-point rounding (as LAB and DISTWAR accept for float adds).
bool combinable_update(trace::AtomicOp kind, trace::DataType type);
// The single update with the effect of applying `a` and then `b`.
std::uint64_t combine_updates(std::uint64_t a, std::uint64_t b, trace::AtomicOp kind, trace::DataType type);

}  // namespace atomsim::model
