// Instruction costs that depend on operand values a trace does not record, taken
// from a capture's counters pass (counters.json, atomsim-capture --pass counters):
//  - each shared-memory instruction's wavefronts, its banks' conflicts included
//    (Nsight Compute's per-instruction L1 wavefronts, over its executions);
//  - a MATCH.ANY's distinct values among its lanes: the ADU pipe executes one
//    instruction per value (latency probe, docs/validation.md), so the kernel's
//    ADU count, less what other instructions take of it, over its MATCH.ANY
//    executions is their mean. Per kernel, not per instruction: no counter
//    separates them.
// It also gives each instruction the constant-bank operand its SASS names
// there, where the trace does not carry it (traces written before version 1.4).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::compare {

struct MeasuredCosts {
  std::size_t shared_instructions = 0;  // shared-memory instructions given a measured cost
  double match_values = 0;              // mean distinct values set on every MATCH.ANY (0: none executed)
  std::uint64_t match_executions = 0;
  std::size_t constant_operands = 0;    // instructions given their constant operand from the listing
};

// Sets trace::StaticInst::shared_wavefronts, match_values and (where absent) constant of `kernel` from
// `counters_json`. Throws DatasetError naming the file (and pc) when it cannot be
// read or does not describe this kernel's program.
MeasuredCosts apply_measured_costs(const std::filesystem::path& counters_json, trace::KernelInfo& kernel);

}  // namespace atomsim::compare
