#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "sim/run.hpp"
#include "sim_helpers.hpp"

using namespace atomsim;

namespace {

using CliResult = testing::CommandResult;
using testing::slurp;

CliResult cli(const std::string& args) { return testing::run_command(std::string(ATOMSIM_BINARY) + " " + args); }
// The same, started by `launcher` (e.g. "env VAR=value").
CliResult cli_with(const std::string& launcher, const std::string& args) {
  return testing::run_command(launcher + " " + std::string(ATOMSIM_BINARY) + " " + args);
}

std::string tiny_trace() {
  workloads::MicrobenchParams p;
  p.blocks = 4;
  p.warps_per_block = 2;
  p.iterations = 2;
  std::string path = testing::temp_trace("cli.trace");
  write_microbench_trace({p}, path);
  return path;
}

}  // namespace

TEST_CASE("CLI: unknown options and commands fail with one line", "[cli][errors]") {
  CliResult r = cli("run --bogus");
  REQUIRE(r.code == 2);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("--bogus") != std::string::npos);
  REQUIRE(cli("frobnicate").code == 2);
}

TEST_CASE("CLI: configuration errors name the key and the file", "[cli][errors]") {
  std::string h100 = std::string(ATOMSIM_SOURCE_DIR) + "/configs/h100.toml";
  std::string bad = testing::temp_trace("bad.toml");
  {
    std::ofstream out(bad);
    out << slurp(h100) << "\n[l2.extra]\nwidget = 3\n";
  }
  std::string trace = tiny_trace();
  CliResult r = cli("run -q --config " + bad + " --trace " + trace);
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("unknown key 'l2.extra.widget'") != std::string::npos);
  REQUIRE(r.err.find(bad) != std::string::npos);

  r = cli("run -q --trace " + trace + " --set gpu.sms=0");
  REQUIRE(r.code == 1);
  REQUIRE(r.err.find("'gpu.sms'") != std::string::npos);
  REQUIRE(r.err.find("out of range") != std::string::npos);

  r = cli("run -q --trace " + trace + " --set gpu.placement_offset=100");  // lines would straddle
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("'gpu.placement_offset' = 100 must be a multiple of 'l2.line_bytes' = 128") != std::string::npos);

  r = cli("run -q --trace " + trace + " --set gpu.lookahead_cycles=40");  // links between clusters would be longer than the paths
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("'interconnect.request.latency' = 75 is too short for 'gpu.lookahead_cycles' = 40") != std::string::npos);

  r = cli("run -q --trace " + trace + " --set l2.fetch_bytes=48");  // a miss reads aligned pieces of a line
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("'l2.fetch_bytes' = 48 must be a power of two from 'l2.sector_bytes' = 32 to 'l2.line_bytes' = 128") != std::string::npos);

  r = cli("run -q --trace " + trace + " --set l2.rop_unitz=2");
  REQUIRE(r.code == 1);
  REQUIRE(r.err.find("unknown key 'l2.rop_unitz'") != std::string::npos);

  r = cli("run -q --config /nonexistent.toml --trace " + trace);
  REQUIRE(r.code == 1);
  REQUIRE(r.err.find("/nonexistent.toml") != std::string::npos);
  std::remove(bad.c_str());
  std::remove(trace.c_str());
}

TEST_CASE("CLI: damaged or missing traces fail with the offset, and leave no output file", "[cli][errors]") {
  std::string trace = tiny_trace();
  std::string cut = testing::temp_trace("cut.trace");
  std::string json = testing::temp_trace("out.json");
  {
    std::string bytes = slurp(trace);
    std::ofstream out(cut, std::ios::binary);
    out << bytes.substr(0, bytes.size() / 2);
  }
  CliResult r = cli("run -q --trace " + cut + " --json " + json);
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("byte offset") != std::string::npos);
  REQUIRE_FALSE(std::filesystem::exists(json));
  REQUIRE_FALSE(std::filesystem::exists(json + ".partial"));

  r = cli("trace validate " + cut);
  REQUIRE(r.code == 1);
  REQUIRE(r.err.find(cut) != std::string::npos);

  // Damage found while the simulation runs stops it: still one line, no SystemC note.
  std::string damaged = testing::temp_trace("damaged.trace");
  {
    std::string bytes = slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/regressions/divergence/sparse_loop/trace.atr");
    bytes[bytes.size() / 2] ^= 0xff;
    std::ofstream(damaged, std::ios::binary) << bytes;
  }
  r = cli("run -q --trace " + damaged);
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("corrupt chunk payload") != std::string::npos);
  std::remove(damaged.c_str());
  r = cli("trace info /nonexistent.trace");
  REQUIRE(r.code == 1);
  REQUIRE(r.err.find("/nonexistent.trace") != std::string::npos);
  std::remove(cut.c_str());
  std::remove(trace.c_str());
}

