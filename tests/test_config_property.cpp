#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>

#include "sim/run.hpp"
#include "sim_helpers.hpp"
#include "traces/reader.hpp"
#include "workloads/microbench/generator.hpp"

using namespace atomsim;

namespace {

// A value drawn from a parameter's declared range: either end now and then,
// otherwise log-uniform where the range spans orders of magnitude (as a sweep
// over sizes or rates would step), uniform elsewhere.
std::string draw_value(const ParamInfo& p, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0, 1);
  if (p.type == "bool") return unit(rng) < 0.5 ? "true" : "false";
  if (p.type == "choice") return p.choices[std::uniform_int_distribution<std::size_t>(0, p.choices.size() - 1)(rng)];
  const double u = unit(rng);
  double x;
  if (u < 0.08) x = p.min;
  else if (u < 0.16) x = p.max;
  else if (p.min > 0 && p.max / p.min > 100) x = p.min * std::pow(p.max / p.min, unit(rng));
  else x = p.min + (p.max - p.min) * unit(rng);
  if (p.type == "integer") return fmt::format("{}", std::clamp(std::llround(x), std::llround(p.min), std::llround(p.max)));
  return fmt::format("{}", std::clamp(x, p.min, p.max));
}

// A few parameters changed from the H100 most of the time, so that draws
// reach the simulation rather than the cross-parameter rules; every parameter
// drawn at once in one draw of four.
std::vector<std::string> draw_overrides(const std::vector<ParamInfo>& declared, std::mt19937_64& rng) {
  std::vector<std::string> overrides;
  const bool all = std::uniform_int_distribution<int>(0, 3)(rng) == 0;
  const std::size_t changed = all ? declared.size() : std::uniform_int_distribution<std::size_t>(1, 6)(rng);
  std::vector<std::size_t> order(declared.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  for (std::size_t i = 0; i < changed; ++i)
    if (declared[order[i]].key != "gpu.name")
      overrides.push_back(declared[order[i]].key + "=" + draw_value(declared[order[i]], rng));
  return overrides;
}

// The workload every draw runs: the microbenchmark's three kernels, and the
// first CTAs of a captured kernel with global loads, partial-warp REDs and divergence.
std::string property_trace() {
  const std::string path = testing::temp_trace("property.trace");
  workloads::MicrobenchParams micro;
  micro.blocks = 6;
  micro.warps_per_block = 4;
  micro.iterations = 2;
  micro.params = 4;
  micro.active_fraction = 0.5;
  micro.lanes_per_primitive = 16;
  micro.threshold = 8;
  trace::TraceWriter writer(path);
  for (const auto& k : workloads::microbench_variants(micro, "all")) workloads::write_microbench_kernel(k, writer);
  trace::TraceReader captured(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/regressions/divergence/partial_atomics/trace.atr");
  trace::KernelInfo info = captured.kernel(0);
  info.grid = {6, 1, 1};
  writer.begin_kernel(info);
  trace::WarpInst inst;
  for (std::uint64_t warp = 0; warp < info.total_warps(); ++warp) {
    trace::WarpStream stream = captured.open_warp(0, warp);
    while (stream.next(inst)) writer.append(warp, inst);
  }
  writer.end_kernel();
  writer.finish();
  return path;
}

std::string command_line(const std::vector<std::string>& overrides) {
  std::string line = "atomsim run -c h100";
  for (const auto& o : overrides) line += " --set " + o;
  return line;
}

}  // namespace

// Sweeps run atomsim over configurations nobody looked at: every draw from
// the declared ranges must either be refused before simulating, in one line
// naming a key, or run every kernel to the end with its atomics all applied.
// A fixed seed, and one from the date (or ATOMSIM_PROPERTY_SEED) so that each
// day's runs try new configurations.
TEST_CASE("Configurations drawn from the declared ranges run to the end or are refused naming a key", "[property]") {
  const std::string trace = property_trace();
  const std::vector<ParamInfo> declared = testing::h100_with({}).documentation;
  const auto days = std::chrono::duration_cast<std::chrono::hours>(std::chrono::system_clock::now().time_since_epoch()).count() / 24;
  const char* forced = std::getenv("ATOMSIM_PROPERTY_SEED");
  const std::uint64_t dated_seed = forced ? std::strtoull(forced, nullptr, 10) : static_cast<std::uint64_t>(days);
  constexpr int kDrawsPerSeed = 150;
  int ran = 0, refused = 0;
  double slowest = 0;
  std::string slowest_draw;
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t seed : {std::uint64_t{20261123}, dated_seed}) {
    std::mt19937_64 rng(seed);
    for (int draw = 0; draw < kDrawsPerSeed; ++draw) {
      const std::vector<std::string> overrides = draw_overrides(declared, rng);
      INFO("seed " << seed << " draw " << draw << ": " << command_line(overrides) << " -t <property trace>");
      GpuParams params;
      try {
        params = testing::h100_with(overrides);
      } catch (const ConfigError& e) {
        const std::string what = e.what();
        INFO(what);
        REQUIRE(what.find('\n') == std::string::npos);
        REQUIRE((what.find("key '") != std::string::npos || what.find("keys '") != std::string::npos));
        ++refused;
        continue;
      }
      SimulateOptions options;
      options.progress = false;
      // A draw that never ends reports nothing else: ATOMSIM_PROPERTY_VERBOSE names each before it runs.
      if (std::getenv("ATOMSIM_PROPERTY_VERBOSE")) std::fprintf(stderr, "seed %llu draw %d: %s\n", static_cast<unsigned long long>(seed), draw, command_line(overrides).c_str());
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<KernelRun> runs;
      try {
        runs = simulate_trace(params, trace, options);
      } catch (const ConfigError& e) {  // a kernel that fits no SM of this machine, refused before it runs
        const std::string what = e.what();
        INFO(what);
        REQUIRE(what.find("does not fit on one SM") != std::string::npos);
        REQUIRE(what.find("key") != std::string::npos);
        ++refused;
        continue;
      }
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (seconds > slowest) {
        slowest = seconds;
        slowest_draw = command_line(overrides);
      }
      REQUIRE(runs.size() == 4);
      for (const KernelRun& run : runs) {
        INFO(run.name);
        REQUIRE(run.cycles > 0);
        REQUIRE(run.checked);
        REQUIRE(run.check.passed());
        REQUIRE(run.check.lane_updates_applied == run.check.lane_updates_expected);
      }
      ++ran;
    }
  }
  std::remove(trace.c_str());
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  WARN(fmt::format("configuration property: seeds 20261123 and {}: {} configurations ran to the end, {} refused naming a "
                   "key, in {:.1f} s; slowest {:.2f} s ({})",
                   dated_seed, ran, refused, total, slowest, slowest_draw));
  // A good share of the draws must reach the simulation, or the test would only test the rules.
  REQUIRE(3 * ran >= 2 * kDrawsPerSeed);
}
