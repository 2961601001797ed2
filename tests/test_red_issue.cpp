// The RED probe (workloads/latency/red_issue.cu, traces/datasets/h100/latency/red_issue.json)
// simulated from its own SASS.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

const std::string kListing = "/traces/datasets/h100/latency/red_issue.sass";

struct RedRates {
  double issued = 0, applied = 0;  // REDs per SM cycle, per CTA
};

// The listing's name for one of the probe's kernels.
std::string probe_function(const std::string& mangled_tail) { return testing::probe_function("red_issue.sass", mangled_tail); }

// Part one: `ctas` CTAs of `warps` warps, one an SM; each warp's 64 REDs (or
// ATOMs, `returns`) of
// `lanes` lanes, one line each or (lines_per_red = 32) a line per lane, on
// lines no other RED touches, as red_issue(). The probe's CTA span is
// the warps' mean span with the CTA's last barrier placed after the second
// clock read, so that every warp's span ends when the last warp's does: from
// the clock read before the REDs to that barrier (issued), and on to the
// clock read after the fence (applied; the fence returns for every warp once
// all of the SM's REDs are applied).
RedRates red_issue_rates(const GpuParams& params, bool returns, std::uint32_t lanes, std::uint32_t lines_per_red, std::uint32_t ctas,
                         std::uint32_t warps) {
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + kListing);
  const std::string function = probe_function(std::string("9red_issueILb") + (returns ? "1" : "0") + "EEEvPjjjPx");
  const trace::OpClass atomic = returns ? trace::OpClass::Atom : trace::OpClass::Red;
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
  for (const auto& s : program) reds_per_trip += s.pc >= loop_begin && s.pc < loop_end && s.op == atomic;
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
        if (program[j].op == atomic) {
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
  warmed.l2.start = model::L2Start::Footprint;  // the probe's warm-up launch leaves every line in the L2
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

// Part one's points of one SM with 32 warps, REDs or ATOMs (`returns`), of
// the given shapes: each applied rate within `tolerance` of the H100's; how many.
int one_sm_points_within(bool returns, const std::set<std::string>& shapes, double tolerance) {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/red_issue.json"));
  const auto params = h100_with({});
  int checked = 0;
  for (const auto& p : measured["issue"]) {
    if ((p["op"] == "atom") != returns || p["ctas"] != 1 || p["warps"] != 32 || !shapes.contains(p["shape"].get<std::string>())) continue;
    const double simulated = red_issue_rates(params, returns, p["lanes"], p["lines_per_red"], 1, 32).applied,
                 on_h100 = p["applied_per_sm_cycle"];
    INFO(p["op"].get<std::string>() << " " << p["shape"].get<std::string>() << ": simulated " << simulated << " a cycle against "
                                   << on_h100 << " measured");
    CHECK(std::abs(simulated / on_h100 - 1) <= tolerance);
    ++checked;
  }
  return checked;
}

}  // namespace

// Part one against the model: tests/atomsim_tests "[red-issue-table]".
TEST_CASE("RED probe: the REDs one SM and every SM issue and apply, every point simulated", "[.][red-issue-table]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/red_issue.json"));
  const auto params = h100_with({});
  std::printf("| op | shape | SMs | warps | H100 issued / SM cycle | model | error | H100 applied / SM cycle | model | error |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  for (const auto& p : measured["issue"]) {
    const RedRates model = red_issue_rates(params, p["op"] == "atom", p["lanes"], p["lines_per_red"], p["ctas"], p["warps"]);
    const double issued = p["issued_per_sm_cycle"], applied = p["applied_per_sm_cycle"];
    std::printf("| %s | %s | %d | %d | %.4f | %.4f | %+.1f%% | %.4f | %.4f | %+.1f%% |\n", p["op"].get<std::string>().c_str(), p["shape"].get<std::string>().c_str(),
                p["ctas"].get<int>(), p["warps"].get<int>(), issued, model.issued, 100 * (model.issued / issued - 1), applied,
                model.applied, 100 * (model.applied / applied - 1));
  }
}

TEST_CASE("RED probe: one SM with 32 warps applies its REDs of one word, one line and 32 lines at the H100's rate", "[models][memory]") {
  REQUIRE(one_sm_points_within(false, {"word", "line", "lines"}, 0.15) == 3);
}

