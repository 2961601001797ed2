// `atomsim gen microbench`: traces of the atomics microbenchmark
// (workloads/microbench/microbench.cu) without a GPU. The kernels' real sm_90
// SASS, as nvcc -O3 compiled it, is run by the SASS interpreter, so every
// warp's instruction stream, active masks, addresses and atomic operands are
// those the H100 executes for the same parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "traces/trace.hpp"
#include "traces/writer.hpp"

namespace atomsim::workloads {

enum class MicrobenchVariant { Baseline, SwB, SwS };
const char* variant_name(MicrobenchVariant v);
MicrobenchVariant parse_variant(const std::string& name);  // throws std::invalid_argument

struct MicrobenchParams {
  MicrobenchVariant variant = MicrobenchVariant::Baseline;
  std::uint32_t blocks = 264;
  std::uint32_t warps_per_block = 8;
  std::uint32_t iterations = 16;
  std::uint32_t primitives = 65536;
  std::uint32_t params = 9;  // 1, 4 or 9: the instantiations compiled in microbench.cu
  double active_fraction = 1.0;
  std::uint32_t lanes_per_primitive = 32;
  std::uint32_t threshold = 8;
  std::uint32_t seed = 1;
  // Throws std::invalid_argument naming the offending parameter.
  void validate() const;
};

// The kernels `variant` names, "all" (baseline, SW-B and SW-S, in that order)
// or one of parse_variant's names, with `p`'s other parameters. Throws
// std::invalid_argument for an unknown variant.
std::vector<MicrobenchParams> microbench_variants(const MicrobenchParams& p, const std::string& variant);

// Mangled name of the kernel instantiation in the SASS listing.
std::string microbench_function(const MicrobenchParams& p);
// Device address the generator gives the gradient buffer.
inline constexpr std::uint64_t kMicrobenchGradientBase = 0x7f4a00000000ull;

// Appends one kernel launch to the trace; returns the warp instructions written.
std::uint64_t write_microbench_kernel(const MicrobenchParams& p, trace::TraceWriter& writer);

}  // namespace atomsim::workloads
