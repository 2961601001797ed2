// Which loads of a captured kernel waited for another warp's store: a load of
// GPU or system scope (a poll of a flag) whose lane read a value that a store
// of another warp wrote to the same word. The trace keeps those loads' values
// and the stores' to the words they read, so that a simulation answers such a
// load only once the store is performed, however many polls the trace pass's
// run happened to need (docs/trace-format.md, values on loads and stores).
#pragma once

#include <cstdint>
#include <vector>

#include "tools/capture/warp_join.hpp"
#include "traces/trace.hpp"

namespace atomsim::capture {

struct AwaitedValues {
  std::uint64_t awaiting_loads = 0;   // warp instructions with a lane that awaits a value
  std::uint64_t awaited_words = 0;    // distinct words those lanes read
  std::uint64_t storing_instructions = 0;  // stores that keep their values
};

// Sets LaneOperands::value_lanes: on coherent loads, the lanes that read a
// value another warp stored to their word; on stores, every lane of up to 8
// bytes where one of them writes such a word. The operands' values must hold
// what each lane of a load read and of a store wrote (LaneData::before).
AwaitedValues mark_awaited_values(const std::vector<trace::StaticInst>& program, std::vector<WarpObservation>& warps);

}  // namespace atomsim::capture