namespace {

// SM cycles per step of one of the probe's loops run by `warps` warps of one
// CTA, `lanes` lanes each: `address(warp, step)` is lane 0's address of the
// loop's `step`-th memory instruction (lane l's 4 l further). From the
// difference between two lengths, so that the start drops out.
double probe_step_cycles(const std::string& function, std::uint32_t warps, std::uint32_t lanes, std::uint32_t trips,
                         const std::function<std::uint64_t(std::uint64_t, std::uint64_t)>& address, const GpuParams& params) {
  const auto body = innermost_loop("red_issue.sass", function);
  std::uint32_t per_trip = 0;
  for (const auto& s : body) per_trip += trace::is_global_memory(s.op);
  REQUIRE(per_trip > 0);
  const std::uint32_t mask = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
  GpuParams warmed = params;
  warmed.l2.start = model::L2Start::Footprint;  // the probe's lines are in the L2
  auto cycles = [&](std::uint32_t n) {
    auto path = write_program(function, body, 1, warps, [&](std::uint64_t warp) {
      std::vector<trace::WarpInst> s;
      std::uint64_t step = 0;
      for (std::uint32_t t = 0; t < n; ++t)
        for (std::uint32_t i = 0; i < body.size(); ++i) {
          trace::WarpInst inst = record(i, mask);
          if (trace::is_global_memory(body[i].op)) {
            const std::uint64_t a = address(warp, step++);
            for (std::uint32_t lane = 0; lane < lanes; ++lane) inst.address[lane] = a + 4 * lane, inst.value[lane] = 1;
          }
          s.push_back(inst);
        }
      return s;
    });
    KernelRun run = run_one(warmed, path, false);
    std::remove(path.c_str());
    return static_cast<double>(run.cycles);
  };
  return (cycles(2 * trips) - cycles(trips)) / (double(trips) * per_trip);
}

constexpr std::uint64_t kBase = 0x100000000ull, kWindowLines = 1ull << 18;

// Part three: one lane's dependent ATOMs (or loads), lines 997 apart.
double chain_step_cycles(const GpuParams& params, bool atomic) {
  return probe_step_cycles(probe_function(std::string("12atomic_chainILb") + (atomic ? "1" : "0") + "EEEvPjPx"), 1, 1, 16,
                           [](std::uint64_t, std::uint64_t step) { return kBase + (step * 997 % kWindowLines) * 128; }, params);
}

// Part four: REDs or stores one at a time, each to the line after the last.
double operand_hold_step_cycles(const GpuParams& params, bool store, std::uint32_t lanes, std::uint32_t warps) {
  return probe_step_cycles(probe_function(std::string("12operand_holdILb") + (store ? "1" : "0") + "EEEvPjjPx"), warps, lanes, 64,
                           [](std::uint64_t warp, std::uint64_t step) { return kBase + (warp * 512 + step) * 128; }, params);
}

// Part two: cycles from a CTA's last RED issued to the next CTA's start on
// its SM, with one CTA an SM (its shared memory) and two waves of CTAs of
// `warps` warps, each issuing `reds` REDs: a line each per lane, or every lane
// of every SM on one word. As the probe takes it, percentiles over SMs, a
// CTA's last RED issued when a first-wave CTA's warps have, on average,
// issued theirs.
struct Percentiles {
  double p10 = 0, median = 0, p90 = 0;
};

struct ExitGaps {
  double to_last_red = 0;  // a first-wave CTA's warps' mean
  Percentiles gap;
};

// Parts two and five: a warp's `red`-th of `reds` REDs, each lane onto a line
// of its own or every lane of every SM onto one word.
void address_red(trace::WarpInst& r, std::uint64_t warp, std::uint32_t red, std::uint32_t reds, bool one_word) {
  for (std::uint32_t lane = 0; lane < 32; ++lane) {
    const std::uint64_t thread = warp * 32 + lane, line = (thread * reds + red) % kWindowLines;
    r.address[lane] = kBase + (one_word ? 0 : line * 128 + 4 * lane);
    r.value[lane] = 1;
  }
}

// Over SMs, cycles from each CTA's start to the next one's, less `offset`.
Percentiles start_to_start(const KernelRun& run, std::uint32_t sms, double offset = 0) {
  std::vector<std::vector<Cycle>> starts(sms);
  for (const auto& c : run.ctas) starts[c.sm].push_back(c.start);
  std::vector<double> periods;
  for (auto& s : starts) {
    std::sort(s.begin(), s.end());
    for (std::size_t i = 1; i < s.size(); ++i) periods.push_back(static_cast<double>(s[i] - s[i - 1]) - offset);
  }
  REQUIRE(!periods.empty());
  std::sort(periods.begin(), periods.end());
  return {periods[periods.size() / 10], periods[periods.size() / 2], periods[periods.size() * 9 / 10]};
}

ExitGaps exit_gap_cycles(const GpuParams& params, bool one_word, std::uint32_t warps, std::uint32_t reds) {
  const std::string function = probe_function("13red_then_exitILi" + std::to_string(reds) + "EEEvPjbPx");
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + kListing);
  const auto program = trace::parse_sass_function(listing, function);
  // The clock read after the REDs is the kernel's second.
  std::size_t last_red = 0, clocks = 0, clock_after = 0, first_exit = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    if (program[i].op == trace::OpClass::Red) last_red = i;
    if (program[i].mnemonic.rfind("CS2R", 0) == 0 && ++clocks == 2) clock_after = i;
    if (!first_exit && program[i].op == trace::OpClass::Exit) first_exit = i;
  }
  REQUIRE(clock_after > last_red);
  REQUIRE(first_exit > clock_after);
  // The branch that takes lane 0 into its shared-memory maximum, and where it rejoins.
  std::uint64_t skip_from = 0, skip_to = 0;
  for (const auto& [from, to] : branches_of(listing, function))
    if (!skip_from && from > program[clock_after].pc && to > from) skip_from = from, skip_to = to;
  REQUIRE(skip_from != 0);
  const std::uint32_t sms = params.sms;
  GpuParams warmed = params;
  warmed.l2.start = model::L2Start::Footprint;  // part one's lines are in the L2
  auto run = [&](std::uint32_t ctas) {
    auto path = write_program(function, program, ctas, warps, [&](std::uint64_t warp) {
      std::vector<trace::WarpInst> s;
      std::uint32_t red = 0;
      for (std::size_t i = 0; i < program.size(); ++i) {
        const std::uint64_t pc = program[i].pc;
        const bool lane0_only = pc > skip_from && pc < skip_to;
        trace::WarpInst r = record(static_cast<std::uint32_t>(i), lane0_only ? 1u : 0xFFFFFFFFu);
        if (program[i].op == trace::OpClass::Red) address_red(r, warp, red++, reds, one_word);
        if (program[i].op == trace::OpClass::StoreGlobal)
          for (std::uint32_t lane = 0; lane < 1; ++lane) r.address[lane] = kBase + (1ull << 32) + warp * 64 + 8 * (pc & 0x30);
        if (i == first_exit) {
          // Every lane but the CTA's thread 0 leaves here.
          r.active_mask = 0xFFFFFFFFu;
          s.push_back(r);
          if (warp % warps != 0) return s;
          continue;
        }
        if (i > first_exit) r.active_mask = 1;
        s.push_back(r);
        if (program[i].op == trace::OpClass::Exit && i > first_exit) return s;
      }
      return s;
    }, static_cast<std::uint32_t>(params.sm.shared_memory_bytes / 2 + 1024));  // one CTA an SM, as on the H100
    KernelRun k = run_one(warmed, path, false, true, true);
    std::remove(path.c_str());
    return k;
  };
  // A first-wave CTA's time to its last RED, from a run of that wave alone.
  const KernelRun one = run(sms), two = run(2 * sms);
  double to_last_red = 0;
  for (std::size_t i = 0; i <= clock_after; ++i)
    for (auto c : one.instructions[i].warp_cycles) to_last_red += static_cast<double>(c);
  to_last_red /= double(sms) * warps;
  return ExitGaps{to_last_red, start_to_start(two, sms, to_last_red)};
}

