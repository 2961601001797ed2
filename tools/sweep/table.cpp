#include "tools/sweep/table.hpp"

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <fmt/format.h>

namespace atomsim::sweep {

namespace {

using ordered_json = nlohmann::ordered_json;

// Measures a finished kernel contributes, by column name.
std::map<std::string, ordered_json> kernel_measures(const nlohmann::json& k) {
  std::map<std::string, ordered_json> m;
  m["cycles"] = k.at("cycles");
  m["time_us"] = k.at("time_us");
  m["warp_instructions"] = k.at("warp_instructions");
  m["ipc"] = k.at("ipc");
  for (const auto& [state, v] : k.at("warp_states").at("reasons").items()) m["stall." + state] = v.at("fraction");
  for (const auto& [field, v] : k.at("atomics").items()) m["atomics." + field] = v;
  for (const auto& [unit, stats] : k.at("units").items())
    for (const auto& [name, s] : stats.items()) {
      const std::string type = s.at("type");
      if (type == "utilization") m["util." + unit + "." + name] = s.at("mean");
      else if (type == "time_average") m["avg." + unit + "." + name] = s.at("mean");
    }
  return m;
}

// A setting as a cell: numbers stay numbers (a string setting is shown
// without its TOML quotes, so its display differs from its TOML text).
ordered_json setting_cell(const Setting& s) {
  if (s.display == s.toml) {
    try {
      auto v = ordered_json::parse(s.toml);
      if (v.is_number()) return v;
    } catch (const nlohmann::json::exception&) {
    }
  }
  return s.display;
}

}  // namespace

std::string Table::cell_text(const ordered_json& cell) {
  if (cell.is_null()) return "";
  if (cell.is_string()) return cell.get<std::string>();
  return cell.dump();  // numbers in their shortest exact form
}

Table collect_table(const ResultStore& store) {
  const SweepPlan plan = store.load_plan();
  Table table;
  table.sweep = plan.name;

  struct KernelRow {
    ordered_json identity;
    std::map<std::string, ordered_json> measures;
    std::string group_id;  // rows that share a baseline
    long slot = -1;        // kernel position when variants are whole traces
    std::string variant;
  };
  std::vector<KernelRow> rows;
  std::set<std::string> measure_columns;
  for (const auto& p : plan.points) {
    const PlannedTrace& trace = plan.traces[p.trace];
    std::string group_id = trace.group + "\n" + p.config + "\n" + p.name;
    for (const auto& s : p.settings) group_id += "\n" + s.key + "=" + s.toml;
    auto result = store.result(p.key);
    const std::string status = !result ? "pending" : (*result)["status"].get<std::string>();
    auto add_row = [&](const std::string& variant, long slot, ordered_json kernel_index, ordered_json kernel,
                       std::map<std::string, ordered_json> measures) {
      KernelRow r{{}, std::move(measures), group_id, slot, variant};
      r.identity["point"] = p.key;
      r.identity["name"] = p.name;
      r.identity["trace"] = trace.name;
      r.identity["group"] = trace.group;
      r.identity["variant"] = variant;
      r.identity["kernel_index"] = std::move(kernel_index);
      r.identity["kernel"] = std::move(kernel);
      r.identity["config"] = p.config;
      for (const auto& s : p.settings) r.identity[s.key] = setting_cell(s);
      for (const auto& [key, value] : trace.labels) r.identity[key] = value;
      r.identity["status"] = status;
      r.identity["error"] = result ? result->value("error", "") : "";
      for (const auto& [column, v] : r.measures) measure_columns.insert(column);
      rows.push_back(std::move(r));
    };
    if (status != "done") {
      add_row(trace.variant, -1, nullptr, nullptr, {});
      continue;
    }
    const auto& kernels = (*result)["run"]["kernels"];
    for (std::size_t k = 0; k < kernels.size(); ++k) {
      const std::string name = kernels[k]["name"];
      add_row(trace.variant.empty() ? name : trace.variant, trace.variant.empty() ? -1 : static_cast<long>(k), k, name,
              kernel_measures(kernels[k]));
    }
  }

  // Speedup: the cycles of the row's baseline (same group, configuration and
  // settings, a variant the baseline pattern matches, same kernel position
  // when variants are whole traces) over the row's own.
  std::regex baseline(plan.baseline.empty() ? "$^" : plan.baseline);
  std::map<std::pair<std::string, long>, double> baseline_cycles;
  for (const auto& r : rows)
    if (!plan.baseline.empty() && r.measures.count("cycles") && std::regex_search(r.variant, baseline))
      baseline_cycles.emplace(std::make_pair(r.group_id, r.slot), r.measures.at("cycles").get<double>());

  table.columns = kIdentityColumns;
  for (const auto& key : plan.setting_keys) table.columns.push_back(key);
  for (const auto& trace : plan.traces)  // every label any trace has, in spec order
    for (const auto& [key, value] : trace.labels)
      if (std::find(table.columns.begin(), table.columns.end(), key) == table.columns.end()) table.columns.push_back(key);
  table.columns.insert(table.columns.end(), kResultColumns.begin(), kResultColumns.end());
  for (const char* prefix : {"stall.", "atomics.", "util.", "avg."})
    for (const auto& c : measure_columns)
      if (c.starts_with(prefix)) table.columns.push_back(c);

  for (auto& r : rows) {
    ordered_json row;
    for (const auto& column : table.columns) {
      if (r.identity.contains(column)) row[column] = r.identity[column];
      else if (r.measures.count(column)) row[column] = r.measures.at(column);
      else row[column] = nullptr;
    }
    auto base = baseline_cycles.find({r.group_id, r.slot});
    if (base != baseline_cycles.end() && r.measures.count("cycles") && r.measures.at("cycles").get<double>() > 0)
      row["speedup"] = base->second / r.measures.at("cycles").get<double>();
    table.rows.push_back(std::move(row));
  }
  return table;
}

std::string table_csv(const Table& table) {
  auto quoted = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  std::string csv;
  for (std::size_t i = 0; i < table.columns.size(); ++i) csv += (i ? "," : "") + quoted(table.columns[i]);
  csv += "\n";
  for (const auto& row : table.rows) {
    for (std::size_t i = 0; i < table.columns.size(); ++i)
      csv += (i ? "," : "") + quoted(Table::cell_text(row[table.columns[i]]));
    csv += "\n";
  }
  return csv;
}

ordered_json table_json(const Table& table) {
  ordered_json j;
  j["schema"] = "atomsim.sweep-table/1";
  j["sweep"] = table.sweep;
  j["columns"] = table.columns;
  j["rows"] = table.rows;
  return j;
}

}  // namespace atomsim::sweep
