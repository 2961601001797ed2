#include "tools/sweep/spec.hpp"

#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <toml.hpp>

#include <fmt/format.h>

#include "sim/config.hpp"
#include "tools/sweep/table.hpp"
#include "sim/run.hpp"
#include "traces/accelsim.hpp"
#include "traces/reader.hpp"
#include "workloads/microbench/generator.hpp"

namespace atomsim::sweep {

namespace fs = std::filesystem;

namespace {

// A table's entries in the order the spec wrote them (toml11 keeps tables
// unordered), dotted keys and nested tables flattened to "a.b.c".
std::vector<std::pair<std::string, const toml::value*>> entries_in_order(const toml::value& table,
                                                                         const std::string& prefix = "") {
  std::vector<std::pair<std::string, const toml::value*>> out;
  for (const auto& [k, v] : table.as_table()) {
    std::string key = prefix.empty() ? k : prefix + "." + k;
    if (v.is_table()) {
      auto inner = entries_in_order(v, key);
      out.insert(out.end(), inner.begin(), inner.end());
    } else {
      out.emplace_back(key, &v);
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const auto la = a.second->location(), lb = b.second->location();
    return std::make_pair(la.line(), la.column()) < std::make_pair(lb.line(), lb.column());
  });
  return out;
}

class SpecReader {
 public:
  explicit SpecReader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const toml::value& at, const std::string& what) const {
    throw SpecError(fmt::format("{}:{}: {}", path_, at.location().line(), what));
  }
  [[noreturn]] void fail_file(const std::string& what) const { throw SpecError(fmt::format("{}: {}", path_, what)); }

  const std::string& path() const { return path_; }

  std::string string(const toml::value& v, const std::string& key) const {
    if (!v.is_string()) fail(v, fmt::format("key '{}' must be a string", key));
    return v.as_string();
  }

  // Rejects keys a table may not have, so a typo is never silently ignored.
  void only_keys(const toml::value& table, const std::string& where, const std::set<std::string>& allowed) const {
    for (const auto& [k, v] : table.as_table())
      if (!allowed.count(k)) {
        std::string list;
        for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
        fail(v, fmt::format("unknown key '{}' in {} (expected: {})", k, where, list));
      }
  }

