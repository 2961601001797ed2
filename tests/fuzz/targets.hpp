// Entry points that fuzzing drives with arbitrary bytes, one per input kind a
// user hands atomsim: a trace, a configuration with --set overrides, a saved
// join input and a sweep spec. Each must turn any input into either success
// or the input kind's own one-line error; anything else escapes as an
// exception (or a sanitizer report) and is a finding. libFuzzer runs them
// (tests/fuzz/fuzz_main.cpp); the test suite runs the committed corpus and
// every past finding through the same functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace atomsim::fuzz {

using Input = std::span<const std::uint8_t>;

// The bytes as a trace file: the reader opens it and streams every warp (as
// the simulator does), and `trace validate` checks it.
void trace_file(Input input);
// The bytes up to the first NUL as a TOML configuration, then one --set
// override per line.
void gpu_config(Input input);
// The bytes as a saved join input, joined again as `atomsim trace rejoin` does.
void join_input(Input input);
// The bytes as a sweep spec, planned as `atomsim sweep run` plans it.
void sweep_spec(Input input);
// The bytes as one kernel's Accel-Sim trace (kernel-1.traceg), imported as
// `atomsim trace import` imports it.
void accelsim_trace(Input input);
// The same bytes as an xz-compressed kernel file (kernel-1.traceg.xz),
// imported through the decoder.
void accelsim_xz(Input input);

struct Target {
  const char* name;
  void (*run)(Input);
};
const std::vector<Target>& targets();

}  // namespace atomsim::fuzz
