// A dataset captured on a GPU by tools/capture (manifest.json beside one folder
// per configuration holding the timing, stall and count passes), read back as
// the quantities the simulator reports.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "workloads/microbench/generator.hpp"

namespace atomsim::compare {

struct DatasetError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct MeasuredKernel {
  std::string id;
  workloads::MicrobenchParams params;   // what the generator needs to build the same kernel
  std::filesystem::path trace;          // captured kernels: the trace to simulate (its kernel 0)
  std::filesystem::path counters;       // captured kernels: the traced launch's counters pass, if taken
  std::string baseline;                 // captured kernels: id of the kernel its speedup is over, if any
  double time_ns = 0;                   // median GPU duration of the timed launches, or the traced launch's (traced_launch)
  std::optional<std::uint64_t> traced_launch;  // set when time_ns is the traced launch's own: its index in the program
  double fastest_ns = 0, slowest_ns = 0;  // the timed launches' extremes: the GPU's own spread
  std::uint32_t timed_launches = 0;
  double launch_trend = 0;              // rank correlation of the timed launches' durations with their order (-1..1)
  double sm_clock_mhz = 0;              // read during the timing pass
  double cycles = 0;                    // time_ns x sm_clock_mhz / 1000
  std::uint64_t warp_instructions = 0;  // count pass
  std::uint64_t stall_samples = 0;
  std::map<std::string, double> stall_fractions;  // PC sampling, Nsight's reason names
  std::map<std::uint64_t, std::map<std::string, double>> pc_samples;  // per instruction offset, samples by reason
  std::string device;
};

struct MeasuredDataset {
  std::filesystem::path dir;
  std::string workload;
  std::vector<MeasuredKernel> kernels;
};

// A capture's JSON document (compressed or not, traces/capture_document.hpp).
// Throws DatasetError "FILE: cannot open" or "FILE: not valid JSON (byte N)".
nlohmann::json read_json(const std::filesystem::path& path);

// Throws DatasetError naming the file and what is wrong with it.
MeasuredDataset load_dataset(const std::filesystem::path& dir);

// One kernel captured by atomsim-capture from any program: DIR holds the
// timing and stall passes of its launch configuration (timing.json,
// stall.json) and DIR/trace the count and trace passes of one launch of it
// (count.json, trace.json, trace.atr). Measured cycles are the median
// duration of the program's launches of the kernel with the trace's grid and
// block, the first of them left out as warm-up. The trace file itself may be
// missing (a kept comparison is read from DIR/compare.json): simulating it
// first checks require_trace.
MeasuredKernel load_capture(const std::filesystem::path& dir, const std::string& id);
// Sets a loaded capture's measured time to the duration of the launch its
// trace holds, the timing pass's launch of the same index in the program (the
// runner run with the same arguments up to it), for kernels whose launches do
// different work, as a training step's. Throws DatasetError naming the timing
// file where it has no such launch.
void measure_traced_launch(MeasuredKernel& k);
// Whether a kernel's timed launches get steadily faster or slower, more than
// their order would by chance (rank correlation beyond 1.96 / sqrt(n - 1)) and
// by a tenth of their median or more: launches doing different work.
bool launches_drift(const MeasuredKernel& k);
// Throws DatasetError naming the trace a captured kernel lacks.
void require_trace(const MeasuredKernel& k);

// Captures grouped by a manifest: {"kernels": [{"id", "capture" (a folder,
// relative to the manifest), "baseline" (another kernel's id, optional)}]};
// or, without a manifest, each folder on its own, named by its path.
MeasuredDataset load_captures(const std::vector<std::filesystem::path>& dirs, const std::filesystem::path& manifest);

// Half the L1 distance between two distributions over reason names (a reason
// missing from one side counts as 0 there): 0 identical, 1 disjoint.
double stall_distance(const std::map<std::string, double>& a, const std::map<std::string, double>& b);

}  // namespace atomsim::compare