// Part five: per SM, cycles from one CTA's start to the next one's (10th,
// 50th and 90th percentiles), one CTA an SM and two waves; thread 0 stores
// first, every warp then issues `reds` REDs and exits, or thread 0 stores once
// more at the end.
Percentiles cta_period_cycles(const GpuParams& params, bool one_word, std::uint32_t warps, std::uint32_t reds,
                                        bool store_at_end) {
  const std::string function = probe_function("10cta_periodILi" + std::to_string(reds) + "ELb" + (store_at_end ? "1" : "0") +
                                              "EEEvPjbPxS2_");
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + kListing);
  const auto program = trace::parse_sass_function(listing, function);
  // Thread 0's part: the instructions a forward branch skips, or those after
  // an exit the other threads take.
  std::uint64_t skip_from = 0, skip_to = 0;
  for (const auto& [from, to] : branches_of(listing, function))
    if (!skip_from && to > from) skip_from = from, skip_to = to;
  std::size_t early_exit = program.size();
  for (std::size_t i = 0; i + 1 < program.size() && early_exit == program.size(); ++i)
    if (program[i].op == trace::OpClass::Exit && program[i + 1].op != trace::OpClass::Branch) early_exit = i;
  const std::uint32_t sms = params.sms;
  GpuParams warmed = params;
  warmed.l2.start = model::L2Start::Footprint;  // part one's lines are in the L2
  auto path = write_program(function, program, 2 * sms, warps, [&](std::uint64_t warp) {
    const bool thread0_warp = warp % warps == 0;
    std::vector<trace::WarpInst> s;
    std::uint32_t red = 0;
    for (std::size_t i = 0; i < program.size(); ++i) {
      const std::uint64_t pc = program[i].pc;
      const bool thread0_only = (pc > skip_from && pc < skip_to) || i > early_exit;
      if (thread0_only && !thread0_warp) continue;
      trace::WarpInst r = record(static_cast<std::uint32_t>(i), thread0_only ? 1u : 0xFFFFFFFFu);
      if (program[i].op == trace::OpClass::Red) address_red(r, warp, red++, reds, one_word);
      if (program[i].op == trace::OpClass::StoreGlobal) r.address[0] = kBase + (1ull << 32) + warp * 64 + 8 * (pc & 0x30);
      s.push_back(r);
      if (program[i].op == trace::OpClass::Exit && (i == early_exit ? !thread0_warp : true)) break;
    }
    return s;
  }, static_cast<std::uint32_t>(params.sm.shared_memory_bytes / 2 + 1024));  // one CTA an SM, as on the H100
  const KernelRun two = run_one(warmed, path, false, false, true);
  std::remove(path.c_str());
  return start_to_start(two, sms);
}

}  // namespace

