#include "tools/capture/counters_document.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include "tools/capture/settings.hpp"

namespace atomsim::capture {

namespace {

// Nsight Compute prints counts with thousands separators.
double number(const std::string& text, const std::string& what) {
  std::string digits;
  for (char c : text)
    if (c != ',') digits += c;
  try {
    std::size_t used = 0;
    double v = std::stod(digits, &used);
    if (used == digits.size()) return v;
  } catch (const std::exception&) {
  }
  throw CaptureError("counters pass: " + what + " is '" + text + "', not a number");
}

// The CSV records that follow the header starting with `first_column`.
std::vector<std::vector<std::string>> table_after(const std::string& csv, const std::string& first_column,
                                                  std::vector<std::string>& header, const char* page) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(csv);
  bool found = false;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] != '"') continue;
    auto fields = split_csv_record(line);
    if (!found) {
      if (!fields.empty() && fields[0] == first_column) {
        header = fields;
        found = true;
      }
      continue;
    }
    rows.push_back(std::move(fields));
  }
  if (!found) throw CaptureError(std::string("counters pass: Nsight Compute's ") + page + " page has no table");
  return rows;
}

std::size_t column(const std::vector<std::string>& header, const std::string& name, const char* page) {
  auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw CaptureError(std::string("counters pass: Nsight Compute's ") + page + " page lacks '" + name + "'");
  return static_cast<std::size_t>(it - header.begin());
}

// A column the page has only for some kernels (shared memory's, where the kernel has any).
std::optional<std::size_t> optional_column(const std::vector<std::string>& header, const std::string& name) {
  auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) return std::nullopt;
  return static_cast<std::size_t>(it - header.begin());
}

// "0x7febd77ae7d0" -> its value.
std::uint64_t address(const std::string& text) {
  try {
    return std::stoull(text, nullptr, 16);
  } catch (const std::exception&) {
    throw CaptureError("counters pass: source address '" + text + "' is not hexadecimal");
  }
}

// "@!P0  LDS R4, [R7]" -> "LDS R4, [R7]"
std::string without_guard(std::string s) {
  s.erase(0, s.find_first_not_of(' '));
  if (!s.empty() && s[0] == '@') s.erase(0, s.find(' '));
  s.erase(0, s.find_first_not_of(' '));
  return s;
}

// The source page (`--page source --print-source sass`) of one launch.
class SourcePage {
 public:
  explicit SourcePage(const std::string& csv) : rows_(table_after(csv, "Address", header_, "source")) {
    address_ = column(header_, "Address", "source");
    sass_ = column(header_, "Source", "source");
    executed_ = column(header_, "Instructions Executed", "source");
  }
  std::size_t column_named(const std::string& name) const { return column(header_, name, "source"); }
  std::optional<std::size_t> optional_column(const std::string& name) const {
    return atomsim::capture::optional_column(header_, name);
  }
  std::size_t address_column() const { return address_; }
  std::size_t sass_column() const { return sass_; }

  // Calls f(pc offset from the function's first, warp instructions, row) for
  // each instruction that ran, in address order; rows too short to hold the
  // columns in `used` are skipped.
  template <class F>
  void for_each_executed(std::initializer_list<std::size_t> used, F f) const {
    const std::size_t needed = std::max({address_, sass_, executed_, std::max(used)});
    std::optional<std::uint64_t> start;
    bool any = false;
    for (const auto& row : rows_) {
      if (row.size() <= needed) continue;
      const std::uint64_t pc = address(row[address_]);
      if (!start) start = pc;
      if (pc < *start) throw CaptureError("counters pass: source addresses go back before the function's first");
      const double n = number(row[executed_], "instructions executed at " + row[address_]);
      if (n == 0) continue;
      any = true;
      f(pc - *start, n, row);
    }
    if (!any) throw CaptureError("counters pass: Nsight Compute's source page lists no executed instruction");
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::size_t address_ = 0, sass_ = 0, executed_ = 0;
};

}  // namespace

const std::vector<std::string>& counter_metrics() {
  static const std::vector<std::string> metrics = {
      "sm__inst_executed_pipe_adu.sum", "smsp__inst_executed.sum", "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
      "sm__cycles_elapsed.max"};
  return metrics;
}

std::vector<std::string> split_csv_record(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') fields.back() += line[++i];
      else if (c == '"') quoted = false;
      else fields.back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

nlohmann::json counters_document(const std::string& details_csv, const std::string& source_csv) {
  nlohmann::json doc;
  std::vector<std::string> header;
  const auto details = table_after(details_csv, "ID", header, "details");
  const std::size_t name = column(header, "Metric Name", "details"), value = column(header, "Metric Value", "details"),
                    kernel = column(header, "Kernel Name", "details");
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& row : details) {
    if (row.size() <= std::max({name, value, kernel})) continue;
    if (std::find(counter_metrics().begin(), counter_metrics().end(), row[name]) == counter_metrics().end()) continue;
    metrics[row[name]] = number(row[value], row[name]);
    doc["kernel"] = row[kernel];
  }
  for (const auto& m : counter_metrics())
    if (!metrics.contains(m)) throw CaptureError("counters pass: Nsight Compute reported no " + m);
  doc["metrics"] = metrics;

  const SourcePage source(source_csv);
  const auto wavefronts = source.optional_column("L1 Wavefronts Shared"),
             ideal = source.optional_column("L1 Wavefronts Shared Ideal");
  nlohmann::json pcs = nlohmann::json::array();
  source.for_each_executed({wavefronts.value_or(0), ideal.value_or(0)}, [&](std::uint64_t pc_offset, double executed,
                                                                          const std::vector<std::string>& row) {
    const auto shared = [&](std::optional<std::size_t> at, const std::string& what) {
      return at ? number(row[*at], what + " at " + row[source.address_column()]) : 0.0;
    };
    pcs.push_back({{"pc_offset", pc_offset}, {"sass", without_guard(row[source.sass_column()])},
                   {"warp_instructions", executed}, {"shared_wavefronts", shared(wavefronts, "shared wavefronts")},
                   {"shared_wavefronts_ideal", shared(ideal, "ideal shared wavefronts")}});
  });
  doc["pcs"] = pcs;
  doc["tool"] = "Nsight Compute";
  return doc;
}

nlohmann::json source_counts_document(const std::string& source_csv) {
  const SourcePage source(source_csv);
  const std::size_t threads = source.column_named("Thread Instructions Executed"),
                    pred_on = source.column_named("Predicated-On Thread Instructions Executed");
  nlohmann::json pcs = nlohmann::json::array();
  std::uint64_t warp_total = 0, thread_total = 0, pred_on_total = 0;
  source.for_each_executed({threads, pred_on}, [&](std::uint64_t pc_offset, double executed,
                                                   const std::vector<std::string>& row) {
    const auto count = [&](double v) { return static_cast<std::uint64_t>(std::llround(v)); };
    const std::uint64_t warp = count(executed),
                        thread = count(number(row[threads], "thread instructions at " + row[source.address_column()])),
                        on = count(number(row[pred_on], "predicated-on thread instructions at " + row[source.address_column()]));
    warp_total += warp;
    thread_total += thread;
    pred_on_total += on;
    pcs.push_back({{"pc_offset", pc_offset}, {"warp_instructions", warp}, {"thread_instructions", thread},
                   {"thread_instructions_pred_on", on}});
  });
  return {{"warp_instructions", warp_total}, {"thread_instructions", thread_total},
          {"thread_instructions_pred_on", pred_on_total}, {"pcs", pcs}};
}

}  // namespace atomsim::capture
