#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "models/interconnect/address_map.hpp"
#include "sim/report.hpp"
#include "sim/run.hpp"
#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

std::string small_microbench(const std::string& name, workloads::MicrobenchVariant v, double active = 0.5) {
  workloads::MicrobenchParams p;
  p.variant = v;
  p.blocks = 16;
  p.warps_per_block = 8;
  p.iterations = 4;
  p.active_fraction = active;
  std::string path = temp_trace(name);
  write_microbench_trace({p}, path);
  return path;
}

const std::vector<std::string> kSmall = {"gpu.sms=8", "l2.slices=8"};

}  // namespace

TEST_CASE("the same trace and config give byte-identical JSON", "[sim][determinism]") {
  std::string path = small_microbench("det.trace", workloads::MicrobenchVariant::SwS);
  auto params = h100_with(kSmall);
  SimulateOptions options;
  options.progress = false;
  auto a = run_json(simulate_trace(params, path, options), params, kSmall, path).dump();
  auto b = run_json(simulate_trace(params, path, options), params, kSmall, path).dump();
  REQUIRE(a == b);
  REQUIRE(a.find("\"cycles\"") != std::string::npos);
  std::remove(path.c_str());
}

TEST_CASE("a run that does not check the atomics times them as one that does", "[sim][determinism]") {
  std::string path = small_microbench("unchecked.trace", workloads::MicrobenchVariant::Baseline);
  auto params = h100_with(kSmall);
  SimulateOptions options;
  options.progress = false;
  auto checked = simulate_trace(params, path, options);
  options.check_atomics = false;
  auto unchecked = simulate_trace(params, path, options);
  REQUIRE(checked[0].checked);
  REQUIRE(checked[0].check.passed());
  REQUIRE(checked[0].check.lane_updates_applied > 0);
  REQUIRE_FALSE(unchecked[0].checked);
  // The slices keep no values without the check; every figure stays.
  nlohmann::json with = run_json(checked, params, kSmall, path)["kernels"][0];
  nlohmann::json without = run_json(unchecked, params, kSmall, path)["kernels"][0];
  REQUIRE(with.erase("functional_check") == 1);
  REQUIRE(with == without);
  std::remove(path.c_str());
}

TEST_CASE("the results do not depend on the threads evaluating a cycle's units", "[sim][determinism][threads]") {
  // Instruction profile, CTA spans and the functional check's sums are all
  // gathered from SMs that run on different threads. With a lookahead the
  // clusters run cycles apart on their threads, and from 8 cycles a thread
  // that has run its own clusters runs those others have not begun.
  std::string path = small_microbench("threads.trace", workloads::MicrobenchVariant::SwB);
  std::map<std::string, Cycle> cycles;
  for (const std::string lookahead : {"gpu.lookahead_cycles=1", "gpu.lookahead_cycles=4", "gpu.lookahead_cycles=8"}) {
    std::vector<std::string> set = kSmall;
    set.push_back(lookahead);
    auto params = h100_with(set);
    SimulateOptions options;
    options.progress = false;
    options.profile_instructions = true;
    options.record_ctas = true;
    options.threads = 1;
    auto one = simulate_trace(params, path, options);
    const std::string a = run_json(one, params, set, path).dump();
    for (unsigned threads : {2u, 3u}) {
      options.threads = threads;
      const std::uint64_t dealt_before = units_dealt_by_cost();
      auto many = simulate_trace(params, path, options);
      INFO(lookahead << ", " << threads << " threads");
      // The calendar dealt the units out by their cost at least once during the run.
      REQUIRE(units_dealt_by_cost() > dealt_before);
      REQUIRE(run_json(many, params, set, path).dump() == a);
      REQUIRE(many[0].check.max_relative_error == one[0].check.max_relative_error);
    }
    REQUIRE(one[0].check.passed());
    REQUIRE(one[0].ctas.size() == 16);
    cycles[lookahead] = one[0].cycles;
  }
  // Running cycles apart moves latency from the links' far ends to their
  // near ones and lets freed space be seen up to 3 cycles late: the kernel's
  // time stays within 2%.
  INFO(cycles["gpu.lookahead_cycles=1"] << " and " << cycles["gpu.lookahead_cycles=4"] << " cycles");
  REQUIRE(cycles["gpu.lookahead_cycles=4"] != cycles["gpu.lookahead_cycles=1"]);
  REQUIRE(std::abs(double(cycles["gpu.lookahead_cycles=4"]) / double(cycles["gpu.lookahead_cycles=1"]) - 1) < 0.02);
  std::remove(path.c_str());
}

