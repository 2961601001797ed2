// Simulation top: builds every unit from the parameters, binds their ports,
// and runs a trace's kernels one after another.
#pragma once

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "models/dispatch/cta_dispatcher.hpp"
#include "models/sm/stall.hpp"
#include "sim/compare/measured_costs.hpp"
#include "sim/config.hpp"
#include "sim/engine/simulation_control.hpp"
#include "sim/engine/stats.hpp"
#include "sim/sampling.hpp"
#include "traces/reader.hpp"

namespace atomsim {

// Final memory image of atomically updated words against the trace.
// The crossbar that carries SM requests to the L2 slices: its statistics' group.
inline constexpr std::string_view kRequestNetworkName = "request_network";

struct FunctionalCheck {
  std::uint64_t addresses = 0;
  std::uint64_t lane_updates_expected = 0;
  std::uint64_t lane_updates_applied = 0;
  std::uint64_t values_compared = 0;   // addresses updated only by additions of plain numbers
  std::uint64_t count_mismatches = 0;  // addresses whose update count differs (lost or doubled updates)
  std::uint64_t value_mismatches = 0;  // addresses whose value is off beyond rounding
  double max_relative_error = 0;
  bool passed() const { return count_mismatches == 0 && value_mismatches == 0; }
};

struct KernelRun {
  std::string name;
  trace::Dim3 grid, block;
  std::uint32_t ctas_per_sm = 0;
  Cycle start = 0;
  Cycle cycles = 0;
  std::map<std::string, std::map<std::string, StatSummary>> stats;
  FunctionalCheck check;
  bool checked = false;
  // With RunOptions::counters: what the counters pass set on the program.
  std::optional<compare::MeasuredCosts> measured_costs;
  // With RunOptions::profile_instructions: per instruction of the program,
  // warp-cycles in each state (models/sm/stall.hpp), all SMs together.
  struct InstructionProfile {
    std::uint64_t pc = 0;
    std::string sass;
    std::array<std::uint64_t, model::kWarpStateCount> warp_cycles{};
    std::vector<std::uint64_t> waits_on;  // the instructions (pcs) whose dependency barriers it waits on
  };
  std::vector<InstructionProfile> instructions;
  // With RunOptions::record_ctas: every CTA's SM and its place's span there,
  // in the order the CTAs started.
  struct CtaSpan {
    std::uint64_t cta = 0;
    std::uint32_t sm = 0;
    Cycle start = 0;
    Cycle end = 0;
  };
  std::vector<CtaSpan> ctas;
  // With RunOptions::host_profile: the host time the simulation took, by
  // unit and thread (not a result: it varies from run to run).
  HostProfile host_profile;
  // With sample.mode set: what was simulated in detail and what extrapolated.
  SamplingOutcome sampling;
};

struct RunOptions {
  bool check_atomics = true;
  bool profile_instructions = false;
  bool record_ctas = false;
  bool progress = true;
  bool host_profile = false;  // measure the host time each unit takes (KernelRun::host_profile)
  unsigned threads = 1;  // threads evaluating the units of a cycle; results do not depend on it
  std::string label;  // shown in progress lines
  std::string counters;  // a capture's counters.json: measured costs of the kernel's instructions (empty: none)
};

class Gpu {
 public:
  explicit Gpu(const GpuParams& params);
  ~Gpu();
  // Throws trace::TraceError (damaged trace) or ConfigError (kernel cannot run).
  KernelRun run_kernel(trace::TraceReader& reader, std::size_t kernel, const RunOptions& options);
  const GpuParams& params() const { return params_; }

 private:
  struct Units;
  struct Expected {
    double sum = 0;            // floating-point additions
    std::uint64_t bits_sum = 0;  // integer additions, wrapping as the hardware does
    double magnitude = 0;
    std::uint64_t updates = 0;
    bool summable = true;  // only additions of plain numbers have an order-independent result to compare
  };
  class Observations;
  class SampledRun;
  FunctionalCheck check_atomics() const;
  void warm_l2(trace::TraceReader& reader, std::size_t kernel);
  void simulate_until_done(trace::TraceReader& reader, std::size_t kernel, const RunOptions& options, KernelRun& run,
                           Observations& observations, SampledRun* sampled);
  static void note_barrier_producers(const trace::KernelInfo& info, KernelRun& run);

  GpuParams params_;
  StatRegistry stats_;
  std::unique_ptr<Units> units_;
  std::unordered_map<std::uint64_t, Expected> expected_;
  std::chrono::steady_clock::time_point created_;  // progress is shown once a run is older than 2 s
};

}  // namespace atomsim
