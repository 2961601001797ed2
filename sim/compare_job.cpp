#include "sim/compare_job.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <regex>

#include "sim/report.hpp"
#include "tools/compare/comparison.hpp"

namespace atomsim {

namespace {

compare::SimulatedKernel summarize(const KernelRun& run, const GpuParams& params) {
  auto j = kernel_json(run, params);
  compare::SimulatedKernel s;
  s.cycles = static_cast<double>(run.cycles);
  s.warp_instructions = j["warp_instructions"].get<std::uint64_t>();
  for (const auto& [state, v] : j["warp_states"]["reasons"].items()) s.stall_fractions[state] = v["fraction"].get<double>();
  return s;
}

}  // namespace

int compare_job(const CompareOptions& options, std::ostream& out) {
  GpuParams params = load_gpu_params(options.simulate.config, options.simulate.overrides);
  const bool captured = !options.captures.empty() || !options.manifest.empty();
  if (captured == !options.dataset.empty())
    throw std::invalid_argument("give either --dataset or capture folders (with --manifest, or as arguments)");
  std::vector<std::filesystem::path> folders(options.captures.begin(), options.captures.end());
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

  std::vector<compare::SimulatedKernel> simulated;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const auto& k = measured[i];
    if (options.simulate.progress)
      std::cerr << fmt::format("atomsim compare: [{}/{}] {}\n", i + 1, measured.size(), k.id);
    SimulateOptions quiet = options.simulate;
    quiet.progress = false;
    auto runs = k.trace.empty() ? simulate_microbench(params, {k.params}, quiet)
                                : simulate_trace(params, k.trace.string(), quiet);
    if (runs.at(0).checked && !runs[0].check.passed())
      throw std::runtime_error(k.id + ": the simulated atomic memory image does not match the trace");
    simulated.push_back(summarize(runs[0], params));
    if (simulated.back().warp_instructions != k.warp_instructions)
      out << fmt::format("note: {}: simulated {} warp instructions, the GPU executed {}\n", k.id,
                         simulated.back().warp_instructions, k.warp_instructions);
  }
  auto comparison = compare::build_comparison(measured, simulated, params.name);
  compare::print_comparison(out, comparison);
  if (!options.json_out.empty()) write_file_atomically(options.json_out, compare::comparison_json(comparison).dump(1) + "\n");
  if (!options.plot_out.empty()) write_file_atomically(options.plot_out, compare::stall_plot_svg(comparison));
  return 0;
}

}  // namespace atomsim
