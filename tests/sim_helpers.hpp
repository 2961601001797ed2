// Builds small traces and runs them on a configuration, for model-level tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <regex>
#include <stdexcept>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

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

// The h100 configuration with `overrides`, after those of the environment's
// ATOMSIM_TEST_SET (space-separated key=value, as `atomsim --set` takes them),
// so that a probe's table can be simulated with a candidate change of the
// configuration without editing it.
inline GpuParams h100_with(std::vector<std::string> overrides) {
  if (const char* extra = std::getenv("ATOMSIM_TEST_SET")) {
    std::istringstream words(extra);
    std::vector<std::string> all{std::istream_iterator<std::string>(words), std::istream_iterator<std::string>()};
    all.insert(all.end(), overrides.begin(), overrides.end());
    overrides = std::move(all);
  }
  return load_gpu_params(std::string(ATOMSIM_SOURCE_DIR) + "/configs/h100.toml", overrides);
}

// One kernel of `program`'s instructions; `stream(warp)` lists the records of
// each warp; each CTA takes `shared_bytes` of shared memory.
inline std::string write_program(const std::string& name, std::vector<trace::StaticInst> program, std::uint32_t ctas,
                                std::uint32_t warps_per_cta,
                                const std::function<std::vector<trace::WarpInst>(std::uint64_t)>& stream,
                                std::uint32_t shared_bytes = 0) {
  trace::KernelInfo k;
  k.shared_bytes = shared_bytes;
  k.name = name;
  k.grid = {ctas, 1, 1};
  k.block = {warps_per_cta * 32, 1, 1};
  k.registers_per_thread = 32;
  k.program = std::move(program);
  std::string path = temp_trace(name + ".trace");
  trace::TraceWriter w(path);
  w.begin_kernel(k);
  for (std::uint64_t warp = 0; warp < k.total_warps(); ++warp)
    for (const auto& inst : stream(warp)) w.append(warp, inst);
  w.end_kernel();
  w.finish();
  return path;
}

// The same, `program` as SASS text.
inline std::string write_kernel(const std::string& name, const std::vector<std::string>& program, std::uint32_t ctas,
                                std::uint32_t warps_per_cta,
                                const std::function<std::vector<trace::WarpInst>(std::uint64_t)>& stream) {
  std::vector<trace::StaticInst> parsed;
  for (std::size_t i = 0; i < program.size(); ++i) parsed.push_back(trace::parse_sass_instruction(program[i], 16 * i));
  return write_program(name, std::move(parsed), ctas, warps_per_cta, stream);
}

// The control bits of a 128-bit encoding's second word as cuobjdump prints it.
struct Control {
  unsigned stall = 1, write_barrier = 7, read_barrier = 7, wait_mask = 0;
  std::uint64_t high_word() const {
    const std::uint64_t bits = stall | (write_barrier << 5) | (read_barrier << 8) | (wait_mask << 11);
    return bits << 41;
  }
};

// A cuobjdump --dump-sass listing of one function "k", each instruction with its two encoding words.
inline std::string listing_with_control(const std::vector<std::pair<std::string, Control>>& program) {
  std::string out = "\t\tFunction : k\n";
  char line[256];
  for (std::size_t i = 0; i < program.size(); ++i) {
    std::snprintf(line, sizeof line, "        /*%04zx*/                   %s ;  /* 0x000000000000794d */\n", 16 * i,
                  program[i].first.c_str());
    out += line;
    std::snprintf(line, sizeof line, "                                          /* 0x%016llx */\n",
                  static_cast<unsigned long long>(program[i].second.high_word()));
    out += line;
  }
  return out;
}