 private:
  std::string path_;
};

Setting setting_from(const std::string& key, const toml::value& v) {
  Setting s;
  s.key = key;
  s.toml = toml::format(v);
  s.display = v.is_string() ? std::string(v.as_string()) : s.toml;
  return s;
}

// "ORIGIN: message" from the configuration layer, without the ORIGIN that the
// spec's own position replaces.
std::string without_origin(const std::string& message, const std::string& config_path) {
  for (const std::string& prefix : {config_path + ": ", std::string("--set ")}) {
    if (!message.starts_with(prefix)) continue;
    std::size_t colon = prefix == "--set " ? message.find(": ") : prefix.size() - 2;
    if (colon != std::string::npos) return message.substr(colon + 2);
  }
  return message;
}

struct Combination {
  std::string name;
  std::vector<Setting> settings;
  const toml::value* origin;  // where to point an error about the whole combination
};

workloads::MicrobenchParams microbench_from(const SpecReader& spec, const toml::value& table) {
  if (!table.is_table()) spec.fail(table, "key 'microbench' must be a table of `atomsim gen microbench` options");
  spec.only_keys(table, "microbench", {"variant", "blocks", "warps_per_block", "iterations", "primitives", "params",
                                       "active_fraction", "lanes_per_primitive", "threshold", "seed"});
  workloads::MicrobenchParams p;
  auto integer = [&](const char* key, std::uint32_t& field) {
    if (!table.contains(key)) return;
    const auto& v = table.at(key);
    if (!v.is_integer() || v.as_integer() < 0 || v.as_integer() > 0xFFFFFFFFll)
      spec.fail(v, fmt::format("key 'microbench.{}' must be a non-negative integer", key));
    field = static_cast<std::uint32_t>(v.as_integer());
  };
  integer("blocks", p.blocks);
  integer("warps_per_block", p.warps_per_block);
  integer("iterations", p.iterations);
  integer("primitives", p.primitives);
  integer("params", p.params);
  integer("lanes_per_primitive", p.lanes_per_primitive);
  integer("threshold", p.threshold);
  integer("seed", p.seed);
  if (table.contains("active_fraction")) {
    const auto& v = table.at("active_fraction");
    if (!v.is_floating() && !v.is_integer()) spec.fail(v, "key 'microbench.active_fraction' must be a number");
    p.active_fraction = v.is_floating() ? v.as_floating() : static_cast<double>(v.as_integer());
  }
  try {
    p.validate();
  } catch (const std::invalid_argument& e) {
    spec.fail(table, fmt::format("microbench: {}", e.what()));
  }
  return p;
}

std::vector<workloads::MicrobenchParams> microbench_kernels(const SpecReader& spec, const toml::value& table,
                                                            const workloads::MicrobenchParams& p) {
  const std::string variant =
      table.contains("variant") ? spec.string(table.at("variant"), "microbench.variant") : "all";
  try {
    return workloads::microbench_variants(p, variant);
  } catch (const std::invalid_argument& e) {
    spec.fail(table.at("variant"), fmt::format("key 'microbench.variant': {}", e.what()));
  }
}

bool safe_file_name(const std::string& name) {
  return !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") ==
                              std::string::npos && name[0] != '.';
}

// A [[trace]]'s `labels = { threshold = 16, ... }`: scalars that become table
// columns, so that traces differing in a kernel parameter can be plotted
// against it. A label may not take the name of a column the table already has.
std::vector<std::pair<std::string, nlohmann::json>> trace_labels(const SpecReader& spec, const toml::value& trace,
                                                                 const SweepPlan& plan) {
  std::vector<std::pair<std::string, nlohmann::json>> labels;
  if (!trace.contains("labels")) return labels;
  const auto& table = trace.at("labels");
  if (!table.is_table()) spec.fail(table, "key 'labels' must be a table of names and values");
  auto taken = [&](const std::string& key) {
    for (const auto* columns : {&kIdentityColumns, &kResultColumns, &plan.setting_keys})
      if (std::find(columns->begin(), columns->end(), key) != columns->end()) return true;
    return false;
  };
  for (const auto& [key, v] : entries_in_order(table)) {
    if (key.find('.') != std::string::npos || !safe_file_name(key) || taken(key))
      spec.fail(*v, fmt::format("label '{}': a label needs a name of letters, digits, '_' and '-' that is not already a column", key));
    if (v->is_integer()) labels.emplace_back(key, v->as_integer());
    else if (v->is_floating()) labels.emplace_back(key, v->as_floating());
    else if (v->is_boolean()) labels.emplace_back(key, v->as_boolean());
    else if (v->is_string()) labels.emplace_back(key, v->as_string().str);
    else spec.fail(*v, fmt::format("label '{}' must be a number, a boolean or a string", key));
  }
  return labels;
}

std::vector<std::string> expand_glob(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> out;
  if (::glob(pattern.c_str(), GLOB_NOSORT, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  ::globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

SweepPlan plan_sweep(const std::string& spec_path, const std::string& out_dir, const std::string& executable) {
  SpecReader spec(spec_path);
  toml::value root;
  try {
    std::ifstream file(spec_path, std::ios::binary);
    if (!file) spec.fail_file("cannot read sweep spec: cannot open it");
    std::stringstream text;
    text << file.rdbuf();
    if (const std::string problem = utf8_problem(text.view()); !problem.empty()) spec.fail_file(problem);
    root = toml::parse(text, spec_path);
  } catch (const SpecError&) {
    throw;
  } catch (const toml::syntax_error& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    if (what.starts_with("[error] ")) what = what.substr(8);
    throw SpecError(fmt::format("{}:{}: TOML syntax error: {}", spec_path, e.location().line(), what));
  } catch (const std::exception& e) {
    spec.fail_file(fmt::format("cannot read sweep spec: {}", e.what()));
  }
  spec.only_keys(root, "the spec", {"sweep", "axes", "point", "trace"});
  if (!root.contains("sweep") || !root.at("sweep").is_table()) spec.fail_file("missing table [sweep]");
  const toml::value& head = root.at("sweep");
  spec.only_keys(head, "[sweep]", {"name", "configs", "combine", "baseline"});

  SweepPlan plan;
  plan.spec = fs::absolute(spec_path).lexically_normal().string();
  plan.executable = executable;
  plan.build = hash_file(executable);
  if (!head.contains("name")) spec.fail(head, "[sweep] needs a name");
  plan.name = spec.string(head.at("name"), "sweep.name");
  if (plan.baseline = head.contains("baseline") ? spec.string(head.at("baseline"), "sweep.baseline") : "";
      !plan.baseline.empty()) {
    try {
      std::regex check(plan.baseline);
    } catch (const std::regex_error&) {
      spec.fail(head.at("baseline"), fmt::format("key 'sweep.baseline' = '{}' is not a valid regular expression", plan.baseline));
    }
  }
  const std::string combine = head.contains("combine") ? spec.string(head.at("combine"), "sweep.combine") : "product";
  if (combine != "product" && combine != "zip")
    spec.fail(head.at("combine"), fmt::format("key 'sweep.combine' = '{}' is not one of: product, zip", combine));

  // Configurations: each must load as it is.
  struct Config {
    std::string name;
    std::string path;
    std::set<std::string> keys;
  };
  std::vector<Config> configs;
  std::vector<const toml::value*> config_values;
  static const toml::value default_config("h100");
  if (head.contains("configs")) {
    const auto& list = head.at("configs");
    if (!list.is_array() || list.as_array().empty())
      spec.fail(list, "key 'sweep.configs' must be a non-empty array of configuration names or files");
    for (const auto& c : list.as_array()) config_values.push_back(&c);
  } else {
    config_values.push_back(&default_config);
  }
  const fs::path spec_dir = fs::absolute(spec_path).parent_path();
  for (const auto* c : config_values) {
    std::string name = spec.string(*c, "sweep.configs");
    // A file is named relative to the spec; a bundled configuration by name.
    std::string config = name;
    if (fs::path(name).has_parent_path() || name.ends_with(".toml")) config = (spec_dir / name).lexically_normal().string();
    Config cfg{name, config, {}};
    try {
      cfg.path = resolve_config_path(config);
      GpuParams p = load_gpu_params(config, {});
      for (const auto& d : p.documentation) cfg.keys.insert(d.key);
    } catch (const ConfigError& e) {
      spec.fail(*c, fmt::format("configuration '{}': {}", name, e.what()));
    }
    configs.push_back(std::move(cfg));
  }

  // Axes: every key declared, every value in range on every configuration.
  struct Axis {
    std::string key;
    std::vector<std::pair<Setting, const toml::value*>> values;
  };
  std::vector<Axis> axes;
  auto check_setting = [&](const std::string& key, const toml::value& v, const char* what) {
    if (v.is_array() || v.is_table()) spec.fail(v, fmt::format("{} '{}' must be a number, bool or string", what, key));
    for (const auto& cfg : configs) {
      if (!cfg.keys.count(key))
        spec.fail(v, fmt::format("unknown key '{}' (not a parameter of configuration '{}'; see atomsim config describe)",
                                 key, cfg.name));
      Setting s = setting_from(key, v);
      try {
        load_gpu_params(cfg.path, {key + "=" + s.toml});
      } catch (const ConfigError& e) {
        spec.fail(v, fmt::format("{} '{}' = {}: {}", what, key, s.toml, without_origin(e.what(), cfg.path)));
      }
    }
  };
  if (root.contains("axes")) {
    const auto& table = root.at("axes");
    if (!table.is_table()) spec.fail(table, "key 'axes' must be a table of parameter = [values]");
    for (const auto& [key, v] : entries_in_order(table)) {
      if (!v->is_array() || v->as_array().empty())
        spec.fail(*v, fmt::format("axis '{}' must be a non-empty array of values", key));
      Axis axis{key, {}};
      for (const auto& value : v->as_array()) {
        check_setting(key, value, "axis");
        axis.values.emplace_back(setting_from(key, value), &value);
      }
      axes.push_back(std::move(axis));
      plan.setting_keys.push_back(key);
    }
  }

  std::vector<Combination> combinations;
  if (!axes.empty()) {
    if (combine == "zip") {
      for (const auto& a : axes)
        if (a.values.size() != axes.front().values.size())
          spec.fail(*a.values.front().second,
                    fmt::format("axis '{}' has {} values but '{}' has {}: zipped axes need equal lengths", a.key,
                                a.values.size(), axes.front().key, axes.front().values.size()));
      for (std::size_t i = 0; i < axes.front().values.size(); ++i) {
        Combination c{"", {}, axes.front().values[i].second};
        for (const auto& a : axes) c.settings.push_back(a.values[i].first);
        combinations.push_back(std::move(c));
      }
    } else {
      std::vector<std::size_t> index(axes.size(), 0);
      while (true) {
        Combination c{"", {}, axes.front().values[index.front()].second};
        for (std::size_t a = 0; a < axes.size(); ++a) c.settings.push_back(axes[a].values[index[a]].first);
        combinations.push_back(std::move(c));
        std::size_t a = axes.size();
        while (a > 0 && ++index[a - 1] == axes[a - 1].values.size()) index[--a] = 0;
        if (a == 0) break;
      }
    }
  }

  // Named points: settings of their own, beside the axes' combinations.
  if (root.contains("point")) {
    const auto& list = root.at("point");
    if (!list.is_array()) spec.fail(list, "key 'point' must be an array of tables ([[point]])");
    std::set<std::string> names;
    for (const auto& p : list.as_array()) {
      if (!p.is_table()) spec.fail(p, "each [[point]] must be a table");
      spec.only_keys(p, "[[point]]", {"name", "set"});
      if (!p.contains("name")) spec.fail(p, "[[point]] needs a name");
      Combination c{spec.string(p.at("name"), "point.name"), {}, &p.at("name")};
      if (!names.insert(c.name).second) spec.fail(p.at("name"), fmt::format("point name '{}' is used twice", c.name));
      if (p.contains("set")) {
        if (!p.at("set").is_table()) spec.fail(p.at("set"), "key 'point.set' must be a table of parameter = value");
        for (const auto& [key, v] : entries_in_order(p.at("set"))) {
          check_setting(key, *v, "setting");
          c.settings.push_back(setting_from(key, *v));
          if (std::find(plan.setting_keys.begin(), plan.setting_keys.end(), key) == plan.setting_keys.end())
            plan.setting_keys.push_back(key);
        }
      }
      combinations.push_back(std::move(c));
    }
  }
  if (combinations.empty()) combinations.push_back({"", {}, &head});

  // Each combination as a whole, on each configuration: the cross-parameter rules.
  std::map<std::pair<std::size_t, std::size_t>, std::string> canonical;  // (config, combination) -> resolved text
  for (std::size_t c = 0; c < configs.size(); ++c)
    for (std::size_t k = 0; k < combinations.size(); ++k) {
      PlannedPoint probe;
      probe.settings = combinations[k].settings;
      try {
        canonical[{c, k}] = load_gpu_params(configs[c].path, probe.overrides()).canonical;
      } catch (const ConfigError& e) {
        std::string what;
        for (const auto& s : combinations[k].settings) what += (what.empty() ? "" : ", ") + s.key + "=" + s.toml;
        spec.fail(*combinations[k].origin,
                  fmt::format("{} on '{}' ({}): {}", combinations[k].name.empty() ? "combination" : "point " + combinations[k].name,
                              configs[c].name, what.empty() ? "no settings" : what, without_origin(e.what(), configs[c].path)));
      }
    }

  // Traces: files (globs relative to the spec) or generated microbenchmarks.
  if (!root.contains("trace") || !root.at("trace").is_array() || root.at("trace").as_array().empty())
    spec.fail_file("needs at least one [[trace]]");
  std::set<std::string> trace_names;
  for (const auto& t : root.at("trace").as_array()) {
    if (!t.is_table()) spec.fail(t, "each [[trace]] must be a table");
    spec.only_keys(t, "[[trace]]", {"name", "path", "microbench", "group", "variant", "labels"});
    const auto labels = trace_labels(spec, t, plan);
    const std::string group = t.contains("group") ? spec.string(t.at("group"), "trace.group") : "";
    const std::string variant = t.contains("variant") ? spec.string(t.at("variant"), "trace.variant") : "";
    const std::string name = t.contains("name") ? spec.string(t.at("name"), "trace.name") : "";
    std::vector<std::pair<std::string, std::string>> files;  // name, path
    if (t.contains("path") == t.contains("microbench"))
      spec.fail(t, "each [[trace]] needs exactly one of 'path' (a file or glob) and 'microbench' (generated)");
    if (t.contains("microbench")) {
      if (!safe_file_name(name))
        spec.fail(t, "a generated [[trace]] needs a 'name' of letters, digits, '.', '_' and '-'");
      const auto& table = t.at("microbench");
      auto kernels = microbench_kernels(spec, table, microbench_from(spec, table));
      fs::create_directories(fs::path(out_dir) / "traces");
      std::string path = fs::absolute(fs::path(out_dir) / "traces" / (name + ".trace")).lexically_normal().string();
      std::string partial = path + fmt::format(".partial-{}", ::getpid());
      write_microbench_trace(kernels, partial);
      fs::rename(partial, path);
      files.emplace_back(name, path);
    } else {
      const std::string pattern = spec.string(t.at("path"), "trace.path");
      const fs::path full = fs::path(pattern).is_absolute() ? fs::path(pattern) : spec_dir / pattern;
      auto matches = expand_glob(full.lexically_normal().string());
      if (matches.empty()) spec.fail(t.at("path"), fmt::format("trace path '{}' matches no file", pattern));
      if (!name.empty() && matches.size() > 1)
        spec.fail(t.at("name"), fmt::format("trace name '{}' given to a path that matches {} files", name, matches.size()));
      for (const auto& m : matches)
        files.emplace_back(name.empty() ? fs::path(m).lexically_relative(spec_dir).string() : name, m);
    }
    const toml::value& at = t.contains("path") ? t.at("path") : t;
    for (const auto& [trace_name, path] : files) {
      if (!trace_names.insert(trace_name).second)
        spec.fail(at, fmt::format("trace name '{}' is used twice", trace_name));
      try {
        trace::TraceReader reader(trace::accelsim::simulation_trace(path));
        if (reader.kernel_count() == 0) spec.fail(at, fmt::format("trace '{}' holds no kernel", path));
      } catch (const trace::TraceError& e) {
        spec.fail(at, fmt::format("trace '{}': {}", trace_name, e.what()));
      }
      plan.traces.push_back({trace_name, fs::absolute(path).lexically_normal().string(), hash_file(path),
                             group.empty() ? trace_name : group, variant, labels});
    }
  }

  for (std::size_t c = 0; c < configs.size(); ++c)
    for (std::size_t k = 0; k < combinations.size(); ++k)
      for (std::size_t t = 0; t < plan.traces.size(); ++t) {
        PlannedPoint p;
        p.name = combinations[k].name;
        p.trace = t;
        p.config = configs[c].name;
        p.config_file = configs[c].path;
        p.settings = combinations[k].settings;
        p.key = point_key(plan.traces[t].hash, canonical[{c, k}], plan.build);
        if (plan.find(p.key))
          spec.fail(*combinations[k].origin,
                    fmt::format("two points of the sweep simulate the same thing (trace '{}'); remove one",
                                plan.traces[t].name));
        plan.points.push_back(std::move(p));
      }
  return plan;
}

}  // namespace atomsim::sweep