// The regime a trace is in: same-address lanes (32 lanes per primitive) that a
// warp reduction would fold into one, against distinct addresses it cannot help.
TEST_CASE("CLI: trace info shows each atomic's active lanes and distinct addresses per warp instruction", "[cli]") {
  std::string trace = testing::temp_trace("cli-shapes.trace");
  for (auto [lanes, expect_distinct, expect_left] : {std::tuple{32, "distinct addresses mean  1.0 | 100%   0%   0%   0%   0%   0%", "leave 3.1% of"},
                                                     std::tuple{1, "distinct addresses mean 32.0 |   0%   0%   0%   0%   0% 100%", "leave 100.0% of"}}) {
    INFO("lanes per primitive " << lanes);
    REQUIRE(cli("gen microbench --out " + trace + " --blocks 4 --warps-per-block 2 --iterations 2 --variant baseline " +
                "--active-fraction 1 --lanes-per-primitive " + std::to_string(lanes)).code == 0);
    CliResult r = cli("trace info " + trace);
    REQUIRE(r.code == 0);
    REQUIRE(r.out.find("active lanes       mean 32.0 |   0%   0%   0%   0%   0% 100%") != std::string::npos);
    REQUIRE(r.out.find(expect_distinct) != std::string::npos);
    REQUIRE(r.out.find(expect_left) != std::string::npos);
  }
  // SW-S's WARPSYNC before each round's MATCH.ANY syncs the warp's active lanes: one mask.
  REQUIRE(cli("gen microbench --out " + trace + " --blocks 4 --warps-per-block 2 --iterations 2 --variant sws").code == 0);
  const std::string info = cli("trace info " + trace).out;
  REQUIRE(info.find("WARPSYNC masks named per execution") != std::string::npos);
  REQUIRE(info.find("masks mean  1.0 | 100%   0%   0%   0%   0%   0%") != std::string::npos);
  std::remove(trace.c_str());
}

TEST_CASE("CLI: run writes the JSON document and trace tools read what gen wrote", "[cli]") {
  std::string trace = testing::temp_trace("cli-gen.trace");
  CliResult g = cli("gen microbench --out " + trace + " --blocks 4 --warps-per-block 2 --iterations 2 --variant swb");
  REQUIRE(g.code == 0);
  REQUIRE(cli("trace validate " + trace).out.find("valid") != std::string::npos);
  const std::string info = cli("trace info " + trace).out;
  REQUIRE(info.find("microbench_swb<9>") != std::string::npos);
  // The generator reads the kernel's SASS listing with its encodings: every instruction has control bits.
  REQUIRE(info.find("control bits: ") != std::string::npos);
  REQUIRE(info.find("(sm.dependences=control_bits uses them)") != std::string::npos);
  const std::string dump = cli("trace dump " + trace + " --limit 5").out;
  REQUIRE(dump.find("pc 0x0000") != std::string::npos);
  // LDC R1, c[0x0][0x28] of every sm_90 kernel: stall 1, no barriers.
  REQUIRE(dump.find("[stall 1 write - read - wait 000000]") != std::string::npos);
  std::string json = testing::temp_trace("cli.json");
  CliResult r = cli("run -q --trace " + trace + " --set gpu.sms=4 --json " + json);
  REQUIRE(r.code == 0);
  auto doc = nlohmann::json::parse(slurp(json));
  REQUIRE(doc["schema"] == "atomsim.run/1");
  REQUIRE(doc["kernels"].size() == 1);
  REQUIRE(doc["kernels"][0]["functional_check"]["passed"] == true);
  double sum = 0;
  for (auto& [name, reason] : doc["kernels"][0]["warp_states"]["reasons"].items()) sum += reason["fraction"].get<double>();
  REQUIRE(sum == Approx(1.0));
  REQUIRE(!doc["kernels"][0].contains("ctas"));
  // --ctas: the 4 CTAs, each on an SM, launched before it ended, within the kernel.
  REQUIRE(cli("run -q --ctas --trace " + trace + " --set gpu.sms=4 --json " + json).code == 0);
  doc = nlohmann::json::parse(slurp(json));
  const auto& ctas = doc["kernels"][0]["ctas"];
  REQUIRE(ctas.size() == 4);
  std::set<std::uint64_t> seen;
  for (const auto& c : ctas) {
    seen.insert(c["cta"].get<std::uint64_t>());
    REQUIRE(c["sm"].get<std::uint32_t>() < 4);
    REQUIRE(c["start"].get<std::uint64_t>() < c["end"].get<std::uint64_t>());
    REQUIRE(c["end"].get<std::uint64_t>() <= doc["kernels"][0]["cycles"].get<std::uint64_t>());
  }
  REQUIRE(seen.size() == 4);
  std::remove(json.c_str());
  std::remove(trace.c_str());
}

