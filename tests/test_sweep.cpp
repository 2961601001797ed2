// `atomsim sweep`: spec validation, the local pool, resumption after kills,
// failed points, the tidy table and plots. The Slurm backend is tested by
// tests/sweep_slurm.sh against a real single-node Slurm.
#include <catch2/catch.hpp>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"

namespace fs = std::filesystem;
using atomsim::testing::CommandResult;
using atomsim::testing::slurp;

namespace {

CommandResult atomsim_cli(const std::string& args) {
  return atomsim::testing::run_command(std::string(ATOMSIM_BINARY) + " " + args);
}

// A fresh folder for one test.
std::string scratch(const std::string& name) {
  fs::path dir = atomsim::testing::temp_trace("sweep-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// Two axes over a small generated microbenchmark (3 kernels per point).
const char* kSmallSpec = R"([sweep]
name = "small"
configs = ["h100"]
baseline = "baseline"

[axes]
"l2.rop_units_per_slice" = [1, 2]
"gpu.sms" = [8, 16]

[[trace]]
name = "mb"
microbench = { variant = "all", blocks = 16, warps_per_block = 4, iterations = 2, active_fraction = 0.5 }
)";

std::size_t count_results(const std::string& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir + "/points")) n += e.path().extension() == ".json";
  return n;
}

}  // namespace

TEST_CASE("sweep spec: every error is one line naming the spec file and line and key and nothing runs", "[sweep][errors]") {
  const std::string dir = scratch("spec-errors");
  const std::string good_trace = "[[trace]]\nname = \"mb\"\nmicrobench = { blocks = 4 }\n";
  struct Case {
    std::string spec;
    std::string expected;  // a regular expression on the error line
  };
  const std::vector<Case> cases = {
      {"[sweep]\nname = \"x\"\n[axes]\n\"l2.rop_unitz\" = [1, 2]\n" + good_trace,
       R"(spec.toml:4: unknown key 'l2.rop_unitz')"},
      {"[sweep]\nname = \"x\"\n[axes]\n\"l2.rop_units_per_slice\" = [1,\n 0]\n" + good_trace,
       R"(spec.toml:5: axis 'l2.rop_units_per_slice' = 0: .*out of range)"},
      {"[sweep]\nname = \"x\"\n[axes]\n\"gpu.sms\" = [1.5]\n" + good_trace, R"(spec.toml:4: axis 'gpu.sms' = 1.5: .*integer)"},
      {"[sweep]\nname = \"x\"\n[axes]\n\"l2.slices\" = [7]\n" + good_trace,
       R"(spec.toml:4: axis 'l2.slices' = 7: .*multiple of 'l2.partitions')"},
      {"[sweep]\nname = \"x\"\ncombine = \"zip\"\n[axes]\n\"gpu.sms\" = [8, 16]\n\"l2.slices\" = [16]\n" + good_trace,
       R"(spec.toml:6: axis 'l2.slices' has 1 values but 'gpu.sms' has 2)"},
      {"[sweep]\nname = \"x\"\nwidget = 1\n" + good_trace, R"(spec.toml:3: unknown key 'widget' in \[sweep\])"},
      {"[sweep]\nname = \"x\"\nconfigs = [\"h900\"]\n" + good_trace, R"(spec.toml:3: configuration 'h900')"},
      {"[sweep]\nname = \"x\"\n[[trace]]\npath = \"missing/*.trace\"\n", R"(spec.toml:4: trace path 'missing/\*.trace' matches no file)"},
      {"[sweep]\nname = \"x\"\n[[trace]]\nname = \"m\"\nmicrobench = { blocks = 4, colour = 2 }\n",
       R"(spec.toml:5: unknown key 'colour' in microbench)"},
      {"[sweep]\nname = \"x\"\n[[point]]\nname = \"p\"\nset = { \"sm.scheduler\" = \"random\" }\n" + good_trace,
       R"(spec.toml:5: setting 'sm.scheduler' = "random": .*not one of)"},
      {"[sweep]\nname = \"x\"\n[[trace]]\nname = \"m\"\nmicrobench = { blocks = 4 }\nlabels = { cycles = 1 }\n",
       R"(spec.toml:6: label 'cycles': .*not already a column)"},
      {"[sweep]\nname = \"x\"\n[[trace]]\nname = \"m\"\nmicrobench = { blocks = 4 }\nlabels = { threshold = [1, 2] }\n",
       R"(spec.toml:6: label 'threshold' must be a number, a boolean or a string)"},
      {"[sweep\nname = \"x\"\n", R"(spec.toml:1: TOML syntax error)"},
      {"[sweep]\nname = \"x\"\n", R"(spec.toml: needs at least one \[\[trace\]\])"},
  };
  for (const auto& c : cases) {
    INFO(c.spec);
    write(dir + "/spec.toml", c.spec);
    CommandResult r = atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/out");
    CHECK(r.code == 255);
    CHECK(r.err_lines() == 1);
    CHECK(std::regex_search(r.err, std::regex(c.expected)));
    CHECK(count_results(dir + "/out") == 0);
    CHECK_FALSE(fs::exists(dir + "/out/plan.json"));
  }

  // A damaged trace file is refused up front, naming the trace and the byte.
  const std::string trace = dir + "/cut.trace";
  atomsim_cli("gen microbench --out " + trace + " --blocks 4 --variant baseline");
  fs::resize_file(trace, fs::file_size(trace) / 2);
  write(dir + "/spec.toml", "[sweep]\nname = \"x\"\n[[trace]]\npath = \"cut.trace\"\n");
  CommandResult r = atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/out");
  CHECK(r.code == 255);
  CHECK(std::regex_search(r.err, std::regex(R"(spec.toml:4: trace 'cut.trace': .*byte offset)")));
}

