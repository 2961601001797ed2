#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <zstd.h>

#include "models/dispatch/cta_dispatcher.hpp"
#include "sim/config.hpp"
#include "sim_helpers.hpp"
#include "sim/compare/comparison.hpp"
#include "tools/capture/faithfulness.hpp"
#include "traces/capture_document.hpp"

using namespace atomsim;
using namespace atomsim::compare;
namespace fs = std::filesystem;

namespace {

const fs::path kGrid = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/microbench/grid";

nlohmann::json read(const fs::path& p) { return atomsim::compare::read_json(p); }

// A copy of two configurations of the committed dataset, to damage in tests.
fs::path copy_of_grid(const std::string& name) {
  fs::path dir = testing::temp_trace(name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto manifest = read(kGrid / "manifest.json");
  auto& configs = manifest["configurations"];
  configs.erase(configs.begin() + 2, configs.end());
  for (const auto& c : configs) fs::copy(kGrid / c["id"].get<std::string>(), dir / c["id"].get<std::string>());
  std::ofstream(dir / "manifest.json") << manifest.dump();
  return dir;
}

std::string error_of(const fs::path& dir) {
  try {
    load_dataset(dir);
  } catch (const DatasetError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("Stall distance is half the L1 distance over the union of reasons", "[compare]") {
  REQUIRE(stall_distance({{"wait", 0.5}, {"selected", 0.5}}, {{"wait", 0.5}, {"selected", 0.5}}) == 0.0);
  REQUIRE(stall_distance({{"wait", 1.0}}, {{"selected", 1.0}}) == Approx(1.0));
  // 0.5 * (|0.5-1.0| + |0.5-0|) = 0.5; a reason only one side has counts fully.
  REQUIRE(stall_distance({{"wait", 0.5}, {"imc_miss", 0.5}}, {{"wait", 1.0}}) == Approx(0.5));
}

TEST_CASE("The committed H100 dataset loads with medians of the timed launches", "[compare]") {
  auto d = load_dataset(kGrid);
  REQUIRE(d.kernels.size() == 23);
  auto it = std::find_if(d.kernels.begin(), d.kernels.end(), [](const auto& k) { return k.id == "swb-lpp32-af0.5-thr8"; });
  REQUIRE(it != d.kernels.end());
  REQUIRE(it->params.variant == workloads::MicrobenchVariant::SwB);
  REQUIRE(it->params.active_fraction == 0.5);
  // Recompute the median from the timing pass: launches 0-4 warm up.
  auto timing = read(kGrid / it->id / "timing.json");
  std::vector<double> ns;
  for (const auto& k : timing["kernels"])
    if (k["launch"].get<int>() >= 5) ns.push_back(k["duration_ns"].get<double>());
  std::sort(ns.begin(), ns.end());
  REQUIRE(it->timed_launches == ns.size());
  REQUIRE(it->time_ns == ns[ns.size() / 2]);
  REQUIRE(it->fastest_ns == ns.front());
  REQUIRE(it->slowest_ns == ns.back());
  REQUIRE(it->cycles == Approx(it->time_ns * timing["clocks"]["sm_mhz_at_exit"].get<double>() / 1000));
  double total = 0;
  for (const auto& [r, f] : it->stall_fractions) total += f;
  REQUIRE(total == Approx(1.0));
  REQUIRE(it->warp_instructions == read(kGrid / it->id / "count.json")["kernels"][0]["warp_instructions"].get<std::uint64_t>());
}

TEST_CASE("Damaged datasets fail naming the file", "[compare][errors]") {
  REQUIRE(error_of(testing::temp_trace("no-such-dataset")).find("manifest.json: cannot open") != std::string::npos);
  fs::path dir = copy_of_grid("damaged");
  auto manifest = read(dir / "manifest.json");
  std::string first = manifest["configurations"][0]["id"];
  SECTION("truncated stall pass") {
    fs::resize_file(dir / first / "stall.json", 100);
    REQUIRE(error_of(dir) == (dir / first / "stall.json").string() + ": not valid JSON (byte 101)");
  }
  SECTION("missing count pass") {
    fs::remove(capture::stored_document(dir / first / "count.json"));
    REQUIRE(error_of(dir) == (dir / first / "count.json").string() + ": cannot open");
  }
  SECTION("unknown variant") {
    manifest["configurations"][0]["variant"] = "swx";
    std::ofstream(dir / "manifest.json") << manifest.dump();
    REQUIRE(error_of(dir).find("manifest.json: " + first + ": ") != std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("Comparison rows: errors, speedups over the same-shape baseline, summary", "[compare]") {
  MeasuredKernel base, swb;
  base.id = "base";
  base.cycles = 1000;
  // Timed launches of 400-550 ns around a 500 ns median at 2 GHz: 800-1100 cycles.
  base.time_ns = 500;
  base.fastest_ns = 400;
  base.slowest_ns = 550;
  base.timed_launches = 5;
  base.stall_fractions = {{"lg_throttle", 1.0}};
  swb = base;
  swb.id = "swb";
  swb.params.variant = workloads::MicrobenchVariant::SwB;
  swb.cycles = 250;  // 4x measured
  swb.timed_launches = 1;  // one launch: no spread
  SimulatedKernel sb, ss;
  sb.cycles = 900;
  sb.stall_fractions = {{"lg_throttle", 0.5}, {"long_scoreboard", 0.5}};
  ss.cycles = 300;
  ss.stall_fractions = {{"lg_throttle", 1.0}};
  auto c = build_comparison({base, swb}, {sb, ss}, "h100");
  REQUIRE(c.rows[0].cycle_error == Approx(-0.1));
  REQUIRE(c.rows[1].cycle_error == Approx(0.2));
  REQUIRE(!c.rows[0].measured_speedup);
  REQUIRE(*c.rows[1].measured_speedup == Approx(4.0));
  REQUIRE(*c.rows[1].simulated_speedup == Approx(3.0));
  REQUIRE(c.summary.mean_abs_cycle_error == Approx(0.15));
  REQUIRE(c.summary.worst_cycle_id == "swb");
  REQUIRE(c.summary.mean_abs_speedup_error == Approx(0.25));
  REQUIRE(c.rows[0].within_launches);  // 900 simulated cycles within 800-1100
  REQUIRE(!c.rows[1].within_launches);
  REQUIRE(c.summary.within_launches == 1);
  std::ostringstream table;
  print_comparison(table, c);
  REQUIRE(table.str().find("-20..+10% *") != std::string::npos);
  REQUIRE(table.str().find("(1 of 2 kernels)") != std::string::npos);
  REQUIRE(c.rows[0].stall_distance == Approx(0.5));
  REQUIRE(c.summary.mean_stall_distance == Approx(0.25));
  auto svg = stall_plot_svg(c);
  REQUIRE(svg.find("<svg") == 0);
  REQUIRE(svg.find("base lg_throttle: 100.0%") != std::string::npos);
  REQUIRE(svg.find("base long_scoreboard: 50.0%") != std::string::npos);
  // Two kernels' bars are narrower than the title: the figure widens to hold
  // it (13-pixel glyphs, at most 7.5 pixels each on average).
  const double width = std::stod(svg.substr(svg.find("width=\"") + 7));
  const std::size_t title_at = svg.find("Warp stall reasons");
  const std::string title = svg.substr(title_at, svg.find("</text>", title_at) - title_at);
  REQUIRE(width >= 50 + 7.5 * static_cast<double>(title.size()));
}

TEST_CASE("Every committed captured trace is faithful to the H100's count pass and atomic replay", "[compare][faithfulness]") {
  const fs::path dir = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/microbench/traces";
  std::ifstream manifest_file(dir / "manifest.json");
  const auto manifest = nlohmann::json::parse(manifest_file);
  std::size_t checked = 0;
  // Every configuration of the grid has its trace.
  for (const auto& configuration : manifest.at("configurations")) {
    const fs::path d = dir / configuration.at("id").get<std::string>();
    INFO(d.filename().string());
    FaithfulnessReport r = check_faithfulness(d / "trace.atr", 0, d / "count.json", {}, d / "trace.json");
    REQUIRE(r.passed);
    for (auto op : {trace::OpClass::Red, trace::OpClass::Atom, trace::OpClass::LoadGlobal, trace::OpClass::StoreGlobal})
      REQUIRE(r.classes[static_cast<int>(op)].trace_warp == r.classes[static_cast<int>(op)].gpu_warp);
    REQUIRE(r.total.gpu_warp > 0);
    REQUIRE(r.atomic_replay.value("words", 0) > 0);
    ++checked;
  }
  REQUIRE(checked == manifest.at("configurations").size());
  REQUIRE(checked >= 23);
}

TEST_CASE("A trace set beside another launch's counts is not faithful", "[compare][faithfulness][errors]") {
  const fs::path dir = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/microbench/traces";
  // Same kernel, other parameters: the counts differ.
  FaithfulnessReport r = check_faithfulness(dir / "baseline-lpp1-af1.0-thr8/trace.atr", 0,
                                            dir / "baseline-lpp1-af0.25-thr8/count.json", {}, {});
  REQUIRE_FALSE(r.passed);
  REQUIRE_THAT(r.verdict, Catch::Contains("red differ"));
  // Another kernel's counts: named as missing.
  REQUIRE_THROWS_WITH(check_faithfulness(dir / "baseline-lpp1-af1.0-thr8/trace.atr", 0,
                                         dir / "sws-lpp1-af1.0-thr8/count.json", {}, {}),
                      Catch::Contains("no counted launch of void microbench_baseline<9>(KernelArgs)"));
  REQUIRE_THROWS_WITH(check_faithfulness(dir / "baseline-lpp1-af1.0-thr8/trace.atr", 0, dir / "missing.json", {}, {}),
                      Catch::Contains("missing.json: cannot open"));
}

// The full-size workload dataset (tools/capture/capture_h100_workloads.sh):
// every atomic-heavy kernel was measured at a launch configuration that fills
// the H100, at least two full waves of CTAs by the simulator's own occupancy
// rule, with the timing pass holding at least two launches of it (the first
// warms up), and its count and trace passes, where taken, of that same configuration.
TEST_CASE("The full-size workload dataset fills the H100 with every kernel it measured", "[compare][dataset]") {
  const fs::path root = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/workloads";
  const GpuParams h100 = load_gpu_params("h100", {});
  const model::SmLimits limits{h100.sm.max_warps, h100.sm.max_ctas, h100.sm.registers,
                               h100.sm.register_allocation_unit, h100.sm.shared_memory_bytes};
  std::size_t kernels = 0, traced = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().filename() != "stall.json") continue;
    const fs::path d = entry.path().parent_path();
    INFO(d.string());
    REQUIRE(fs::exists(d / "native.json"));
    const nlohmann::json k = read(d / "stall.json")["kernels"][0];
    trace::KernelInfo info;
    info.grid = {k["grid"][0], k["grid"][1], k["grid"][2]};
    info.block = {k["block"][0], k["block"][1], k["block"][2]};
    info.registers_per_thread = k["registers"];
    info.shared_bytes = k["static_shared_bytes"].get<std::uint32_t>() + k["dynamic_shared_bytes"].get<std::uint32_t>();
    const double waves = static_cast<double>(info.grid.count()) / (h100.sms * model::ctas_per_sm(info, limits));
    INFO("waves " << waves);
    REQUIRE(waves >= 2.0);
    std::size_t launches = 0;
    const nlohmann::json timing = read(d / "timing.json");
    for (const auto& l : timing["kernels"])
      if (l["mangled"] == k["mangled"] && l["grid"] == k["grid"]) ++launches;
    REQUIRE(launches >= 2);
    if (fs::exists(capture::stored_document(d / "trace" / "count.json"))) {
      const nlohmann::json c = read(d / "trace" / "count.json")["kernels"][0];
      REQUIRE(c["mangled"] == k["mangled"]);
      REQUIRE(c["grid"] == k["grid"]);
      ++traced;
    }
    ++kernels;
  }
  REQUIRE(kernels == 20);  // 16 kernels and variants, and the DISTWAR-regime scene's baseline, SW-S, SW-B and warp
  REQUIRE(traced >= 14);
}

// A library kernel of a PyTorch program (workloads/pytorch/scatter_add.py),
// whose dimension loop reports nothing to the trace pass: the count pass's
// trip counts let the join place it, and the trace is exact in every class.
TEST_CASE("A PyTorch library kernel captured on the H100 is faithful and exact", "[compare][faithfulness]") {
  const fs::path root = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/regressions/pytorch";
  for (const char* pattern : {"random", "sorted", "few"}) {
    const fs::path d = root / (std::string("scatter-add-") + pattern) / "trace";
    INFO(d.string());
    FaithfulnessReport r = check_faithfulness(d / "trace.atr", 0, d / "count.json", {}, d / "trace.json");
    REQUIRE(r.atomic_replay.value("passed", false));
    REQUIRE(r.passed);
    REQUIRE(r.total.trace_warp == r.total.gpu_warp);
    REQUIRE(r.total.trace_threads == r.total.gpu_threads);
  }
}

// Kernels of our own whose warps diverge the ways real kernels do
// (workloads/divergence), captured on the H100 by tools/capture/capture_regressions.sh.
TEST_CASE("Divergent kernels captured on the H100 are faithful", "[compare][faithfulness]") {
  const fs::path root = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/regressions/divergence";
  std::size_t checked = 0;
  for (const char* kernel : {"early_exit", "lane_loops", "nested", "partial_atomics", "sync_under_divergence", "sparse_loop"}) {
    const fs::path d = root / kernel;
    INFO(d.string());
    FaithfulnessReport r = check_faithfulness(d / "trace.atr", 0, d / "count.json", {}, d / "trace.json");
    REQUIRE(r.atomic_replay.value("passed", false));
    REQUIRE(r.passed);  // memory and atomic instructions exact, the rest within 1%
    // Exact but for the per-lane loop and the nested loop of atomics, whose
    // unobserved instructions' lanes the join places within 1% (docs/capture.md).
    if (std::string(kernel) != "lane_loops" && std::string(kernel) != "nested") {
      REQUIRE(r.total.trace_warp == r.total.gpu_warp);
      REQUIRE(r.total.trace_threads == r.total.gpu_threads);
    }
    ++checked;
  }
  REQUIRE(checked == 6);
}

// The count pass patches lazily (only what runs while it counts); its counts
// of a microbenchmark launch equal those of the eager patching it replaced.
TEST_CASE("The count pass patching lazily counts what eager patching counted", "[compare][faithfulness]") {
  auto load = [](const fs::path& p) { return read(p)["kernels"][0]; };
  const fs::path h100 = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100";
  nlohmann::json lazy = load(h100 / "regressions/microbench-count-lazy/count.json");
  nlohmann::json eager = load(h100 / "microbench/grid/sws-lpp32-af0.5-thr8/count.json");
  REQUIRE(lazy["name"] == eager["name"]);
  for (const char* key : {"warp_instructions", "thread_instructions", "thread_instructions_pred_on"}) REQUIRE(lazy[key] == eager[key]);
  REQUIRE(lazy["pcs"].size() == eager["pcs"].size());
  for (std::size_t i = 0; i < lazy["pcs"].size(); ++i) {
    REQUIRE(lazy["pcs"][i]["pc_offset"] == eager["pcs"][i]["pc_offset"]);
    REQUIRE(lazy["pcs"][i]["warp_instructions"] == eager["pcs"][i]["warp_instructions"]);
    REQUIRE(lazy["pcs"][i]["thread_instructions_pred_on"] == eager["pcs"][i]["thread_instructions_pred_on"]);
  }
}

TEST_CASE("Timing-dependent instructions excuse only themselves", "[compare][faithfulness]") {
  // The sort scatter's count passes, with one instruction that all of them
  // count alike made to disagree with the trace: no longer faithful.
  const fs::path d = fs::path(ATOMSIM_SOURCE_DIR) / "tests/data/sort-keys-scatter-trace";
  const std::vector<fs::path> again = {d / "count-again-1.json", d / "count-again-2.json"};
  FaithfulnessReport ok = check_faithfulness(d / "trace.atr", 0, d / "count.json", again, d / "trace.json");
  REQUIRE(ok.passed);
  REQUIRE_THAT(ok.verdict, Catch::Contains("faithful outside"));
  const auto tamper = [](const fs::path& from, const fs::path& to) {
    nlohmann::json j = read(from);
    for (auto& pc : j["kernels"][0]["pcs"])
      if (pc["pc_offset"] == 0x10) pc["warp_instructions"] = pc["warp_instructions"].get<std::uint64_t>() + 1;
    std::ofstream(to) << j.dump();
  };
  const fs::path tmp = fs::temp_directory_path() / "atomsim-tampered-counts";
  fs::create_directories(tmp);
  tamper(d / "count.json", tmp / "count.json");
  tamper(again[0], tmp / "a1.json");
  tamper(again[1], tmp / "a2.json");
  FaithfulnessReport bad = check_faithfulness(d / "trace.atr", 0, tmp / "count.json", {tmp / "a1.json", tmp / "a2.json"}, d / "trace.json");
  fs::remove_all(tmp);
  REQUIRE_FALSE(bad.passed);
  REQUIRE(bad.stable_pcs_differing == std::vector<std::uint64_t>{0x10});
  // Without the repeated passes the timing-dependent differences themselves fail it.
  REQUIRE_FALSE(check_faithfulness(d / "trace.atr", 0, d / "count.json", {}, d / "trace.json").passed);
}

TEST_CASE("A capture's launches are matched to its trace across builds that hash anonymous namespaces apart", "[compare][capture]") {
  const fs::path source = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/regressions/pytorch/scatter-add-random";
  const fs::path dir = testing::temp_trace("anonymous");
  fs::create_directories(dir / "trace");
  fs::copy_file(source / "stall.json", dir / "stall.json");
  fs::copy_file(source / "trace/count.json.zst", dir / "trace/count.json.zst");
  auto rename = [](const fs::path& from, const fs::path& to, const std::string& mangled) {
    auto doc = read_json(from);
    for (auto& k : doc["kernels"]) k["mangled"] = mangled;
    std::ofstream(to) << doc.dump();
  };
  // The same kernel built from two folders: only the namespace's hash differs.
  rename(source / "timing.json", dir / "timing.json", "_ZN40_GLOBAL__N__ee1cf3d8_11_onesweep_cu_main4scanEPj");
  rename(source / "trace/trace.json", dir / "trace/trace.json", "_ZN40_GLOBAL__N__e14d6dda_11_onesweep_cu_main4scanEPj");
  const MeasuredKernel k = load_capture(dir, "anonymous");
  REQUIRE(k.cycles > 0);
  // Another function of that namespace is another kernel.
  rename(source / "timing.json", dir / "timing.json", "_ZN40_GLOBAL__N__ee1cf3d8_11_onesweep_cu_main4stepEPj");
  REQUIRE_THROWS_WITH(load_capture(dir, "anonymous"),
                      (dir / "timing.json").string() + ": 0 launches of the traced kernel with its grid and block; at least 2 are needed (one warms up)");
  fs::remove_all(dir);
}

// Committed datasets keep their count passes zstd-compressed (count.json.zst);
// every reader given count.json takes the compressed file, and a corrupt or
// cut-short one is an error naming it.
TEST_CASE("Capture documents are read compressed or not and a damaged compressed one is named", "[compare][capture]") {
  const fs::path dir = testing::temp_trace("documents");
  fs::create_directories(dir);
  const std::string text = R"({"kernels": [{"warp_instructions": 12345}]})";
  std::string packed(ZSTD_compressBound(text.size()), '\0');
  packed.resize(ZSTD_compress(packed.data(), packed.size(), text.data(), text.size(), 3));
  std::ofstream(dir / "count.json.zst", std::ios::binary) << packed;
  REQUIRE(capture::stored_document(dir / "count.json") == dir / "count.json.zst");
  REQUIRE(read_json(dir / "count.json")["kernels"][0]["warp_instructions"] == 12345);
  // The plain file wins where both exist.
  std::ofstream(dir / "count.json") << R"({"kernels": []})";
  REQUIRE(read_json(dir / "count.json")["kernels"].empty());
  fs::remove(dir / "count.json");

  std::ofstream(dir / "count.json.zst", std::ios::binary) << packed.substr(0, packed.size() - 4);
  REQUIRE_THROWS_WITH(read_json(dir / "count.json"), (dir / "count.json.zst").string() + ": zstd data cut short at byte " +
                                                         std::to_string(packed.size() - 4));
  std::string corrupt = packed;
  corrupt[0] ^= 0x5a;  // the frame's magic number
  std::ofstream(dir / "count.json.zst", std::ios::binary) << corrupt;
  REQUIRE_THROWS_WITH(read_json(dir / "count.json"), Catch::StartsWith((dir / "count.json.zst").string() + ": "));
  fs::remove(dir / "count.json.zst");
  REQUIRE_THROWS_WITH(read_json(dir / "count.json"), (dir / "count.json").string() + ": cannot open");
  fs::remove_all(dir);
}
