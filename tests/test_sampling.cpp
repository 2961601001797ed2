#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/report.hpp"
#include "sim/run.hpp"
#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

// 8 SMs of 8 CTAs of 8 warps: a wave is 64 CTAs.
const std::vector<std::string> kSmall = {"gpu.sms=8", "l2.slices=8"};

std::string microbench(const std::string& name, workloads::MicrobenchVariant v, std::uint32_t blocks) {
  workloads::MicrobenchParams p;
  p.variant = v;
  p.blocks = blocks;
  p.warps_per_block = 8;
  p.iterations = 1;
  p.active_fraction = 0.5;
  std::string path = temp_trace(name);
  write_microbench_trace({p}, path);
  return path;
}

std::vector<std::string> with(std::vector<std::string> set, const std::vector<std::string>& more) {
  set.insert(set.end(), more.begin(), more.end());
  return set;
}

double state_distance(const KernelRun& a, const KernelRun& b, const GpuParams& params) {
  const auto ja = kernel_json(a, params)["warp_states"]["reasons"], jb = kernel_json(b, params)["warp_states"]["reasons"];
  double d = 0;
  for (const auto& [name, r] : ja.items()) d += std::abs(r["fraction"].get<double>() - jb[name]["fraction"].get<double>());
  return d / 2;
}

}  // namespace

TEST_CASE("sampling by CTA waves keeps a many-wave kernel's cycles, states and statistics", "[sim][sampling]") {
  const std::string path = microbench("sampled-baseline.trace", workloads::MicrobenchVariant::Baseline, 64 * 40);
  const auto full_params = h100_with(kSmall);
  const auto sampled_params = h100_with(with(kSmall, {kSampleOverride}));
  SimulateOptions options;
  options.progress = false;
  const KernelRun full = simulate_trace(full_params, path, options)[0];
  const KernelRun sampled = simulate_trace(sampled_params, path, options)[0];
  REQUIRE_FALSE(full.sampling.requested);
  REQUIRE(sampled.sampling.sampled);
  REQUIRE(sampled.sampling.windows >= 2);
  INFO(full.cycles << " cycles in full, " << sampled.cycles << " sampled");
  // Most CTAs were skipped, and their time is within 2% of what simulating them took.
  REQUIRE(sampled.sampling.ctas_skipped > 64 * 20);
  CHECK(std::abs(double(sampled.cycles) / double(full.cycles) - 1) < 0.02);
  CHECK(state_distance(full, sampled, full_params) < 0.02);
  // Extrapolated counts: the skipped CTAs' instructions and atomics are counted.
  const double instructions = total(full, "smsp", "warp_instructions");
  CHECK(std::abs(total(sampled, "smsp", "warp_instructions") / instructions - 1) < 1e-3);
  CHECK(std::abs(total(sampled, "l2_slice", "atomic_lane_updates") / total(full, "l2_slice", "atomic_lane_updates") - 1) < 0.01);
  // The functional check covers what was simulated: fewer updates, all applied.
  REQUIRE(sampled.check.passed());
  CHECK(sampled.check.lane_updates_applied < full.check.lane_updates_applied);
  // The estimate from the windows' spread covers the error made.
  CHECK(sampled.sampling.error_estimate > 0);
  CHECK(std::abs(double(sampled.cycles) / double(full.cycles) - 1) <= sampled.sampling.error_estimate + 0.005);
  std::remove(path.c_str());
}

TEST_CASE("a sampled run is deterministic, on one thread and on several, with the warp prefetcher", "[sim][sampling][determinism]") {
  const std::string path = microbench("sampled-threads.trace", workloads::MicrobenchVariant::SwB, 64 * 12);
  const auto set = with(kSmall, {kSampleOverride});
  const auto params = h100_with(set);
  SimulateOptions options;
  options.progress = false;
  options.profile_instructions = true;
  options.threads = 1;  // a thread of the cores left: the prefetcher reads ahead and lets the skipped warps go
  const std::string one = run_json(simulate_trace(params, path, options), params, set, path).dump();
  REQUIRE(one.find("\"sampled\": true") == std::string::npos);  // compact dump
  REQUIRE(nlohmann::json::parse(one)["kernels"][0]["sampling"]["sampled"] == true);
  REQUIRE(run_json(simulate_trace(params, path, options), params, set, path).dump() == one);
  options.threads = 2;
  REQUIRE(run_json(simulate_trace(params, path, options), params, set, path).dump() == one);
  std::remove(path.c_str());
}

TEST_CASE("sampling refuses a kernel of few waves and simulates it in full", "[sim][sampling]") {
  const std::string path = microbench("sampled-short.trace", workloads::MicrobenchVariant::SwS, 64 * 3);
  SimulateOptions options;
  options.progress = false;
  const KernelRun full = simulate_trace(h100_with(kSmall), path, options)[0];
  const auto params = h100_with(with(kSmall, {kSampleOverride}));
  const KernelRun refused = simulate_trace(params, path, options)[0];
  REQUIRE(refused.sampling.requested);
  REQUIRE_FALSE(refused.sampling.sampled);
  REQUIRE(refused.sampling.refused.find("3.0 CTA waves") != std::string::npos);
  REQUIRE(refused.cycles == full.cycles);
  std::ostringstream table;
  print_kernel_table(table, refused, params);
  REQUIRE(table.str().find("not sampled: 3.0 CTA waves") != std::string::npos);
  std::remove(path.c_str());
}