// Parts three and four against the model: tests/atomsim_tests "[red-issue-steps]".
TEST_CASE("RED probe: an atomic's round trip and a memory instruction's operands, simulated", "[.][red-issue-steps]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/red_issue.json"));
  const auto params = h100_with({});
  std::printf("| step | H100 cycles | model |\n|---|---|---|\n");
  for (bool atomic : {true, false})
    std::printf("| %s chain | %.1f | %.1f |\n", atomic ? "ATOM" : "load", measured["round_trip"][atomic ? "atom_cycles" : "load_cg_cycles"].get<double>(),
                chain_step_cycles(params, atomic));
  for (const auto& p : measured["exit"]) {
    const std::uint32_t warps = p["warps_per_cta"], reds = p["reds_per_warp"];
    const ExitGaps model = exit_gap_cycles(params, p["reds"] == "one_word_from_every_sm", warps, reds);
    const std::string shape = fmt::format("{}, {} warps, {} REDs", p["reds"].get<std::string>(), warps, reds);
    std::printf("| a first CTA's start to its last RED, %s | %.0f | %.0f |\n", shape.c_str(),
                p["first_cta_start_to_last_red_cycles"].get<double>(), model.to_last_red);
    std::printf("| next CTA after the last RED, %s, p10 / median / p90 over SMs | %.0f / %.0f / %.0f | %.0f / %.0f / %.0f |\n",
                shape.c_str(), p["next_cta_start_after_last_red_p10_cycles"].get<double>(),
                p["next_cta_start_after_last_red_cycles"].get<double>(), p["next_cta_start_after_last_red_p90_cycles"].get<double>(),
                model.gap.p10, model.gap.median, model.gap.p90);
  }
  for (const auto& p : measured["cta_period"]) {
    const auto model = cta_period_cycles(params, p["reds"] == "one_word_from_every_sm", p["warps_per_cta"], p["reds_per_warp"],
                                         p["store_at_end"]);
    std::printf("| a CTA's start to the next's, %s, %d warps, %d REDs%s, p10 / median / p90 over SMs | %.0f / %.0f / %.0f | "
                "%.0f / %.0f / %.0f |\n",
                p["reds"].get<std::string>().c_str(), p["warps_per_cta"].get<int>(), p["reds_per_warp"].get<int>(),
                p["store_at_end"].get<bool>() ? ", a store at the end" : "", p["period_p10_cycles"].get<double>(),
                p["period_cycles"].get<double>(), p["period_p90_cycles"].get<double>(), model.p10, model.median, model.p90);
  }
  for (const auto& p : measured["operand_hold"])
    std::printf("| %s, %d lanes, %d warps | %.1f | %.1f |\n", p["op"].get<std::string>().c_str(), p["lanes"].get<int>(), p["warps"].get<int>(),
                p["cycles_per_step"].get<double>(), operand_hold_step_cycles(params, p["op"] == "store", p["lanes"], p["warps"]));
}

// The done latency is fitted on part five's one-warp CTA without REDs.
TEST_CASE("RED probe: a one-warp CTA without REDs gives its place to the next CTA in the H100's time", "[models][dispatch]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/red_issue.json"));
  for (const auto& p : measured["cta_period"])
    if (p["warps_per_cta"] == 1 && p["reds_per_warp"] == 0 && !p["store_at_end"].get<bool>())
      CHECK(cta_period_cycles(h100_with({}), false, 1, 0, false).median == Approx(p["period_cycles"].get<double>()).epsilon(0.03));
}

// What an SM has sent ahead of its port (interconnect.request.input_buffer_flits)
// is fitted on these three rows; the one-word row needs the SMs served in turn
// at the slice and in the crossbar (with far atomics first, the far SMs'
// CTAs finished in a third of the time, and the median SM's at 0.37x).
TEST_CASE("RED probe: CTAs whose REDs crowd the slices, or one word, give their places to the next in the H100's time",
          "[models][memory]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/red_issue.json"));
  int checked = 0;
  for (const auto& p : measured["cta_period"]) {
    if (p["warps_per_cta"] != 4 || p["reds_per_warp"] < 4) continue;
    const bool one_word = p["reds"] == "one_word_from_every_sm";
    const auto model = cta_period_cycles(h100_with({}), one_word, 4, p["reds_per_warp"], false);
    INFO(p["reds"].get<std::string>() << ", " << p["reds_per_warp"].get<int>() << " REDs: H100 " << p["period_cycles"].get<double>()
         << "; model p10 / median / p90 " << model.p10 << " / " << model.median << " / " << model.p90);
    if (p["reds_per_warp"] == 16) {
      // The model's SMs split into a fast and a slow mode (p10 and p90 about
      // 5100 and 10000; the H100's 4054 and 6135), and how many SMs take each
      // turns on tens of cycles at the kernel's start: constant misses costing
      // 0, 1, 60 and 130 cycles give medians of 5504, 7263, 5863 and 6354 and
      // p10s of 5144, 5134, 5132 and 6005 (docs/notes/2026-12-04-constant-caches.md).
      // The H100's median must lie within the model's spread, 10% below its p10 at most.
      CHECK(0.9 * model.p10 <= p["period_cycles"].get<double>());
      CHECK(p["period_cycles"].get<double>() <= model.p90);
    } else {
      CHECK(model.median == Approx(p["period_cycles"].get<double>()).epsilon(0.1));
    }
    ++checked;
  }
  REQUIRE(checked == 3);
}

