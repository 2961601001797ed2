#include "tools/capture/counters_document.hpp"

#include <algorithm>
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

  const auto source = table_after(source_csv, "Address", header, "source");
  const std::size_t addr = column(header, "Address", "source"), sass = column(header, "Source", "source"),
                    executed = column(header, "Instructions Executed", "source");
  const auto wavefronts = optional_column(header, "L1 Wavefronts Shared"),
             ideal = optional_column(header, "L1 Wavefronts Shared Ideal");
  const std::size_t needed = std::max({addr, sass, executed, wavefronts.value_or(0), ideal.value_or(0)});
  const auto shared = [&](const std::vector<std::string>& row, std::optional<std::size_t> at, const std::string& what) {
    return at ? number(row[*at], what + " at " + row[addr]) : 0.0;
  };
  nlohmann::json pcs = nlohmann::json::array();
  std::uint64_t start = 0;
  bool first = true;
  for (const auto& row : source) {
    if (row.size() <= needed) continue;
    const std::uint64_t pc = address(row[addr]);
    if (first) start = pc;
    first = false;
    if (pc < start) throw CaptureError("counters pass: source addresses go back before the function's first");
    const double n = number(row[executed], "instructions executed at " + row[addr]);
    if (n == 0) continue;
    pcs.push_back({{"pc_offset", pc - start}, {"sass", without_guard(row[sass])}, {"warp_instructions", n},
                   {"shared_wavefronts", shared(row, wavefronts, "shared wavefronts")},
                   {"shared_wavefronts_ideal", shared(row, ideal, "ideal shared wavefronts")}});
  }
  if (pcs.empty()) throw CaptureError("counters pass: Nsight Compute's source page lists no executed instruction");
  doc["pcs"] = pcs;
  doc["tool"] = "Nsight Compute";
  return doc;
}

}  // namespace atomsim::capture
