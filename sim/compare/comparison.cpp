#include "sim/compare/comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

namespace atomsim::compare {
namespace {

bool same_shape_except_variant(const workloads::MicrobenchParams& a, const workloads::MicrobenchParams& b) {
  return a.blocks == b.blocks && a.warps_per_block == b.warps_per_block && a.iterations == b.iterations &&
         a.params == b.params && a.primitives == b.primitives && a.lanes_per_primitive == b.lanes_per_primitive &&
         a.active_fraction == b.active_fraction;
}

// A captured kernel names its baseline. Among microbenchmark kernels the
// threshold only matters to SW-S, so any baseline of the same shape serves.
const ComparisonRow* baseline_for(const std::vector<ComparisonRow>& rows, const ComparisonRow& r) {
  if (!r.measured.trace.empty()) {
    for (const auto& b : rows)
      if (!r.measured.baseline.empty() && b.measured.id == r.measured.baseline) return &b;
    return nullptr;
  }
  for (const auto& b : rows)
    if (b.measured.params.variant == workloads::MicrobenchVariant::Baseline &&
        same_shape_except_variant(b.measured.params, r.measured.params))
      return &b;
  return nullptr;
}

void track_worst(double value, const std::string& id, double& worst, std::string& worst_id) {
  if (std::abs(value) >= std::abs(worst)) {
    worst = value;
    worst_id = id;
  }
}

// Share of each instruction in the total, and the entry that takes most of the instruction.
struct Shares {
  std::map<std::uint64_t, double> share;
  std::map<std::uint64_t, std::pair<std::string, double>> top;
};

Shares shares(const std::map<std::uint64_t, std::map<std::string, double>>& per_pc) {
  Shares s;
  double total = 0;
  for (const auto& [pc, reasons] : per_pc)
    for (const auto& [reason, v] : reasons) total += v;
  if (total <= 0) return s;
  for (const auto& [pc, reasons] : per_pc) {
    double here = 0;
    std::pair<std::string, double> best{"", -1};
    for (const auto& [reason, v] : reasons) {
      here += v;
      if (v > best.second) best = {reason, v};
    }
    if (here <= 0) continue;
    s.share[pc] = here / total;
    s.top[pc] = {best.first, best.second / here};
  }
  return s;
}

std::vector<std::uint64_t> by_share(const Shares& s) {
  std::vector<std::uint64_t> pcs;
  for (const auto& [pc, v] : s.share) pcs.push_back(pc);
  std::stable_sort(pcs.begin(), pcs.end(), [&](auto a, auto b) { return s.share.at(a) > s.share.at(b); });
  return pcs;
}

std::vector<InstructionRow> hottest(const MeasuredKernel& m, const SimulatedKernel& sim, std::size_t count) {
  std::vector<InstructionRow> rows;
  if (count == 0 || m.pc_samples.empty() || sim.pc_warp_cycles.empty()) return rows;
  const Shares measured = shares(m.pc_samples), simulated = shares(sim.pc_warp_cycles);
  std::vector<std::uint64_t> pcs = by_share(measured);
  if (pcs.size() > count) pcs.resize(count);
  std::vector<std::uint64_t> sim_pcs = by_share(simulated);
  for (std::size_t i = 0; i < sim_pcs.size() && i < (count + 1) / 2; ++i)
    if (std::find(pcs.begin(), pcs.end(), sim_pcs[i]) == pcs.end()) pcs.push_back(sim_pcs[i]);
  for (std::uint64_t pc : pcs) {
    InstructionRow r;
    r.pc = pc;
    if (auto it = sim.sass.find(pc); it != sim.sass.end()) r.sass = it->second;
    if (auto it = sim.waits_on.find(pc); it != sim.waits_on.end())
      for (std::uint64_t producer : it->second) {
        auto named = sim.sass.find(producer);
        r.waits_on.emplace_back(producer, named == sim.sass.end() ? std::string() : named->second);
      }
    if (auto it = measured.share.find(pc); it != measured.share.end()) {
      r.measured_share = it->second;
      std::tie(r.measured_reason, r.measured_reason_share) = measured.top.at(pc);
    }
    if (auto it = simulated.share.find(pc); it != simulated.share.end()) {
      r.simulated_share = it->second;
      std::tie(r.simulated_reason, r.simulated_reason_share) = simulated.top.at(pc);
    }
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

Comparison build_comparison(const std::vector<MeasuredKernel>& measured, const std::vector<SimulatedKernel>& simulated,
                            const std::string& config, std::size_t instructions) {
  Comparison c;
  c.config = config;
  if (!measured.empty()) c.device = measured.front().device;
  for (std::size_t i = 0; i < measured.size(); ++i) {
    ComparisonRow r;
    r.measured = measured[i];
    r.simulated = simulated.at(i);
    r.cycle_error = (r.simulated.cycles - r.measured.cycles) / r.measured.cycles;
    const double ns_to_cycles = r.measured.time_ns > 0 ? r.measured.cycles / r.measured.time_ns : 0;
    r.within_launches = r.measured.timed_launches > 1 && r.simulated.cycles >= r.measured.fastest_ns * ns_to_cycles &&
                        r.simulated.cycles <= r.measured.slowest_ns * ns_to_cycles;
    r.stall_distance = stall_distance(r.measured.stall_fractions, r.simulated.stall_fractions);
    r.hottest = hottest(r.measured, r.simulated, instructions);
    c.rows.push_back(std::move(r));
  }
  Summary& s = c.summary;
  std::size_t speedups = 0;
  for (auto& r : c.rows) {
    if (!r.measured.trace.empty() || r.measured.params.variant != workloads::MicrobenchVariant::Baseline) {
      if (const ComparisonRow* b = baseline_for(c.rows, r)) {
        r.measured_speedup = b->measured.cycles / r.measured.cycles;
        r.simulated_speedup = b->simulated.cycles / r.simulated.cycles;
        double err = (*r.simulated_speedup - *r.measured_speedup) / *r.measured_speedup;
        s.mean_abs_speedup_error += std::abs(err);
        ++speedups;
        track_worst(err, r.measured.id, s.worst_speedup_error, s.worst_speedup_id);
      }
    }
    s.mean_abs_cycle_error += std::abs(r.cycle_error);
    s.within_launches += r.within_launches;
    s.within_15_percent += std::abs(r.cycle_error) <= 0.15;
    track_worst(r.cycle_error, r.measured.id, s.worst_cycle_error, s.worst_cycle_id);
    s.mean_stall_distance += r.stall_distance;
    track_worst(r.stall_distance, r.measured.id, s.worst_stall_distance, s.worst_stall_id);
  }
  if (!c.rows.empty()) {
    s.mean_abs_cycle_error /= static_cast<double>(c.rows.size());
    s.mean_stall_distance /= static_cast<double>(c.rows.size());
  }
  if (speedups) s.mean_abs_speedup_error /= static_cast<double>(speedups);
  return c;
}

void print_comparison(std::ostream& out, const Comparison& c) {
  std::string set;
  for (const auto& o : c.overrides) set += (set.empty() ? " (--set " : ", --set ") + o;
  out << fmt::format("measured on {}, simulated with {}{}\n", c.device, c.config, set.empty() ? "" : set + ")");
  const bool traced = std::any_of(c.rows.begin(), c.rows.end(), [](const ComparisonRow& r) { return r.measured.traced_launch.has_value(); });
  if (traced) out << "measured cycles: each kernel's traced launch, not the median of its timed launches\n";
  out << fmt::format("{:<28}{:>12}{:>12}{:>9}{:>10}{:>10}{:>9}  {}\n", "kernel", "meas cyc", "sim cyc", "error",
                     "meas spd", "sim spd", "stall d", "launches");
  for (const auto& r : c.rows) {
    auto speedup = [](const std::optional<double>& v) { return v ? fmt::format("{:.2f}x", *v) : std::string("-"); };
    // The timed launches' spread around their median, starred where the simulated cycles fall in it.
    const std::string launches =
        r.measured.timed_launches > 1
            ? fmt::format("{:+.0f}..{:+.0f}%{}", 100 * (r.measured.fastest_ns / r.measured.time_ns - 1),
                          100 * (r.measured.slowest_ns / r.measured.time_ns - 1), r.within_launches ? " *" : "")
            : std::string("-");
    out << fmt::format("{:<28}{:>12.0f}{:>12.0f}{:>+8.1f}%{:>10}{:>10}{:>9.3f}  {}\n", r.measured.id, r.measured.cycles,
                       r.simulated.cycles, 100 * r.cycle_error, speedup(r.measured_speedup),
                       speedup(r.simulated_speedup), r.stall_distance, launches);
  }
  const Summary& s = c.summary;
  out << fmt::format(
      "summary: cycles mean |error| {:.1f}%, worst {:+.1f}% ({}); speedup mean |error| {:.1f}%, worst {:+.1f}% ({}); "
      "stall distance mean {:.3f}, worst {:.3f} ({})\n",
      100 * s.mean_abs_cycle_error, 100 * s.worst_cycle_error, s.worst_cycle_id, 100 * s.mean_abs_speedup_error,
      100 * s.worst_speedup_error, s.worst_speedup_id, s.mean_stall_distance, s.worst_stall_distance, s.worst_stall_id);
  out << fmt::format("within 15%: {} of {} kernels' cycles\n", s.within_15_percent, c.rows.size());
  std::size_t sampled = 0;
  double detail = 0, estimate = 0;
  for (const auto& r : c.rows)
    if (r.simulated.detail_share < 1) {
      ++sampled;
      detail += r.simulated.detail_share;
      estimate = std::max(estimate, r.simulated.sampling_error_estimate);
    }
  if (sampled)
    out << fmt::format("sampled: {} of {} kernels, {:.0f}% of their warp instructions simulated in detail on average; "
                       "the sampler's error estimates at most {:.2f}% of the cycles\n",
                       sampled, c.rows.size(), 100 * detail / static_cast<double>(sampled), 100 * estimate);
  out << fmt::format("launches: the timed launches' fastest and slowest around {}; * the simulated cycles within "
                     "them ({} of {} kernels)\n",
                     traced ? "the traced launch" : "their median", s.within_launches, c.rows.size());
  for (const auto& r : c.rows) {
    if (r.hottest.empty()) continue;
    out << fmt::format("\n{}: hottest instructions, share of PC samples (measured) and of warp-cycles (simulated), "
                       "and the reason taking most of each\n",
                       r.measured.id);
    out << fmt::format("  {:<8}{:<36}{:>7}{:>7}  {:<26}{:<26}{}\n", "pc", "sass", "meas", "sim", "measured", "simulated",
                       "waits for");
    for (const auto& i : r.hottest) {
      auto reason = [](const std::string& name, double share) {
        return name.empty() ? std::string("-") : fmt::format("{} {:.2f}", name, share);
      };
      std::string waits;
      for (const auto& [pc, sass] : i.waits_on)
        waits += fmt::format("{}{:#06x} {}", waits.empty() ? "" : ", ", pc, sass.substr(0, sass.find('.')));
      out << fmt::format("  {:<8}{:<36}{:>6.1f}%{:>6.1f}%  {:<26}{:<26}{}\n", fmt::format("{:#06x}", i.pc),
                         i.sass.substr(0, 35), 100 * i.measured_share, 100 * i.simulated_share,
                         reason(i.measured_reason, i.measured_reason_share),
                         reason(i.simulated_reason, i.simulated_reason_share), waits.empty() ? "-" : waits);
    }
  }
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows) {
    nlohmann::json j = {{"id", r.measured.id},
                        {"measured", {{"cycles", r.measured.cycles}, {"time_ns", r.measured.time_ns},
                                      {"fastest_ns", r.measured.fastest_ns}, {"slowest_ns", r.measured.slowest_ns},
                                      {"timed_launches", r.measured.timed_launches},
                                      {"launch_trend", r.measured.launch_trend},
                                      {"sm_clock_mhz", r.measured.sm_clock_mhz},
                                      {"warp_instructions", r.measured.warp_instructions},
                                      {"stall_samples", r.measured.stall_samples},
                                      {"stall_fractions", r.measured.stall_fractions}}},
                        {"simulated", {{"cycles", r.simulated.cycles},
                                       {"warp_instructions", r.simulated.warp_instructions},
                                       {"stall_fractions", r.simulated.stall_fractions}}},
                        {"cycle_error", r.cycle_error},
                        {"within_launches", r.within_launches},
                        {"stall_distance", r.stall_distance}};
    if (!r.simulated.revision.empty()) j["simulated"]["revision"] = r.simulated.revision;
    if (r.simulated.detail_share < 1) {
      j["simulated"]["detail_share"] = r.simulated.detail_share;
      j["simulated"]["sampling_error_estimate"] = r.simulated.sampling_error_estimate;
    }
    if (r.measured.traced_launch) j["measured"]["traced_launch"] = *r.measured.traced_launch;
    if (r.measured_speedup) {
      j["measured"]["speedup"] = *r.measured_speedup;
      j["simulated"]["speedup"] = *r.simulated_speedup;
    }
    if (!r.hottest.empty()) {
      nlohmann::json hot = nlohmann::json::array();
      for (const auto& i : r.hottest) {
        hot.push_back({{"pc", i.pc}, {"sass", i.sass}, {"measured_share", i.measured_share},
                       {"simulated_share", i.simulated_share}, {"measured_reason", i.measured_reason},
                       {"measured_reason_share", i.measured_reason_share}, {"simulated_reason", i.simulated_reason},
                       {"simulated_reason_share", i.simulated_reason_share}});
        if (!i.waits_on.empty()) {
          nlohmann::json waits = nlohmann::json::array();
          for (const auto& [pc, sass] : i.waits_on) waits.push_back(nlohmann::json{{"pc", pc}, {"sass", sass}});
          hot.back()["waits_on"] = waits;
        }
      }
      j["hottest_instructions"] = hot;
    }
    rows.push_back(std::move(j));
  }
  const Summary& s = c.summary;
  return {{"schema", "atomsim.compare/1"},
          {"config", c.config},
          {"overrides", c.overrides},
          {"device", c.device},
          {"kernels", rows},
          {"summary",
           {{"mean_abs_cycle_error", s.mean_abs_cycle_error}, {"worst_cycle_error", s.worst_cycle_error},
            {"worst_cycle_kernel", s.worst_cycle_id}, {"mean_abs_speedup_error", s.mean_abs_speedup_error},
            {"worst_speedup_error", s.worst_speedup_error}, {"worst_speedup_kernel", s.worst_speedup_id},
            {"mean_stall_distance", s.mean_stall_distance}, {"worst_stall_distance", s.worst_stall_distance},
            {"worst_stall_kernel", s.worst_stall_id}, {"kernels_within_launches", s.within_launches},
            {"kernels_within_15_percent", s.within_15_percent}}}};
}

std::string stall_plot_svg(const Comparison& c) {
  // Nsight's reasons in a fixed order so colours mean the same in every plot;
  // reasons the model has no state for come last, in grey tones.
  static const std::vector<std::pair<std::string, std::string>> palette = {
      {"selected", "#2ca02c"}, {"not_selected", "#98df8a"}, {"long_scoreboard", "#d62728"},
      {"short_scoreboard", "#ff9896"}, {"wait", "#1f77b4"}, {"lg_throttle", "#9467bd"},
      {"mio_throttle", "#c5b0d5"}, {"math_pipe_throttle", "#8c564b"}, {"barrier", "#e377c2"},
      {"membar", "#f7b6d2"}, {"drain", "#bcbd22"}, {"dispatch_stall", "#dbdb8d"},
      {"branch_resolving", "#17becf"}, {"no_instructions", "#9edae5"}, {"sleeping", "#ff7f0e"},
      {"imc_miss", "#aec7e8"}, {"misc", "#ffbb78"}};
  std::set<std::string> others;
  for (const auto& r : c.rows)
    for (const auto* m : {&r.measured.stall_fractions, &r.simulated.stall_fractions})
      for (const auto& entry : *m)
        if (std::none_of(palette.begin(), palette.end(), [&](const auto& p) { return p.first == entry.first; }))
          others.insert(entry.first);
  auto reasons = palette;
  int grey = 0;
  for (const auto& name : others) reasons.emplace_back(name, fmt::format("#{0:02x}{0:02x}{0:02x}", 90 + 30 * (grey++ % 5)));

  const double bar = 14, gap = 4, group = 2 * bar + gap + 16, top = 40, height = 300, left = 50;
  const std::string title = fmt::format("Warp stall reasons: measured (M, {}) vs simulated (S, {})", c.device, c.config);
  // Wide enough for the title too: 13-pixel sans-serif glyphs average under 7.5 pixels.
  const double title_width = left + 7.5 * static_cast<double>(title.size()) + 20;
  const double width = std::max(left + group * static_cast<double>(c.rows.size()) + 200, title_width);
  const double total_height = top + height + 150;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
      "font-size=\"10\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{}\" y=\"20\" font-size=\"13\">{}</text>\n",
      width, total_height, left, title);
  for (int tick = 0; tick <= 4; ++tick) {
    double y = top + height * (1 - tick / 4.0);
    svg += fmt::format("<line x1=\"{}\" x2=\"{:.0f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}%</text>\n",
                       left, width - 200, y, y, left - 4, y + 3, tick * 25);
  }
  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const auto& r = c.rows[i];
    double x0 = left + 8 + group * static_cast<double>(i);
    int side = 0;
    for (const auto* fractions : {&r.measured.stall_fractions, &r.simulated.stall_fractions}) {
      double x = x0 + side * (bar + gap), y = top + height;
      for (const auto& [name, colour] : reasons) {
        auto it = fractions->find(name);
        if (it == fractions->end() || it->second <= 0) continue;
        double h = it->second * height;
        y -= h;
        svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.2f}\" width=\"{}\" height=\"{:.2f}\" fill=\"{}\"><title>{} {}: "
                           "{:.1f}%</title></rect>\n",
                           x, y, bar, h, colour, r.measured.id, name, 100 * it->second);
      }
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n", x + bar / 2,
                         top + height + 11, side == 0 ? "M" : "S");
      ++side;
    }
    svg += fmt::format("<text transform=\"translate({:.1f},{:.0f}) rotate(60)\">{}</text>\n", x0 + bar,
                       top + height + 18, r.measured.id);
  }
  double ly = top;
  for (const auto& [name, colour] : reasons) {
    svg += fmt::format("<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"10\" height=\"10\" fill=\"{}\"/>"
                       "<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
                       width - 190, ly, colour, width - 176, ly + 9, name);
    ly += 14;
  }
  return svg + "</svg>\n";
}

}  // namespace atomsim::compare
