#include "sim/compare/compare_job.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <boost/process.hpp>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <regex>
#include <set>
#include <thread>

#include <unistd.h>

#include "atomsim_revision.hpp"
#include "sim/compare/comparison.hpp"
#include "sim/report.hpp"
#include "traces/accelsim.hpp"
#include "traces/reader.hpp"
#include "traces/sass.hpp"

namespace atomsim {

namespace {

namespace bp = boost::process;

compare::SimulatedKernel summarize(const nlohmann::json& kernel) {
  compare::SimulatedKernel s;
  s.cycles = kernel["cycles"].get<double>();
  s.warp_instructions = kernel["warp_instructions"].get<std::uint64_t>();
  for (const auto& [state, v] : kernel["warp_states"]["reasons"].items()) s.stall_fractions[state] = v["fraction"].get<double>();
  if (kernel.contains("sampling") && kernel["sampling"]["sampled"].get<bool>() && s.warp_instructions > 0) {
    s.detail_share = 1 - kernel["sampling"]["warp_instructions_skipped"].get<double>() / static_cast<double>(s.warp_instructions);
    s.sampling_error_estimate = kernel["sampling"]["error_estimate"].get<double>();
  }
  if (kernel.contains("instructions"))
    for (const auto& inst : kernel["instructions"]) {
      const auto pc = inst["pc"].get<std::uint64_t>();
      s.sass[pc] = inst["sass"].get<std::string>();
      if (inst.contains("waits_on")) s.waits_on[pc] = inst["waits_on"].get<std::vector<std::uint64_t>>();
      for (const auto& [state, cycles] : inst["states"].items()) s.pc_warp_cycles[pc][state] = cycles.get<double>();
    }
  return s;
}

// One kernel in this process (SystemC allows one simulation per process at a time).
compare::SimulatedKernel simulate_here(const compare::MeasuredKernel& k, const GpuParams& params,
                                       const SimulateOptions& options) {
  SimulateOptions quiet = options;
  quiet.progress = false;
  quiet.counters = k.counters.string();
  auto runs = k.trace.empty() ? simulate_microbench(params, {k.params}, quiet)
                              : simulate_trace(params, k.trace.string(), quiet);
  for (const KernelRun& run : runs)
    if (run.checked && !run.check.passed())
      throw std::runtime_error(k.id + ": the simulated atomic memory image does not match the trace");
  // A capture's trace may begin with the launches that ran before the one measured.
  return summarize(kernel_json(runs.at(runs.size() - 1), params));
}

// One kernel as a child `atomsim run`, so that several run at once; a
// generated microbenchmark's trace is written to `scratch` for it first.
compare::SimulatedKernel simulate_child(const compare::MeasuredKernel& k, const CompareOptions& options,
                                        const std::filesystem::path& scratch, std::size_t index) {
  const auto json = scratch / fmt::format("kernel-{}.json", index);
  const auto log = scratch / fmt::format("kernel-{}.log", index);
  std::filesystem::path trace = k.trace;
  if (trace.empty()) {
    trace = scratch / fmt::format("kernel-{}.atr", index);
    write_microbench_trace({k.params}, trace.string());
  }
  std::vector<std::string> args = {"run", "-q", "--trace", trace.string(), "--config", options.simulate.config,
                                   "--json", json.string()};
  for (const auto& o : options.simulate.overrides) args.insert(args.end(), {"--set", o});
  if (options.simulate.profile_instructions) args.push_back("--instructions");
  args.insert(args.end(), {"--threads", std::to_string(options.simulate.threads)});
  if (!k.counters.empty()) args.insert(args.end(), {"--counters", k.counters.string()});
  const int status = bp::system(bp::exe = options.executable, bp::args = args, bp::std_in < bp::null,
                                bp::std_out > bp::null, bp::std_err > boost::filesystem::path(log.string()));
  if (status != 0) {
    std::ifstream in(log);
    std::string line, last;
    while (std::getline(in, line))
      if (!line.empty()) last = line;
    if (status == 3) last = "the simulated atomic memory image does not match the trace";
    throw std::runtime_error(fmt::format("{}: simulation failed (exit {}): {}", k.id, status, last));
  }
  std::ifstream in(json);
  const auto kernels = nlohmann::json::parse(in).at("kernels");
  auto simulated = summarize(kernels.at(kernels.size() - 1));
  if (k.trace.empty()) std::filesystem::remove(trace);
  return simulated;
}

// The simulation an earlier `atomsim compare` of the capture alone saved in
// its folder (DIR/compare.json, as tools/capture/capture_h100_workloads.sh
// writes it), with the configuration it names. Its overrides may only set
// what that configuration (`params`, read from `config_source`) holds.
compare::SimulatedKernel saved_simulation(const compare::MeasuredKernel& k, const GpuParams& params,
                                          const std::string& config_source) {
  const auto path = k.trace.parent_path().parent_path() / "compare.json";
  if (!std::filesystem::exists(path)) throw compare::DatasetError(path.string() + ": no saved comparison of " + k.id);
  const auto doc = compare::read_json(path);
  const auto saved_config = doc.value("config", std::string());
  if (saved_config != params.name)
    throw compare::DatasetError(fmt::format("{}: simulated with '{}', not '{}'", path.string(), saved_config, params.name));
  if (const auto overrides = doc.value("overrides", std::vector<std::string>());
      load_gpu_params(config_source, overrides).canonical != params.canonical)
    throw compare::DatasetError(fmt::format("{}: simulated with --set {}, not with '{}' as it is", path.string(),
                                            fmt::join(overrides, " --set "), params.name));
  try {
    const auto& kernels = doc.at("kernels");
    if (kernels.size() != 1)
      throw compare::DatasetError(fmt::format("{}: {} kernels; a capture's own comparison has one", path.string(), kernels.size()));
    const auto& simulated = kernels[0].at("simulated");
    compare::SimulatedKernel s;
    s.cycles = simulated.at("cycles").get<double>();
    s.warp_instructions = simulated.at("warp_instructions").get<std::uint64_t>();
    s.stall_fractions = simulated.at("stall_fractions").get<std::map<std::string, double>>();
    s.revision = simulated.value("revision", std::string());
    s.detail_share = simulated.value("detail_share", 1.0);
    s.sampling_error_estimate = simulated.value("sampling_error_estimate", 0.0);
    return s;
  } catch (const nlohmann::json::exception& e) {
    throw compare::DatasetError(path.string() + ": not an atomsim comparison (" + e.what() + ")");
  }
}

std::vector<compare::SimulatedKernel> simulate_all(const std::vector<compare::MeasuredKernel>& measured,
                                                   const GpuParams& params, const CompareOptions& options) {
  std::vector<compare::SimulatedKernel> simulated(measured.size());
  std::mutex mutex;
  std::size_t started = 0;
  auto announce = [&](const compare::MeasuredKernel& k) {
    if (!options.simulate.progress) return;
    std::lock_guard lock(mutex);
    std::cerr << fmt::format("atomsim compare: [{}/{}] {}\n", ++started, measured.size(), k.id);
  };
  // Kernels go to child processes when several jobs are asked for.
  std::vector<std::size_t> here, children;
  for (std::size_t i = 0; i < measured.size(); ++i) (options.jobs > 1 ? children : here).push_back(i);
  if (!children.empty()) {
    const auto scratch = std::filesystem::temp_directory_path() / fmt::format("atomsim-compare-{}", ::getpid());
    std::filesystem::create_directories(scratch);
    std::atomic<std::size_t> next{0};
    std::string first_error;
    auto work = [&] {
      for (std::size_t n; (n = next++) < children.size();) {
        const auto& k = measured[children[n]];
        announce(k);
        try {
          simulated[children[n]] = simulate_child(k, options, scratch, children[n]);
        } catch (const std::exception& e) {
          std::lock_guard lock(mutex);
          if (first_error.empty()) first_error = e.what();
          next = children.size();
        }
      }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < std::min<std::size_t>(options.jobs, children.size()); ++t) pool.emplace_back(work);
    for (auto& t : pool) t.join();
    std::filesystem::remove_all(scratch);
    if (!first_error.empty()) throw std::runtime_error(first_error);
  }
  for (std::size_t i : here) {
    announce(measured[i]);
    simulated[i] = simulate_here(measured[i], params, options.simulate);
  }
  return simulated;
}

// The bundled configuration of the one device the kernels were captured on.
std::string config_for_captured_device(const std::vector<compare::MeasuredKernel>& measured) {
  std::set<std::string> devices;
  for (const auto& k : measured) devices.insert(k.device);
  if (devices.size() > 1) {
    std::string names;
    for (const auto& d : devices) names += (names.empty() ? "" : ", ") + ("'" + d + "'");
    throw std::invalid_argument("the kernels were captured on several devices (" + names + "): give --config");
  }
  const std::string config = config_for_device(*devices.begin());
  if (config.empty())
    throw std::invalid_argument("no bundled configuration for the device '" + *devices.begin() +
                                "' the kernels were captured on: give --config");
  return config;
}

}  // namespace

int compare_job(const CompareOptions& given, std::ostream& out) {
  CompareOptions options = given;
  options.simulate.profile_instructions = options.instructions > 0;
  const bool captured = !options.captures.empty() || !options.manifest.empty();
  if (captured == !options.dataset.empty())
    throw std::invalid_argument("give either --dataset or capture folders (with --manifest, or as arguments)");
  std::vector<std::filesystem::path> folders(options.captures.begin(), options.captures.end());
  if (options.saved && !captured) throw std::invalid_argument("--saved reads captures' own comparisons: give capture folders or --manifest");
  if (options.saved && !options.simulate.overrides.empty())
    throw std::invalid_argument("--saved reads simulations made before: leave out --set, or simulate again without --saved");
  if (options.saved && options.instructions > 0)
    throw std::invalid_argument("--saved has no per-instruction simulation to show: leave out --instructions");
  if (options.against != "median" && options.against != "traced")
    throw std::invalid_argument("--against '" + options.against + "': give median or traced");
  if (options.against == "traced" && !captured)
    throw std::invalid_argument("--against traced compares with the launch a capture traced: give capture folders or --manifest");
  // Traces are needed only for the kernels --only keeps: a manifest may list kernels whose traces were not kept.
  auto dataset = captured ? compare::load_captures(folders, options.manifest) : compare::load_dataset(options.dataset);
  std::vector<compare::MeasuredKernel> measured;
  std::regex only;
  try {
    only.assign(options.only.empty() ? ".*" : options.only);
  } catch (const std::regex_error&) {
    throw std::invalid_argument("--only '" + options.only + "' is not a valid regular expression");
  }
  for (const auto& k : dataset.kernels)
    if (std::regex_search(k.id, only)) measured.push_back(k);
  if (measured.empty()) throw std::invalid_argument("--only '" + options.only + "' matches no kernel given");
  if (options.against == "traced")
    for (auto& k : measured) compare::measure_traced_launch(k);
  else
    for (const auto& k : measured)
      if (compare::launches_drift(k))
        out << fmt::format("note: {}: its timed launches get steadily {} (rank correlation {:+.2f} with their order, {:+.0f}..{:+.0f}% "
                           "of the median): they do different work, and --against traced compares with the launch traced\n",
                           k.id, k.launch_trend < 0 ? "faster" : "slower", k.launch_trend, 100 * (k.fastest_ns / k.time_ns - 1),
                           100 * (k.slowest_ns / k.time_ns - 1));
  if (captured && !options.saved)
    for (const auto& k : measured) compare::require_trace(k);
  if (options.simulate.config.empty()) {
    options.simulate.config = config_for_captured_device(measured);
    out << fmt::format("note: configuration {}, the bundled one for the {} the kernels were captured on (--config to choose)\n",
                       options.simulate.config, measured.front().device);
  }
  GpuParams params = load_gpu_params(options.simulate.config, options.simulate.overrides);

  std::vector<compare::SimulatedKernel> simulated;
  if (options.saved) {
    std::map<std::string, std::size_t> by_revision;
    for (const auto& k : measured) {
      simulated.push_back(saved_simulation(k, params, options.simulate.config));
      ++by_revision[simulated.back().revision];
    }
    out << "note: simulated results as each capture's compare.json saved them, not simulated now\n";
    for (const auto& [revision, kernels] : by_revision)
      out << fmt::format("note: {} kernel(s) simulated by {}\n", kernels,
                         revision.empty() ? "a simulator that did not record its revision" : "atomsim " + revision);
  } else {
    simulated = simulate_all(measured, params, options);
    for (auto& s : simulated) s.revision = ATOMSIM_REVISION;
  }
  for (std::size_t i = 0; i < measured.size(); ++i)
    if (simulated[i].warp_instructions != measured[i].warp_instructions)
      out << fmt::format("note: {}: simulated {} warp instructions, the GPU executed {}\n", measured[i].id,
                         simulated[i].warp_instructions, measured[i].warp_instructions);
  // Captures from before traces carried control bits, or kernels with a DEPBAR, run on registers.
  if (params.sm.dependences == model::Dependences::ControlBits && !options.saved)
    for (const auto& k : measured)
      if (!k.trace.empty() && !trace::control_bits_usable(
                                    trace::TraceReader(trace::accelsim::simulation_trace(k.trace.string())).kernel(0)))
        out << fmt::format("note: {}: the trace's control bits cannot be used; simulated with registers\n", k.id);
  auto comparison = compare::build_comparison(measured, simulated, params.name, options.instructions);
  comparison.overrides = options.simulate.overrides;
  compare::print_comparison(out, comparison);
  if (!options.json_out.empty()) write_file_atomically(options.json_out, compare::comparison_json(comparison).dump(1) + "\n");
  if (!options.plot_out.empty()) write_file_atomically(options.plot_out, compare::stall_plot_svg(comparison));
  return 0;
}

}  // namespace atomsim