TEST_CASE("CLI: the heap on huge pages changes no result whatever glibc tunables are set", "[cli]") {
  const std::string trace = tiny_trace();
  auto run_with = [&](const std::string& environment) {
    const std::string json = testing::temp_trace("cli-pages.json");
    const CliResult r = cli_with(environment, "run -q --trace " + trace + " --set gpu.sms=4 --json " + json);
    REQUIRE(r.code == 0);
    std::string doc = slurp(json);
    std::remove(json.c_str());
    return doc;
  };
  // Restarted with the tunable where the kernel gives huge pages on request;
  // with another tunable set, restarted with both; with it set, not restarted.
  const std::string restarted = run_with("env -u GLIBC_TUNABLES");
  REQUIRE(!restarted.empty());
  REQUIRE(run_with("env GLIBC_TUNABLES=glibc.malloc.tcache_count=0") == restarted);
  REQUIRE(run_with("env GLIBC_TUNABLES=glibc.malloc.hugetlb=0") == restarted);
  std::remove(trace.c_str());
}

TEST_CASE("CLI: the H200's grid, where one-lane REDs spread over 94 slices, is the H100's model with its slice count",
          "[cli][compare]") {
  // The H200 has the H100's SMs and clocks and 94 slices to its 80: its
  // one-lane kernels, bound by the slices' atomic units, run 13-19% faster
  // than the h100 configuration says, and within a few percent once the
  // configuration has the H200's slices (docs/validation.md).
  std::string json = testing::temp_trace("compare-h200.json");
  auto error = [&](const std::string& set) {
    CliResult r = cli(std::string("compare -q -d ") + ATOMSIM_SOURCE_DIR +
                      "/traces/datasets/h200/microbench/grid -c h100 --only 'baseline-lpp1-af0.25' " + set + " --json " + json);
    REQUIRE(r.code == 0);
    auto doc = nlohmann::json::parse(slurp(json));
    REQUIRE(doc["kernels"].size() == 1);
    REQUIRE(doc["device"].get<std::string>().find("H200") != std::string::npos);
    return doc["kernels"][0]["cycle_error"].get<double>();
  };
  const double with_80 = error(""), with_94 = error("--set l2.slices=94");
  INFO("80 slices " << with_80 << ", 94 slices " << with_94);
  REQUIRE(with_80 > 0.10);
  REQUIRE(std::abs(with_94) < 0.05);
  std::remove(json.c_str());
}

