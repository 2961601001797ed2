// Builds small traces and runs them on a configuration, for model-level tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "sim/config.hpp"
#include "sim/gpu.hpp"
#include "traces/reader.hpp"
#include "traces/sass.hpp"
#include "traces/writer.hpp"

namespace atomsim::testing {

inline std::string temp_trace(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("atomsim-test-" + std::to_string(::getpid()) + "-" + name)).string();
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CommandResult {
  int code;
  std::string out, err;
  std::size_t err_lines() const {
    std::size_t n = 0;
    for (char c : err) n += c == '\n';
    return n;
  }
};

// Runs a shell command with no input; its exit status and what it printed.
inline CommandResult run_command(const std::string& command) {
  const std::string out = temp_trace("command.out"), err = temp_trace("command.err");
  const int status = std::system((command + " >" + out + " 2>" + err + " </dev/null").c_str());
  CommandResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
  std::remove(out.c_str());
  std::remove(err.c_str());
  return r;
}

inline GpuParams h100_with(std::vector<std::string> overrides) {
  return load_gpu_params(std::string(ATOMSIM_SOURCE_DIR) + "/configs/h100.toml", overrides);
}

// One kernel; `program` is SASS text; `stream(warp)` lists the records of each warp.
inline std::string write_kernel(const std::string& name, const std::vector<std::string>& program, std::uint32_t ctas,
                                std::uint32_t warps_per_cta,
                                const std::function<std::vector<trace::WarpInst>(std::uint64_t)>& stream) {
  trace::KernelInfo k;
  k.name = name;
  k.grid = {ctas, 1, 1};
  k.block = {warps_per_cta * 32, 1, 1};
  k.registers_per_thread = 32;
  for (std::size_t i = 0; i < program.size(); ++i) k.program.push_back(trace::parse_sass_instruction(program[i], 16 * i));
  std::string path = temp_trace(name + ".trace");
  trace::TraceWriter w(path);
  w.begin_kernel(k);
  for (std::uint64_t warp = 0; warp < k.total_warps(); ++warp)
    for (const auto& inst : stream(warp)) w.append(warp, inst);
  w.end_kernel();
  w.finish();
  return path;
}

inline trace::WarpInst record(std::uint32_t index, std::uint32_t mask = 0xFFFFFFFF) {
  trace::WarpInst w;
  w.index = index;
  w.active_mask = mask;
  return w;
}

inline KernelRun run_one(const GpuParams& params, const std::string& path, bool check = true) {
  trace::TraceReader reader(path);
  Gpu gpu(params);
  RunOptions options;
  options.progress = false;
  options.check_atomics = check;
  return gpu.run_kernel(reader, 0, options);
}

inline double total(const KernelRun& run, const std::string& kind, const std::string& name) {
  auto k = run.stats.find(kind);
  if (k == run.stats.end()) return 0;
  auto s = k->second.find(name);
  return s == k->second.end() ? 0 : s->second.total;
}

// Every resident warp is in exactly one state each cycle: the states add up to
// the resident-warp time.
inline void require_states_cover_residency(const KernelRun& run) {
  double states = 0;
  for (const auto& [name, s] : run.stats.at("smsp"))
    if (name.starts_with("stall.")) states += s.total;
  double resident = total(run, "sm", "resident_warps") * static_cast<double>(run.cycles);
  REQUIRE(states == Approx(resident).epsilon(1e-9));
}

}  // namespace atomsim::testing
