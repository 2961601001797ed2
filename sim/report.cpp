#include "sim/report.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "models/dram/dram.hpp"
#include "models/interconnect/crossbar.hpp"
#include "models/l1/l1.hpp"
#include "models/l2/l2_slice.hpp"
#include "models/mio/mio.hpp"
#include "models/sm/sm.hpp"
#include "models/sm/stall.hpp"

namespace atomsim {

namespace {

// A registered statistic's summary over the kernel; null where no unit of its
// kind exists. A name its group does not hold is a defect, not a zero.
const StatSummary* stat(const KernelRun& run, StatId id) {
  auto k = run.stats.find(std::string(id.group));
  if (k == run.stats.end()) return nullptr;
  auto s = k->second.find(std::string(id.name));
  if (s == k->second.end())
    throw std::logic_error("statistic " + std::string(id.group) + "." + std::string(id.name) + " is not registered");
  return &s->second;
}

double stat_total(const KernelRun& run, StatId id) {
  const StatSummary* s = stat(run, id);
  return s ? s->total : 0;
}

double warp_cycles_total(const KernelRun& run) {
  double total = 0;
  for (int s = 0; s < model::kWarpStateCount; ++s)
    total += stat_total(run, {model::smsp_stat::kGroup,
                              model::smsp_stat::stall_name(model::warp_state_name(static_cast<model::WarpState>(s)))});
  return total;
}

}  // namespace

nlohmann::json kernel_json(const KernelRun& run, const GpuParams& params) {
  using nlohmann::json;
  json k;
  k["name"] = run.name;
  k["grid"] = {run.grid.x, run.grid.y, run.grid.z};
  k["block"] = {run.block.x, run.block.y, run.block.z};
  k["ctas_per_sm"] = run.ctas_per_sm;
  k["cycles"] = run.cycles;
  k["time_us"] = static_cast<double>(run.cycles) / params.sm_clock_mhz;
  const double instructions = stat_total(run, model::smsp_stat::kWarpInstructions);
  k["warp_instructions"] = static_cast<std::uint64_t>(instructions);
  k["thread_instructions"] = static_cast<std::uint64_t>(stat_total(run, model::smsp_stat::kThreadInstructions));
  k["ipc"] = run.cycles ? instructions / static_cast<double>(run.cycles) : 0.0;
  json by_class = json::object();
  for (int c = 0; c < trace::kOpClassCount; ++c) {
    std::string name = trace::op_class_name(static_cast<trace::OpClass>(c));
    double n = stat_total(run, {model::smsp_stat::kGroup, model::smsp_stat::issued_name(name)});
    if (n > 0) by_class[name] = static_cast<std::uint64_t>(n);
  }
  k["warp_instructions_by_class"] = by_class;

  const double warp_cycles = warp_cycles_total(run);
  json reasons = json::object();
  for (int s = 0; s < model::kWarpStateCount; ++s) {
    std::string name = model::warp_state_name(static_cast<model::WarpState>(s));
    double cycles = stat_total(run, {model::smsp_stat::kGroup, model::smsp_stat::stall_name(name)});
    reasons[name] = {{"warp_cycles", static_cast<std::uint64_t>(cycles)},
                     {"fraction", warp_cycles > 0 ? cycles / warp_cycles : 0.0},
                     {"per_instruction", instructions > 0 ? cycles / instructions : 0.0}};
  }
  k["warp_states"] = {{"warp_cycles", static_cast<std::uint64_t>(warp_cycles)}, {"reasons", reasons}};
  if (const SamplingOutcome& o = run.sampling; o.requested)
    k["sampling"] = {{"sampled", o.sampled},
                     {"refused", o.refused},
                     {"windows", o.windows},
                     {"ctas_skipped", o.ctas_skipped},
                     {"warp_instructions_skipped", o.warp_instructions_skipped},
                     {"cycles_extrapolated", o.cycles_extrapolated},
                     {"error_estimate", o.error_estimate},
                     {"mode", o.mode == SampleMode::Loops ? "loops" : o.mode == SampleMode::Waves ? "waves" : "off"},
                     {"ctas_not_moved", o.ctas_not_moved}};
  if (!run.instructions.empty()) {
    // Per instruction that warps spent time at: warp-cycles by state.
    json per_instruction = json::array();
    for (const auto& inst : run.instructions) {
      json states = json::object();
      std::uint64_t total = 0;
      for (int st = 0; st < model::kWarpStateCount; ++st)
        if (inst.warp_cycles[st]) {
          states[model::warp_state_name(static_cast<model::WarpState>(st))] = inst.warp_cycles[st];
          total += inst.warp_cycles[st];
        }
      if (!total) continue;
      json row = {{"pc", inst.pc}, {"sass", inst.sass}, {"warp_cycles", total}, {"states", states}};
      if (!inst.waits_on.empty()) row["waits_on"] = inst.waits_on;
      per_instruction.push_back(std::move(row));
    }
    k["instructions"] = per_instruction;
  }
  if (!run.ctas.empty()) {
    json ctas = json::array();
    for (const auto& c : run.ctas) ctas.push_back({{"cta", c.cta}, {"sm", c.sm}, {"start", c.start}, {"end", c.end}});
    k["ctas"] = ctas;
  }

  json atomics;
  atomics["warp_instructions"] = static_cast<std::uint64_t>(stat_total(run, model::smsp_stat::kAtomicWarpInstructions));
  atomics["lane_ops_issued"] = static_cast<std::uint64_t>(stat_total(run, model::smsp_stat::kAtomicLaneOps));
  atomics["l1_lane_ops_in"] = static_cast<std::uint64_t>(stat_total(run, model::l1_stat::kAtomicLaneOpsIn));
  atomics["l1_ops_to_l2"] = static_cast<std::uint64_t>(stat_total(run, model::l1_stat::kAtomicOpsToL2));
  atomics["l1_buffer_combines"] = static_cast<std::uint64_t>(stat_total(run, model::l1_stat::kAtomicBufferCombines));
  atomics["l2_ops_processed"] = static_cast<std::uint64_t>(stat_total(run, model::l2_slice_stat::kAtomicOps));
  atomics["l2_lane_updates"] = static_cast<std::uint64_t>(stat_total(run, model::l2_slice_stat::kAtomicLaneUpdates));
  if (const StatSummary* s = stat(run, model::l2_slice_stat::kAtomicOps)) {
    atomics["l2_ops_per_slice_mean"] = s->mean;
    atomics["l2_ops_per_slice_max"] = s->max;
  }
  k["atomics"] = atomics;

  json units = json::object();
  for (const auto& [kind, stats] : run.stats) {
    json u = json::object();
    for (const auto& [name, s] : stats) {
      if (name.starts_with("stall.") || name.starts_with("issued.")) continue;
      const char* type = s.kind == StatKind::Counter ? "counter" : s.kind == StatKind::Integral ? "time_average"
                       : s.kind == StatKind::Busy ? "utilization" : "constant";
      u[name] = {{"type", type}, {"instances", s.instances}, {"total", s.total}, {"mean", s.mean}, {"max", s.max}};
    }
    units[kind] = u;
  }
  k["units"] = units;
  if (run.measured_costs)
    k["measured_costs"] = {{"shared_instructions", run.measured_costs->shared_instructions},
                           {"match_values", run.measured_costs->match_values},
                           {"match_executions", run.measured_costs->match_executions},
                           {"constant_operands", run.measured_costs->constant_operands}};
  if (run.checked) {
    const FunctionalCheck& c = run.check;
    k["functional_check"] = {{"passed", c.passed()},
                             {"addresses", c.addresses},
                             {"values_compared", c.values_compared},
                             {"lane_updates_expected", c.lane_updates_expected},
                             {"lane_updates_applied", c.lane_updates_applied},
                             {"count_mismatches", c.count_mismatches},
                             {"value_mismatches", c.value_mismatches},
                             {"max_relative_error", c.max_relative_error}};
  }
  return k;
}

nlohmann::json run_json(const std::vector<KernelRun>& runs, const GpuParams& params,
                        const std::vector<std::string>& overrides, const std::string& trace) {
  nlohmann::json doc;
  doc["schema"] = "atomsim.run/1";
  // Bundled configurations are named relative to the source tree, so that the
  // document does not depend on where the project was checked out.
  std::string file = params.origin;
  const std::string bundled = bundled_config_dir() + "/";
  if (file.starts_with(bundled)) file = "configs/" + file.substr(bundled.size());
  doc["config"] = {{"name", params.name}, {"file", file}, {"overrides", overrides},
                   {"sms", params.sms}, {"sm_clock_mhz", params.sm_clock_mhz}};
  doc["trace"] = trace;
  doc["kernels"] = nlohmann::json::array();
  for (const auto& r : runs) doc["kernels"].push_back(kernel_json(r, params));
  return doc;
}

namespace {
// A unit's kind: its name without its hierarchy and its index ("l1_12",
// "l2_slice3": "l1", "l2_slice").
std::string unit_kind(const std::string& name) {
  std::string kind = name.substr(name.rfind('.') + 1);
  const std::size_t digits = kind.find_last_not_of("0123456789") + 1;
  if (digits == 0 || digits == kind.size()) return kind;
  kind.resize(kind[digits - 1] == '_' ? digits - 1 : digits);
  return kind;
}
}  // namespace

void print_host_profile(std::ostream& out, const HostProfile& profile) {
  struct Kind {
    std::size_t units = 0;
    std::uint64_t evaluations = 0;
    double evaluate = 0, apply = 0;
  };
  std::map<std::string, Kind> kinds;
  std::map<std::uint32_t, std::map<std::string, double>> by_thread;  // each thread's units' time, by kind
  double total = 0;
  for (const UnitHostCost& u : profile.units) {
    const std::string kind = unit_kind(u.unit);
    Kind& k = kinds[kind];
    ++k.units;
    k.evaluations += u.evaluations;
    k.evaluate += u.evaluate_seconds;
    k.apply += u.apply_seconds;
    by_thread[u.thread][kind] += u.seconds();
    total += u.seconds();
  }
  std::vector<std::pair<std::string, Kind>> ranked(kinds.begin(), kinds.end());
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.second.evaluate + a.second.apply > b.second.evaluate + b.second.apply;
  });
  out << fmt::format("  host time by unit ({} threads, {} windows taking {:.2f} s):\n", profile.thread_busy_seconds.size(),
                     profile.windows, profile.window_seconds);
  out << fmt::format("  {:<20}{:>6}{:>13}{:>12}{:>10}{:>8}{:>16}\n", "unit", "units", "evaluations", "evaluate s", "apply s",
                     "share", "us/evaluation");
  for (const auto& [name, k] : ranked)
    out << fmt::format("  {:<20}{:>6}{:>13}{:>12.3f}{:>10.3f}{:>7.1f}%{:>16.3f}\n", name, k.units, k.evaluations, k.evaluate,
                       k.apply, total > 0 ? 100 * (k.evaluate + k.apply) / total : 0.0,
                       k.evaluations ? 1e6 * k.evaluate / static_cast<double>(k.evaluations) : 0.0);
  // A window lasts at least as long as its costliest unit, whichever thread
  // runs it: with many threads the largest single units, not the kinds, bound it.
  std::vector<const UnitHostCost*> costliest;
  for (const UnitHostCost& u : profile.units) costliest.push_back(&u);
  const std::size_t shown = std::min<std::size_t>(6, costliest.size());
  std::partial_sort(costliest.begin(), costliest.begin() + static_cast<std::ptrdiff_t>(shown), costliest.end(),
                    [](const UnitHostCost* a, const UnitHostCost* b) { return a->seconds() > b->seconds(); });
  out << "  costliest units:";
  for (std::size_t i = 0; i < shown; ++i) {
    const UnitHostCost& u = *costliest[i];
    out << fmt::format("{} {} {:.1f}%", i ? "," : "", u.unit,
                       total > 0 ? 100 * u.seconds() / total : 0.0);
  }
  out << '\n';
  if (profile.thread_busy_seconds.size() < 2) return;
  // A window lasts as long as its busiest thread: the threads' spread says
  // how evenly the units are dealt, and the busiest thread's largest kind
  // what bounds it.
  std::vector<double> busy = profile.thread_busy_seconds;
  const std::size_t busiest = static_cast<std::size_t>(std::max_element(busy.begin(), busy.end()) - busy.begin());
  std::string largest;
  double largest_time = 0, busiest_units = 0;
  for (const auto& [kind, time] : by_thread[static_cast<std::uint32_t>(busiest)]) {
    busiest_units += time;
    if (time > largest_time) largest_time = time, largest = kind;
  }
  std::sort(busy.begin(), busy.end());
  out << fmt::format("  threads busy {:.2f} / {:.2f} / {:.2f} s (least / median / most) of the windows' {:.2f} s; the "
                     "busiest, thread {}, spends {:.0f}% of its units' time on {}\n",
                     busy.front(), busy[busy.size() / 2], busy.back(), profile.window_seconds, busiest,
                     busiest_units > 0 ? 100 * largest_time / busiest_units : 0.0, largest.empty() ? "-" : largest);
  // How the windows' time splits between applying and evaluating (to each
  // window's last evaluation) and what follows, against the threads' time in
  // each (a thread applies what the window before staged for it at a
  // window's start, beside the others' evaluations).
  std::vector<double> applying = profile.thread_apply_seconds;
  std::vector<double> evaluating(applying.size());
  for (std::size_t t = 0; t < applying.size(); ++t) evaluating[t] = profile.thread_busy_seconds[t] - applying[t];
  std::sort(applying.begin(), applying.end());
  std::sort(evaluating.begin(), evaluating.end());
  out << fmt::format("  windows: applying and evaluating {:.2f} s (each window's slowest thread evaluates {:.2f} s), threads evaluating "
                     "{:.2f} / {:.2f} / {:.2f} s; after the last evaluation {:.2f} s; each window's slowest thread applies {:.2f} s, "
                     "threads applying {:.2f} / {:.2f} / {:.2f} s\n",
                     profile.window_seconds - profile.apply_step_seconds, profile.slowest_evaluate_seconds,
                     evaluating.front(), evaluating[evaluating.size() / 2], evaluating.back(), profile.apply_step_seconds,
                     profile.slowest_apply_seconds, applying.front(), applying[applying.size() / 2], applying.back());
  // A window's evaluations last at least as long as its longest single
  // domain run: where that sum comes near the slowest threads', the domains
  // themselves, not how they are shared out, bound the windows.
  std::map<std::string, std::uint64_t> longest_by_kind;
  std::uint64_t longest_windows = 0;
  for (const auto& [domain, windows] : profile.longest_domains) {
    longest_by_kind[unit_kind(domain)] += windows;
    longest_windows += windows;
  }
  std::vector<std::pair<std::string, std::uint64_t>> longest(longest_by_kind.begin(), longest_by_kind.end());
  std::stable_sort(longest.begin(), longest.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  out << fmt::format("  each window's longest single domain: {:.2f} s summed; longest in most windows:", profile.longest_domain_seconds);
  for (std::size_t i = 0; i < std::min<std::size_t>(4, longest.size()); ++i)
    out << fmt::format("{} {} {:.0f}%", i ? "," : "", longest[i].first,
                       100.0 * static_cast<double>(longest[i].second) / static_cast<double>(longest_windows));
  out << '\n';
}