TEST_CASE("RED probe: a dependent ATOM's round trip and a RED's operands take the H100's time", "[models][memory]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/red_issue.json"));
  const auto params = h100_with({});
  CHECK(chain_step_cycles(params, true) == Approx(measured["round_trip"]["atom_cycles"].get<double>()).epsilon(0.03));
  CHECK(chain_step_cycles(params, false) == Approx(measured["round_trip"]["load_cg_cycles"].get<double>()).epsilon(0.03));
  for (const auto& p : measured["operand_hold"])
    if (p["warps"] == 1 && p["lanes"] == 32)
      CHECK(std::abs(operand_hold_step_cycles(params, p["op"] == "store", 32, 1) - p["cycles_per_step"].get<double>()) <= 2);
}

TEST_CASE("RED probe: one SM with 32 warps takes ATOMs of a line's words and of 32 lines at the H100's rate", "[models][memory]") {
  REQUIRE(one_sm_points_within(true, {"line", "lines"}, 0.15) == 2);
}

namespace {

// One launch of the red_requests probe (workloads/microbench/red_requests.cu)
// as the first line of its Nsight Compute CSV describes it, for one pattern.
struct RedRequestsLaunch {
  int ctas = 0, warps_per_cta = 0, iterations = 0, warps_per_region = 1, regions = 1;
  std::string op = "red";  // red, store or atom (old values summed)
  int lanes_per_word = 1, word_stride = 1;
};

RedRequestsLaunch red_requests_launch(const nlohmann::json& probe, const nlohmann::json& pattern) {
  RedRequestsLaunch l;
  l.ctas = probe["blocks"];
  l.warps_per_cta = probe.value("threads", 256) / 32;
  l.iterations = probe["iterations"];
  l.warps_per_region = probe.value("warps_per_region", 1);
  l.regions = probe.value("regions", 1);
  l.op = probe.value("op", "red");
  l.lanes_per_word = pattern["lanes_per_word"];
  l.word_stride = pattern["word_stride"];
  return l;
}

// The probe's kernel simulated from its own SASS (`listing`), so that its
// warps wait where the compiler's control bits make them: the loop the
// compiler unrolled (the backward branch over the most REDs or stores), its
// prologue before it, then the exit. A warp's update i goes to region
// (warp / warps_per_region) x regions + i mod regions, 4 KB each.
KernelRun simulate_red_requests(const GpuParams& params, const std::string& listing, const RedRequestsLaunch& l) {
  const bool default_kernel = l.warps_per_region == 1 && l.regions == 1 && l.op == "red";
  // The kernel took its update as a bool (store or RED) before it took ATOMs too.
  const bool by_flag = listing.find("shared_regionsILb") != std::string::npos;
  const std::string shared_regions = by_flag ? std::string("shared_regionsILb") + (l.op == "store" ? "1" : "0") + "EEEvPfiiiii"
                                             : std::string("shared_regionsILNS_6UpdateE") +
                                                   (l.op == "store" ? "1" : l.op == "atom" ? "2" : "0") + "EEEvPfiiiii";
  const std::string function = function_named(listing, default_kernel ? "red_patternEPfiii" : shared_regions);
  const auto program = trace::parse_sass_function(listing, function);
  const trace::OpClass update =
      l.op == "store" ? trace::OpClass::StoreGlobal : l.op == "atom" ? trace::OpClass::Atom : trace::OpClass::Red;
  struct {
    std::uint64_t begin = 0, end = 0;
  } loop;
  int updates_per_trip = 0;
  for (const auto& [from, to] : branches_of(listing, function)) {
    if (to >= from) continue;
    const int updates = static_cast<int>(std::count_if(program.begin(), program.end(), [&](const trace::StaticInst& s) {
      return s.op == update && s.pc >= to && s.pc <= from;
    }));
    if (updates > updates_per_trip) updates_per_trip = updates, loop = {to, from};
  }
  REQUIRE(updates_per_trip > 0);
  REQUIRE(l.iterations % updates_per_trip == 0);
  std::uint32_t exit_index = 0;
  for (std::size_t j = 0; j < program.size(); ++j)
    if (program[j].op == trace::OpClass::Exit) exit_index = static_cast<std::uint32_t>(j);  // the last: unpredicated
  const auto path = write_program("red_requests", program, l.ctas, l.warps_per_cta, [&](std::uint64_t warp) {
    std::vector<trace::WarpInst> out;
    for (std::size_t j = 0; j < program.size(); ++j)
      if (program[j].pc < loop.begin && program[j].op != trace::OpClass::Branch && program[j].op != trace::OpClass::Exit)
        out.push_back(record(static_cast<std::uint32_t>(j)));
    const std::uint64_t base = 0x10000000ull + warp / l.warps_per_region * 4096ull * l.regions;
    int i = 0;
    for (int trip = 0; trip < l.iterations / updates_per_trip; ++trip)
      for (std::size_t j = 0; j < program.size(); ++j) {
        if (program[j].pc < loop.begin || program[j].pc > loop.end) continue;
        trace::WarpInst r = record(static_cast<std::uint32_t>(j));
        if (program[j].op == update) {
          for (int lane = 0; lane < 32; ++lane) {
            r.address[lane] = base + 4096ull * (i & (l.regions - 1)) + 4ull * (lane / l.lanes_per_word) * l.word_stride;
            r.value[lane] = 0x3f800000u;  // 1.0f
          }
          ++i;
        }
        out.push_back(r);
      }
    out.push_back(record(exit_index));
    return out;
  });
  KernelRun run = run_one(params, path);
  std::remove(path.c_str());
  REQUIRE(run.check.passed());
  return run;
}

}  // namespace

