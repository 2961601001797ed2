#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"
#include "sim/compare/measured.hpp"
#include "sim/compare/measured_costs.hpp"
#include "tools/capture/counters_document.hpp"
#include "tools/capture/settings.hpp"
#include "traces/sass.hpp"

using namespace atomsim;
namespace fs = std::filesystem;

namespace {

// Nsight Compute's two CSV pages as `ncu --import R --csv --page details|source
// --print-source sass` print them, cut to the columns the counters pass reads
// and a few the pages have beside them.
const char* kDetails =
    "\"ID\",\"Process ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n"
    "\"0\",\"7\",\"_Z1kv\",\"Command line profiler metrics\",\"l1tex__data_pipe_lsu_wavefronts_mem_shared.sum\",\"\",\"3,056,675\"\n"
    "\"0\",\"7\",\"_Z1kv\",\"Command line profiler metrics\",\"sm__cycles_elapsed.max\",\"cycle\",\"263,584\"\n"
    "\"0\",\"7\",\"_Z1kv\",\"Command line profiler metrics\",\"sm__inst_executed_pipe_adu.sum\",\"\",\"5,076,247\"\n"
    "\"0\",\"7\",\"_Z1kv\",\"Command line profiler metrics\",\"smsp__inst_executed.sum\",\"inst\",\"20,178,728\"\n"
    "\"0\",\"7\",\"_Z1kv\",\"Source Counters\",\"Branch Instructions\",\"inst\",\"1,061,474\"\n";

const char* kSource =
    "\"Kernel Name\",\"_Z1kv\"\n"
    "\"Address\",\"Source\",\"# Samples\",\"Instructions Executed\",\"L1 Wavefronts Shared\",\"L1 Wavefronts Shared Ideal\"\n"
    "\"0x7feb00001000\",\"      LDS R4, [R7]\",\"3\",\"163,840\",\"517,734\",\"163,840\"\n"
    "\"0x7feb00001010\",\"      MATCH.ANY R5, R26\",\"0\",\"163,840\",\"0\",\"0\"\n"
    "\"0x7feb00001020\",\"@!P0  BAR.SYNC.DEFER_BLOCKING 0x0\",\"1\",\"32,784\",\"0\",\"0\"\n"
    "\"0x7feb00001030\",\"      LDC.64 R2, c[0x0][0x210]\",\"0\",\"45,073\",\"0\",\"0\"\n"
    "\"0x7feb00001040\",\"      STS [R4], RZ\",\"0\",\"0\",\"0\",\"0\"\n";

// The program the pages describe, as a trace lists it.
trace::KernelInfo program() {
  trace::KernelInfo k;
  k.name = "_Z1kv";
  for (const char* text : {"LDS R4, [R7]", "MATCH.ANY R5, R26", "BAR.SYNC.DEFER_BLOCKING 0x0", "LDC.64 R2, c[0x0][0x210]",
                           "STS [R4], RZ"})
    k.program.push_back(trace::parse_sass_instruction(text, 16 * k.program.size()));
  return k;
}

fs::path write_counters(const std::string& name, const nlohmann::json& doc) {
  fs::path path = testing::temp_trace(name + "-counters.json");
  std::ofstream(path) << doc.dump();
  return path;
}

}  // namespace

