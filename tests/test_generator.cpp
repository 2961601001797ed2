#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <bit>
#include <fstream>
#include <map>
#include <sstream>

#include "sim_helpers.hpp"
#include "sim/compare/measured.hpp"
#include "traces/reader.hpp"
#include "traces/validate.hpp"
#include "traces/writer.hpp"
#include "workloads/microbench/generator.hpp"

using namespace atomsim;
using namespace atomsim::workloads;

namespace {

// smsp__inst_executed.sum per (variant, lanes per primitive), as measured on the H100.
std::map<std::pair<std::string, int>, double> measured_instructions() {
  std::ifstream in(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/probe/ncu.csv");
  REQUIRE(in);
  std::map<std::pair<std::string, int>, double> out;
  std::string line;
  int column = -1;
  while (std::getline(in, line)) {
    auto f = testing::csv_fields(line);
    if (f.size() < 3) continue;
    if (f[2] == "ID") {
      for (std::size_t i = 0; i < f.size(); ++i) if (f[i] == "smsp__inst_executed.sum") column = static_cast<int>(i);
      continue;
    }
    if (column < 0 || f.size() <= static_cast<std::size_t>(column) || f[2].empty() || !std::isdigit(static_cast<unsigned char>(f[2][0]))) continue;
    std::string digits;
    for (char c : f[column]) if (std::isdigit(static_cast<unsigned char>(c))) digits += c;
    out[{f[0], std::stoi(f[1])}] = std::stod(digits);
  }
  return out;
}

}  // namespace

TEST_CASE("generated microbenchmark streams execute exactly the instructions the H100 executed", "[generator]") {
  auto measured = measured_instructions();
  REQUIRE(measured.size() == 6);
  for (const auto& [key, h100_count] : measured) {
    const auto& [variant, lanes] = key;
    // The probe's launch: 528 CTAs x 8 warps, 64 iterations, 9 params, all lanes active, threshold 8.
    MicrobenchParams p;
    p.variant = parse_variant(variant);
    p.blocks = 2;
    p.warps_per_block = 8;
    p.iterations = 64;
    p.params = 9;
    p.primitives = 65536;
    p.active_fraction = 1.0;
    p.lanes_per_primitive = static_cast<std::uint32_t>(lanes);
    p.threshold = 8;
    std::string path = testing::temp_trace("gen-" + variant + std::to_string(lanes) + ".trace");
    std::uint64_t written;
    {
      trace::TraceWriter w(path);
      written = write_microbench_kernel(p, w);
      w.finish();
    }
    INFO(variant << " lanes_per_primitive=" << lanes);
    const double probe_warps = 528.0 * 8;
    REQUIRE(static_cast<double>(written) / 16.0 * probe_warps == h100_count);
    std::remove(path.c_str());
  }
}

TEST_CASE("generated traces are valid and carry one functional update per active lane", "[generator]") {
  MicrobenchParams p;
  p.blocks = 3;
  p.warps_per_block = 4;
  p.iterations = 5;
  p.active_fraction = 0.4;
  p.lanes_per_primitive = 8;
  std::string path = testing::temp_trace("gen-valid.trace");
  {
    trace::TraceWriter w(path);
    write_microbench_kernel(p, w);
    w.finish();
  }
  trace::TraceSummary s = trace::validate_trace(path);
  REQUIRE(s.kernels.size() == 1);
  const auto& k = s.kernels[0];
  REQUIRE(k.by_class[static_cast<int>(trace::OpClass::Red)] > 0);
  // Reference: each active lane adds `params` values per iteration (microbench.cu).
  std::uint64_t active = 0;
  for (std::uint32_t warp = 0; warp < 12; ++warp)
    for (std::uint32_t it = 0; it < p.iterations; ++it)
      for (std::uint32_t lane = 0; lane < 32; ++lane) {
        auto mix = [](std::uint32_t x) { x ^= x >> 16; x *= 0x7feb352du; x ^= x >> 15; x *= 0x846ca68bu; x ^= x >> 16; return x; };
        std::uint32_t warp_key = mix(p.seed ^ (warp * p.iterations + it));
        std::uint32_t lane_key = mix(warp_key ^ lane);
        active += lane_key < static_cast<std::uint32_t>(p.active_fraction * 4294967296.0);
      }
  REQUIRE(k.atomic_lane_ops == active * p.params);
  std::remove(path.c_str());
}

TEST_CASE("generator parameters are checked", "[generator][errors]") {
  MicrobenchParams p;
  p.params = 5;
  REQUIRE_THROWS_WITH(p.validate(), Catch::Contains("params must be 1, 4 or 9"));
  p = MicrobenchParams{};
  p.lanes_per_primitive = 33;
  REQUIRE_THROWS_WITH(p.validate(), Catch::Contains("lanes-per-primitive"));
  REQUIRE_THROWS_AS(parse_variant("swx"), std::invalid_argument);
}

TEST_CASE("generated streams match the H100's count pass in warp and predicate-on thread instructions", "[generator]") {
  // Configurations of the committed grid (264 CTAs x 8 warps, 8 iterations): every
  // variant, same-address and distinct-address, at two activities.
  const std::string grid = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/grid/";
  for (const char* id : {"baseline-lpp32-af0.5-thr8", "swb-lpp32-af0.5-thr8", "sws-lpp32-af0.5-thr8",
                         "baseline-lpp1-af0.25-thr8", "swb-lpp1-af0.25-thr8", "sws-lpp1-af0.25-thr8"}) {
    auto counted = atomsim::compare::read_json(grid + id + "/count.json")["kernels"][0];
    std::string name = id;
    MicrobenchParams p;
    p.variant = parse_variant(name.substr(0, name.find('-')));
    p.blocks = 264;
    p.warps_per_block = 8;
    p.iterations = 8;
    p.params = 9;
    p.primitives = 65536;
    p.lanes_per_primitive = name.find("lpp32") != std::string::npos ? 32 : 1;
    p.active_fraction = name.find("af0.5") != std::string::npos ? 0.5 : 0.25;
    p.threshold = 8;
    std::string path = testing::temp_trace(name + ".trace");
    {
      trace::TraceWriter w(path);
      write_microbench_kernel(p, w);
      w.finish();
    }
    auto summary = trace::validate_trace(path).kernels.at(0);
    INFO(id);
    REQUIRE(summary.warp_instructions == counted["warp_instructions"].get<std::uint64_t>());
    REQUIRE(summary.thread_instructions == counted["thread_instructions_pred_on"].get<std::uint64_t>());
    std::remove(path.c_str());
  }
}

TEST_CASE("Every variant and parameter count of the microbenchmark adds the same value to each parameter", "[generator]") {
  // The reductions of SW-B and SW-S change how lanes' values reach memory,
  // never what is added: each parameter's total is the baseline's.
  for (std::uint32_t params : {1u, 4u, 9u}) {
    std::map<std::uint64_t, double> baseline_totals;
    for (const char* variant : {"baseline", "swb", "sws"}) {
      MicrobenchParams p;
      p.variant = parse_variant(variant);
      p.blocks = 3;
      p.warps_per_block = 4;
      p.iterations = 3;
      p.params = params;
      p.primitives = 64;
      p.active_fraction = 0.6;
      p.lanes_per_primitive = 16;
      p.threshold = 4;
      INFO(variant << " with " << params << " parameters");
      const std::string path = testing::temp_trace(fmt::format("gen-totals-{}-{}.trace", variant, params));
      {
        trace::TraceWriter w(path);
        write_microbench_kernel(p, w);
        w.finish();
      }
      trace::TraceReader reader(path);
      const trace::KernelInfo& info = reader.kernel(0);
      std::map<std::uint64_t, double> totals;
      trace::WarpInst inst;
      for (std::uint64_t warp = 0; warp < info.total_warps(); ++warp) {
        trace::WarpStream stream = reader.open_warp(0, warp);
        while (stream.next(inst)) {
          if (!trace::is_atomic(info.program[inst.index].op)) continue;
          for (std::uint32_t m = inst.active_mask; m; m &= m - 1) {
            const int lane = std::countr_zero(m);
            totals[inst.address[lane]] += std::bit_cast<float>(static_cast<std::uint32_t>(inst.value[lane]));
          }
        }
      }
      REQUIRE(!totals.empty());
      if (baseline_totals.empty()) {
        baseline_totals = totals;
      } else {
        REQUIRE(totals.size() == baseline_totals.size());
        for (const auto& [address, total] : baseline_totals) {
          INFO("address 0x" << std::hex << address);
          REQUIRE(totals.count(address));
          REQUIRE(totals.at(address) == Approx(total).epsilon(1e-4).margin(1e-4));
        }
      }
      std::remove(path.c_str());
    }
  }
}
