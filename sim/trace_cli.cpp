#include "sim/trace_cli.hpp"

#include <bit>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "tools/capture/warp_join.hpp"
#include "traces/format.hpp"
#include "traces/reader.hpp"
#include "traces/sass.hpp"
#include "traces/validate.hpp"

namespace atomsim {

namespace {
void print_summary(const trace::TraceSummary& s, std::ostream& out) {
  out << fmt::format("format v{}.{}, {} bytes, {} chunks, {} bytes of records uncompressed ({:.1f}x)\n",
                     trace::format::kVersionMajor, trace::format::kVersionMinor, s.file_bytes, s.chunks, s.raw_bytes,
                     s.file_bytes ? static_cast<double>(s.raw_bytes) / static_cast<double>(s.file_bytes) : 0.0);
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    const auto& k = s.kernels[i];
    out << fmt::format("kernel {}: {}  grid {}x{}x{}  block {}x{}x{}  {} registers/thread  {} B shared  {} warps\n", i,
                       k.name, k.grid.x, k.grid.y, k.grid.z, k.block.x, k.block.y, k.block.z, k.registers_per_thread,
                       k.shared_bytes, k.warps);
    out << fmt::format("  {} warp instructions, {} thread instructions, {} atomic lane operations\n",
                       k.warp_instructions, k.thread_instructions, k.atomic_lane_ops);
    std::string classes;
    for (int c = 0; c < trace::kOpClassCount; ++c)
      if (k.by_class[c]) classes += fmt::format(" {}={}", trace::op_class_name(static_cast<trace::OpClass>(c)), k.by_class[c]);
    out << "  by class:" << classes << "\n";
  }
}
}  // namespace

void trace_info(const std::string& path, std::ostream& out) { print_summary(trace::validate_trace(path), out); }

void trace_validate(const std::string& path, std::ostream& out) {
  trace::TraceSummary s = trace::validate_trace(path);
  std::uint64_t records = 0;
  for (const auto& k : s.kernels) records += k.warp_instructions;
  out << fmt::format("{}: valid ({} kernels, {} warp instructions)\n", path, s.kernels.size(), records);
}

void trace_dump(const std::string& path, std::size_t kernel, std::uint64_t warp, std::uint64_t limit, std::ostream& out) {
  trace::TraceReader reader(path);
  if (kernel >= reader.kernel_count())
    throw trace::TraceError(fmt::format("{}: no kernel {} (the trace has {})", path, kernel, reader.kernel_count()));
  const trace::KernelInfo& k = reader.kernel(kernel);
  if (warp >= k.total_warps())
    throw trace::TraceError(fmt::format("{}: kernel {} has no warp {} (it has {})", path, kernel, warp, k.total_warps()));
  trace::WarpStream stream = reader.open_warp(kernel, warp);
  trace::WarpInst inst;
  std::uint64_t n = 0;
  while (n < limit && stream.next(inst)) {
    const trace::StaticInst& s = k.program[inst.index];
    out << fmt::format("{:>8}  pc 0x{:04x}  {:<8} mask {:08x}  {}", n, s.pc, trace::op_class_name(s.op), inst.active_mask,
                       s.mnemonic);
    if (trace::is_global_memory(s.op) && inst.active_mask) {
      int first = std::countr_zero(inst.active_mask);
      out << fmt::format("  lane{} addr 0x{:x}", first, inst.address[first]);
      if (trace::is_atomic(s.op)) out << fmt::format(" value 0x{:x}", inst.value[first]);
    }
    out << "\n";
    ++n;
  }
}

void trace_rejoin(const std::string& path, std::optional<std::uint64_t> show_warp, std::ostream& out) {
  std::ifstream in(path);
  if (!in) throw trace::TraceError(path + ": cannot open");
  std::stringstream text;
  text << in.rdbuf();
  capture::JoinInput input;
  std::vector<trace::StaticInst> program;
  try {
    input = capture::load_join_input(text.str());
    program = input.program();
  } catch (const std::exception& e) {
    throw trace::TraceError(path + ": " + e.what());
  }
  if (show_warp && *show_warp >= input.warps.size())
    throw trace::TraceError(fmt::format("{}: no warp {} (it has {})", path, *show_warp, input.warps.size()));
  std::uint64_t warp = 0, records = 0;
  try {
    capture::WarpJoiner joiner(program, input.text, input.observed());
    if (!input.counts.empty()) joiner.use_counts(input.counts);
    for (; warp < input.warps.size(); ++warp) joiner.survey(input.warps[warp]);
    for (warp = 0; warp < input.warps.size(); ++warp) {
      joiner.join(input.warps[warp], [&](const trace::WarpInst& inst) {
        ++records;
        if (show_warp == warp)
          out << fmt::format("  pc 0x{:04x}  mask {:08x}  {}\n", input.pcs[inst.index], inst.active_mask, input.text[inst.index]);
      });
    }
    out << fmt::format("{}: {}: joined {} warps into {} warp instructions ({} branches guessed, {} guesses taken back)\n",
                       path, input.kernel, input.warps.size(), records, joiner.guessed_branches(), joiner.retried_guesses());
  } catch (const capture::JoinError& e) {
    throw trace::TraceError(fmt::format("{}: warp {}: {}", path, warp, e.what()));
  }
}

}  // namespace atomsim
