#include "tools/capture/faithfulness.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <map>
#include <ostream>

#include "sim/compare/measured.hpp"
#include "tools/capture/warp_join.hpp"
#include "traces/reader.hpp"
#include "traces/sass.hpp"

namespace atomsim::compare {

namespace {

// Instructions whose masks hold predicate-on lanes (the rest: executing lanes).
bool guard_observed(const trace::StaticInst& s) {
  if (capture::reports_itself(s)) return true;
  if (trace::opcode_base(s.mnemonic) != "BRA" || trace::has_modifier(s.mnemonic, "DIV")) return false;
  // "@P BRA Q, target" lists two predicates; the GPU counts it by its guard, which is not observed.
  int predicates = 0;
  for (int i = 0; i < s.num_src; ++i)
    predicates += s.src[i] >= trace::reg::kPredicateBase && s.src[i] < trace::reg::kUniformBase;
  return predicates < 2;
}

struct PcCount {
  std::uint64_t warp = 0, threads = 0;
  bool operator==(const PcCount&) const = default;
};

// One count pass's per-pc counts of the kernel, by program index; the thread
// count is the one the trace's masks hold for that instruction.
std::map<std::size_t, PcCount> counted_pcs(const std::filesystem::path& count_json, const trace::KernelInfo& k) {
  nlohmann::json counts = read_json(count_json);
  const nlohmann::json* launch = nullptr;
  if (counts.contains("kernels") && counts["kernels"].is_array())
    for (const auto& kj : counts["kernels"])
      if (kj.value("name", "") == k.name || kj.value("mangled", "") == k.name) launch = &kj;
  if (!launch) throw DatasetError(fmt::format("{}: no counted launch of {}", count_json.string(), k.name));
  if (!launch->contains("pcs")) throw DatasetError(fmt::format("{}: the launch of {} has no per-pc counts", count_json.string(), k.name));
  std::map<std::uint64_t, std::size_t> by_pc;
  for (std::size_t i = 0; i < k.program.size(); ++i) by_pc[k.program[i].pc] = i;
  std::map<std::size_t, PcCount> out;
  for (const auto& pc : launch->at("pcs")) {
    auto it = by_pc.find(pc.at("pc_offset").get<std::uint64_t>());
    if (it == by_pc.end())
      throw DatasetError(fmt::format("{}: pc 0x{:x} is not an instruction of the trace's kernel", count_json.string(),
                                     pc.at("pc_offset").get<std::uint64_t>()));
    const trace::StaticInst& s = k.program[it->second];
    out[it->second] = {pc.at("warp_instructions").get<std::uint64_t>(),
                       pc.at(guard_observed(s) ? "thread_instructions_pred_on" : "thread_instructions").get<std::uint64_t>()};
  }
  return out;
}

std::vector<std::string> hex_pcs(const std::vector<std::uint64_t>& pcs) {
  std::vector<std::string> out;
  for (auto pc : pcs) out.push_back(fmt::format("0x{:x}", pc));
  return out;
}

double relative(std::uint64_t a, std::uint64_t b) {
  return b ? std::fabs(double(a) - double(b)) / double(b) : (a ? 1.0 : 0.0);
}

}  // namespace

FaithfulnessReport check_faithfulness(const std::filesystem::path& trace_path, std::size_t kernel_index,
                                      const std::filesystem::path& count_json,
                                      const std::vector<std::filesystem::path>& repeated_counts,
                                      const std::filesystem::path& capture_json, double tolerance) {
  trace::TraceReader reader(trace_path.string());
  if (kernel_index >= reader.kernel_count())
    throw DatasetError(fmt::format("{}: no kernel {} (the trace has {})", trace_path.string(), kernel_index,
                                   reader.kernel_count()));
  const trace::KernelInfo& k = reader.kernel(kernel_index);
  FaithfulnessReport r;
  r.kernel = k.name;

  std::vector<PcCount> traced(k.program.size());
  for (std::uint64_t w = 0; w < k.total_warps(); ++w) {
    trace::WarpStream stream = reader.open_warp(kernel_index, w);
    while (stream.advance()) {
      ++traced[stream.index()].warp;
      traced[stream.index()].threads += std::popcount(stream.active_mask());
    }
  }

  const std::map<std::size_t, PcCount> gpu = counted_pcs(count_json, k);
  std::vector<bool> timing_dependent(k.program.size(), false);
  for (const auto& again_json : repeated_counts) {
    const std::map<std::size_t, PcCount> again = counted_pcs(again_json, k);
    for (std::size_t i = 0; i < k.program.size(); ++i) {
      auto a = gpu.find(i), b = again.find(i);
      const PcCount first = a == gpu.end() ? PcCount{} : a->second, other = b == again.end() ? PcCount{} : b->second;
      if (!(first == other)) timing_dependent[i] = true;
    }
  }
  std::vector<std::string> stable_differences;
  for (std::size_t i = 0; i < k.program.size(); ++i) {
    auto it = gpu.find(i);
    const PcCount counted = it == gpu.end() ? PcCount{} : it->second;
    if (it == gpu.end() && !traced[i].warp) continue;
    ClassCounts& c = r.classes[static_cast<int>(k.program[i].op)];
    c.gpu_warp += counted.warp;
    c.gpu_threads += counted.threads;
    c.trace_warp += traced[i].warp;
    c.trace_threads += traced[i].threads;
    if (counted.warp != traced[i].warp) ++r.pcs_differing;
    if (timing_dependent[i]) r.timing_dependent_pcs.push_back(k.program[i].pc);
    else if (!(counted == traced[i])) {
      r.stable_pcs_differing.push_back(k.program[i].pc);
      stable_differences.push_back(fmt::format("pc 0x{:x} {}: trace {} warp / {} thread, GPU {} / {}", k.program[i].pc,
                                               k.program[i].mnemonic, traced[i].warp, traced[i].threads, counted.warp,
                                               counted.threads));
    }
  }
  for (const auto& c : r.classes) {
    r.total.trace_warp += c.trace_warp;
    r.total.gpu_warp += c.gpu_warp;
    r.total.trace_threads += c.trace_threads;
    r.total.gpu_threads += c.gpu_threads;
  }

  std::vector<std::string> failures;
  for (auto op : {trace::OpClass::Atom, trace::OpClass::Red, trace::OpClass::LoadGlobal, trace::OpClass::StoreGlobal}) {
    const ClassCounts& c = r.classes[static_cast<int>(op)];
    if (c.trace_warp != c.gpu_warp || c.trace_threads != c.gpu_threads)
      failures.push_back(fmt::format("{} differ (warp {} vs {}, threads {} vs {})", trace::op_class_name(op), c.trace_warp,
                                     c.gpu_warp, c.trace_threads, c.gpu_threads));
  }
  if (relative(r.total.trace_warp, r.total.gpu_warp) > tolerance)
    failures.push_back(fmt::format("warp instructions {} vs {} ({:+.2f}%)", r.total.trace_warp, r.total.gpu_warp,
                                   100.0 * (double(r.total.trace_warp) / double(r.total.gpu_warp) - 1)));
  if (relative(r.total.trace_threads, r.total.gpu_threads) > tolerance)
    failures.push_back(fmt::format("thread instructions {} vs {} ({:+.2f}%)", r.total.trace_threads, r.total.gpu_threads,
                                   100.0 * (double(r.total.trace_threads) / double(r.total.gpu_threads) - 1)));
  if (!capture_json.empty()) {
    nlohmann::json capture = read_json(capture_json);
    if (capture.contains("kernels") && capture["kernels"].is_array())
      for (const auto& kj : capture["kernels"])
        if (kj.value("trace_kernel", SIZE_MAX) == kernel_index) r.atomic_replay = kj.value("atomic_replay", nlohmann::json());
    if (r.atomic_replay.is_null())
      throw DatasetError(fmt::format("{}: no atomic replay for trace kernel {}", capture_json.string(), kernel_index));
    if (!r.atomic_replay.value("passed", false))
      failures.push_back(fmt::format("the atomic replay did not reproduce the kernel's output ({} of {} words)",
                                     r.atomic_replay.value("words_within_1e-5", 0), r.atomic_replay.value("words", 0)));
  }
  const bool replayed = r.atomic_replay.is_null() || r.atomic_replay.value("passed", false);
  if (failures.empty()) {
    r.passed = true;
    r.verdict = "faithful";
  } else if (!r.timing_dependent_pcs.empty() && r.stable_pcs_differing.empty() && replayed) {
    // The GPU itself counts some instructions differently from run to run; every other one agrees exactly.
    r.passed = true;
    r.verdict = fmt::format("faithful outside {} timing-dependent instructions", r.timing_dependent_pcs.size());
  } else {
    if (!r.timing_dependent_pcs.empty())
      failures.push_back(fmt::format("{} instructions the GPU counts alike in every pass differ from the trace ({})",
                                     r.stable_pcs_differing.size(), fmt::join(stable_differences, ", ")));
    r.verdict = fmt::format("{}", fmt::join(failures, "; "));
  }
  return r;
}

nlohmann::json FaithfulnessReport::to_json() const {
  nlohmann::json by_class = nlohmann::json::object();
  for (int c = 0; c < trace::kOpClassCount; ++c) {
    const ClassCounts& v = classes[c];
    if (!v.trace_warp && !v.gpu_warp) continue;
    by_class[trace::op_class_name(static_cast<trace::OpClass>(c))] = {
        {"trace_warp", v.trace_warp}, {"gpu_warp", v.gpu_warp}, {"trace_threads", v.trace_threads}, {"gpu_threads", v.gpu_threads}};
  }
  return {{"kernel", kernel}, {"passed", passed}, {"verdict", verdict}, {"pcs_differing", pcs_differing},
          {"timing_dependent_pcs", hex_pcs(timing_dependent_pcs)}, {"stable_pcs_differing", hex_pcs(stable_pcs_differing)},
          {"total", {{"trace_warp", total.trace_warp}, {"gpu_warp", total.gpu_warp},
                     {"trace_threads", total.trace_threads}, {"gpu_threads", total.gpu_threads}}},
          {"by_class", by_class}, {"atomic_replay", atomic_replay}};
}

void print_faithfulness(const FaithfulnessReport& r, std::ostream& out) {
  out << fmt::format("{}\n{:<12} {:>12} {:>12} {:>8} {:>14} {:>14} {:>8}\n", r.kernel, "class", "trace warp", "GPU warp",
                     "diff", "trace threads", "GPU threads", "diff");
  auto row = [&](const char* name, const ClassCounts& c) {
    auto pct = [](std::uint64_t a, std::uint64_t b) { return b ? 100.0 * (double(a) / double(b) - 1) : 0.0; };
    out << fmt::format("{:<12} {:>12} {:>12} {:>7.2f}% {:>14} {:>14} {:>7.2f}%\n", name, c.trace_warp, c.gpu_warp,
                       pct(c.trace_warp, c.gpu_warp), c.trace_threads, c.gpu_threads, pct(c.trace_threads, c.gpu_threads));
  };
  for (int c = 0; c < trace::kOpClassCount; ++c)
    if (r.classes[c].trace_warp || r.classes[c].gpu_warp) row(trace::op_class_name(static_cast<trace::OpClass>(c)), r.classes[c]);
  row("all", r.total);
  if (!r.atomic_replay.is_null())
    out << fmt::format("atomic replay: {} of {} words reproduced (worst relative error {:.2e})\n",
                       r.atomic_replay.value("words_within_1e-5", 0), r.atomic_replay.value("words", 0),
                       r.atomic_replay.value("worst_relative_error", 0.0));
  if (!r.timing_dependent_pcs.empty())
    out << fmt::format("timing-dependent: {} instructions counted differently by the GPU's own count passes; "
                       "of the others, {} differ from the trace\n",
                       r.timing_dependent_pcs.size(), r.stable_pcs_differing.size());
  out << (r.passed ? r.verdict + "\n" : "NOT faithful: " + r.verdict + "\n");
}

}  // namespace atomsim::compare