TEST_CASE("sweep run: a local pool runs every point once and a second run skips them and tables are deterministic", "[sweep]") {
  const std::string dir = scratch("local");
  write(dir + "/spec.toml", kSmallSpec);
  CommandResult r = atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/a -j 2");
  REQUIRE(r.code == 0);
  REQUIRE(count_results(dir + "/a") == 4);
  const auto first_mtime = fs::last_write_time(*fs::directory_iterator(dir + "/a/points"));

  r = atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/a -j 2");
  REQUIRE(r.code == 0);
  CHECK(r.err.find("0/0 points") != std::string::npos);
  CHECK(r.err.find("4 finished before") != std::string::npos);
  CHECK(fs::last_write_time(*fs::directory_iterator(dir + "/a/points")) == first_mtime);

  r = atomsim_cli("sweep status " + dir + "/a");
  CHECK(r.out.find("4 points: 4 done, 0 running, 0 failed, 0 pending") != std::string::npos);

  // One worker in another folder: the same table, byte for byte.
  REQUIRE(atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/b -j 1").code == 0);
  REQUIRE(atomsim_cli("sweep collect " + dir + "/a").code == 0);
  REQUIRE(atomsim_cli("sweep collect " + dir + "/b").code == 0);
  const std::string csv = slurp(dir + "/a/results.csv");
  CHECK(csv == slurp(dir + "/b/results.csv"));
  CHECK(slurp(dir + "/a/results.json") == slurp(dir + "/b/results.json"));
  REQUIRE(atomsim_cli("sweep collect " + dir + "/a").code == 0);
  CHECK(csv == slurp(dir + "/a/results.csv"));

  // The table: a row per (point, kernel), axes as columns, speedups over the baseline kernel.
  auto table = nlohmann::json::parse(slurp(dir + "/a/results.json"));
  REQUIRE(table["rows"].size() == 12);
  const auto& columns = table["columns"];
  for (const char* c : {"l2.rop_units_per_slice", "gpu.sms", "cycles", "speedup", "stall.lg_throttle",
                        "atomics.l2_ops_processed", "util.l2_slice.rop_utilization", "avg.lg_queue.occupancy"})
    CHECK(std::find(columns.begin(), columns.end(), c) != columns.end());
  std::set<std::string> points;
  for (const auto& row : table["rows"]) {
    points.insert(row["point"].get<std::string>() + "/" + row["kernel"].get<std::string>());
    CHECK(row["status"] == "done");
    CHECK(row["cycles"].get<double>() > 0);
    if (row["kernel"].get<std::string>().find("baseline") != std::string::npos) CHECK(row["speedup"] == 1.0);
    else CHECK(row["speedup"].get<double>() > 0);
  }
  CHECK(points.size() == 12);
  // More SMs finish the same work sooner.
  auto cycles_at = [&](int sms, const std::string& kernel) {
    for (const auto& row : table["rows"])
      if (row["gpu.sms"] == sms && row["l2.rop_units_per_slice"] == 2 &&
          row["kernel"].get<std::string>().find(kernel) != std::string::npos)
        return row["cycles"].get<double>();
    return 0.0;
  };
  CHECK(cycles_at(16, "baseline") < cycles_at(8, "baseline"));
}

// Traces that differ in a kernel parameter say so with labels: each label is a
// column, plotted against like an axis, and speedups still come from the
// baseline kernel of the same trace.
TEST_CASE("sweep run: trace labels become columns that rows are plotted against", "[sweep]") {
  const std::string dir = scratch("labels");
  std::string spec = "[sweep]\nname = \"labels\"\nbaseline = \"baseline\"\n";
  for (int threshold : {4, 24})
    spec += fmt::format(
        "[[trace]]\nname = \"mb-t{0}\"\nlabels = {{ threshold = {0}, shape = \"same-word\" }}\n"
        "microbench = {{ variant = \"all\", blocks = 16, warps_per_block = 4, iterations = 2, active_fraction = 0.5, "
        "lanes_per_primitive = 32, threshold = {0} }}\n",
        threshold);
  write(dir + "/spec.toml", spec);
  REQUIRE(atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/out -j 2").code == 0);
  REQUIRE(atomsim_cli("sweep collect " + dir + "/out").code == 0);
  auto table = nlohmann::json::parse(slurp(dir + "/out/results.json"));
  const auto& columns = table["columns"];
  REQUIRE(std::find(columns.begin(), columns.end(), "threshold") != columns.end());
  REQUIRE(std::find(columns.begin(), columns.end(), "shape") != columns.end());
  std::map<std::string, std::set<int>> thresholds_of;  // kernel -> thresholds
  for (const auto& row : table["rows"]) {
    CHECK(row["shape"] == "same-word");
    thresholds_of[row["kernel"]].insert(row["threshold"].get<int>());
    if (row["kernel"].get<std::string>().find("baseline") != std::string::npos) CHECK(row["speedup"] == 1.0);
  }
  CHECK(thresholds_of.size() == 3);
  for (const auto& [kernel, thresholds] : thresholds_of) CHECK(thresholds == std::set<int>{4, 24});
  // With 16 active lanes per RED on one word, SW-S reduces at threshold 4 and not at 24: different kernels.
  auto cycles = [&](int threshold) {
    for (const auto& row : table["rows"])
      if (row["threshold"] == threshold && row["kernel"].get<std::string>().find("sws") != std::string::npos)
        return row["cycles"].get<double>();
    return 0.0;
  };
  CHECK(cycles(24) > 0);
  CHECK(cycles(24) != cycles(4));

  CommandResult r = atomsim_cli("sweep plot " + dir + "/out --x threshold --y speedup --by variant --out " + dir + "/t.svg");
  REQUIRE(r.code == 0);
  // One line per variant across the two traces, not one per trace: three legend entries.
  const std::string svg = slurp(dir + "/t.svg");
  std::size_t lines = 0;
  for (auto at = svg.find("\">variant="); at != std::string::npos; at = svg.find("\">variant=", at + 1)) ++lines;
  CHECK(lines == 3);
  CHECK(svg.find("mb-t4") == std::string::npos);
}

TEST_CASE("sweep run: killed at any moment it loses only the points in flight and a re-run completes them", "[sweep]") {
  const std::string dir = scratch("kill");
  // Points of about half a second each.
  std::string spec = kSmallSpec;
  spec = std::regex_replace(spec, std::regex("blocks = 16, warps_per_block = 4"), "blocks = 64, warps_per_block = 8");
  spec = std::regex_replace(spec, std::regex(R"("gpu.sms" = \[8, 16\])"), R"("gpu.sms" = [8, 16, 24])");
  write(dir + "/spec.toml", spec);
  REQUIRE(atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/reference -j 2").code == 0);
  REQUIRE(atomsim_cli("sweep collect " + dir + "/reference").code == 0);

  auto wait_until = [](const std::function<bool()>& ready) {
    for (int i = 0; i < 600 && !ready(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return ready();
  };
  auto running_pids = [&](const std::string& out) {
    std::vector<long> pids;
    for (const auto& e : fs::directory_iterator(out + "/running"))
      if (e.path().filename().string().find(".partial") == std::string::npos) {
        try {
          pids.push_back(nlohmann::json::parse(slurp(e.path().string()))["pid"].get<long>());
        } catch (const std::exception&) {
        }
      }
    return pids;
  };

  SECTION("the whole sweep is killed (SIGKILL to the pool and its workers)") {
    const std::string out = dir + "/killed";
    // setsid: the pool and its workers in a process group of their own, killed at once.
    std::string command = "setsid " + std::string(ATOMSIM_BINARY) + " sweep run " + dir + "/spec.toml --out " + out +
                          " -j 2 >/dev/null 2>&1 & echo $!";
    FILE* p = ::popen(command.c_str(), "r");
    long leader = 0;
    REQUIRE(std::fscanf(p, "%ld", &leader) == 1);
    ::pclose(p);
    REQUIRE(wait_until([&] { return fs::exists(out + "/points") && count_results(out) >= 1 && !running_pids(out).empty(); }));
    ::kill(-static_cast<pid_t>(leader), SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const std::size_t survived = count_results(out);
    CHECK(survived < 6);
    // Every result file that exists is whole.
    for (const auto& e : fs::directory_iterator(out + "/points"))
      if (e.path().extension() == ".json") CHECK_NOTHROW(nlohmann::json::parse(slurp(e.path().string())).at("status"));
  }
  SECTION("one worker is killed; the pool goes on and leaves that point pending") {
    const std::string out = dir + "/worker";
    std::string command = std::string(ATOMSIM_BINARY) + " sweep run " + dir + "/spec.toml --out " + out +
                          " -j 1 >/dev/null 2>" + out + ".err; echo $? > " + out + ".status";
    std::thread pool([&] { std::system(command.c_str()); });
    REQUIRE(wait_until([&] { return fs::exists(out + "/running") && !running_pids(out).empty(); }));
    ::kill(static_cast<pid_t>(running_pids(out).front()), SIGKILL);
    pool.join();
    CHECK(slurp(out + ".status") == "130\n");
    CHECK(slurp(out + ".err").find("1 points left pending") != std::string::npos);
    CHECK(count_results(out) == 5);
  }
  const std::string out = fs::exists(dir + "/killed") ? dir + "/killed" : dir + "/worker";
  CommandResult again = atomsim_cli("sweep run " + dir + "/spec.toml --out " + out + " -j 2");
  CHECK(again.code == 0);
  CHECK(count_results(out) == 6);
  REQUIRE(atomsim_cli("sweep collect " + out).code == 0);
  CHECK(slurp(out + "/results.csv") == slurp(dir + "/reference/results.csv"));
}

TEST_CASE("sweep run: a point that fails is recorded with its error and the others go on", "[sweep][errors]") {
  const std::string dir = scratch("failed");
  for (const char* name : {"good", "bad"})
    REQUIRE(atomsim_cli(fmt::format("gen microbench --out {}/{}.trace --blocks 8 --warps-per-block 4 --iterations 2 "
                                    "--variant baseline", dir, name))
                .code == 0);
  // Damaged inside a chunk: the trace opens, its records do not decode.
  {
    std::fstream f(dir + "/bad.trace", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(dir + "/bad.trace") / 2));
    f.write(std::string(64, '\xff').data(), 64);
  }
  write(dir + "/spec.toml", "[sweep]\nname = \"f\"\n[axes]\n\"gpu.sms\" = [4, 8]\n[[trace]]\npath = \"*.trace\"\n");
  CommandResult r = atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/out -j 2");
  CHECK(r.code == 2);  // two failed points
  CHECK(r.err.find("2 of 4 points failed") != std::string::npos);
  r = atomsim_cli("sweep status " + dir + "/out");
  CHECK(r.out.find("4 points: 2 done, 0 running, 2 failed, 0 pending") != std::string::npos);
  CHECK(std::regex_search(r.out, std::regex(R"(bad.trace on h100 gpu.sms=4: .*bad.trace: byte offset \d+: corrupt)")));
  REQUIRE(atomsim_cli("sweep collect " + dir + "/out").code == 0);
  const std::string csv = slurp(dir + "/out/results.csv");
  CHECK(std::regex_search(csv, std::regex(R"(,bad.trace,.*,failed,.*corrupt)")));
  // Failed points are finished: a re-run skips them unless asked.
  CHECK(atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/out").code == 2);
  r = atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/out --retry-failed");
  CHECK(r.code == 2);
  CHECK(r.err.find("2/2 points") != std::string::npos);
}

TEST_CASE("sweep plot: lines and heatmaps with labelled axes and ambiguous choices refused", "[sweep]") {
  const std::string dir = scratch("plot");
  write(dir + "/spec.toml", kSmallSpec);
  REQUIRE(atomsim_cli("sweep run " + dir + "/spec.toml --out " + dir + "/out -j 2").code == 0);
  const std::string out = dir + "/out";

  CommandResult r = atomsim_cli("sweep plot " + out + " --x gpu.sms --y speedup --by l2.rop_units_per_slice --where "
                                "'kernel=microbench_swb<9>' --out " + dir + "/lines.svg");
  REQUIRE(r.code == 0);
  std::string svg = slurp(dir + "/lines.svg");
  CHECK(svg.find("<polyline") != std::string::npos);
  CHECK(svg.find("speedup over the baseline variant (\u00d7)") != std::string::npos);
  CHECK(svg.find(">gpu.sms<") != std::string::npos);
  CHECK(svg.find("l2.rop_units_per_slice=1") != std::string::npos);

  // Without a choice of kernel, the kernels become lines of their own.
  REQUIRE(atomsim_cli("sweep plot " + out + " --x gpu.sms --y lg_throttle --where l2.rop_units_per_slice=1 --out " + dir +
                      "/kernels.svg").code == 0);
  svg = slurp(dir + "/kernels.svg");
  CHECK(svg.find("lg_throttle (fraction of warp-cycles)") != std::string::npos);
  CHECK(svg.find("microbench_sws&lt;9&gt;") != std::string::npos);

  REQUIRE(atomsim_cli("sweep plot " + out + " --x gpu.sms --y cycles --by l2.rop_units_per_slice --heatmap --where "
                      "'variant=microbench_baseline<9>' --out " + dir + "/heat.svg").code == 0);
  svg = slurp(dir + "/heat.svg");
  CHECK(std::count(svg.begin(), svg.end(), '\n') > 20);
  CHECK(svg.find("simulated cycles") != std::string::npos);

  r = atomsim_cli("sweep plot " + out + " --x gpu.sms --y cycles --out " + dir + "/x.svg");
  CHECK(r.code == 1);
  CHECK(r.err.find("rows also differ in 'l2.rop_units_per_slice'") != std::string::npos);
  r = atomsim_cli("sweep plot " + out + " --x gpu.sms --y bogus --out " + dir + "/x.svg");
  CHECK(r.code == 1);
  CHECK(r.err.find("--y 'bogus' is not a column") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/x.svg"));
}
