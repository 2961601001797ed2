// A functional interpreter for the subset of sm_90 SASS that the bundled
// workloads compile to. It runs a kernel's real instruction listing (as dumped
// by cuobjdump) warp by warp, with per-lane registers and predicates and
// convergence barriers, and reports every executed warp instruction with its
// active lanes, addresses and atomic operands: a trace of what the GPU issues,
// produced without a GPU. Lanes reconverge by running the lowest-PC group
// first, which matches the structured code nvcc emits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::sass {

struct LaunchConfig {
  trace::Dim3 grid, block;
  std::vector<std::uint8_t> parameters;  // kernel parameter block, placed at c[0x0][0x210]
};

class Interpreter {
 public:
  // `program` is the parsed listing; `text` the instruction text of each entry.
  Interpreter(std::vector<trace::StaticInst> program, const std::vector<std::string>& text);
  ~Interpreter();
  Interpreter(Interpreter&&) noexcept;

  // Runs one warp to completion, calling `emit` for each executed instruction.
  // Throws trace::TraceError for unsupported instructions or runaway warps.
  void run_warp(const LaunchConfig& launch, std::uint64_t cta, std::uint32_t warp_in_cta,
                const std::function<void(const trace::WarpInst&)>& emit, std::uint64_t max_instructions = 1ull << 32);

  const std::vector<trace::StaticInst>& program() const { return program_; }

  struct Decoded;

 private:
  std::vector<trace::StaticInst> program_;
  std::vector<Decoded> decoded_;
};

}  // namespace atomsim::sass