// The predicated branches of one function of a cuobjdump listing, as (from, to) pcs.
inline std::vector<std::pair<std::uint64_t, std::uint64_t>> branches_of(const std::string& listing, const std::string& function) {
  const auto begin = listing.find("Function : " + function);
  if (begin == std::string::npos) throw std::invalid_argument("no function " + function + " in the listing");
  const std::string text = listing.substr(begin, listing.find("Function :", begin + 1) - begin);
  const std::regex branch(R"(/\*([0-9a-f]{4})\*/ +@!?P[0-6] BRA 0x([0-9a-f]+) ;)");
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), branch); it != std::sregex_iterator(); ++it)
    out.emplace_back(std::stoull((*it)[1], nullptr, 16), std::stoull((*it)[2], nullptr, 16));
  return out;
}

// The name, in a cuobjdump listing, of the function whose mangled name ends in
// `mangled_tail` (a probe's anonymous namespace puts a hash in the rest); by a
// listing of the probes under traces/datasets/h100/latency.
inline std::string function_named(const std::string& listing, const std::string& mangled_tail) {
  const auto at = listing.find(mangled_tail);
  if (at == std::string::npos) throw std::invalid_argument("no function ending in " + mangled_tail + " in the listing");
  const auto begin = listing.rfind("Function : ", at) + 11;
  return listing.substr(begin, at + mangled_tail.size() - begin);
}
inline std::string probe_function(const std::string& listing_file, const std::string& mangled_tail) {
  return function_named(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/" + listing_file), mangled_tail);
}

// That function's program.
inline std::vector<trace::StaticInst> probe_program(const std::string& listing_file, const std::string& mangled_tail) {
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/" + listing_file);
  return trace::parse_sass_function(listing, probe_function(listing_file, mangled_tail));
}

// The innermost loop (the shortest backward branch and what it jumps over) of
// `function` in a cuobjdump listing of the probes under traces/datasets/h100/latency;
// with `timed`, the innermost of those between the function's first two clock
// reads (the loop a probe times, not one that prepares its data).
inline std::vector<trace::StaticInst> innermost_loop(const std::string& listing_file, const std::string& function,
                                                     bool timed = false) {
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/" + listing_file);
  const auto program = trace::parse_sass_function(listing, function);
  std::uint64_t first = 0, last = ~std::uint64_t(0);
  if (timed) {
    std::vector<std::uint64_t> clocks;
    for (const auto& s : program)
      if (s.mnemonic == "CS2R" && clocks.size() < 2) clocks.push_back(s.pc);
    if (clocks.size() < 2) throw std::invalid_argument("no two clock reads in " + function);
    first = clocks[0], last = clocks[1];
  }
  std::uint64_t branch = 0, target = 0;
  for (const auto& [from, to] : branches_of(listing, function))
    if (to < from && to > first && from < last && (branch == 0 || from - to < branch - target)) branch = from, target = to;
  if (branch == 0) throw std::invalid_argument("no loop in " + function);
  std::vector<trace::StaticInst> body;
  for (const auto& s : program)
    if (s.pc >= target && s.pc <= branch) body.push_back(s);
  return body;
}

// The loop of `function` whose backward branch comes `n`-th (from 0) in the
// listing, and what it jumps over: of a kernel with a loop for each of its
// warps' kinds, the one a kind runs.
inline std::vector<trace::StaticInst> nth_loop(const std::string& listing_file, const std::string& function, std::size_t n) {
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/" + listing_file);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> loops;
  for (const auto& [from, to] : branches_of(listing, function))
    if (to < from) loops.emplace_back(from, to);
  if (n >= loops.size()) throw std::invalid_argument("fewer loops in " + function);
  std::vector<trace::StaticInst> body;
  for (const auto& s : trace::parse_sass_function(listing, function))
    if (s.pc >= loops[n].second && s.pc <= loops[n].first) body.push_back(s);
  return body;
}

// One line of Nsight Compute's CSV: quoted fields, whose commas are thousands
// separators (dropped).
inline std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out;
  std::string field;
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) { out.push_back(field); field.clear(); }
    else if (c != ',') field += c;
  }
  out.push_back(field);
  return out;
}