TEST_CASE("CLI: compare simulates dataset kernels and writes the table, JSON and plot", "[cli][compare]") {
  std::string json = testing::temp_trace("compare.json"), svg = testing::temp_trace("compare.svg");
  CliResult r = cli(std::string("compare -q -d ") + ATOMSIM_SOURCE_DIR + "/traces/datasets/h100/microbench/grid --only 'lpp1-af0.25' " +
                    "--instructions 4 --json " + json + " --plot " + svg);
  REQUIRE(r.code == 0);
  REQUIRE(r.out.find("summary: cycles mean |error|") != std::string::npos);
  REQUIRE(r.out.find("cannot be used") == std::string::npos);  // the generator's kernels have their control bits
  REQUIRE(r.out.find("waits for") != std::string::npos);
  auto doc = nlohmann::json::parse(slurp(json));
  REQUIRE(doc["kernels"].size() == 3);
  bool named_a_wait = false;
  for (const auto& k : doc["kernels"]) {
    // The simulated kernels are the ones the GPU ran: same warp-instruction counts.
    REQUIRE(k["simulated"]["warp_instructions"] == k["measured"]["warp_instructions"]);
    REQUIRE(k["stall_distance"].get<double>() >= 0.0);
    REQUIRE(k["stall_distance"].get<double>() <= 1.0);
    // An instruction waiting on a dependency barrier names instructions that set it, which ran.
    for (const auto& i : k["hottest_instructions"])
      if (i.contains("waits_on") && i["simulated_reason"] == "long_scoreboard") {
        named_a_wait = true;
        REQUIRE(i["waits_on"].size() >= 1);
        for (const auto& w : i["waits_on"]) REQUIRE_FALSE(w["sass"].get<std::string>().empty());
      }
  }
  REQUIRE(named_a_wait);
  REQUIRE(slurp(svg).find("</svg>") != std::string::npos);
  REQUIRE(doc["overrides"].empty());
  REQUIRE(r.out.find("simulated with h100\n") != std::string::npos);
  // What a comparison was simulated with, overrides included, heads its table and its JSON.
  CliResult overridden = cli(std::string("compare -q -d ") + ATOMSIM_SOURCE_DIR + "/traces/datasets/h100/microbench/grid --only 'swb-lpp1-af0.25' " +
                             "--set gpu.lookahead_cycles=4 --set l2.rop_units_per_slice=2 --json " + json);
  REQUIRE(overridden.code == 0);
  REQUIRE(overridden.out.find("simulated with h100 (--set gpu.lookahead_cycles=4, --set l2.rop_units_per_slice=2)\n") !=
          std::string::npos);
  REQUIRE(nlohmann::json::parse(slurp(json))["overrides"] ==
          nlohmann::json::array({"gpu.lookahead_cycles=4", "l2.rop_units_per_slice=2"}));
  // Generated kernels in child processes, two at a time: the same table.
  CliResult parallel = cli(std::string("compare -q -j 2 -d ") + ATOMSIM_SOURCE_DIR +
                           "/traces/datasets/h100/microbench/grid --only 'lpp1-af0.25' --instructions 4");
  REQUIRE(parallel.code == 0);
  REQUIRE(parallel.out == r.out);
  std::remove(json.c_str());
  std::remove(svg.c_str());
  CliResult bad = cli(std::string("compare -d ") + ATOMSIM_SOURCE_DIR + "/traces/datasets/h100/microbench/grid --only nothing-like-this");
  REQUIRE(bad.code == 1);
  REQUIRE(bad.err_lines() == 1);
  REQUIRE(bad.err.find("matches no kernel given") != std::string::npos);
}

