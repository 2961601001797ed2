#include "tools/sweep/plot.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace atomsim::sweep {

namespace {

using ordered_json = nlohmann::ordered_json;

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else out += c;
  }
  return out;
}

std::optional<double> number(const std::string& text) {
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string compact(double v) { return fmt::format("{:.4g}", v); }

std::string y_label(const std::string& column) {
  if (column == "cycles") return "simulated cycles";
  if (column == "time_us") return "simulated time (us)";
  if (column == "speedup") return "speedup over the baseline variant (\u00d7)";
  if (column == "ipc") return "warp instructions per cycle";
  if (column == "warp_instructions") return "warp instructions";
  if (column.starts_with("stall.")) return column.substr(6) + " (fraction of warp-cycles)";
  if (column.starts_with("util.")) return column.substr(5) + " (mean utilisation, 0-1)";
  if (column.starts_with("avg.")) return column.substr(4) + " (time-averaged occupancy)";
  if (column.starts_with("atomics.")) return column.substr(8) + " (count)";
  return column;
}

// Round tick spacing (1, 2 or 5 times a power of ten) giving about `count` ticks.
double tick_step(double span, int count) {
  if (span <= 0) return 1;
  const double raw = span / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * power) return m * power;
  return 10 * power;
}

// Points of a viridis-like scale, dark (low) to light (high).
std::string colour_scale(double t) {
  static const double stops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::clamp(t, 0.0, 1.0) * 4;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  auto channel = [&](int c) { return static_cast<int>(std::lround(stops[i][c] + f * (stops[i + 1][c] - stops[i][c]))); };
  return fmt::format("#{:02x}{:02x}{:02x}", channel(0), channel(1), channel(2));
}

const char* kSeriesColours[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string svg_open(double width, double height, const std::string& title) {
  return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" "
                     "font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
                     "<text x=\"20\" y=\"22\" font-size=\"13\">{}</text>\n",
                     width, height, escape(title));
}

}  // namespace