TEST_CASE("Counters pass: Nsight Compute's pages become counters.json", "[capture][counters]") {
  REQUIRE(capture::split_csv_record("\"a,b\",c,\"d \"\"e\"\"\",") == std::vector<std::string>{"a,b", "c", "d \"e\"", ""});
  const auto doc = capture::counters_document(kDetails, kSource);
  REQUIRE(doc["kernel"] == "_Z1kv");
  REQUIRE(doc["metrics"]["sm__inst_executed_pipe_adu.sum"].get<double>() == 5076247);
  REQUIRE(doc["metrics"].size() == capture::counter_metrics().size());
  // Never-executed instructions are left out; offsets from the function's first instruction; guards dropped.
  REQUIRE(doc["pcs"].size() == 4);
  REQUIRE(doc["pcs"][0]["pc_offset"] == 0);
  REQUIRE(doc["pcs"][0]["shared_wavefronts"].get<double>() == 517734);
  REQUIRE(doc["pcs"][2]["pc_offset"] == 0x20);
  REQUIRE(doc["pcs"][2]["sass"] == "BAR.SYNC.DEFER_BLOCKING 0x0");

  const auto failure = [](const std::string& details, const std::string& source) {
    try {
      capture::counters_document(details, source);
    } catch (const capture::CaptureError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string no_adu = kDetails;
  no_adu.erase(no_adu.find("\"0\",\"7\",\"_Z1kv\",\"Command line profiler metrics\",\"sm__inst_executed_pipe_adu"));
  REQUIRE(failure(no_adu, kSource) == "counters pass: Nsight Compute reported no sm__inst_executed_pipe_adu.sum");
  REQUIRE(failure(kDetails, "\"Kernel Name\",\"k\"\n") == "counters pass: Nsight Compute's source page has no table");
  std::string renamed = kSource;
  renamed.replace(renamed.find("Instructions Executed"), 21, "Executed");
  REQUIRE(failure(kDetails, renamed) == "counters pass: Nsight Compute's source page lacks 'Instructions Executed'");
  std::string bad = kSource;
  bad.replace(bad.find("517,734"), 7, "many");
  REQUIRE(failure(kDetails, bad) == "counters pass: shared wavefronts at 0x7feb00001000 is 'many', not a number");
  // A kernel without shared memory: the page has no wavefront columns.
  const std::string no_shared =
      "\"Address\",\"Source\",\"Instructions Executed\"\n\"0x100\",\"MATCH.ANY R5, R26\",\"64\"\n";
  const auto plain = capture::counters_document(kDetails, no_shared);
  REQUIRE(plain["pcs"].size() == 1);
  REQUIRE(plain["pcs"][0]["shared_wavefronts"] == 0);
}

// The source page as Nsight Compute 2025.3 printed it for a node of a
// two-kernel CUDA graph on the H200 (cut to its first columns).
TEST_CASE("Count pass: a graph node's source page under Nsight Compute becomes per-pc counts", "[capture][counters]") {
  const std::string source =
      "\"Kernel Name\",\"histogram(const unsigned int *, const float *, float *, int, int)\",\n"
      "\"Address\",\"Source\",\"Warp Stall Sampling (All Samples)\",\"# Samples\",\"Instructions Executed\","
      "\"Thread Instructions Executed\",\"Predicated-On Thread Instructions Executed\",\"Avg. Threads Executed\"\n"
      "\"0x7f5b4b7a0b00\",\"      LDC R1, c[0x0][0x28]\",\"12\",\"12\",\"2112\",\"67584\",\"67584\",\"32\"\n"
      "\"0x7f5b4b7a0b10\",\"@P0   EXIT\",\"0\",\"0\",\"2,112\",\"67,584\",\"1,024\",\"32\"\n"
      "\"0x7f5b4b7a0b20\",\"      BRA 0x7f5b4b7a0b20\",\"0\",\"0\",\"0\",\"0\",\"0\",\"0\"\n";
  const auto doc = capture::source_counts_document(source);
  REQUIRE(doc["pcs"].size() == 2);  // the never-executed BRA is left out
  REQUIRE(doc["pcs"][1]["pc_offset"] == 0x10);
  REQUIRE(doc["pcs"][1]["warp_instructions"] == 2112);
  REQUIRE(doc["pcs"][1]["thread_instructions"] == 67584);
  REQUIRE(doc["pcs"][1]["thread_instructions_pred_on"] == 1024);
  REQUIRE(doc["warp_instructions"] == 4224);
  REQUIRE(doc["thread_instructions_pred_on"] == 68608);

  std::string renamed = source;
  renamed.replace(renamed.find("Predicated-On Thread"), 20, "Predicated Thread");
  try {
    capture::source_counts_document(renamed);
    FAIL("a page without predicated-on counts was read");
  } catch (const capture::CaptureError& e) {
    REQUIRE(std::string(e.what()) == "counters pass: Nsight Compute's source page lacks 'Predicated-On Thread Instructions Executed'");
  }
}

TEST_CASE("Measured costs: shared wavefronts per instruction, a MATCH's values from the ADU's count", "[compare][counters]") {
  const auto doc = capture::counters_document(kDetails, kSource);
  const fs::path path = write_counters("costs", doc);
  trace::KernelInfo k = program();
  const auto costs = compare::apply_measured_costs(path, k);
  REQUIRE(costs.shared_instructions == 1);
  REQUIRE(k.program[0].shared_wavefronts == Approx(517734.0 / 163840));
  REQUIRE(k.program[4].shared_wavefronts == 0);  // never executed: no measurement
  // The ADU's passes less the barriers' and constant loads', over the matches.
  REQUIRE(costs.match_executions == 163840);
  REQUIRE(costs.match_values == Approx((5076247.0 - 32784 - 45073) / 163840));
  REQUIRE(k.program[1].match_values == Approx(costs.match_values));
  REQUIRE(k.program[0].match_values == 0);

  // Fewer ADU passes than matches cannot be: a match takes at least one.
  auto few = doc;
  few["metrics"]["sm__inst_executed_pipe_adu.sum"] = 1000;
  trace::KernelInfo again = program();
  REQUIRE(compare::apply_measured_costs(write_counters("few", few), again).match_values == 1);
  fs::remove(path);
}

TEST_CASE("Measured costs: counters of another program or a damaged file fail with one line", "[compare][counters][errors]") {
  const auto doc = capture::counters_document(kDetails, kSource);
  const auto error_of = [](const nlohmann::json& d, const std::string& name) {
    const fs::path path = write_counters(name, d);
    trace::KernelInfo k = program();
    std::string what = "no error";
    try {
      compare::apply_measured_costs(path, k);
    } catch (const compare::DatasetError& e) {
      what = e.what();
    }
    fs::remove(path);
    return what;
  };
  auto moved = doc;
  moved["pcs"][1]["pc_offset"] = 0x400;
  CHECK_THAT(error_of(moved, "moved"), Catch::Contains("pc 0x400 is not an instruction of the trace's kernel '_Z1kv'"));
  auto other = doc;
  other["pcs"][1]["sass"] = "SHFL.IDX PT, R22, R4, R5, 0x1f";
  CHECK_THAT(error_of(other, "other"), Catch::Contains("pc 0x10 is SHFL there but MATCH in the trace: another program"));
  auto missing = doc;
  missing["pcs"][0].erase("shared_wavefronts");
  CHECK_THAT(error_of(missing, "missing"), Catch::Contains("pc 0x0 lacks the number 'shared_wavefronts'"));
  CHECK_THAT(error_of(nlohmann::json::object({{"pcs", 1}}), "shape"), Catch::Contains("not a counters pass's output"));
}

TEST_CASE("Measured costs: the H100's sort scatter matches the distinct digits random keys have", "[compare][counters]") {
  // 32 lanes each holding a uniformly random 8-bit digit hold 256 (1 - (255/256)^32) = 30.19
  // distinct values on average: what the counters pass's ADU count says of the
  // scatter's ranking matches, within 2%, though nothing in it knows the keys.
  // The full-size trace is regenerated by the capture script, not kept; the
  // program comes from the SASS the counters pass recorded beside each pc.
  const fs::path dir = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h100/workloads/sort/keys/scatter/trace";
  trace::KernelInfo k;
  const auto counters = nlohmann::json::parse(std::ifstream(dir / "counters.json"));
  for (const auto& pc : counters.at("pcs"))
    k.program.push_back(trace::parse_sass_instruction(pc["sass"].get<std::string>(), pc["pc_offset"].get<std::uint64_t>()));
  const auto costs = compare::apply_measured_costs(dir / "counters.json", k);
  const double expected = 256 * (1 - std::pow(255.0 / 256, 32));
  CHECK(costs.match_executions == 163840);
  CHECK(std::abs(costs.match_values - expected) <= 0.02 * expected);
  // Its scatter's loads of random digits' counters and bases: about 3.2 wavefronts each,
  // as the shared_banks probe's random digits (0.305 warp instructions a cycle).
  double most = 0;
  for (const auto& s : k.program) most = std::max(most, static_cast<double>(s.shared_wavefronts));
  CHECK(most == Approx(3.2).margin(0.2));
}