// The red_requests probe's ten lane patterns (traces/datasets/h100/microbench/red_requests):
// CTAs of 8 warps, each warp 64 REDs into its own 4 KB, lane l onto word
// (l / lanes_per_word) x word_stride; 528 CTAs (four an SM), and from the
// slices' counters run 132 (one an SM) and 53 (53 SMs), 1 to 66, and one CTA
// of 1 to 32 warps. Each Nsight Compute CSV starts with the program's own
// line, which names its patterns, CTAs and threads. Times compare in L2 cycles
// (the clocks of the profiled runs need not stand in the model's ratio); a
// profiled launch lasts longer than an unprofiled one by a constant that the
// small launches feel most (a second error column adds it to the model's).
TEST_CASE("RED requests probe: every pattern's time, simulated", "[.][red-requests-time]") {
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/red_requests/";
  const GpuParams params = h100_with({});
  const double l2_clocks_per_cycle = params.l2.lookups_per_cycle;  // one lookup an L2 clock
  const std::string listing = slurp(dir + "slices/red_requests.sass");
  // The busiest slice sets the time: beside the totals, each side's busiest
  // slice (its requests over the mean slice's) and its L2 cycles a request,
  // which separate the slice hash's spread from the atomic unit's cost (the
  // H100 counts a slice's requests from the L1s, the other partition's at the
  // slice they enter by; the model the requests a slice's atomic unit applies).
  // What a profiled launch costs beyond the unprofiled one the model's launch
  // is fitted on: an empty kernel's median under Nsight Compute
  // (one_sm/ncu-empty.csv) less the 1,711 cycles its timing pass gives
  // (traces/datasets/h100/latency/launch_overhead.json), about 2,300 SM cycles.
  std::vector<double> empty;
  for (const auto& launch : ncu_launches(dir + "one_sm/ncu-empty.csv")) empty.push_back(ncu_value(launch, "sm__cycles_elapsed.avg"));
  REQUIRE(!empty.empty());
  std::sort(empty.begin(), empty.end());
  const auto launches_timed = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/launch_overhead.json"));
  const double profiled_extra = empty[empty.size() / 2] - launches_timed["empty_kernel"][0]["median_cycles"].get<double>();
  std::printf("| CTAs | warps a CTA | lanes per word | word stride | requests per RED | H100 L2 cycles | model | error | with the profiled "
              "launch's %.0f SM cycles | busiest slice, H100 | model | its L2 cycles a request, H100 | model |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n", profiled_extra);
  for (const std::string csv : {"ncu.csv", "slices/ncu-132.csv", "slices/ncu-66.csv", "slices/ncu-53.csv", "slices/ncu-33.csv",
                                "slices/ncu-16.csv", "slices/ncu-8.csv", "slices/ncu-1-t1024.csv", "slices/ncu-1-t512.csv",
                                "slices/ncu-1.csv", "slices/ncu-1-t128.csv", "slices/ncu-1-t64.csv", "slices/ncu-1-t32.csv"}) {
    const auto launches = ncu_launches(dir + csv);
    const auto probe = ncu_program_line(dir + csv);
    const auto& patterns = probe["patterns"];
    REQUIRE(launches.size() == patterns.size());
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      const RedRequestsLaunch l = red_requests_launch(probe, patterns[i]);
      const KernelRun run = simulate_red_requests(params, listing, l);
      const double measured = ncu_value(launches[i], "lts__cycles_elapsed.avg");
      const double simulated = static_cast<double>(run.cycles) * l2_clocks_per_cycle;
      const double requests = ncu_value(launches[i], "lts__t_requests_srcunit_tex_op_red.sum") /
                              ncu_value(launches[i], "smsp__inst_executed_op_global_red.sum");
      const double busiest_h100 = ncu_value(launches[i], "lts__t_requests_srcunit_tex_op_red.max");
      const StatSummary& applied = run.stats.at("l2_slice").at("atomic_packets");
      std::printf("| %d | %d | %d | %d | %.0f | %.0f | %.0f | %+.1f%% | %+.1f%% | %.3f | %.3f | %.2f | %.2f |\n", l.ctas, l.warps_per_cta,
                  l.lanes_per_word, l.word_stride, requests, measured, simulated, 100 * (simulated / measured - 1),
                  100 * ((simulated + profiled_extra * l2_clocks_per_cycle) / measured - 1),
                  busiest_h100 / ncu_value(launches[i], "lts__t_requests_srcunit_tex_op_red.avg"), applied.max / applied.mean,
                  measured / busiest_h100, simulated / applied.max);
    }
  }
}

