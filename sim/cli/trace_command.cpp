// `atomsim trace info | validate | dump | check | rejoin`: looking into traces.
#include <xxhash.h>

#include <algorithm>
#include <array>
#include <bit>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "sim/cli/command.hpp"
#include "sim/report.hpp"
#include "tools/capture/faithfulness.hpp"
#include "tools/capture/warp_join.hpp"
#include "traces/accelsim.hpp"
#include "traces/capture_document.hpp"
#include "traces/format.hpp"
#include "traces/reader.hpp"
#include "traces/sass.hpp"
#include "traces/validate.hpp"

namespace atomsim::cli {
namespace {

// Power-of-two bins of a count from 1 to 32 (lanes, addresses, masks).
constexpr int kBins[][2] = {{1, 1}, {2, 3}, {4, 7}, {8, 15}, {16, 31}, {32, 32}};
constexpr const char* kBinNames = "1 | 2-3 | 4-7 | 8-15 | 16-31 | 32";

// The mean of counts[1..32] and their shares in kBins.
std::string spread(const std::array<double, 33>& counts, double total) {
  std::string text;
  double mean = 0;
  for (int v = 1; v <= 32; ++v) mean += v * counts[v] / total;
  for (const auto& [lo, hi] : kBins) {
    double share = 0;
    for (int v = lo; v <= hi; ++v) share += counts[v] / total;
    text += fmt::format(" {:>3.0f}%", 100 * share);
  }
  return fmt::format("mean {:4.1f} |{}", mean, text);
}

// Per WARPSYNC, how many different masks its lanes named per execution: a pass each.
void print_warp_sync_shapes(const trace::KernelSummary& k, std::ostream& out) {
  if (k.warp_syncs.empty()) return;
  out << "  WARPSYNC masks named per execution, shares in bins " << kBinNames << ":\n";
  for (const auto& [pc, shape] : k.warp_syncs) {
    std::array<double, 33> masks{};
    double executions = 0;
    for (auto&& cell : boost::histogram::indexed(shape)) {
      masks[cell.index(0) + 1] += *cell;
      executions += *cell;
    }
    out << fmt::format("    pc 0x{:04x} ({:.0f} executions)  masks {}\n", pc, executions, spread(masks, executions));
  }
}

// Per atomic instruction, the spread of active lanes and of distinct addresses
// per warp instruction (shares of its executions, in power-of-two bins), and
// over the kernel how many of the atomics' lane operations a warp-level
// reduction of same-address lanes would remove: the regime the trace is in.
void print_atomic_shapes(const trace::KernelSummary& k, std::ostream& out) {
  if (k.atomics.empty()) return;
  out << "  atomics per warp instruction, shares in bins " << kBinNames << ":\n";
  double lanes_total = 0, distinct_total = 0;
  for (const auto& [pc, atomic] : k.atomics) {
    std::array<double, 33> lanes{}, distinct{};
    double executions = 0;
    for (auto&& cell : boost::histogram::indexed(atomic.shape)) {
      lanes[cell.index(0) + 1] += *cell;
      distinct[cell.index(1) + 1] += *cell;
      executions += *cell;
      lanes_total += (cell.index(0) + 1) * *cell;
      distinct_total += (cell.index(1) + 1) * *cell;
    }
    out << fmt::format("    pc 0x{:04x} {} ({:.0f} executions)\n      active lanes       {}\n      distinct addresses {}\n",
                       pc, atomic.mnemonic, executions, spread(lanes, executions), spread(distinct, executions));
  }
  out << fmt::format("  a reduction of same-address lanes would leave {:.1f}% of the {:.0f} atomic lane operations\n",
                     100 * distinct_total / lanes_total, lanes_total);
}

void print_summary(const trace::TraceSummary& s, std::ostream& out) {
  out << fmt::format("format v{}.{}, {} bytes, {} chunks, {} bytes of records uncompressed ({:.1f}x)\n",
                     trace::format::kVersionMajor, s.version_minor, s.file_bytes, s.chunks, s.raw_bytes,
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
    out << fmt::format("  control bits: {} of {} static instructions ({})\n", k.with_control_bits, k.static_instructions,
                       k.control_bits_usable ? "sm.dependences=control_bits uses them"
                       : k.with_control_bits == k.static_instructions
                           ? "a DEPBAR, whose count the trace lacks: simulated with registers"
                           : "simulated with registers");
    if (k.ticket_order || k.awaiting_loads)
      out << fmt::format("  CTAs wait on each other: {}; {} loads wait for another warp's store, {} stores are awaited\n",
                         k.ticket_order ? "they start in the order they drew tickets on the GPU" : "grid order",
                         k.awaiting_loads, k.storing_awaited);
    print_atomic_shapes(k, out);
    print_warp_sync_shapes(k, out);
  }
}
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
    if (s.control.present) {
      auto barrier = [](std::uint8_t b) { return b == trace::ControlBits::kNoBarrier ? std::string("-") : std::to_string(b); };
      out << fmt::format("  [stall {} write {} read {} wait {:06b}]", s.control.stall(), barrier(s.control.write_barrier()),
                         barrier(s.control.read_barrier()), s.control.wait_mask());
    }
    if (trace::is_global_memory(s.op) && inst.active_mask) {
      int first = std::countr_zero(inst.active_mask);
      out << fmt::format("  lane{} addr 0x{:x}", first, inst.address[first]);
      if (trace::is_atomic(s.op)) out << fmt::format(" value 0x{:x}", inst.value[first]);
    }
    if (trace::is_warp_sync(s.mnemonic) && inst.value_lanes)
      out << fmt::format("  {} masks", inst.value[std::countr_zero(inst.value_lanes)]);
    out << "\n";
    ++n;
  }
}