TEST_CASE("the host profile accounts every unit's evaluations and leaves the results alone", "[sim][host-profile]") {
  std::string path = small_microbench("host_profile.trace", workloads::MicrobenchVariant::Baseline);
  std::vector<std::string> set = kSmall;
  set.push_back("gpu.lookahead_cycles=4");
  auto params = h100_with(set);
  SimulateOptions options;
  options.progress = false;
  options.threads = 2;
  const std::string plain = run_json(simulate_trace(params, path, options), params, set, path).dump();
  options.host_profile = true;
  auto profiled = simulate_trace(params, path, options);
  REQUIRE(run_json(profiled, params, set, path).dump() == plain);
  const HostProfile& profile = profiled[0].host_profile;
  std::map<std::string, std::uint64_t> evaluations;
  double units_seconds = 0;
  for (const UnitHostCost& u : profile.units) {
    evaluations[u.unit.substr(u.unit.rfind('.') + 1)] += u.evaluations;
    units_seconds += u.seconds();
    REQUIRE(u.thread < 2);
  }
  // Every SM ran warps, every slice took their REDs, and both crossbars
  // carried them; the units' time lies within the threads' time, which lies
  // within the windows' (each window waits for its busiest thread).
  for (const std::string unit : {"sm0", "sm7", "l1_0", "l2_slice0", "l2_slice7", "request_network", "reply_network"}) {
    INFO(unit);
    REQUIRE(evaluations[unit] > 0);
  }
  REQUIRE(profile.thread_busy_seconds.size() == 2);
  REQUIRE(profile.windows > 0);
  const double busy = profile.thread_busy_seconds[0] + profile.thread_busy_seconds[1];
  REQUIRE(units_seconds > 0);
  REQUIRE(units_seconds <= busy * 1.001);
  REQUIRE(*std::max_element(profile.thread_busy_seconds.begin(), profile.thread_busy_seconds.end()) <=
          profile.window_seconds * 1.001);
  // Each thread's applying lies within its time, and so does each window's
  // slowest applier's within the window; something (the threads filing their
  // domains, the calendar's thread gathering them) follows each window's
  // last evaluation.
  REQUIRE(profile.thread_apply_seconds.size() == 2);
  for (std::size_t t = 0; t < 2; ++t) REQUIRE(profile.thread_apply_seconds[t] <= profile.thread_busy_seconds[t]);
  REQUIRE(profile.apply_step_seconds > 0);
  REQUIRE(profile.apply_step_seconds <= profile.window_seconds);
  REQUIRE(profile.slowest_apply_seconds <= profile.window_seconds * 1.001);
  // Each window's longest domain run lies within its slowest thread's part.
  REQUIRE(profile.longest_domain_seconds > 0);
  REQUIRE(profile.longest_domain_seconds <= profile.slowest_evaluate_seconds * 1.001);
  std::uint64_t longest_windows = 0;
  for (const auto& [domain, windows] : profile.longest_domains) longest_windows += windows;
  REQUIRE(longest_windows > 0);
  REQUIRE(longest_windows <= profile.windows);
  std::ostringstream text;
  print_host_profile(text, profile);
  INFO(text.str());
  REQUIRE(text.str().find("  l2_slice ") != std::string::npos);
  REQUIRE(text.str().find("  l1 ") != std::string::npos);
  REQUIRE(text.str().find("threads busy") != std::string::npos);
  REQUIRE(text.str().find("windows: applying and evaluating") != std::string::npos);
  REQUIRE(text.str().find("longest single domain") != std::string::npos);
  // The costliest single unit leads its line, as a window's longest domain.
  const UnitHostCost& costliest = *std::max_element(profile.units.begin(), profile.units.end(),
                                                    [](const auto& a, const auto& b) { return a.seconds() < b.seconds(); });
  REQUIRE(text.str().find("costliest units: " + costliest.unit + " ") != std::string::npos);
  // Without profiling there is nothing to report.
  options.host_profile = false;
  REQUIRE(simulate_trace(params, path, options)[0].host_profile.units.empty());
  std::remove(path.c_str());
}