std::string plot_svg(const Table& table, const PlotOptions& options) {
  auto has = [&](const std::string& c) { return std::find(table.columns.begin(), table.columns.end(), c) != table.columns.end(); };
  std::string y = options.y;
  if (!has(y) && has("stall." + y)) y = "stall." + y;
  if (!has(y)) throw std::invalid_argument(fmt::format("--y '{}' is not a column of the table (cycles, speedup, a warp state, or a column of `sweep collect`)", options.y));
  for (const auto* c : {&options.x, &options.by})
    if (!c->empty() && !has(*c)) throw std::invalid_argument(fmt::format("'{}' is not a column of the table", *c));
  if (options.heatmap && options.by.empty()) throw std::invalid_argument("--heatmap needs --by: the second axis");

  // Rows that are done and pass every filter.
  std::vector<std::pair<std::string, std::string>> filters;
  for (const auto& w : options.where) {
    auto eq = w.find('=');
    if (eq == std::string::npos || !has(w.substr(0, eq)))
      throw std::invalid_argument(fmt::format("--where '{}': expected COLUMN=VALUE with a column of the table", w));
    filters.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  std::vector<const ordered_json*> rows;
  for (const auto& row : table.rows) {
    if (row["status"] != "done") continue;
    bool keep = true;
    for (const auto& [column, value] : filters) keep &= Table::cell_text(row[column]) == value;
    if (keep && !row[y].is_null() && !row[options.x].is_null()) rows.push_back(&row);  // a row without an x has no place
  }
  if (rows.empty()) throw std::invalid_argument(fmt::format("no finished row has a value of '{}' under these filters", y));

  // What else tells rows apart: categorical identity goes into the series'
  // names; another varying setting would mix points, so it must be chosen.
  std::vector<std::string> labels;
  const auto status_at = std::find(table.columns.begin(), table.columns.end(), "status");
  for (auto c = table.columns.begin(); c != status_at; ++c) {
    if (*c == options.x || *c == options.by || *c == "point" || *c == "group" || *c == "kernel_index") continue;
    std::set<std::string> values;
    for (const auto* r : rows) values.insert(Table::cell_text((*r)[*c]));
    if (values.size() < 2) continue;
    const bool identity = *c == "name" || *c == "trace" || *c == "variant" || *c == "kernel" || *c == "config";
    if (!identity || options.heatmap)
      throw std::invalid_argument(fmt::format("rows also differ in '{}' ({} values): choose one with --where {}=VALUE{}", *c,
                                              values.size(), *c, options.heatmap ? "" : " or draw them as lines with --by"));
    labels.push_back(*c);
  }
  // Series are named by as few of those columns as keep every line to one
  // row per x, the longest (kernel names) dropped first: a trace that changes
  // with x (one trace per threshold) then joins its neighbours in one line.
  auto one_row_per_x = [&](const std::vector<std::string>& columns) {
    std::set<std::string> seen;
    for (const auto* r : rows) {
      std::string n = Table::cell_text((*r)[options.x]);
      if (!options.by.empty()) n += "\n" + Table::cell_text((*r)[options.by]);
      for (const auto& c : columns) n += "\n" + Table::cell_text((*r)[c]);
      if (!seen.insert(n).second) return false;
    }
    return true;
  };
  for (const char* c : {"kernel", "trace", "name", "config", "variant"}) {
    auto fewer = labels;
    fewer.erase(std::remove(fewer.begin(), fewer.end(), c), fewer.end());
    if (fewer.size() < labels.size() && one_row_per_x(fewer)) labels = std::move(fewer);
  }

  std::vector<std::string> x_values;
  for (const auto* r : rows) {
    std::string v = Table::cell_text((*r)[options.x]);
    if (std::find(x_values.begin(), x_values.end(), v) == x_values.end()) x_values.push_back(v);
  }
  const bool numeric_x = std::all_of(x_values.begin(), x_values.end(), [](const auto& v) { return number(v).has_value(); });
  if (numeric_x) std::sort(x_values.begin(), x_values.end(), [](const auto& a, const auto& b) { return *number(a) < *number(b); });

  const std::string title = fmt::format("{}: {} against {}{}", table.sweep, y_label(y), options.x,
                                        options.by.empty() ? "" : ", by " + options.by);
  if (options.heatmap) {
    std::vector<std::string> by_values;
    std::map<std::pair<std::string, std::string>, double> cells;
    for (const auto* r : rows) {
      std::string bx = Table::cell_text((*r)[options.x]), by = Table::cell_text((*r)[options.by]);
      if (std::find(by_values.begin(), by_values.end(), by) == by_values.end()) by_values.push_back(by);
      if (!cells.emplace(std::make_pair(bx, by), (*r)[y].get<double>()).second)
        throw std::invalid_argument(fmt::format("several rows at {}={}, {}={}: narrow them with --where (variant, kernel or trace)",
                                                options.x, bx, options.by, by));
    }
    if (std::all_of(by_values.begin(), by_values.end(), [](const auto& v) { return number(v).has_value(); }))
      std::sort(by_values.begin(), by_values.end(), [](const auto& a, const auto& b) { return *number(a) < *number(b); });
    double lo = cells.begin()->second, hi = lo;
    for (const auto& [k, v] : cells) lo = std::min(lo, v), hi = std::max(hi, v);
    const double cell_w = 70, cell_h = 34, left = 110, top = 50;
    // Room for the colour bar and its label, and for the title.
    const double width = std::max(left + cell_w * static_cast<double>(x_values.size()) + 170,
                                  40 + 7.0 * static_cast<double>(title.size()));
    const double height = top + std::max(60.0, cell_h * static_cast<double>(by_values.size())) + 70;
    std::string svg = svg_open(width, height, title);
    for (std::size_t j = 0; j < by_values.size(); ++j) {
      // The first value at the bottom, as on a y axis.
      const double yy = top + cell_h * static_cast<double>(by_values.size() - 1 - j);
      svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 6, yy + cell_h / 2 + 4,
                         escape(by_values[j]));
      for (std::size_t i = 0; i < x_values.size(); ++i) {
        const double xx = left + cell_w * static_cast<double>(i);
        auto it = cells.find({x_values[i], by_values[j]});
        if (it == cells.end()) {
          svg += fmt::format("<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{}\" height=\"{}\" fill=\"#eee\"/>\n", xx, yy, cell_w, cell_h);
          continue;
        }
        const double t = hi > lo ? (it->second - lo) / (hi - lo) : 0.5;
        svg += fmt::format("<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"{}\" height=\"{}\" fill=\"{}\" stroke=\"white\"/>"
                           "<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"middle\" fill=\"{}\">{}</text>\n",
                           xx, yy, cell_w, cell_h, colour_scale(t), xx + cell_w / 2, yy + cell_h / 2 + 4,
                           t > 0.6 ? "black" : "white", compact(it->second));
      }
    }
    const double axis_y = top + cell_h * static_cast<double>(by_values.size());
    for (std::size_t i = 0; i < x_values.size(); ++i)
      svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n",
                         left + cell_w * (static_cast<double>(i) + 0.5), axis_y + 16, escape(x_values[i]));
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n",
                       left + cell_w * static_cast<double>(x_values.size()) / 2, axis_y + 38, escape(options.x));
    svg += fmt::format("<text transform=\"translate(16,{:.0f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                       top + (axis_y - top) / 2, escape(options.by));
    // Colour bar with the measure's name and range.
    const double bar_x = left + cell_w * static_cast<double>(x_values.size()) + 30, bar_h = std::max(60.0, axis_y - top);
    for (int s = 0; s < 20; ++s)
      svg += fmt::format("<rect x=\"{:.0f}\" y=\"{:.1f}\" width=\"14\" height=\"{:.1f}\" fill=\"{}\"/>\n", bar_x,
                         top + bar_h * (19 - s) / 20.0, bar_h / 20.0 + 0.5, colour_scale(s / 19.0));
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text><text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", bar_x + 18,
                       top + 8, compact(hi), bar_x + 18, top + bar_h, compact(lo));
    svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", bar_x, top + bar_h + 36, escape(y_label(y)));
    return svg + "</svg>\n";
  }

  // Lines: one series per value of --by and of the identity columns that vary.
  std::map<std::string, std::vector<std::pair<std::size_t, double>>> series;
  std::vector<std::string> series_order;
  for (const auto* r : rows) {
    std::string name;
    if (!options.by.empty()) name = options.by + "=" + Table::cell_text((*r)[options.by]);
    for (const auto& l : labels) name += (name.empty() ? "" : ", ") + Table::cell_text((*r)[l]);
    if (!series.count(name)) series_order.push_back(name);
    const std::string xv = Table::cell_text((*r)[options.x]);
    const std::size_t xi = static_cast<std::size_t>(std::find(x_values.begin(), x_values.end(), xv) - x_values.begin());
    for (const auto& [i, v] : series[name])
      if (i == xi) throw std::invalid_argument(fmt::format("several rows at {}={} in one line: narrow them with --where", options.x, xv));
    series[name].emplace_back(xi, (*r)[y].get<double>());
  }
  if (!options.by.empty() &&
      std::all_of(series_order.begin(), series_order.end(), [&](const auto& s) { return s.find(", ") == std::string::npos; }))
    std::sort(series_order.begin(), series_order.end(), [&](const auto& a, const auto& b) {
      auto na = number(a.substr(options.by.size() + 1)), nb = number(b.substr(options.by.size() + 1));
      return na && nb ? *na < *nb : a < b;
    });

  double y_max = 0;
  for (const auto& [name, points] : series)
    for (const auto& [i, v] : points) y_max = std::max(y_max, v);
  const double step = tick_step(y_max > 0 ? y_max : 1, 5);
  const double y_top = step * std::ceil((y_max > 0 ? y_max : 1) / step);
  const double left = 80, top = 40, plot_w = 480, plot_h = 300, legend_w = 230;
  const double width = left + plot_w + 30 + legend_w, height = top + plot_h + 60;
  double x_lo = 0, x_hi = static_cast<double>(x_values.size() - 1);
  if (numeric_x) x_lo = *number(x_values.front()), x_hi = *number(x_values.back());
  auto px = [&](std::size_t i) {
    const double v = numeric_x ? *number(x_values[i]) : static_cast<double>(i);
    return x_hi > x_lo ? left + plot_w * (v - x_lo) / (x_hi - x_lo) : left + plot_w / 2;
  };
  auto py = [&](double v) { return top + plot_h * (1 - v / y_top); };

  std::string svg = svg_open(width, height, title);
  for (double t = 0; t <= y_top * (1 + 1e-9); t += step)
    svg += fmt::format("<line x1=\"{:.0f}\" x2=\"{:.0f}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>"
                       "<text x=\"{:.0f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
                       left, left + plot_w, py(t), py(t), left - 5, py(t) + 4, compact(t));
  for (std::size_t i = 0; i < x_values.size(); ++i)
    svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{:.0f}\" y2=\"{:.0f}\" stroke=\"#999\"/>"
                       "<text x=\"{:.1f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n",
                       px(i), px(i), top + plot_h, top + plot_h + 4, px(i), top + plot_h + 17, escape(x_values[i]));
  svg += fmt::format("<line x1=\"{0:.0f}\" x2=\"{0:.0f}\" y1=\"{1:.0f}\" y2=\"{2:.0f}\" stroke=\"black\"/>"
                     "<line x1=\"{0:.0f}\" x2=\"{3:.0f}\" y1=\"{2:.0f}\" y2=\"{2:.0f}\" stroke=\"black\"/>\n",
                     left, top, top + plot_h, left + plot_w);
  svg += fmt::format("<text x=\"{:.0f}\" y=\"{:.0f}\" text-anchor=\"middle\">{}</text>\n", left + plot_w / 2,
                     top + plot_h + 40, escape(options.x));
  svg += fmt::format("<text transform=\"translate(18,{:.0f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n",
                     top + plot_h / 2, escape(y_label(y)));
  for (std::size_t s = 0; s < series_order.size(); ++s) {
    auto points = series[series_order[s]];
    std::sort(points.begin(), points.end());
    const char* colour = kSeriesColours[s % std::size(kSeriesColours)];
    std::string path;
    for (const auto& [i, v] : points) path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "" : " ", px(i), py(v));
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", path, colour);
    for (const auto& [i, v] : points)
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: {}={} {}</title></circle>\n",
                         px(i), py(v), colour, escape(series_order[s]), escape(options.x), escape(x_values[i]), compact(v));
    const double ly = top + 14.0 * static_cast<double>(s);
    svg += fmt::format("<rect x=\"{:.0f}\" y=\"{:.0f}\" width=\"12\" height=\"3\" fill=\"{}\"/>"
                       "<text x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n",
                       left + plot_w + 30, ly + 2, colour, left + plot_w + 46, ly + 6,
                       escape(series_order[s].empty() ? y : series_order[s]));
  }
  return svg + "</svg>\n";
}

}  // namespace atomsim::sweep