// The joined streams' executions of each instruction beside the count pass's.
std::string count_agreement(const capture::JoinInput& input, const std::vector<std::uint64_t>& executions) {
  std::size_t differing = 0, first = 0;
  for (std::size_t i = 0; i < executions.size(); ++i)
    if (executions[i] != input.counts[i] && differing++ == 0) first = i;
  if (differing == 0)
    return fmt::format("warp executions of all {} instructions equal the count pass's", executions.size());
  return fmt::format("warp executions of {} of {} instructions differ from the count pass's (first: pc 0x{:x}, "
                     "joined {}, counted {})",
                     differing, executions.size(), input.pcs[first], executions[first], input.counts[first]);
}

void trace_rejoin(const std::string& path, std::optional<std::uint64_t> show_warp, unsigned threads, std::ostream& out) {
  std::string text;
  try {
    text = capture::read_document(path);
  } catch (const capture::DocumentError& e) {
    throw trace::TraceError(e.what());
  }
  capture::JoinInput input;
  try {
    input = capture::load_join_input(text);
  } catch (const capture::JoinError& e) {
    throw trace::TraceError(path + ": " + e.what());
  }
  if (show_warp && *show_warp >= input.warps.size())
    throw trace::TraceError(fmt::format("{}: no warp {} (it has {})", path, *show_warp, input.warps.size()));
  try {
    // A digest of the joined streams, so that two joins of one input can be told apart at a glance.
    std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> digest(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(digest.get());
    std::vector<std::uint64_t> executions(input.pcs.size(), 0);
    const capture::RejoinResult joined = capture::rejoin(input, threads, [&](std::uint64_t warp, const trace::WarpInst& inst) {
      ++executions[inst.index];
      const std::array<std::uint64_t, 2> key{warp, std::uint64_t{inst.index} << 32 | inst.active_mask};
      XXH3_64bits_update(digest.get(), key.data(), sizeof key);
      if (show_warp == warp)
        out << fmt::format("  pc 0x{:04x}  mask {:08x}  {}\n", input.pcs[inst.index], inst.active_mask, input.text[inst.index]);
    });
    out << fmt::format("{}: {}: joined {} warps into {} warp instructions ({} branches guessed, {} guesses taken back), digest {:016x}\n",
                       path, input.kernel, input.warps.size(), joined.warp_instructions, joined.guessed_branches,
                       joined.retried_guesses, XXH3_64bits_digest(digest.get()));
    if (!input.counts.empty()) out << count_agreement(input, executions) << "\n";
  } catch (const std::runtime_error& e) {  // JoinError, or trace::TraceError for SASS the decoder refuses
    throw trace::TraceError(fmt::format("{}: {}", path, e.what()));
  }
}


class TraceCommand final : public Command {
 public:
  explicit TraceCommand(CLI::App& app) {
    auto* trace = app.add_subcommand("trace", "inspect traces");
    trace->require_subcommand(1);
    info_ = trace->add_subcommand("info", "summary of a trace");
    info_->add_option("trace", path_, "trace file")->required();
    validate_ = trace->add_subcommand("validate", "check every byte of a trace");
    validate_->add_option("trace", path_, "trace file")->required();
    dump_ = trace->add_subcommand("dump", "print a warp's instruction records");
    dump_->add_option("trace", path_, "trace file")->required();
    dump_->add_option("--kernel", kernel_, "kernel index");
    dump_->add_option("--warp", dump_warp_, "warp index within the kernel");
    dump_->add_option("--limit", dump_limit_, "records to print");

    check_ = trace->add_subcommand("check", "set a captured trace beside the GPU's count pass (faithfulness check)");
    check_->add_option("trace", path_, "trace file")->required();
    check_->add_option("--count", count_, "count.json of the same launch (atomsim-capture --pass count)")->required();
    check_->add_option("--count-again", counts_again_,
                       "further count passes of the same launch: instructions they count differently are timing-dependent");
    check_->add_option("--capture", capture_, "trace.json of the trace pass (adds its atomic replay)");
    check_->add_option("--kernel", kernel_, "kernel index");
    check_->add_option("--report", report_, "also write the report as JSON");

    export_ = trace->add_subcommand("export", "write a trace in another simulator's format");
    export_->add_option("trace", path_, "trace file")->required();
    export_->add_option("--format", format_, "format to write")->check(CLI::IsMember({"accelsim"}))->required();
    export_->add_option("--out", out_, "folder for kernelslist.g and its kernel-N.traceg files")->required();
    export_->add_option("--binary-version", binary_version_,
                        "compute capability the header names (Accel-Sim picks its opcode map by it)")
        ->capture_default_str();
    export_->add_flag("--xz", export_xz_, "write kernel-N.traceg.xz, xz-compressed, as the tracer does with TRACE_FILE_COMPRESS=1");
    import_ = trace->add_subcommand("import", "read Accel-Sim traces (kernelslist.g, a .traceg or a .traceg.xz) into a trace file");
    import_->add_option("input", path_, "kernelslist.g, kernel-N.traceg or kernel-N.traceg.xz")->required();
    import_->add_option("--out", out_, "trace file to write")->required();

    rejoin_ = trace->add_subcommand("rejoin", "run a failed trace-pass join again from its saved join-input.json");
    rejoin_->add_option("input", path_, "join-input.json written by atomsim-capture --pass trace")->required();
    rejoin_->add_option("--warp", rejoin_warp_, "print this warp's joined instructions");
    rejoin_->add_option("--threads", rejoin_threads_, "threads walking warps (the result does not depend on it)")
        ->check(CLI::Range(1u, 1024u))
        ->capture_default_str();
  }

  bool chosen() const override {
    return info_->parsed() || validate_->parsed() || dump_->parsed() || check_->parsed() || rejoin_->parsed() ||
           export_->parsed() || import_->parsed();
  }

  int run() override {
    if (info_->parsed()) trace_info(path_, std::cout);
    if (validate_->parsed()) trace_validate(path_, std::cout);
    if (dump_->parsed()) trace_dump(path_, kernel_, dump_warp_, dump_limit_, std::cout);
    if (rejoin_->parsed()) trace_rejoin(path_, rejoin_warp_, rejoin_threads_, std::cout);
    if (export_->parsed()) {
      trace::accelsim::export_traces(path_, out_, binary_version_, export_xz_);
      std::cout << fmt::format("{}: written as Accel-Sim traces in {} (kernelslist.g)\n", path_, out_);
    }
    if (import_->parsed()) {
      const auto imported = trace::accelsim::import_traces(path_, out_);
      std::cout << fmt::format("{}: {} kernels, {} warp instructions -> {}\n", path_, imported.kernels,
                               imported.warp_instructions, out_);
    }
    if (!check_->parsed()) return 0;
    auto report = compare::check_faithfulness(path_, kernel_, count_, {counts_again_.begin(), counts_again_.end()}, capture_);
    compare::print_faithfulness(report, std::cout);
    if (!report_.empty()) write_file_atomically(report_, report.to_json().dump(1) + "\n");
    return report.passed ? 0 : 1;
  }

 private:
  CLI::App *info_, *validate_, *dump_, *check_, *rejoin_, *export_, *import_;
  std::string path_, count_, capture_, report_, format_, out_;
  std::vector<std::string> counts_again_;
  std::size_t kernel_ = 0;
  unsigned binary_version_ = 90;
  bool export_xz_ = false;
  std::uint64_t dump_warp_ = 0, dump_limit_ = 100;
  std::optional<std::uint64_t> rejoin_warp_;
  unsigned rejoin_threads_ = std::max(1u, std::thread::hardware_concurrency());
};

}  // namespace

std::unique_ptr<Command> make_trace_command(CLI::App& app) { return std::make_unique<TraceCommand>(app); }

}  // namespace atomsim::cli
