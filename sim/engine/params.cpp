#include "sim/engine/params.hpp"

#include <toml.hpp>

#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace atomsim {

struct ParamSource::Impl {
  struct Value {
    toml::value value;
    std::string origin;
    bool claimed = false;
  };
  std::string origin;
  std::map<std::string, Value> values;  // ordered: deterministic error order
  std::vector<ParamInfo> declared;

  void flatten(const toml::value& table, const std::string& prefix) {
    for (const auto& [k, v] : table.as_table()) {
      std::string key = prefix.empty() ? k : prefix + "." + k;
      if (v.is_table())
        flatten(v, key);
      else
        values[key] = Value{v, origin};
    }
  }

  Value& find(const std::string& key) {
    auto it = values.find(key);
    if (it == values.end()) throw ConfigError(fmt::format("{}: missing key '{}'", origin, key));
    it->second.claimed = true;
    return it->second;
  }
};

namespace {
std::unique_ptr<ParamSource::Impl> parse(std::istream& in, const std::string& origin) {
  auto impl = std::make_unique<ParamSource::Impl>();
  impl->origin = origin;
  try {
    toml::value root = toml::parse(in, origin);
    impl->flatten(root, "");
  } catch (const toml::syntax_error& e) {
    std::string what = e.what();
    auto newline = what.find('\n');
    throw ConfigError(fmt::format("{}: TOML syntax error: {}", origin, what.substr(0, newline)));
  }
  return impl;
}
}  // namespace

ParamSource::ParamSource(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ParamSource::~ParamSource() = default;
ParamSource::ParamSource(ParamSource&&) noexcept = default;
ParamSource& ParamSource::operator=(ParamSource&&) noexcept = default;

ParamSource ParamSource::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open configuration file", path));
  return ParamSource(parse(in, path));
}

ParamSource ParamSource::from_text(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  return ParamSource(parse(in, origin));
}

void ParamSource::apply_override(const std::string& assignment) {
  auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError(fmt::format("--set '{}': expected key=value", assignment));
  std::string key = assignment.substr(0, eq);
  std::string text = assignment.substr(eq + 1);
  auto it = impl_->values.find(key);
  if (it == impl_->values.end())
    throw ConfigError(fmt::format("--set '{}': unknown key '{}' (not in {})", assignment, key, impl_->origin));
  toml::value parsed;
  try {
    std::istringstream in("v = " + text);
    parsed = toml::find(toml::parse(in, "--set"), "v");
  } catch (const std::exception&) {
    parsed = toml::value(text);  // bare word, e.g. --set sm.scheduler=lrr
  }
  it->second.value = parsed;
  it->second.origin = "--set " + key;
}

std::int64_t ParamSource::get_integer(const std::string& key, std::int64_t min, std::int64_t max) {
  auto& v = impl_->find(key);
  if (!v.value.is_integer()) throw ConfigError(fmt::format("{}: key '{}' must be an integer", v.origin, key));
  std::int64_t x = v.value.as_integer();
  if (x < min || x > max)
    throw ConfigError(fmt::format("{}: key '{}' = {} is out of range [{}, {}]", v.origin, key, x, min, max));
  return x;
}

double ParamSource::get_real(const std::string& key, double min, double max) {
  auto& v = impl_->find(key);
  double x;
  if (v.value.is_floating()) x = v.value.as_floating();
  else if (v.value.is_integer()) x = static_cast<double>(v.value.as_integer());
  else throw ConfigError(fmt::format("{}: key '{}' must be a number", v.origin, key));
  if (!std::isfinite(x) || x < min || x > max)
    throw ConfigError(fmt::format("{}: key '{}' = {} is out of range [{}, {}]", v.origin, key, x, min, max));
  return x;
}

bool ParamSource::get_bool(const std::string& key) {
  auto& v = impl_->find(key);
  if (!v.value.is_boolean()) throw ConfigError(fmt::format("{}: key '{}' must be true or false", v.origin, key));
  return v.value.as_boolean();
}

std::string ParamSource::get_choice(const std::string& key, const std::vector<std::string>& choices) {
  auto& v = impl_->find(key);
  if (!v.value.is_string()) throw ConfigError(fmt::format("{}: key '{}' must be a string", v.origin, key));
  std::string s = v.value.as_string();
  for (const auto& c : choices)
    if (c == s) return s;
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
  throw ConfigError(fmt::format("{}: key '{}' = '{}' is not one of: {}", v.origin, key, s, list));
}

void ParamSource::check_all_claimed() const {
  for (const auto& [key, v] : impl_->values)
    if (!v.claimed) throw ConfigError(fmt::format("{}: unknown key '{}'", v.origin, key));
}

std::string ParamSource::canonical_text() const {
  std::string text;
  for (const auto& [key, v] : impl_->values) text += key + " = " + toml::format(v.value) + "\n";
  return text;
}

const std::string& ParamSource::origin() const { return impl_->origin; }
const std::vector<ParamInfo>& ParamSource::declared() const { return impl_->declared; }

void ParamSource::record(ParamInfo info) {
  for (const auto& d : impl_->declared)
    if (d.key == info.key) return;
  impl_->declared.push_back(std::move(info));
}

void ParamBinder::real(const char* name, double& value, double min, double max, const char* description) {
  value = source_.get_real(key(name), min, max);
  document(ParamInfo{key(name), "real", fmt::format("[{}, {}]", min, max), description, min, max, {}});
}

void ParamBinder::boolean(const char* name, bool& value, const char* description) {
  value = source_.get_bool(key(name));
  document(ParamInfo{key(name), "bool", "true|false", description, 0, 0, {}});
}

void ParamBinder::choice(const char* name, std::string& value, const std::vector<std::string>& choices,
                         const char* description) {
  value = source_.get_choice(key(name), choices);
  std::string list;
  for (const auto& c : choices) list += (list.empty() ? "" : "|") + c;
  document(ParamInfo{key(name), "choice", list, description, 0, 0, choices});
}

void ParamBinder::document(ParamInfo info) { source_.record(std::move(info)); }

std::string ParamBinder::range_text(std::int64_t min, std::int64_t max) { return fmt::format("[{}, {}]", min, max); }

}  // namespace atomsim