// A library kernel of a PyTorch program (workloads/pytorch/scatter_add.py),
// captured on the H100 with three index patterns, grouped by a manifest.
TEST_CASE("CLI: compare simulates kernels captured from any program, with speedups over a named baseline", "[cli][compare]") {
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/regressions/pytorch";
  std::string json = testing::temp_trace("compare-captures.json");
  CliResult r = cli("compare -q --manifest " + dir + "/manifest.json --only 'random|sorted' --json " + json);
  REQUIRE(r.code == 0);
  // Captured before traces carried control bits: the table says they run on registers.
  REQUIRE(r.out.find("note: scatter-add-sorted: the trace's control bits cannot be used; simulated with registers") !=
          std::string::npos);
  auto doc = nlohmann::json::parse(slurp(json));
  REQUIRE(doc["kernels"].size() == 2);
  const auto& sorted = doc["kernels"][1];
  REQUIRE(sorted["id"] == "scatter-add-sorted");
  // Its speedup is over the random pattern, measured and simulated each from their own cycles.
  const double measured = doc["kernels"][0]["measured"]["cycles"].get<double>() / sorted["measured"]["cycles"].get<double>();
  REQUIRE(sorted["measured"]["speedup"].get<double>() == Approx(measured));
  REQUIRE(sorted["simulated"]["speedup"].get<double>() > 0);
  REQUIRE_FALSE(doc["kernels"][0]["measured"].contains("speedup"));  // the baseline itself
  REQUIRE(doc["kernels"][0]["measured"]["cycles"].get<double>() > 1000);
  std::remove(json.c_str());
  // One capture folder alone, named by its path, with its hottest instructions
  // (PC-sample shares against simulated warp-cycles), the same in a child process.
  for (const char* jobs : {"1", "2"}) {
    r = cli(std::string("compare -q --jobs ") + jobs + " --instructions 4 " + dir + "/scatter-add-sorted " + dir +
            "/scatter-add-random --json " + json);
    REQUIRE(r.code == 0);
    REQUIRE(r.out.find("scatter-add-sorted") != std::string::npos);
    REQUIRE(r.out.find("hottest instructions") != std::string::npos);
    doc = nlohmann::json::parse(slurp(json));
    const auto& hot = doc["kernels"][0]["hottest_instructions"];
    REQUIRE(hot.size() >= 4);
    double measured_share = 0, hottest_four = 0;
    bool red_or_load = false;
    for (std::size_t k = 0; k < hot.size(); ++k) {
      const auto& i = hot[k];
      REQUIRE(i["measured_share"].get<double>() >= 0);
      REQUIRE(i["simulated_share"].get<double>() <= 1);
      measured_share += i["measured_share"].get<double>();
      // The measured four hottest come first, hottest first; the model's hottest may follow.
      if (k < 4) hottest_four += i["measured_share"].get<double>();
      if (k > 0 && k < 4) REQUIRE(i["measured_share"].get<double>() <= hot[k - 1]["measured_share"].get<double>());
      const std::string sass = i["sass"];
      red_or_load |= sass.starts_with("REDG") || sass.starts_with("LDG");
    }
    REQUIRE(measured_share <= 1.0 + 1e-9);
    REQUIRE(hottest_four > 0.25);  // four instructions hold much of a memory-bound kernel's samples
    REQUIRE(red_or_load);
  }
  std::remove(json.c_str());

  CliResult both = cli("compare -q -d " + std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/grid " + dir + "/scatter-add-few");
  REQUIRE(both.code == 1);
  REQUIRE(both.err.find("either --dataset or capture folders") != std::string::npos);
  CliResult no_trace = cli("compare -q " + dir);
  REQUIRE(no_trace.code == 1);
  REQUIRE(no_trace.err_lines() == 1);
  REQUIRE(no_trace.err.find("trace/trace.atr: no trace") != std::string::npos);
  CliResult manifest_and_folder = cli("compare -q --manifest " + dir + "/manifest.json " + dir + "/scatter-add-few");
  REQUIRE(manifest_and_folder.code == 1);
  REQUIRE(manifest_and_folder.err.find("not both") != std::string::npos);
  std::string manifest = testing::temp_trace("bad-manifest.json");
  std::ofstream(manifest) << R"({"kernels":[{"id":"a","capture":")" << dir << R"(/scatter-add-few","baseline":"b"}]})";
  CliResult bad_baseline = cli("compare -q --manifest " + manifest);
  REQUIRE(bad_baseline.code == 1);
  REQUIRE(bad_baseline.err.find("baseline 'b' is not a kernel of the manifest") != std::string::npos);
  std::remove(manifest.c_str());
}

TEST_CASE("CLI: compare --against traced sets each kernel beside the launch its trace holds", "[cli][compare]") {
  // The 3DGS regime's training steps get faster launch by launch: the traced
  // second step is not the median of the eleven.
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/workloads";
  const std::string capture = dir + "/splat3d-volume/sws/backward";
  const std::string json = testing::temp_trace("compare-against-traced.json");
  CliResult r = cli("compare -q --saved --against traced " + capture + " --json " + json);
  REQUIRE(r.code == 0);
  REQUIRE(r.out.find("measured cycles: each kernel's traced launch, not the median of its timed launches\n") != std::string::npos);
  const auto measured = nlohmann::json::parse(slurp(json))["kernels"][0]["measured"];
  std::remove(json.c_str());
  const auto traced = nlohmann::json::parse(slurp(capture + "/trace/trace.json"))["kernels"].back();
  const auto timing = nlohmann::json::parse(slurp(capture + "/timing.json"));
  double duration = 0;
  for (const auto& launch : timing["kernels"])
    if (launch["launch"] == traced["launch"]) duration = launch["duration_ns"].get<double>();
  REQUIRE(duration > 0);
  REQUIRE(measured["traced_launch"] == traced["launch"]);
  REQUIRE(measured["time_ns"].get<double>() == duration);
  REQUIRE(measured["cycles"].get<double>() == Approx(duration * measured["sm_clock_mhz"].get<double>() / 1000));
  CliResult median = cli("compare -q --saved " + capture);
  REQUIRE(median.out.find("traced launch") == std::string::npos);
  // Compared with the median, the table says that its launches drift, and what to do; with the traced launch it need not.
  const std::string drift = "splat3d-volume/sws/backward: its timed launches get steadily faster (rank correlation -0.79 with their order";
  REQUIRE(median.out.find(drift) != std::string::npos);
  REQUIRE(median.out.find("--against traced compares with the launch traced") != std::string::npos);
  REQUIRE(r.out.find("get steadily") == std::string::npos);
  // The surface scene's launches scatter (-29..+20%) without a trend: no note.
  CliResult scattered = cli("compare -q --saved " + dir + "/splat3d/warp/backward");
  REQUIRE(scattered.code == 0);
  REQUIRE(scattered.out.find("get steadily") == std::string::npos);
  // A restriction traced after its write launch, with other runner arguments than its timing pass's: no such launch there.
  CliResult other_sequence = cli("compare -q --saved --against traced " + dir + "/sparse/baseline/restrict");
  REQUIRE(other_sequence.code == 1);
  REQUIRE(other_sequence.err_lines() == 1);
  REQUIRE(other_sequence.err.find("sparse/baseline/restrict/timing.json: no timed launch 1 of the kernel") != std::string::npos);
  CliResult grid = cli("compare -q --against traced --dataset " + std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/grid");
  REQUIRE(grid.code == 1);
  REQUIRE(grid.err.find("--against traced compares with the launch a capture traced") != std::string::npos);
  CliResult unknown = cli("compare -q --saved --against mean " + capture);
  REQUIRE(unknown.code == 1);
  REQUIRE(unknown.err == "atomsim: error: --against 'mean': give median or traced\n");
}

TEST_CASE("CLI: compare --saved sets captures' saved simulations beside their measurements without their traces", "[cli][compare]") {
  // The full-size dataset keeps no traces; each folder keeps the comparison made where it was traced.
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/workloads";
  const std::string json = testing::temp_trace("compare-saved.json");
  // Without --saved, a capture needs its trace (a copy without it, whatever this checkout keeps).
  const std::string untraced_dir = testing::temp_trace("untraced-capture");
  std::filesystem::remove_all(untraced_dir);
  std::filesystem::copy(dir + "/mpm/3d-baseline/p2g", untraced_dir, std::filesystem::copy_options::recursive);
  std::filesystem::remove(untraced_dir + "/trace/trace.atr");
  CliResult untraced = cli("compare -q " + untraced_dir);
  std::filesystem::remove_all(untraced_dir);
  REQUIRE(untraced.code != 0);
  REQUIRE(untraced.err == "atomsim: error: " + untraced_dir + "/trace/trace.atr: no trace (capture --pass count,trace into DIR/trace)\n");
  CliResult r = cli("compare -q --saved --manifest " + dir + "/splat3d-manifest.json --json " + json);
  REQUIRE(r.code == 0);
  REQUIRE(r.out.find("not simulated now") != std::string::npos);
  const auto doc = nlohmann::json::parse(slurp(json));
  std::remove(json.c_str());
  REQUIRE(doc["kernels"].size() == 4);
  const auto saved = [&](const std::string& id) {
    return nlohmann::json::parse(slurp(dir + "/" + id + "/compare.json"))["kernels"][0];
  };
  // Which simulator made each saved comparison, counted per revision.
  std::map<std::string, int> revisions;
  for (const auto& k : doc["kernels"]) ++revisions[saved(k["id"].get<std::string>())["simulated"].value("revision", "")];
  for (const auto& [revision, count] : revisions) {
    const std::string line = "note: " + std::to_string(count) + " kernel(s) simulated by " +
                             (revision.empty() ? "a simulator that did not record its revision" : "atomsim " + revision);
    INFO(line);
    REQUIRE(r.out.find(line) != std::string::npos);
  }
  const auto& baseline = doc["kernels"][0];
  REQUIRE(baseline["id"] == "splat3d/baseline/backward");
  for (std::size_t i = 0; i < doc["kernels"].size(); ++i) {
    const auto& k = doc["kernels"][i];
    const auto own = saved(k["id"].get<std::string>());
    INFO(k["id"]);
    REQUIRE(k["simulated"]["cycles"] == own["simulated"]["cycles"]);
    REQUIRE(k["measured"]["cycles"].get<double>() == Approx(own["measured"]["cycles"].get<double>()));
    REQUIRE(k["stall_distance"].get<double>() == Approx(own["stall_distance"].get<double>()));
    if (i == 0) continue;
    // Speedups over the baseline, from both kernels' saved simulations.
    REQUIRE(k["simulated"]["speedup"].get<double>() ==
            Approx(baseline["simulated"]["cycles"].get<double>() / k["simulated"]["cycles"].get<double>()));
  }
  CliResult with_instructions = cli("compare -q --saved --instructions 4 --manifest " + dir + "/splat3d-manifest.json");
  REQUIRE(with_instructions.code == 1);
  REQUIRE(with_instructions.err_lines() == 1);
  REQUIRE(with_instructions.err.find("leave out --instructions") != std::string::npos);
  // A saved simulation ran with what it ran with: an override would change nothing.
  CliResult with_set = cli("compare -q --saved " + dir + "/splat3d/warp/backward --set gpu.lookahead_cycles=8");
  REQUIRE(with_set.code == 1);
  REQUIRE(with_set.err_lines() == 1);
  REQUIRE(with_set.err.find("leave out --set") != std::string::npos);
  CliResult other_config = cli("compare -q --saved -c rtx4090 " + dir + "/splat3d/warp/backward");
  REQUIRE(other_config.code == 1);
  REQUIRE(other_config.err.find("simulated with 'h100', not 'rtx4090'") != std::string::npos);
  // Compared now, then read back: the comparison names the revision that simulated it.
  const std::string copy = testing::temp_trace("saved-copy");
  std::filesystem::remove_all(copy);
  std::filesystem::copy(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/regressions/pytorch/scatter-add-few", copy,
                        std::filesystem::copy_options::recursive);
  REQUIRE(cli("compare -q " + copy + " --json " + copy + "/compare.json").code == 0);
  const std::string revision = nlohmann::json::parse(slurp(copy + "/compare.json"))["kernels"][0]["simulated"]["revision"];
  REQUIRE_FALSE(revision.empty());
  CliResult again = cli("compare -q --saved " + copy);
  // Simulated with an override, it is not the configuration's own simulation.
  REQUIRE(cli("compare -q " + copy + " --json " + copy + "/compare.json --set gpu.lookahead_cycles=4").code == 0);
  CliResult overridden = cli("compare -q --saved " + copy);
  // An override that sets what the configuration holds leaves it the configuration's own.
  REQUIRE(cli("compare -q " + copy + " --json " + copy + "/compare.json --set gpu.lookahead_cycles=1").code == 0);
  CliResult same_as_config = cli("compare -q --saved " + copy);
  std::filesystem::remove_all(copy);
  REQUIRE(same_as_config.code == 0);
  REQUIRE(again.code == 0);
  REQUIRE(again.out.find("note: 1 kernel(s) simulated by atomsim " + revision + "\n") != std::string::npos);
  REQUIRE(overridden.code == 1);
  REQUIRE(overridden.err_lines() == 1);
  REQUIRE(overridden.err.find("compare.json: simulated with --set gpu.lookahead_cycles=4, not with 'h100' as it is") !=
          std::string::npos);
  // A capture never compared: the folder of the measurements alone.
  const std::string bare = testing::temp_trace("saved-bare");
  std::filesystem::create_directories(bare + "/trace");
  for (const char* f : {"timing.json", "stall.json", "trace/trace.json", "trace/count.json.zst"})
    std::filesystem::copy_file(dir + "/splat3d/warp/backward/" + f, bare + "/" + f);
  CliResult never = cli("compare -q --saved " + bare);
  std::ofstream(bare + "/compare.json") << R"({"config": "h100", "kernels": [{"id": "x", "simulated": {"cycles": 1}}]})";
  CliResult damaged = cli("compare -q --saved " + bare);
  std::filesystem::remove_all(bare);
  REQUIRE(never.code == 1);
  REQUIRE(never.err_lines() == 1);
  REQUIRE(never.err.find("compare.json: no saved comparison") != std::string::npos);
  REQUIRE(damaged.code == 1);
  REQUIRE(damaged.err_lines() == 1);
  REQUIRE(damaged.err.find("compare.json: not an atomsim comparison") != std::string::npos);
}

TEST_CASE("CLI: trace rejoin reruns a saved join and names bad inputs in one line", "[cli][join]") {
  const std::string fixture = std::string(ATOMSIM_SOURCE_DIR) + "/tests/data/join-input-sws-lpp32-af0.5.json";
  CliResult r = cli("trace rejoin " + fixture);
  REQUIRE(r.code == 0);
  REQUIRE(r.out.find("joined 8 warps into") != std::string::npos);
  r = cli("trace rejoin " + fixture + " --warp 3");
  REQUIRE(r.code == 0);
  REQUIRE(r.out.find("pc 0x06e0") != std::string::npos);
  r = cli("trace rejoin " + fixture + " --warp 8");
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("no warp 8") != std::string::npos);
  r = cli("trace rejoin /nonexistent.json");
  REQUIRE(r.code == 1);
  REQUIRE(r.err.find("/nonexistent.json: cannot open") != std::string::npos);
  std::string bad = testing::temp_trace("bad-join.json");
  std::ofstream(bad) << R"({"schema":"atomsim-join-input-1","kernel":"k","sass":[[0,"EXIT"]],"warps":[{"lanes":1,"events":[]}]})";
  r = cli("trace rejoin " + bad);  // a lane that never reports its exit cannot be joined
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find(bad + ": warp 0: warp join") != std::string::npos);
  std::remove(bad.c_str());
}

