// Measured against simulated, kernel by kernel: cycles, speedups over the
// baseline variant, and the distance between stall-reason distributions.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sim/compare/measured.hpp"

namespace atomsim::compare {

struct SimulatedKernel {
  double cycles = 0;
  std::uint64_t warp_instructions = 0;
  std::map<std::string, double> stall_fractions;
  // With instruction profiling: per instruction offset, warp-cycles by state, and its SASS.
  std::map<std::uint64_t, std::map<std::string, double>> pc_warp_cycles;
  std::map<std::uint64_t, std::string> sass;
  std::map<std::uint64_t, std::vector<std::uint64_t>> waits_on;  // per instruction, what its control bits wait for
  std::string revision;  // the simulator's source revision that produced it; empty: not recorded
  // Sampled simulation (sample.mode): the share of warp instructions simulated
  // in detail, and the sampler's error estimate of the cycles.
  double detail_share = 1;
  double sampling_error_estimate = 0;
};

// One instruction: its share of the kernel's PC samples and of its simulated
// warp-cycles, and the reason that takes most of each.
struct InstructionRow {
  std::uint64_t pc = 0;
  std::string sass;
  double measured_share = 0, simulated_share = 0;
  std::string measured_reason, simulated_reason;
  double measured_reason_share = 0, simulated_reason_share = 0;  // of the instruction's own samples / warp-cycles
  std::vector<std::pair<std::uint64_t, std::string>> waits_on;  // the instructions (pc, SASS) it waits for
};

struct ComparisonRow {
  MeasuredKernel measured;
  SimulatedKernel simulated;
  double cycle_error = 0;  // (simulated - measured) / measured
  // The simulated cycles lie between the fastest and slowest timed launch's
  // (the GPU's own launch-to-launch spread; false where one launch was timed).
  bool within_launches = false;
  std::optional<double> measured_speedup, simulated_speedup;  // over the baseline of the same shape
  double stall_distance = 0;
  std::vector<InstructionRow> hottest;  // where measured and simulated both have per-instruction data
};

struct Summary {
  double mean_abs_cycle_error = 0, worst_cycle_error = 0;
  std::string worst_cycle_id;
  double mean_abs_speedup_error = 0, worst_speedup_error = 0;  // relative, simulated vs measured speedup
  std::string worst_speedup_id;
  double mean_stall_distance = 0, worst_stall_distance = 0;
  std::string worst_stall_id;
  std::size_t within_launches = 0;  // rows whose simulated cycles lie within their timed launches' spread
  std::size_t within_15_percent = 0;  // rows whose simulated cycles are within 15% of the measured
};

struct Comparison {
  std::string config, device;
  std::vector<std::string> overrides;  // the --set KEY=VALUE the simulations ran with
  std::vector<ComparisonRow> rows;
  Summary summary;
};

// `simulated` is parallel to `measured`. Each row's `hottest` lists the
// `instructions` instructions with the most PC samples, and any of the
// simulation's hottest half as many that are not among them.
Comparison build_comparison(const std::vector<MeasuredKernel>& measured, const std::vector<SimulatedKernel>& simulated,
                            const std::string& config, std::size_t instructions = 0);
void print_comparison(std::ostream& out, const Comparison& c);
nlohmann::json comparison_json(const Comparison& c);
// Stacked stall-reason bars, measured beside simulated for every kernel (SVG).
std::string stall_plot_svg(const Comparison& c);

}  // namespace atomsim::compare
