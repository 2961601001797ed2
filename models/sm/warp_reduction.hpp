// A hardware warp-reduction unit, a what-if: DISTWAR's warp-level reduction
// done by the sub-core instead of by SHFL instructions. Ahead of the LG queue,
// the lanes of a RED warp instruction that update the same word are combined
// into the lowest of them, so the L1 and the L2 see one lane per distinct word
// and the warp issues nothing more. The unit takes a RED every
// `issue_interval` cycles and hands it to the LG queue `latency` cycles later;
// other instructions pass it by. See docs/architecture.md for the assumptions.
#pragma once

#include <cstdint>

#include "models/messages.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/unit.hpp"

namespace atomsim::model {

struct WarpReductionParams {
  bool enabled = false;
  double issue_interval = 1;
  Cycle latency = 20;

  void declare(ParamBinder b) {
    b.boolean("enabled", enabled, "combine same-word lanes of RED instructions in the sub-core before the LG queue");
    b.real("issue_interval", issue_interval, 0.01, 1024, "cycles between two RED instructions entering one sub-core's unit");
    b.integer("latency", latency, 0, 10000, "cycles from a RED leaving the MIO queue to its combined form entering the LG queue");
  }
};

// Whether the unit combines this instruction: a RED whose update is commutative.
bool warp_reducible(trace::OpClass op, trace::AtomicOp kind, trace::DataType type);
// Combines the active lanes of `op` that update one word into the lowest of
// them, in lane order, which then carries their combined value and update
// count; returns how many lanes it removed.
std::uint32_t combine_same_word_lanes(LsuOp& op);

}  // namespace atomsim::model
