#include "sim/run.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>

#include "sim/report.hpp"
#include "traces/accelsim.hpp"
#include "traces/writer.hpp"

namespace atomsim {

std::vector<KernelRun> simulate_trace(const GpuParams& params, const std::string& trace_path,
                                      const SimulateOptions& options) {
  trace::TraceReader reader(trace::accelsim::simulation_trace(trace_path));
  Gpu gpu(params);
  std::vector<KernelRun> runs;
  for (std::size_t k = 0; k < reader.kernel_count(); ++k) {
    RunOptions ro;
    ro.check_atomics = options.check_atomics;
    ro.progress = options.progress;
    ro.profile_instructions = options.profile_instructions;
    ro.record_ctas = options.record_ctas;
    ro.threads = options.threads;
    ro.host_profile = options.host_profile;
    if (k + 1 == reader.kernel_count()) ro.counters = options.counters;
    ro.label = fmt::format("[{}]", params.name);
    runs.push_back(gpu.run_kernel(reader, k, ro));
  }
  return runs;
}

std::vector<workloads::MicrobenchParams> default_microbench() {
  workloads::MicrobenchParams p;
  p.blocks = 264;  // two CTAs per H100 SM
  p.warps_per_block = 8;
  p.iterations = 8;
  p.params = 9;  // 3DGS updates 9 gradient values per Gaussian
  p.active_fraction = 0.5;
  p.lanes_per_primitive = 32;
  p.threshold = 8;
  return workloads::microbench_variants(p, "all");
}

std::uint64_t write_microbench_trace(const std::vector<workloads::MicrobenchParams>& kernels, const std::string& path) {
  trace::TraceWriter writer(path);
  std::uint64_t total = 0;
  for (const auto& k : kernels) total += workloads::write_microbench_kernel(k, writer);
  writer.finish();
  return total;
}

namespace {
// Removes a temporary trace however the job ends.
struct TemporaryFile {
  std::string path;
  ~TemporaryFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

std::string temporary_trace_path() {
  static int serial = 0;
  return (std::filesystem::temp_directory_path() / fmt::format("atomsim-microbench-{}-{}.trace", ::getpid(), serial++))
      .string();
}
}  // namespace

std::vector<KernelRun> simulate_microbench(const GpuParams& params,
                                           const std::vector<workloads::MicrobenchParams>& kernels,
                                           const SimulateOptions& options) {
  TemporaryFile temporary{temporary_trace_path()};
  write_microbench_trace(kernels, temporary.path);
  return simulate_trace(params, temporary.path, options);
}

int run_job(const std::string& trace_path, const SimulateOptions& options, std::ostream& out) {
  GpuParams params = load_gpu_params(options.config, options.overrides);
  TemporaryFile temporary;
  std::string path = trace_path;
  if (path.empty()) {
    temporary.path = temporary_trace_path();
    auto kernels = default_microbench();
    const auto& p = kernels.front();
    out << fmt::format("atomsim: built-in microbenchmark on {} ({} SMs): {} blocks x {} warps, {} iterations, {} params, "
                       "{:.0f}% lanes active, {} lanes per primitive, threshold {}\n",
                       params.name, params.sms, p.blocks, p.warps_per_block, p.iterations, p.params,
                       100 * p.active_fraction, p.lanes_per_primitive, p.threshold);
    write_microbench_trace(kernels, temporary.path);
    path = temporary.path;
  }
  auto wall_start = std::chrono::steady_clock::now();
  std::vector<KernelRun> runs = simulate_trace(params, path, options);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();

  bool all_passed = true;
  std::uint64_t instructions = 0, cycles = 0;
  for (const auto& r : runs) {
    out << "\n";
    print_kernel_table(out, r, params);
    if (options.host_profile) print_host_profile(out, r.host_profile);
    all_passed &= !r.checked || r.check.passed();
    auto j = kernel_json(r, params);
    instructions += j["warp_instructions"].get<std::uint64_t>();
    cycles += r.cycles;
  }
  if (runs.size() > 1) {
    out << fmt::format("\n{:<36}{:>12}{:>10}\n", "kernel", "cycles", "speedup");
    for (const auto& r : runs)
      out << fmt::format("{:<36}{:>12}{:>9.2f}x\n", r.name, r.cycles,
                         r.cycles ? static_cast<double>(runs.front().cycles) / static_cast<double>(r.cycles) : 0.0);
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  out << fmt::format("\nsimulated {} warp instructions and {} cycles in {:.2f} s: {:.2f} M warp-instructions/s, "
                     "{:.3f} M cycles/s, peak memory {:.0f} MB\n",
                     instructions, cycles, seconds, seconds > 0 ? static_cast<double>(instructions) / seconds / 1e6 : 0.0,
                     seconds > 0 ? static_cast<double>(cycles) / seconds / 1e6 : 0.0, usage.ru_maxrss / 1024.0);
  if (!options.json_out.empty())
    write_file_atomically(options.json_out, run_json(runs, params, options.overrides, trace_path.empty() ? "built-in microbenchmark" : trace_path).dump(2) + "\n");
  if (!all_passed) {
    out << "atomsim: error: the simulated atomic memory image does not match the trace\n";
    return 3;
  }
  return 0;
}

}  // namespace atomsim
