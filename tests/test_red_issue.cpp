// The RED probe (workloads/latency/red_issue.cu, traces/h100/latency/red_issue.json)
// simulated from its own SASS.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

const std::string kListing = "/traces/h100/latency/red_issue.sass";

struct RedRates {
  double issued = 0, applied = 0;  // REDs per SM cycle, per CTA
};

// Part one: `ctas` CTAs of `warps` warps, one an SM; each warp's 64 REDs of
// `lanes` lanes, one line each or (lines_per_red = 32) a line per lane, on
// lines no other RED touches, as red_issue(). The probe's CTA span is
// the warps' mean span with the CTA's last barrier placed after the second
// clock read, so that every warp's span ends when the last warp's does: from
// the clock read before the REDs to that barrier (issued), and on to the
// clock read after the fence (applied; the fence returns for every warp once
// all of the SM's REDs are applied).
RedRates red_issue_rates(const GpuParams& params, std::uint32_t lanes, std::uint32_t lines_per_red, std::uint32_t ctas,
                         std::uint32_t warps) {
  const std::string function = "_ZN41_GLOBAL__N__4854fcb1_12_red_issue_cu_main9red_issueEPjjjPx";
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + kListing);
  const auto program = trace::parse_sass_function(listing, function);
  std::vector<std::size_t> clock_reads;  // after the CTA's first barrier: start, REDs issued, fence returned
  bool after_barrier = false;
  for (std::size_t i = 0; i < program.size() && clock_reads.size() < 3; ++i) {
    after_barrier |= program[i].op == trace::OpClass::Barrier;
    if (after_barrier && program[i].mnemonic.rfind("CS2R", 0) == 0) clock_reads.push_back(i);
  }
  REQUIRE(clock_reads.size() == 3);
  std::size_t barrier = 0, last_barrier = 0;  // before the first clock read, and the CTA's last
  for (std::size_t i = 0; i < program.size(); ++i)
    if (program[i].op == trace::OpClass::Barrier) (i < clock_reads[0] ? barrier : last_barrier) = i;
  REQUIRE(last_barrier > clock_reads[2]);
  // The unrolled loop (the backward branch around the REDs) and the branch
  // that takes the lanes beyond `lanes` past it.
  std::uint64_t loop_begin = 0, loop_end = 0, skip = 0;
  const std::uint64_t start = program[clock_reads[0]].pc, issued = program[clock_reads[1]].pc;
  for (const auto& [from, to] : branches_of(listing, function))
    if (to < from && to > start && from < issued) loop_begin = to, loop_end = from + 16;
  for (const auto& [from, to] : branches_of(listing, function))
    if (from > start && from < loop_begin && to >= loop_end && to <= issued) skip = from;
  REQUIRE(loop_end != 0);
  REQUIRE(skip != 0);
  int reds_per_trip = 0;
  for (const auto& s : program) reds_per_trip += s.pc >= loop_begin && s.pc < loop_end && s.op == trace::OpClass::Red;
  REQUIRE(64 % reds_per_trip == 0);
  const std::uint32_t lane_mask = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
  const std::uint64_t window_lines = 1ull << 18;
  auto path = write_program(function, program, ctas, warps, [&](std::uint64_t warp) {
    std::vector<trace::WarpInst> s;
    auto add = [&](std::size_t i, std::uint32_t mask) { s.push_back(record(static_cast<std::uint32_t>(i), mask)); };
    // From the first clock read to the loop, the loop's trips, then to the
    // third clock read; the lanes beyond `lanes` wait at the loop's end.
    add(barrier, 0xFFFFFFFFu);
    std::size_t i = clock_reads[0];
    for (; program[i].pc < loop_begin; ++i) add(i, program[i].pc > skip ? lane_mask : 0xFFFFFFFFu);
    std::uint32_t red = 0;
    for (int trip = 0; trip < 64 / reds_per_trip; ++trip)
      for (std::size_t j = i; program[j].pc < loop_end; ++j) {
        trace::WarpInst r = record(static_cast<std::uint32_t>(j), lane_mask);
        if (program[j].op == trace::OpClass::Red) {
          const std::uint64_t index = warp * 64 + red++;
          for (std::uint32_t lane = 0; lane < lanes; ++lane) {
            const std::uint64_t line = (index * lines_per_red + (lines_per_red > 1 ? lane : 0)) % window_lines;
            r.address[lane] = 0x100000000ull + line * 128 + 4 * (lines_per_red > 1 ? 0 : lane);
            r.value[lane] = 1;
          }
        }
        s.push_back(r);
      }
    while (program[i].pc < loop_end) ++i;
    for (; i <= clock_reads[2]; ++i) {
      add(i, 0xFFFFFFFFu);
      if (i == clock_reads[1]) add(last_barrier, 0xFFFFFFFFu);
    }
    for (; i < program.size(); ++i)
      if (program[i].op == trace::OpClass::Exit) {
        s.push_back(record(static_cast<std::uint32_t>(i)));
        break;
      }
    return s;
  });
  GpuParams warmed = params;
  warmed.l2.start = "footprint";  // the probe's warm-up launch leaves every line in the L2
  const KernelRun run = run_one(warmed, path, false, true);
  std::remove(path.c_str());
  auto cycles_at = [&](std::size_t k) {
    double cycles = 0;
    for (auto c : run.instructions[k].warp_cycles) cycles += static_cast<double>(c);
    return cycles;
  };
  double to_issued = cycles_at(last_barrier), to_applied = 0;
  for (std::size_t k = clock_reads[0] + 1; k <= clock_reads[2]; ++k) (k <= clock_reads[1] ? to_issued : to_applied) += cycles_at(k);
  const double per_warp = 1.0 / (double(ctas) * warps);
  to_issued *= per_warp;
  to_applied = to_applied * per_warp + to_issued;
  return {warps * 64 / to_issued, warps * 64 / to_applied};
}

}  // namespace