TEST_CASE("every variant conserves atomic updates and accounts every warp-cycle", "[sim]") {
  for (auto v : {workloads::MicrobenchVariant::Baseline, workloads::MicrobenchVariant::SwB, workloads::MicrobenchVariant::SwS}) {
    std::string path = small_microbench("conserve.trace", v);
    auto params = h100_with(kSmall);
    KernelRun run = run_one(params, path);
    INFO(workloads::variant_name(v));
    REQUIRE(run.check.passed());
    REQUIRE(run.check.lane_updates_applied == run.check.lane_updates_expected);
    REQUIRE(total(run, "smsp", "atomic_lane_ops") == total(run, "l2_slice", "atomic_lane_updates"));
    require_states_cover_residency(run);
    std::remove(path.c_str());
  }
}

TEST_CASE("per-instruction warp-cycles add up to the kernel's warp states and leave timing unchanged", "[sim][profile]") {
  std::string path = small_microbench("profile.trace", workloads::MicrobenchVariant::SwS);
  auto params = h100_with(kSmall);
  SimulateOptions plain;
  plain.progress = false;
  SimulateOptions profiled = plain;
  profiled.profile_instructions = true;
  KernelRun a = simulate_trace(params, path, plain).at(0), b = simulate_trace(params, path, profiled).at(0);
  REQUIRE(a.instructions.empty());
  REQUIRE(b.cycles == a.cycles);
  REQUIRE_FALSE(b.instructions.empty());
  for (int st = 0; st < model::kWarpStateCount; ++st) {
    const auto state = static_cast<model::WarpState>(st);
    INFO(model::warp_state_name(state));
    std::uint64_t at_instructions = 0;
    for (const auto& inst : b.instructions) at_instructions += inst.warp_cycles[st];
    const auto whole = static_cast<std::uint64_t>(total(b, "smsp", std::string("stall.") + model::warp_state_name(state)));
    // Only the wait for a warp's very first instruction has no instruction to be charged to.
    if (state == model::WarpState::NoInstructions) REQUIRE(at_instructions <= whole);
    else REQUIRE(at_instructions == whole);
  }
  // One selected cycle per issued instruction, at that instruction.
  std::uint64_t selected = 0;
  for (const auto& inst : b.instructions) selected += inst.warp_cycles[static_cast<int>(model::WarpState::Selected)];
  REQUIRE(selected == static_cast<std::uint64_t>(total(b, "smsp", "warp_instructions")));
  std::remove(path.c_str());
}

TEST_CASE("baseline reductions are LSU-bound; SW-B removes most atomics and is faster", "[sim]") {
  auto params = h100_with(kSmall);
  std::string base = small_microbench("base.trace", workloads::MicrobenchVariant::Baseline, 1.0);
  std::string swb = small_microbench("swb.trace", workloads::MicrobenchVariant::SwB, 1.0);
  KernelRun b = run_one(params, base);
  KernelRun s = run_one(params, swb);
  auto fraction = [](const KernelRun& r, const char* state) {
    double all = 0;
    for (const auto& [name, st] : r.stats.at("smsp")) if (name.starts_with("stall.")) all += st.total;
    return total(r, "smsp", std::string("stall.") + state) / all;
  };
  REQUIRE(fraction(b, "lg_throttle") > 0.3);
  REQUIRE(total(s, "smsp", "atomic_lane_ops") * 16 < total(b, "smsp", "atomic_lane_ops"));
  REQUIRE(s.cycles < b.cycles);
  std::remove(base.c_str());
  std::remove(swb.c_str());
}

TEST_CASE("an L1 atomic buffer combines reductions and still applies every update", "[sim][lab]") {
  std::string path = small_microbench("lab.trace", workloads::MicrobenchVariant::Baseline, 1.0);
  KernelRun off = run_one(h100_with(kSmall), path);
  auto with_lab = kSmall;
  with_lab.push_back("l1.atomic_buffer.enabled=true");
  KernelRun on = run_one(h100_with(with_lab), path);
  REQUIRE(on.check.passed());
  REQUIRE(total(on, "l2_slice", "atomic_lane_updates") == total(off, "l2_slice", "atomic_lane_updates"));
  REQUIRE(total(on, "l2_slice", "atomic_ops") * 8 < total(off, "l2_slice", "atomic_ops"));
  REQUIRE(total(on, "l1", "atomic_buffer_combines") > 0);
  std::remove(path.c_str());
}