// The launches of a raw Nsight Compute page (`ncu --csv --metrics ...`): each
// launch's values by column name, thousands separators dropped; the units row
// (no launch ID) is skipped.
inline std::vector<std::map<std::string, std::string>> ncu_launches(const std::string& path) {
  std::ifstream csv(path);
  if (!csv) throw std::invalid_argument("cannot read " + path);
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> launches;
  for (std::string line; std::getline(csv, line);) {
    const auto f = csv_fields(line);
    if (f.size() < 10) continue;
    if (f[0] == "ID") {
      header = f;
    } else if (!f[0].empty() && std::isdigit(static_cast<unsigned char>(f[0][0]))) {
      std::map<std::string, std::string> launch;
      for (std::size_t i = 0; i < f.size() && i < header.size(); ++i) launch[header[i]] = f[i];
      launches.push_back(std::move(launch));
    }
  }
  return launches;
}

// The first line of a probe's Nsight Compute CSV, where the probe program
// printed what it ran (a JSON object) before the profiler's table.
inline nlohmann::json ncu_program_line(const std::string& path) {
  std::ifstream csv(path);
  std::string line;
  if (!std::getline(csv, line)) throw std::invalid_argument("cannot read " + path);
  return nlohmann::json::parse(line);
}

// One metric of a launch that ncu_launches read.
inline double ncu_value(const std::map<std::string, std::string>& launch, const std::string& metric) {
  const auto it = launch.find(metric);
  if (it == launch.end()) throw std::invalid_argument("no metric " + metric);
  return std::stod(it->second);
}

inline trace::WarpInst record(std::uint32_t index, std::uint32_t mask = 0xFFFFFFFF) {
  trace::WarpInst w;
  w.index = index;
  w.active_mask = mask;
  return w;
}

// `profile`: warp-cycles per instruction and state in the run's instructions.
// `record_ctas`: every CTA's span on its SM in the run's ctas.
// `counters`: a counters pass's output for the kernel (measured instruction costs).
inline KernelRun run_one(const GpuParams& params, const std::string& path, bool check = true, bool profile = false,
                         bool record_ctas = false, const std::string& counters = "") {
  trace::TraceReader reader(path);
  Gpu gpu(params);
  RunOptions options;
  options.progress = false;
  options.check_atomics = check;
  options.profile_instructions = profile;
  options.record_ctas = record_ctas;
  options.counters = counters;
  return gpu.run_kernel(reader, 0, options);
}

// A counters pass's output (counters.json) by which every MATCH.ANY of
// `program` finds `match_values` distinct values (each counted once, the ADU
// taking that many passes for each) and every shared-memory instruction takes
// `shared_wavefronts` wavefronts.
inline std::string counters_with_costs(const std::string& name, const std::vector<trace::StaticInst>& program,
                                       float match_values, float shared_wavefronts = 0) {
  nlohmann::json pcs = nlohmann::json::array();
  double matches = 0;
  for (const auto& s : program) {
    const bool match = trace::opcode_base(s.mnemonic) == "MATCH";
    matches += match;
    pcs.push_back({{"pc_offset", s.pc}, {"sass", s.mnemonic}, {"warp_instructions", 1},
                   {"shared_wavefronts", s.op == trace::OpClass::Shared ? shared_wavefronts : 0}});
  }
  nlohmann::json doc = {{"metrics", {{"sm__inst_executed_pipe_adu.sum", matches * match_values}}}, {"pcs", pcs}};
  const std::string path = temp_trace(name + "-counters.json");
  std::ofstream(path) << doc.dump();
  return path;
}

inline StatSummary stat(const KernelRun& run, const std::string& kind, const std::string& name) {
  auto k = run.stats.find(kind);
  if (k == run.stats.end()) return {};
  auto s = k->second.find(name);
  return s == k->second.end() ? StatSummary{} : s->second;
}

inline double total(const KernelRun& run, const std::string& kind, const std::string& name) {
  return stat(run, kind, name).total;
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
