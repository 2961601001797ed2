// The pending_line probe (workloads/latency/pending_line.cu,
// traces/datasets/h100/latency/pending_line.json and ncu-pending-line.csv) simulated
// from its own SASS: an SM's warps loading one line at once.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

constexpr std::uint64_t kWindow = 0x200000000ull;
constexpr std::uint32_t kLinesPerSm = 32;

struct PendingLoads {
  double mean_cycles = 0;   // per warp, from the clock read before the load to the one after its value
  double l2_requests = 0;   // reads the slices received
};

// `warps` warps of one CTA an SM, each loading once as `mode` says ("line",
// "word" or "own"), the lines in the L2 as the probe's warm-up leaves them.
PendingLoads pending_loads(const GpuParams& params, const std::string& mode, std::uint32_t warps) {
  const auto program = probe_program("pending_line.sass", mode == "line"   ? "13pending_loadsILi0EEEvPKjPjPx"
                                                         : mode == "word" ? "13pending_loadsILi1EEEvPKjPjPx"
                                                                          : "13pending_loadsILi2EEEvPKjPjPx");
  std::vector<std::size_t> clock_reads;
  std::size_t load = 0, first_exit = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    if (program[i].mnemonic.rfind("CS2R", 0) == 0) clock_reads.push_back(i);
    if (program[i].op == trace::OpClass::LoadGlobal) load = i;
    if (program[i].op == trace::OpClass::Exit && !first_exit) first_exit = i;
  }
  REQUIRE(clock_reads.size() == 2);
  REQUIRE((load > clock_reads[0] && load < clock_reads[1]));
  const std::uint32_t sms = params.sms;
  auto path = write_program("pending_loads", program, sms, warps, [&](std::uint64_t warp) {
    const std::uint64_t cta = warp / warps, in_cta = warp % warps;
    std::vector<trace::WarpInst> s;
    for (std::size_t i = 0; i < program.size(); ++i) {
      // Predicated off: the store that keeps the value; lane 0 alone after the exit.
      const bool guarded_off = program[i].op == trace::OpClass::StoreGlobal && i < first_exit;
      trace::WarpInst r = record(static_cast<std::uint32_t>(i), guarded_off ? 0u : i > first_exit ? 1u : i == first_exit ? ~1u : ~0u);
      if (i == load)
        for (std::uint32_t lane = 0; lane < 32; ++lane) {
          const std::uint64_t line = cta * kLinesPerSm + (mode == "own" ? in_cta : 0);
          r.address[lane] = kWindow + line * 128 + (mode == "word" ? 0 : 4 * lane);
        }
      if (program[i].op == trace::OpClass::StoreGlobal && i > first_exit) r.address[0] = kWindow + (1ull << 30) + warp * 8;
      s.push_back(r);
      if (program[i].op == trace::OpClass::Exit && i > first_exit) break;
    }
    return s;
  }, static_cast<std::uint32_t>(params.sm.shared_memory_bytes / 2 + 1024));  // one CTA an SM, as on the H100
  GpuParams warmed = params;
  warmed.l2.start = model::L2Start::Footprint;
  const KernelRun run = run_one(warmed, path, false, true);
  std::remove(path.c_str());
  double cycles = 0;
  for (std::size_t k = clock_reads[0] + 1; k <= clock_reads[1]; ++k)
    for (auto c : run.instructions[k].warp_cycles) cycles += static_cast<double>(c);
  return {cycles / (double(sms) * warps), total(run, "l2_slice", "reads")};
}

}  // namespace

TEST_CASE("pending_line probe: every point simulated", "[.][pending-line-table]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/pending_line.json"));
  const auto params = h100_with({});
  std::printf("| mode | warps | H100 mean cycles | model | error | model L2 reads |\n|---|---|---|---|---|---|\n");
  for (const auto& p : measured["points"]) {
    const PendingLoads model = pending_loads(params, p["mode"], p["warps"]);
    const double h100 = p["mean_cycles"];
    std::printf("| %s | %d | %.1f | %.1f | %+.1f%% | %.0f |\n", p["mode"].get<std::string>().c_str(), p["warps"].get<int>(), h100,
                model.mean_cycles, 100 * (model.mean_cycles / h100 - 1), model.l2_requests);
  }
}

TEST_CASE("pending_line probe: an SM's 32 warps loading one line send the L2 one request, as the H100's", "[models][l1]") {
  const auto params = h100_with({});
  // Nsight Compute: 132 L2 read requests for the line every SM's 32 warps load, 4,224 for a line each.
  const PendingLoads line = pending_loads(params, "line", 32), own = pending_loads(params, "own", 32);
  CHECK(line.l2_requests == params.sms);
  CHECK(own.l2_requests == 32.0 * params.sms);
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/pending_line.json"));
  for (const auto& p : measured["points"]) {
    if (p["warps"] != 32 || p["mode"] == "word") continue;
    INFO(p["mode"].get<std::string>() << ": H100 " << p["mean_cycles"].get<double>() << " cycles a warp");
    CHECK((p["mode"] == "line" ? line : own).mean_cycles == Approx(p["mean_cycles"].get<double>()).epsilon(0.1));
  }
}
