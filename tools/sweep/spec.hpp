// The sweep spec (TOML): which traces, on which configurations, over which
// parameter axes. docs/sweeps.md describes it key by key.
#pragma once

#include <stdexcept>
#include <string>

#include "tools/sweep/plan.hpp"

namespace atomsim::sweep {

// One line: "SPEC:LINE: what is wrong, naming the key".
class SpecError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads and validates the whole spec before anything runs: every axis key and
// value against the configurations' declared parameters, every combination
// against the cross-parameter rules, every trace opened. Generated traces are
// written under `out_dir`/traces. Throws SpecError.
SweepPlan plan_sweep(const std::string& spec_path, const std::string& out_dir, const std::string& executable);

}  // namespace atomsim::sweep