// The same ten patterns from every SM as ATOMs whose old values the warp sums
// and as REDs, one start of the H100 (traces/datasets/h100/microbench/red_requests/atom:
// red_requests_probe.sh OUT 528 256 [--op atom]): each pattern's time in L2
// cycles, the ATOMs' over the REDs', on the H100 and in the model. The table:
// tests/atomsim_tests "[red-requests-atom]" -s.
TEST_CASE("RED requests probe: ATOMs against REDs from every SM, simulated", "[.][red-requests-atom]") {
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/red_requests/atom/";
  const GpuParams params = h100_with({});
  const std::string listing = slurp(dir + "red_requests.sass");
  const auto reds = ncu_launches(dir + "ncu-red.csv"), atoms = ncu_launches(dir + "ncu.csv");
  const auto red_probe = ncu_program_line(dir + "ncu-red.csv"), atom_probe = ncu_program_line(dir + "ncu.csv");
  const auto& patterns = atom_probe["patterns"];
  REQUIRE(reds.size() == patterns.size());
  REQUIRE(atoms.size() == patterns.size());
  std::printf("| lanes per word | word stride | H100 RED L2 cycles | ATOM | ATOM / RED | model RED | ATOM | ATOM / RED | ATOM error |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const double red = ncu_value(reds[i], "lts__cycles_elapsed.avg"), atom = ncu_value(atoms[i], "lts__cycles_elapsed.avg");
    const double model_red = static_cast<double>(simulate_red_requests(params, listing, red_requests_launch(red_probe, patterns[i])).cycles) *
                             params.l2.lookups_per_cycle;
    const double model_atom =
        static_cast<double>(simulate_red_requests(params, listing, red_requests_launch(atom_probe, patterns[i])).cycles) *
        params.l2.lookups_per_cycle;
    std::printf("| %d | %d | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f | %+.1f%% |\n", patterns[i]["lanes_per_word"].get<int>(),
                patterns[i]["word_stride"].get<int>(), red, atom, atom / red, model_red, model_atom, model_atom / model_red,
                100 * (model_atom / atom - 1));
  }
}

namespace {

// One SM (traces/datasets/h100/microbench/red_requests/one_sm, red_requests_probe.sh
// OUT 1 THREADS ...): what a warp's update costs the SM, as the difference
// between 256 and 64 updates a warp over the 192 more the SM's warps send, so
// that what a launch costs besides (a profiled launch ends about 3,700 SM
// cycles after its SM's last warp) drops out on both sides. Warps update their
// own words, share them (warps_per_region), or go round regions of their own.
struct OneSmRate {
  std::string label;
  RedRequestsLaunch launch;
  double h100 = 0, model = 0;  // SM cycles an update, per warp's update over the SM
};

std::vector<OneSmRate> one_sm_rates(const GpuParams& params) {
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/red_requests/one_sm/";
  const std::string listing = slurp(dir + "red_requests.sass");
  std::vector<OneSmRate> out;
  for (const std::string set : {"t32", "t64", "t128", "t256", "t1024", "t32-r2", "t32-r4", "t64-w2", "t256-w8", "t32-store"}) {
    const std::string few = dir + "ncu-" + set + "-i64.csv", many = dir + "ncu-" + set + "-i256.csv";
    const auto few_launches = ncu_launches(few), many_launches = ncu_launches(many);
    const auto few_probe = ncu_program_line(few), many_probe = ncu_program_line(many);
    const auto& patterns = few_probe["patterns"];
    REQUIRE(few_launches.size() == patterns.size());
    REQUIRE(many_launches.size() == patterns.size());
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      const RedRequestsLaunch a = red_requests_launch(few_probe, patterns[i]), b = red_requests_launch(many_probe, patterns[i]);
      const double updates = static_cast<double>(b.iterations - a.iterations) * a.warps_per_cta * a.ctas;
      OneSmRate r{set, a};
      r.h100 = (ncu_value(many_launches[i], "sm__cycles_elapsed.avg") - ncu_value(few_launches[i], "sm__cycles_elapsed.avg")) / updates;
      r.model = static_cast<double>(simulate_red_requests(params, listing, b).cycles - simulate_red_requests(params, listing, a).cycles) /
                updates;
      out.push_back(r);
    }
  }
  return out;
}

}  // namespace

