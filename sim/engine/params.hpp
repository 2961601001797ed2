// Typed model parameters, gem5 style: each component declares its parameters
// (name, type, allowed range, meaning) next to its code, and binds them from a
// TOML configuration. Every key must be present in the configuration, every
// configuration key must be claimed by some component, and values out of range
// are errors that name the key and the file.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace atomsim {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// TOML is UTF-8, and toml11 (3.7) reads past the end of its buffer on some
// malformed sequences: every TOML text is checked first. Empty when the text
// is UTF-8, else "line L (byte offset N): not UTF-8 text" for its first
// invalid sequence.
std::string utf8_problem(std::string_view text);

// One declared parameter, kept for `atomsim config describe`.
struct ParamInfo {
  std::string key;
  std::string type;   // integer, real, bool or choice
  std::string range;  // as printed
  std::string description;
  double min = 0, max = 0;           // integer and real parameters
  std::vector<std::string> choices;  // choice parameters
};

class ParamSource {
 public:
  // Reads a TOML file; errors name the file (and line, where TOML reports one).
  // A top-level `base = "FILE"` (beside the file; for text, in the working
  // directory) takes every key the file leaves out from FILE.
  static ParamSource from_file(const std::string& path);
  static ParamSource from_text(const std::string& text, const std::string& origin);
  ~ParamSource();
  ParamSource(ParamSource&&) noexcept;
  ParamSource& operator=(ParamSource&&) noexcept;

  // "section.key=value"; the value is read as TOML (number, bool, string) or,
  // failing that, as a bare string. The key must name a declared parameter.
  void apply_override(const std::string& assignment);

  std::int64_t get_integer(const std::string& key, std::int64_t min, std::int64_t max);
  double get_real(const std::string& key, double min, double max);
  bool get_bool(const std::string& key);
  std::string get_choice(const std::string& key, const std::vector<std::string>& choices);

  // Throws for the first configuration key no component claimed.
  void check_all_claimed() const;
  // Every key with its value after overrides, one `key = value` line each in
  // key order: two sources with the same text configure the same machine.
  std::string canonical_text() const;
  const std::string& origin() const;
  const std::vector<ParamInfo>& declared() const;
  void record(ParamInfo info);

  struct Impl;

 private:
  explicit ParamSource(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Scoped view used by a component's declare(): keys are prefixed with the
// component's section, and each call records the parameter's documentation.
class ParamBinder {
 public:
  ParamBinder(ParamSource& source, std::string section) : source_(source), section_(std::move(section)) {}
  ParamBinder sub(const std::string& name) const { return ParamBinder(source_, section_ + "." + name); }

  template <class Int>
  void integer(const char* name, Int& value, std::int64_t min, std::int64_t max, const char* description) {
    value = static_cast<Int>(source_.get_integer(key(name), min, max));
    document(ParamInfo{key(name), "integer", range_text(min, max), description, static_cast<double>(min),
                       static_cast<double>(max), {}});
  }
  void real(const char* name, double& value, double min, double max, const char* description);
  void boolean(const char* name, bool& value, const char* description);
  void choice(const char* name, std::string& value, const std::vector<std::string>& choices, const char* description);
  // A choice bound to an enum, parsed once here: `names` pairs each allowed
  // name with its value (declared beside the enum, as the units' policies are).
  template <class Enum, std::size_t N>
  void choice(const char* name, Enum& value, const std::array<std::pair<const char*, Enum>, N>& names,
              const char* description) {
    std::vector<std::string> allowed;
    for (const auto& entry : names) allowed.emplace_back(entry.first);
    std::string chosen;
    choice(name, chosen, allowed, description);
    for (const auto& [text, v] : names)
      if (chosen == text) value = v;
  }

 private:
  std::string key(const char* name) const { return section_ + "." + name; }
  void document(ParamInfo info);
  static std::string range_text(std::int64_t min, std::int64_t max);
  ParamSource& source_;
  std::string section_;
};

}  // namespace atomsim