// Part one against the model: tests/atomsim_tests "[red-issue-table]".
TEST_CASE("RED probe: the REDs one SM and every SM issue and apply, every point simulated", "[.][red-issue-table]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/h100/latency/red_issue.json"));
  const auto params = h100_with({});
  std::printf("| shape | SMs | warps | H100 issued / SM cycle | model | error | H100 applied / SM cycle | model | error |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& p : measured["issue"]) {
    const RedRates model = red_issue_rates(params, p["lanes"], p["lines_per_red"], p["ctas"], p["warps"]);
    const double issued = p["issued_per_sm_cycle"], applied = p["applied_per_sm_cycle"];
    std::printf("| %s | %d | %d | %.4f | %.4f | %+.1f%% | %.4f | %.4f | %+.1f%% |\n", p["shape"].get<std::string>().c_str(),
                p["ctas"].get<int>(), p["warps"].get<int>(), issued, model.issued, 100 * (model.issued / issued - 1), applied,
                model.applied, 100 * (model.applied / applied - 1));
  }
}

TEST_CASE("RED probe: one SM with 32 warps applies its REDs of one word, one line and 32 lines at the H100's rate", "[models][memory]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/h100/latency/red_issue.json"));
  const auto params = h100_with({});
  int checked = 0;
  for (const auto& p : measured["issue"]) {
    if (p["ctas"] != 1 || p["warps"] != 32 || p["shape"] == "sector") continue;
    const double simulated = red_issue_rates(params, p["lanes"], p["lines_per_red"], 1, 32).applied,
                 on_h100 = p["applied_per_sm_cycle"];
    INFO(p["shape"].get<std::string>() << ": simulated " << simulated << " REDs per cycle against " << on_h100 << " measured");
    CHECK(std::abs(simulated / on_h100 - 1) <= 0.15);
    ++checked;
  }
  REQUIRE(checked == 3);
}
