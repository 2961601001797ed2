#include "tools/sweep/plan.hpp"

#include <xxhash.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace atomsim::sweep {

namespace {

std::string hex(const XXH128_hash_t& h) { return fmt::format("{:016x}{:016x}", h.high64, h.low64); }

}  // namespace

std::vector<std::string> PlannedPoint::overrides() const {
  std::vector<std::string> out;
  for (const auto& s : settings) out.push_back(s.key + "=" + s.toml);
  return out;
}

std::string hash_file(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::runtime_error(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> state(XXH3_createState(), &XXH3_freeState);
  XXH3_128bits_reset(state.get());
  std::vector<char> buffer(1 << 20);
  std::size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) XXH3_128bits_update(state.get(), buffer.data(), n);
  if (std::ferror(file.get())) throw std::runtime_error(fmt::format("{}: read failed", path));
  return hex(XXH3_128bits_digest(state.get()));
}

std::string hash_text(const std::string& text) { return hex(XXH3_128bits(text.data(), text.size())); }

std::string point_key(const std::string& trace_hash, const std::string& canonical_config, const std::string& build) {
  // Lengths delimit the parts, so no two different triples give the same text.
  return hash_text(fmt::format("trace {} {}\nconfig {}\n{}build {} {}\n", trace_hash.size(), trace_hash,
                               canonical_config.size(), canonical_config, build.size(), build));
}

nlohmann::json SweepPlan::to_json() const {
  using nlohmann::json;
  json j;
  j["schema"] = "atomsim.sweep-plan/1";
  j["name"] = name;
  j["spec"] = spec;
  j["executable"] = executable;
  j["build"] = build;
  j["baseline"] = baseline;
  j["setting_keys"] = setting_keys;
  j["traces"] = json::array();
  for (const auto& t : traces) {
    json labels = json::array();
    for (const auto& [key, value] : t.labels) labels.push_back({{"key", key}, {"value", value}});
    j["traces"].push_back({{"name", t.name}, {"path", t.path}, {"hash", t.hash}, {"group", t.group}, {"variant", t.variant},
                           {"labels", labels}});
  }
  j["points"] = json::array();
  for (const auto& p : points) {
    json settings = json::array();
    for (const auto& s : p.settings) settings.push_back({{"key", s.key}, {"toml", s.toml}, {"display", s.display}});
    j["points"].push_back({{"key", p.key}, {"name", p.name}, {"trace", p.trace}, {"config", p.config}, {"config_file", p.config_file}, {"settings", settings}});
  }
  return j;
}

SweepPlan SweepPlan::from_json(const nlohmann::json& j, const std::string& origin) {
  try {
    if (j.at("schema") != "atomsim.sweep-plan/1") throw std::runtime_error("not a sweep plan (schema)");
    SweepPlan plan;
    plan.name = j.at("name");
    plan.spec = j.at("spec");
    plan.executable = j.at("executable");
    plan.build = j.at("build");
    plan.baseline = j.at("baseline");
    plan.setting_keys = j.at("setting_keys").get<std::vector<std::string>>();
    for (const auto& t : j.at("traces")) {
      PlannedTrace trace{t.at("name"), t.at("path"), t.at("hash"), t.at("group"), t.at("variant"), {}};
      for (const auto& l : t.value("labels", nlohmann::json::array()))  // plans written before labels have none
        trace.labels.emplace_back(l.at("key"), l.at("value"));
      plan.traces.push_back(std::move(trace));
    }
    for (const auto& p : j.at("points")) {
      PlannedPoint point{p.at("key"), p.at("name"), p.at("trace"), p.at("config"), p.at("config_file"), {}};
      if (point.trace >= plan.traces.size()) throw std::runtime_error("a point names a trace the plan lacks");
      for (const auto& s : p.at("settings")) point.settings.push_back({s.at("key"), s.at("toml"), s.at("display")});
      plan.points.push_back(std::move(point));
    }
    return plan;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: malformed sweep plan: {}", origin, e.what()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: malformed sweep plan: {}", origin, e.what()));
  }
}

const PlannedPoint* SweepPlan::find(const std::string& key) const {
  for (const auto& p : points)
    if (p.key == key) return &p;
  return nullptr;
}

}  // namespace atomsim::sweep
