#include "tools/compare/faithfulness.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <map>
#include <ostream>

#include "tools/capture/warp_join.hpp"
#include "tools/compare/measured.hpp"
#include "traces/sass.hpp"
#include "traces/reader.hpp"

namespace atomsim::compare {

namespace {

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw DatasetError(fmt::format("{}: cannot open", path.string()));
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DatasetError(fmt::format("{}: not valid JSON ({})", path.string(), e.what()));
  }
}

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

double relative(std::uint64_t a, std::uint64_t b) {
  return b ? std::fabs(double(a) - double(b)) / double(b) : (a ? 1.0 : 0.0);
}

}  // namespace

FaithfulnessReport check_faithfulness(const std::filesystem::path& trace_path, std::size_t kernel_index,
                                      const std::filesystem::path& count_json,
                                      const std::filesystem::path& capture_json, double tolerance) {
  trace::TraceReader reader(trace_path.string());
  if (kernel_index >= reader.kernel_count())
    throw DatasetError(fmt::format("{}: no kernel {} (the trace has {})", trace_path.string(), kernel_index,
                                   reader.kernel_count()));
  const trace::KernelInfo& k = reader.kernel(kernel_index);
  FaithfulnessReport r;
  r.kernel = k.name;

  std::vector<std::uint64_t> warps(k.program.size(), 0), threads(k.program.size(), 0);
  for (std::uint64_t w = 0; w < k.total_warps(); ++w) {
    trace::WarpStream stream = reader.open_warp(kernel_index, w);
    std::uint32_t index, mask;
    while (stream.next_instruction(index, mask)) {
      ++warps[index];
      threads[index] += std::popcount(mask);
    }
  }

  nlohmann::json counts = read_json(count_json);
  const nlohmann::json* launch = nullptr;
  if (counts.contains("kernels") && counts["kernels"].is_array())
    for (const auto& kj : counts["kernels"])
      if (kj.value("name", "") == k.name || kj.value("mangled", "") == k.name) launch = &kj;
  if (!launch) throw DatasetError(fmt::format("{}: no counted launch of {}", count_json.string(), k.name));
  std::map<std::uint64_t, std::size_t> by_pc;
  for (std::size_t i = 0; i < k.program.size(); ++i) by_pc[k.program[i].pc] = i;
  std::vector<bool> counted(k.program.size(), false);
  if (!launch->contains("pcs")) throw DatasetError(fmt::format("{}: the launch of {} has no per-pc counts", count_json.string(), k.name));
  for (const auto& pc : launch->at("pcs")) {
    auto it = by_pc.find(pc.at("pc_offset").get<std::uint64_t>());
    if (it == by_pc.end())
      throw DatasetError(fmt::format("{}: pc 0x{:x} is not an instruction of the trace's kernel", count_json.string(),
                                     pc.at("pc_offset").get<std::uint64_t>()));
    const trace::StaticInst& s = k.program[it->second];
    ClassCounts& c = r.classes[static_cast<int>(s.op)];
    std::uint64_t gpu_warp = pc.at("warp_instructions").get<std::uint64_t>();
    std::uint64_t gpu_threads = pc.at(guard_observed(s) ? "thread_instructions_pred_on" : "thread_instructions").get<std::uint64_t>();
    c.gpu_warp += gpu_warp;
    c.gpu_threads += gpu_threads;
    c.trace_warp += warps[it->second];
    c.trace_threads += threads[it->second];
    if (gpu_warp != warps[it->second]) ++r.pcs_differing;
    counted[it->second] = true;
  }
  for (std::size_t i = 0; i < k.program.size(); ++i) {
    if (counted[i] || !warps[i]) continue;  // executed in the trace, never counted by the GPU
    ClassCounts& c = r.classes[static_cast<int>(k.program[i].op)];
    c.trace_warp += warps[i];
    c.trace_threads += threads[i];
    ++r.pcs_differing;
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
  r.passed = failures.empty();
  r.verdict = r.passed ? "faithful" : fmt::format("{}", fmt::join(failures, "; "));
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
  out << (r.passed ? "faithful\n" : "NOT faithful: " + r.verdict + "\n");
}

}  // namespace atomsim::compare