TEST_CASE("CLI: buffers too small for the largest packet are refused up front and the smallest allowed runs", "[cli][errors]") {
  std::string trace = tiny_trace();
  const std::string request = "(5 flits: a line of 4 sectors each written in part, or an atomic request updating a whole line)",
                    reply = "(4 flits: a line of 4 sectors)";
  for (const auto& [set, packet] : {std::pair<const char*, const std::string&>{"l2.input_buffer_flits=4", request},
                                    {"l2.input_buffer_flits=1", request}, {"interconnect.request.input_buffer_flits=1", request},
                                    {"interconnect.reply.input_buffer_flits=3", reply}}) {
    INFO(set);
    CliResult r = cli("run -q --trace " + trace + " --set " + set);
    CHECK(r.code == 1);
    CHECK(r.err_lines() == 1);
    const std::string key = std::string(set).substr(0, std::string(set).find('='));
    CHECK(r.err.find("key '" + key + "'") != std::string::npos);
    CHECK(r.err.find("cannot hold the largest packet sent to it " + packet) != std::string::npos);
  }
  // Toward the slices 5 flits hold any packet (a whole line written in part:
  // its byte masks and the bytes packed; a line's atomic request: its header
  // and its sectors), back 4: every link makes progress and every update arrives.
  CliResult r = cli("run -q --trace " + trace +
                    " --set l2.input_buffer_flits=5 --set interconnect.request.input_buffer_flits=5"
                    " --set interconnect.reply.input_buffer_flits=4 --set interconnect.request.output_queue_flits=5"
                    " --set interconnect.reply.output_queue_flits=4");
  CHECK(r.code == 0);
  CHECK(r.out.find("matches the trace") != std::string::npos);
  CHECK(cli("run -q --trace " + trace + " --set l1.sector_bytes=48").err.find("must divide 'l1.line_bytes'") != std::string::npos);
  CHECK(cli("run -q --trace " + trace + " --set l2.slice_bytes=1024").err.find("smaller than one set") != std::string::npos);
}
