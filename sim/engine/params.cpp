#include "sim/engine/params.hpp"

#include <toml.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
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
std::size_t invalid_utf8_offset(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  for (std::size_t i = 0; i < text.size();) {
    const unsigned char lead = byte(i);
    std::size_t length;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead < 0x80) length = 1;
    else if (lead >= 0xC2 && lead <= 0xDF) length = 2;
    else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;  // no surrogates
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return i;
    }
    if (length > text.size() - i) return i;
    for (std::size_t k = 1; k < length; ++k) {
      const unsigned char c = byte(i + k);
      if (k == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

}  // namespace

std::string utf8_problem(std::string_view text) {
  const std::size_t bad = invalid_utf8_offset(text);
  if (bad == std::string_view::npos) return {};
  const auto line = std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n') + 1;
  return fmt::format("line {} (byte offset {}): not UTF-8 text", line, bad);
}

namespace {
std::unique_ptr<ParamSource::Impl> parse(std::istream& stream, const std::string& origin,
                                         const std::filesystem::path& dir, int depth);

// A file may start from another: `base = "h100.toml"` (beside the file) takes
// every key the file does not set from that one, each keeping its own file as
// its origin, so that a GPU which differs from another in a few values says
// only those.
void inherit_base(ParamSource::Impl& impl, const std::filesystem::path& dir, int depth) {
  auto it = impl.values.find("base");
  if (it == impl.values.end()) return;
  if (!it->second.value.is_string())
    throw ConfigError(fmt::format("{}: key 'base' must name a configuration file", impl.origin));
  const std::filesystem::path file = dir / std::string(it->second.value.as_string());
  impl.values.erase(it);
  constexpr int kMaxDepth = 8;
  if (depth >= kMaxDepth)
    throw ConfigError(fmt::format("{}: key 'base': more than {} files deep (a file that is its own base?)", impl.origin, kMaxDepth));
  std::error_code ec;
  std::ifstream in(file, std::ios::binary);
  if (!std::filesystem::is_regular_file(file, ec) || !in)
    throw ConfigError(fmt::format("{}: key 'base': cannot open configuration file '{}'", impl.origin, file.string()));
  auto base = parse(in, file.string(), file.parent_path(), depth + 1);
  for (auto& [key, value] : base->values) impl.values.emplace(key, std::move(value));
}

std::unique_ptr<ParamSource::Impl> parse(std::istream& stream, const std::string& origin,
                                         const std::filesystem::path& dir, int depth) {
  auto impl = std::make_unique<ParamSource::Impl>();
  impl->origin = origin;
  std::stringstream text;
  text << stream.rdbuf();
  if (const std::string problem = utf8_problem(text.view()); !problem.empty())
    throw ConfigError(fmt::format("{}: {}", origin, problem));
  try {
    toml::value root = toml::parse(text, origin);
    impl->flatten(root, "");
  } catch (const toml::syntax_error& e) {
    std::string what = e.what();
    auto newline = what.find('\n');
    throw ConfigError(fmt::format("{}: TOML syntax error: {}", origin, what.substr(0, newline)));
  }
  inherit_base(*impl, dir, depth);
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
  return ParamSource(parse(in, path, std::filesystem::path(path).parent_path(), 0));
}

ParamSource ParamSource::from_text(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  return ParamSource(parse(in, origin, ".", 0));
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
  if (const std::string problem = utf8_problem(assignment); !problem.empty())
    throw ConfigError(fmt::format("--set '{}': {}", key, problem));
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