TEST_CASE("every bundled configuration loads and runs a kernel", "[sim][config]") {
  std::string path = small_microbench("configs.trace", workloads::MicrobenchVariant::SwB);
  for (const auto& name : bundled_configs()) {
    INFO(name);
    GpuParams p = load_gpu_params(std::string(ATOMSIM_SOURCE_DIR) + "/configs/" + name + ".toml", {});
    REQUIRE(p.name == name);
    KernelRun run = run_one(p, path);
    REQUIRE(run.cycles > 0);
    REQUIRE(run.check.passed());
  }
  std::remove(path.c_str());
}

TEST_CASE("a capture's device name picks its bundled configuration", "[sim][config]") {
  REQUIRE(config_for_device("NVIDIA H100 80GB HBM3") == "h100");
  REQUIRE(config_for_device("NVIDIA H200") == "h200");
  REQUIRE(config_for_device("NVIDIA A100-SXM4-80GB") == "a100");
  REQUIRE(config_for_device("NVIDIA GeForce RTX 4090") == "rtx4090");
  REQUIRE(config_for_device("NVIDIA GeForce RTX 3060 Laptop GPU") == "rtx3060");
  REQUIRE(config_for_device("NVIDIA H1000") == "");  // a longer model number is another GPU
  REQUIRE(config_for_device("NVIDIA L4") == "");
}

TEST_CASE("Long latencies and long gaps without events finish and add their cycles", "[sim][engine]") {
  std::string path = small_microbench("far-wake.trace", workloads::MicrobenchVariant::Baseline);
  // DRAM's refreshes keep to absolute time, so a kernel started later meets them at other points: off here.
  auto steady = kSmall;
  steady.push_back("dram.refresh_interval=0");
  const KernelRun near = run_one(h100_with(steady), path);
  auto with = [&](const std::string& setting) {
    auto overrides = steady;
    overrides.push_back(setting);
    KernelRun run = run_one(h100_with(overrides), path);
    REQUIRE(run.check.passed());
    return run.cycles;
  };
  // The calendar keeps wakes more than 4096 cycles ahead apart; jumping
  // straight to one of them once lost it (a kernel 'deadlocked').
  REQUIRE(with("mio.sfu_latency=10000") > near.cycles + 10000);
  // The run loop simulates 10,000 cycles at a time; a launch latency beyond
  // that once left no event inside a slice, and time never moved.
  REQUIRE(with("dispatch.launch_latency=250000") == near.cycles + 250000 - h100_with(steady).dispatch.launch_latency);
  std::remove(path.c_str());
}

// The launch probe's empty kernels (traces/datasets/h100/latency/launch_overhead.json):
// 1 to 1,056 CTAs that exit at once, on the GPU's clock from launch to end.
TEST_CASE("empty kernels take the H100's launch time", "[sim][dispatch]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/launch_overhead.json"));
  const auto params = h100_with({});
  for (const auto& point : measured["empty_kernel"]) {
    const std::uint32_t ctas = point["blocks"], warps = point["threads"].get<std::uint32_t>() / 32;
    std::string path = write_kernel("empty", {"EXIT"}, ctas, warps, [](std::uint64_t) { return std::vector<trace::WarpInst>{record(0)}; });
    const KernelRun run = run_one(params, path);
    std::remove(path.c_str());
    INFO(ctas << " CTAs of " << warps << " warps: model " << run.cycles << ", H100 " << point["median_cycles"].get<double>());
    CHECK(static_cast<double>(run.cycles) == Approx(point["median_cycles"].get<double>()).epsilon(0.05));
  }
}

