// The simulator's jobs, shared by the CLI, tests and benchmarks.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/gpu.hpp"
#include "workloads/microbench/generator.hpp"

namespace atomsim {

struct SimulateOptions {
  std::string config = "h100";
  std::vector<std::string> overrides;
  std::string json_out;  // empty: no JSON file
  bool check_atomics = true;
  bool progress = true;
  bool profile_instructions = false;  // warp-cycles by state per instruction in the results
  bool record_ctas = false;           // every CTA's SM and span in the results
  std::string counters;               // a capture's counters.json for the trace's last kernel, the one it measured (empty: none)
  unsigned threads = 1;               // threads evaluating a cycle's units (RunOptions::threads)
  bool host_profile = false;          // print where the host's time went, by kind of unit (RunOptions::host_profile)
};

// Runs every kernel of a trace on one GPU configuration.
std::vector<KernelRun> simulate_trace(const GpuParams& params, const std::string& trace_path,
                                      const SimulateOptions& options);

// The microbenchmark the main job runs when given no trace: one kernel per
// variant (baseline, SW-B, SW-S), same parameters otherwise.
std::vector<workloads::MicrobenchParams> default_microbench();
// Writes those kernels to `path`; returns the warp instructions written.
std::uint64_t write_microbench_trace(const std::vector<workloads::MicrobenchParams>& kernels, const std::string& path);

// Generates the kernels into a temporary trace and simulates them.
std::vector<KernelRun> simulate_microbench(const GpuParams& params,
                                           const std::vector<workloads::MicrobenchParams>& kernels,
                                           const SimulateOptions& options);

// `atomsim run`: simulates `trace_path`, or the default microbenchmark when it is
// empty, prints tables (and speedups over the first kernel), writes JSON if asked.
// Returns the process exit status.
int run_job(const std::string& trace_path, const SimulateOptions& options, std::ostream& out);

}  // namespace atomsim