void print_kernel_table(std::ostream& out, const KernelRun& run, const GpuParams& params) {
  const double instructions = stat_total(run, model::smsp_stat::kWarpInstructions);
  const double warp_cycles = warp_cycles_total(run);
  out << fmt::format("kernel {}  grid {}x{}x{}  block {}x{}x{}  {} CTAs/SM\n", run.name, run.grid.x, run.grid.y,
                     run.grid.z, run.block.x, run.block.y, run.block.z, run.ctas_per_sm);
  out << fmt::format("  cycles {}  ({:.1f} us at {:.0f} MHz)   warp instructions {:.0f}   IPC {:.2f}\n", run.cycles,
                     static_cast<double>(run.cycles) / params.sm_clock_mhz, params.sm_clock_mhz, instructions,
                     run.cycles ? instructions / static_cast<double>(run.cycles) : 0.0);
  if (const SamplingOutcome& o = run.sampling; o.sampled)
    out << fmt::format("  sampled by {}: {:.1f}% of warp instructions simulated in detail ({} windows, {}), {:.1f}% of "
                       "the cycles extrapolated; estimated error +-{:.2f}% of the cycles\n",
                       o.mode == SampleMode::Loops ? "loop trips" : "CTA waves",
                       instructions > 0 ? 100 * (1 - static_cast<double>(o.warp_instructions_skipped) / instructions) : 100.0,
                       o.windows,
                       o.mode == SampleMode::Loops ? fmt::format("{} CTAs left in place", o.ctas_not_moved)
                                                   : fmt::format("{} CTAs skipped", o.ctas_skipped), run.cycles ? 100 * o.cycles_extrapolated / static_cast<double>(run.cycles) : 0.0,
                       100 * o.error_estimate);
  else if (o.requested)
    out << fmt::format("  not sampled: {}; every CTA simulated\n", o.refused);
  out << fmt::format("  {:<20}{:>16}{:>10}{:>14}\n", "warp state", "warp-cycles", "fraction", "per instr");
  for (int s = 0; s < model::kWarpStateCount; ++s) {
    std::string name = model::warp_state_name(static_cast<model::WarpState>(s));
    double cycles = stat_total(run, {model::smsp_stat::kGroup, model::smsp_stat::stall_name(name)});
    if (cycles == 0) continue;
    out << fmt::format("  {:<20}{:>16.0f}{:>9.1f}%{:>14.2f}\n", name, cycles, warp_cycles > 0 ? 100 * cycles / warp_cycles : 0.0,
                       instructions > 0 ? cycles / instructions : 0.0);
  }
  out << fmt::format("  atomics: {:.0f} lane ops issued, {:.0f} leave L1, {:.0f} processed by ROPs (max {:.0f} per slice)\n",
                     stat_total(run, model::smsp_stat::kAtomicLaneOps), stat_total(run, model::l1_stat::kAtomicOpsToL2),
                     stat_total(run, model::l2_slice_stat::kAtomicOps), stat(run, model::l2_slice_stat::kAtomicOps) ? stat(run, model::l2_slice_stat::kAtomicOps)->max : 0.0);
  auto util = [&](StatId id) {
    const StatSummary* s = stat(run, id);
    return s ? fmt::format("{:.0f}%/{:.0f}%", 100 * s->mean, 100 * s->max) : std::string("-");
  };
  auto level = [&](StatId id) {
    const StatSummary* s = stat(run, id);
    return s ? fmt::format("{:.1f}/{:.1f}", s->mean, s->max) : std::string("-");
  };
  out << fmt::format("  mean/max: LG queue {} flits, MIO queue {}, L1 pipe {}, L2 lookups {}, ROPs {}, xbar out {}, DRAM {}\n",
                     level(model::l1_stat::kLgQueueOccupancy), level(model::mio_stat::kQueueOccupancy),
                     util(model::l1_stat::kPipelineUtilization), util(model::l2_slice_stat::kLookupUtilization),
                     util(model::l2_slice_stat::kRopUtilization),
                     util({kRequestNetworkName, model::crossbar_stat::kOutputUtilization}),
                     util(model::dram_stat::kChannelUtilization));
  if (run.measured_costs)
    out << fmt::format("  measured costs: {} shared-memory instructions' wavefronts; MATCH.ANY {:.2f} distinct values on average "
                       "({} executions); {} constant operands from the listing\n",
                       run.measured_costs->shared_instructions, run.measured_costs->match_values,
                       run.measured_costs->match_executions, run.measured_costs->constant_operands);
  if (run.checked) {
    const FunctionalCheck& c = run.check;
    out << fmt::format("  atomic memory image: {} ({} addresses, {} of {} lane updates applied, max rel. error {:.2e})\n",
                       c.passed() ? "matches the trace" : "MISMATCH", c.addresses, c.lane_updates_applied,
                       c.lane_updates_expected, c.max_relative_error);
  }
}

void write_file_atomically(const std::string& path, const std::string& contents) {
  // A name of its own per writer, so that two processes writing the same path
  // (a sweep point run twice) never interleave in one temporary file.
  static std::atomic<unsigned> serial{0};
  const std::string tmp = fmt::format("{}.partial-{}-{}", path, ::getpid(), serial++);
  auto fail = [&](const char* what) {
    const int error = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("{}: {}: {}", path, what, std::strerror(error)));
  };
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot write: {}", path, std::strerror(errno)));
  std::size_t written = 0;
  while (written < contents.size()) {
    const ssize_t n = ::write(fd, contents.data() + written, contents.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("write failed");
    }
    written += static_cast<std::size_t>(n);
  }
  // Data on disk before the name: after a power loss the path holds the old
  // contents or the new, never a truncated file.
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("cannot flush to disk");
  }
  ::close(fd);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("cannot rename into place");
  const std::string folder = std::filesystem::path(path).parent_path().string();
  const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace atomsim