namespace {

// The cta_launch probe (workloads/latency/cta_launch.cu) from its own SASS:
// `waves` waves of `per_sm` CTAs an SM of `warps` warps whose thread 0 reads
// the clock and stores it; each SM's CTA starts, in order.
std::vector<std::vector<Cycle>> cta_starts(const GpuParams& params, std::uint32_t warps, std::uint32_t per_sm, std::uint32_t waves) {
  const auto program = probe_program("cta_launch.sass", "9cta_startEPxPj");
  std::size_t first_exit = 0;
  while (program[first_exit].op != trace::OpClass::Exit) ++first_exit;
  const std::uint32_t ctas = params.sms * per_sm * waves;
  auto path = write_program("cta_start", program, ctas, warps, [&](std::uint64_t warp) {
    std::vector<trace::WarpInst> s;
    const bool has_thread0 = warp % warps == 0;
    for (std::size_t i = 0; i < program.size(); ++i) {
      trace::WarpInst r = record(static_cast<std::uint32_t>(i), i < first_exit ? ~0u : i == first_exit ? (has_thread0 ? ~1u : ~0u) : 1u);
      if (program[i].op == trace::OpClass::StoreGlobal) r.address[0] = 0x300000000ull + (warp / warps) * 16 + 8 * (i & 1);
      s.push_back(r);
      if (program[i].op == trace::OpClass::Exit && (i > first_exit || !has_thread0)) break;
    }
    return s;
  });
  const KernelRun run = run_one(params, path, false, false, true);
  std::remove(path.c_str());
  std::vector<std::vector<Cycle>> by_sm(params.sms);
  for (const auto& c : run.ctas) by_sm[c.sm].push_back(c.start);
  for (auto& s : by_sm) std::sort(s.begin(), s.end());
  return by_sm;
}

// Over SMs, the median of each SM's median gap between starts [from, to).
double median_spacing(const std::vector<std::vector<Cycle>>& by_sm, std::size_t from, std::size_t to) {
  std::vector<double> per_sm;
  for (const auto& s : by_sm) {
    REQUIRE(s.size() >= to);
    std::vector<double> gaps;
    for (std::size_t i = from + 1; i < to; ++i) gaps.push_back(static_cast<double>(s[i] - s[i - 1]));
    std::sort(gaps.begin(), gaps.end());
    per_sm.push_back(gaps[gaps.size() / 2]);
  }
  std::sort(per_sm.begin(), per_sm.end());
  return per_sm[per_sm.size() / 2];
}

}  // namespace

// The cta_launch probe against the model: tests/atomsim_tests "[cta-launch-table]".
TEST_CASE("cta_launch probe: every point simulated", "[.][cta-launch-table]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/cta_launch.json"));
  const auto params = h100_with({});
  std::printf("| threads | CTAs an SM | H100 spacing | model |\n|---|---|---|---|\n");
  for (const auto& p : measured["spacing"]) {
    const std::uint32_t warps = p["threads"].get<std::uint32_t>() / 32, per_sm = p["ctas_per_sm"];
    std::printf("| %u | %u | %.1f | %.1f |\n", warps * 32, per_sm, p["spacing_cycles"].get<double>(),
                median_spacing(cta_starts(params, warps, per_sm, 1), 0, per_sm));
  }
  std::printf("\n| threads | CTAs an SM | H100 first wave / second wave spacing, first to second | model |\n|---|---|---|---|\n");
  for (const auto& p : measured["refill"]) {
    const std::uint32_t warps = p["threads"].get<std::uint32_t>() / 32, per_sm = p["ctas_per_sm"];
    const auto starts = cta_starts(params, warps, per_sm, 2);
    std::vector<double> between;
    for (const auto& s : starts) between.push_back(static_cast<double>(s[per_sm] - s[per_sm - 1]));
    std::sort(between.begin(), between.end());
    std::printf("| %u | %u | %.1f / %.1f, %.1f | %.1f / %.1f, %.1f |\n", warps * 32, per_sm,
                p["first_wave_spacing_cycles"].get<double>(), p["second_wave_spacing_cycles"].get<double>(),
                p["first_to_second_wave_cycles"].get<double>(), median_spacing(starts, 0, per_sm),
                median_spacing(starts, per_sm, 2 * per_sm), between[between.size() / 2]);
  }
}

// A wave's CTAs start on their SM some tens of cycles apart, more for large
// CTAs, and a second wave's as closely: the empty kernels' longer time with
// more CTAs an SM is their completion being counted, not their launch. (A
// second wave of 8-warp CTAs starts 48 cycles apart against the H100's 31:
// the first wave's CTAs end further apart in the model.)
TEST_CASE("CTAs start on their SM as far apart as on the H100, in a first wave and in the next", "[sim][dispatch]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/cta_launch.json"));
  const auto params = h100_with({});
  for (const auto& p : measured["refill"]) {
    const std::uint32_t warps = p["threads"].get<std::uint32_t>() / 32, per_sm = p["ctas_per_sm"];
    if (warps != 8 && warps != 32) continue;  // an SM filled by 8 CTAs of 8 warps, and by 2 of 32
    const auto starts = cta_starts(params, warps, per_sm, 2);
    INFO(warps << " warps a CTA");
    CHECK(median_spacing(starts, 0, per_sm) == Approx(p["first_wave_spacing_cycles"].get<double>()).epsilon(0.15));
    if (warps == 32)
      CHECK(median_spacing(starts, per_sm, 2 * per_sm) == Approx(p["second_wave_spacing_cycles"].get<double>()).epsilon(0.15));
  }
}