// The table: tests/atomsim_tests "RED requests probe, one SM*" -s. Rounds of
// a RED's lanes on one word leave 3.5 cycles apart whoever sends them
// (l1.same_word_interval), its requests take the port's flits
// (l1.atomic_header_bytes), a store's partial sectors pack their bytes.
TEST_CASE("RED requests probe, one SM: what an update costs the SM is the H100's", "[models][memory]") {
  std::printf("| set | warps | warps a region | regions | op | lanes per word | word stride | H100 SM cycles an update | model | error |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n");
  double sum = 0;
  const auto rates = one_sm_rates(h100_with({}));
  for (const OneSmRate& r : rates) {
    const RedRequestsLaunch& l = r.launch;
    const double error = r.model / r.h100 - 1;
    std::printf("| %s | %d | %d | %d | %s | %d | %d | %.1f | %.1f | %+.1f%% |\n", r.label.c_str(), l.warps_per_cta, l.warps_per_region,
                l.regions, l.op.c_str(), l.lanes_per_word, l.word_stride, r.h100, r.model, 100 * error);
    INFO(r.label << ", " << l.lanes_per_word << " lanes a word, stride " << l.word_stride << ": H100 " << r.h100 << ", model " << r.model);
    CHECK(std::abs(error) <= 0.25);  // a lone warp's line RED: 6.6 against 5.1
    sum += std::abs(error);
  }
  std::printf("mean |error| %.1f%% over %zu rows\n", 100 * sum / rates.size(), rates.size());
  REQUIRE(rates.size() == 100);
  CHECK(sum / rates.size() <= 0.05);
}

// How evenly the probe's atomics spread over the slices: the busiest slice's
// atomic input over the mean, on the H100 (lts__d_atomic_input_cycles_active,
// traces/datasets/h100/microbench/red_requests/path: red_requests_path.sh OUT) and in
// the model (l2_slice.atomic_sectors), each pattern as REDs and ATOMs. The
// spread is the slice hash's doing, which NVIDIA does not publish. The table:
// tests/atomsim_tests "[red-requests-spread]" -s.
TEST_CASE("RED requests probe: the busiest slice's share of every SM's atomics, simulated", "[.][red-requests-spread]") {
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/red_requests/";
  const GpuParams params = h100_with({});
  const std::string listing = slurp(dir + "atom/red_requests.sass");
  std::printf("| op | lanes per word | word stride | H100 L2 cycles | model | error | H100 busiest / mean | model |\n"
              "|---|---|---|---|---|---|---|---|\n");
  for (const std::string op : {"red", "atom"}) {
    const std::string csv = dir + "path/ncu-path-" + op + ".csv";
    const auto launches = ncu_launches(csv);
    const auto probe = ncu_program_line(csv);
    const auto& patterns = probe["patterns"];
    REQUIRE(launches.size() == patterns.size());
    for (std::size_t i = 0; i < patterns.size(); ++i) {
      RedRequestsLaunch l = red_requests_launch(probe, patterns[i]);
      l.op = op;
      const KernelRun run = simulate_red_requests(params, listing, l);
      const StatSummary sectors = stat(run, "l2_slice", "atomic_sectors");
      const double h100 = ncu_value(launches[i], "lts__cycles_elapsed.avg"),
                   model = static_cast<double>(run.cycles) * params.l2.lookups_per_cycle;
      std::printf("| %s | %d | %d | %.0f | %.0f | %+.1f%% | %.2f | %.2f |\n", op.c_str(), patterns[i]["lanes_per_word"].get<int>(),
                  patterns[i]["word_stride"].get<int>(), h100, model, 100 * (model / h100 - 1),
                  ncu_value(launches[i], "lts__d_atomic_input_cycles_active.max") /
                      ncu_value(launches[i], "lts__d_atomic_input_cycles_active.avg"),
                  sectors.max / sectors.mean);
    }
  }
}

// torch.compile's index_add_ adds four floats per lane with one RED: every
// update reaches the L2 once, in 16-byte lanes, and the first two floats' sums
// are the words' values.
TEST_CASE("F32x4 REDs of many warps onto shared words are each applied once", "[models][memory]") {
  const auto path = write_kernel("red_f32x4", {"REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU desc[UR4][R10.64], R32", "EXIT"}, 8, 4,
                                 [](std::uint64_t warp) {
                                   trace::WarpInst red;
                                   red.index = 0;
                                   red.active_mask = 0xFFFFFFFFu;
                                   for (int lane = 0; lane < 32; ++lane) {
                                     // two warps on each 512-byte row: a lane's 16 bytes each
                                     red.address[lane] = 0x10000000ull + 512 * (warp / 2) + 16ull * lane;
                                     red.value[lane] = 0x400000003f800000ull;  // (1.0f, 2.0f)
                                   }
                                   trace::WarpInst exit;
                                   exit.index = 1;
                                   exit.active_mask = 0xFFFFFFFFu;
                                   return std::vector<trace::WarpInst>{red, exit};
                                 });
  const KernelRun run = run_one(h100_with({}), path);
  std::remove(path.c_str());
  REQUIRE(run.check.passed());
  REQUIRE(run.check.addresses == 16 * 32);
  REQUIRE(run.check.lane_updates_applied == 32 * 32);
}