// The dispatcher hears of a finished CTA dispatch.cta_done_latency after its
// last warp retires, and its place goes to the next CTA then (one cycle to
// reach the SM), every CTA's span kept by RunOptions::record_ctas.
TEST_CASE("a CTA's place goes to the next CTA the done latency after its last warp retires", "[sim][dispatch]") {
  std::string path = small_microbench("cta-done.trace", workloads::MicrobenchVariant::Baseline);
  auto overrides = kSmall;
  overrides.push_back("gpu.sms=1");  // 16 CTAs of 8 warps, eight at a time
  overrides.push_back("dispatch.cta_launch_interval=0");
  overrides.push_back("dispatch.cta_done_latency=333");
  trace::TraceReader reader(path);
  Gpu gpu(h100_with(overrides));
  RunOptions options;
  options.progress = false;
  options.record_ctas = true;
  const KernelRun run = gpu.run_kernel(reader, 0, options);
  REQUIRE(run.ctas.size() == run.grid.count());
  const std::size_t first_wave = std::min<std::size_t>(run.ctas.size(), std::size_t(run.ctas_per_sm) * gpu.params().sms);
  REQUIRE(first_wave < run.ctas.size());
  for (std::size_t i = 0; i < run.ctas.size(); ++i) {
    const auto& c = run.ctas[i];
    REQUIRE(c.end > c.start);
    if (i < first_wave) continue;
    const bool follows_one = std::any_of(run.ctas.begin(), run.ctas.begin() + i, [&](const KernelRun::CtaSpan& before) {
      return before.sm == c.sm && before.end + 333 + 1 == c.start;
    });
    REQUIRE(follows_one);
  }
  std::remove(path.c_str());
}

// Buffers the allocator placed elsewhere (gpu.placement_offset): the lines
// fall on other slices, while the kernel does the same work with the same
// results, and an L2 warmed with its footprint still serves every load.
TEST_CASE("a placement offset moves lines among the slices, not what the kernel does", "[sim][l2]") {
  std::string path = testing::write_kernel(
      "placed", {"REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R10.64], R13", "LDG.E R4, desc[UR4][R2.64]", "EXIT"}, 64, 4,
      [](std::uint64_t warp) {
        trace::WarpInst red = testing::record(0), load = testing::record(1);
        for (int lane = 0; lane < 32; ++lane) {
          red.address[lane] = 0x200000 + (1 << 20) * (warp % 8) + 4 * lane;  // eight lines crowded by every warp
          red.value[lane] = 0x3f800000;                                  // 1.0f
          load.address[lane] = 0x10000000 + warp * 128 + lane * 4;
        }
        return std::vector<trace::WarpInst>{red, load, testing::record(2)};
      });
  // The most lines of the eight that share a slice, where the model is to put them.
  const model::AddressMap map(testing::h100_with({}).l2.address_map());
  auto crowding = [&](std::uint64_t offset) {
    std::map<std::uint32_t, int> lines_on;
    int most = 0;
    for (std::uint64_t line = 0; line < 8; ++line) most = std::max(most, ++lines_on[map.slice_of(0x200000 + (1 << 20) * line + offset)]);
    return most;
  };
  const std::uint64_t offsets[] = {0, 2 << 20, 64 << 20, (1ull << 30) + (2 << 20) + 512};
  std::set<int> crowdings;
  for (const std::uint64_t offset : offsets) {
    const std::string set = "gpu.placement_offset=" + std::to_string(offset);
    KernelRun run = testing::run_one(testing::h100_with({set}), path);
    INFO("offset " << offset);
    REQUIRE(run.check.passed());
    REQUIRE(run.check.lane_updates_applied == 256 * 32);
    REQUIRE(run.check.addresses == 8 * 32);
    REQUIRE(testing::total(run, "dram", "reads") == 8 + 256);  // the eight crowded lines and one line per warp
    crowdings.insert(crowding(offset));
    REQUIRE(testing::stat(run, "l2_slice", "atomic_ops").max == 32 * 32 * crowding(offset));
    KernelRun warm = testing::run_one(testing::h100_with({set, "l2.start=footprint"}), path);
    REQUIRE(testing::total(warm, "dram", "reads") == 0);
  }
  REQUIRE(crowdings.size() > 1);  // the placements differ in how the lines crowd
  std::remove(path.c_str());
}

// A kernel whose data earlier launches left in the L2 (l2.start = footprint)
// loads it from there: no DRAM read, and it finishes sooner than from cold.
TEST_CASE("an L2 warmed with the kernel's footprint serves its loads without DRAM", "[sim][l2]") {
  std::string path = testing::write_kernel("loads", {"LDG.E R4, desc[UR4][R2.64]", "EXIT"}, 64, 4, [](std::uint64_t warp) {
    trace::WarpInst load = testing::record(0);
    for (int lane = 0; lane < 32; ++lane) load.address[lane] = 0x100000 + warp * 128 + lane * 4;
    return std::vector<trace::WarpInst>{load, testing::record(1)};
  });
  KernelRun cold = testing::run_one(testing::h100_with({}), path);
  KernelRun warm = testing::run_one(testing::h100_with({"l2.start=footprint"}), path);
  REQUIRE(testing::total(cold, "dram", "reads") == 256);  // one line per warp
  REQUIRE(testing::total(warm, "dram", "reads") == 0);
  REQUIRE(testing::total(warm, "l2_slice", "hits") == testing::total(cold, "l2_slice", "misses"));
  REQUIRE(warm.cycles < cold.cycles);
  std::remove(path.c_str());
}

// An ATOM's old values go back the way its request came: a request homed in
// the other partition enters at a slice of the SM's own, crosses the link
// between the partitions, and its reply crosses back to that slice, which
// passes it to the SM. A RED's acknowledgement goes straight back.
TEST_CASE("a far ATOM's reply comes back over the link between the partitions; a RED's does not", "[sim][l2]") {
  const GpuParams params = h100_with({"gpu.sms=1"});
  const model::AddressMap map(params.l2.address_map());
  // 32 lanes of one warp, each on a line of its own 4 KB apart: about half homed in the other partition.
  std::uint32_t far = 0;
  auto lines = [&](std::uint64_t) {
    trace::WarpInst w = record(0);
    for (int lane = 0; lane < 32; ++lane) {
      w.address[lane] = 0x10000000 + 4096ull * static_cast<std::uint64_t>(lane);
      w.value[lane] = 0x3f800000;
    }
    return std::vector<trace::WarpInst>{w, record(1)};
  };
  for (int lane = 0; lane < 32; ++lane)
    far += map.partition_of_slice(map.slice_of(0x10000000 + 4096ull * lane)) != map.partition_of_sm(0);
  REQUIRE(far > 0);
  REQUIRE(far < 32);
  const std::string atoms = write_kernel("far-atoms", {"ATOMG.E.ADD.F32.FTZ.RN.STRONG.GPU PT, R9, desc[UR6][R8.64], R17", "EXIT"}, 1, 1, lines);
  const std::string reds = write_kernel("far-reds", {"REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R10.64], R13", "EXIT"}, 1, 1, lines);
  const KernelRun atom = run_one(params, atoms), red = run_one(params, reds);
  REQUIRE(total(atom, "l2_slice", "passed_on") == far);
  REQUIRE(total(atom, "l2_slice", "atomic_replies_passed_back") == far);
  REQUIRE(total(red, "l2_slice", "passed_on") == far);
  REQUIRE(total(red, "l2_slice", "atomic_replies_passed_back") == 0);
  // What crossed the link: the far requests, and for the ATOMs their replies (a sector each).
  REQUIRE(total(atom, "partition_network", "packets") == 2 * far);
  // Past the SM's port an ATOM's one-word request is a flit, as a RED's.
  REQUIRE(total(atom, "request_network", "flits") == 32);
  REQUIRE(total(red, "request_network", "flits") == 32);
  REQUIRE(total(red, "partition_network", "packets") == far);
  REQUIRE(atom.check.passed());
  REQUIRE(red.check.passed());
  std::remove(atoms.c_str());
  std::remove(reds.c_str());
}
