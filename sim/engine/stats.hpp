// The one statistics mechanism: units expose their counters to a registry at
// construction; nothing prints. Reports read snapshots of the registry, and a
// kernel's figures are the difference of the snapshots at its start and end.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace atomsim {

enum class StatKind : std::uint8_t {
  Counter,   // events; reported as a sum
  Integral,  // level x cycles; reported as a time average
  Busy,      // busy time of a rate server in 1/65536 cycles; reported as utilization
  Constant,  // a configured size, for context
};

// A statistic as code names it: its unit kind's group and its name, declared
// once beside the unit that registers it (e.g. models/sm/sm.hpp) and used both
// to register it and to read it back. A misspelled name does not build; one
// registered in another group than its own fails at registration.
struct StatId {
  std::string_view group;
  std::string_view name;
};

struct StatEntry {
  std::string name;
  StatKind kind;
  const std::uint64_t* value;  // points into the unit; Constant entries point at `constant`
  std::uint64_t constant = 0;
  std::string description;
};

class StatGroup {
 public:
  StatGroup(std::string kind, std::string instance) : kind_(std::move(kind)), instance_(std::move(instance)) {}
  void add_counter(const std::string& name, const std::uint64_t* value, std::string description);
  void add_counter(StatId id, const std::uint64_t* value, std::string description);
  void add_integral(const std::string& name, const std::uint64_t* value, std::string description);
  void add_busy(const std::string& name, const std::uint64_t* scaled_value, std::string description);
  void add_busy(StatId id, const std::uint64_t* scaled_value, std::string description);
  void add_constant(const std::string& name, std::uint64_t value, std::string description);
  const std::string& kind() const { return kind_; }
  const std::string& instance() const { return instance_; }
  const std::vector<std::unique_ptr<StatEntry>>& entries() const { return entries_; }

 private:
  void add(const std::string& name, StatKind kind, const std::uint64_t* value, std::string description);
  void check_group(StatId id) const;
  std::string kind_;
  std::string instance_;
  std::vector<std::unique_ptr<StatEntry>> entries_;
};

// Aggregate of one statistic over all instances of a unit kind within a window.
struct StatSummary {
  StatKind kind;
  std::string description;
  std::size_t instances = 0;
  double total = 0;  // sum of per-instance values (counters) or of per-instance averages
  double mean = 0;   // per instance
  double max = 0;    // largest instance
};

class StatRegistry {
 public:
  StatGroup& group(const std::string& kind, const std::string& instance);
  std::vector<std::uint64_t> snapshot() const;
  // Where every instance of a statistic keeps its value, to read it often.
  std::vector<const std::uint64_t*> instances(StatId id) const;
  // kind -> stat name -> summary over [before, after] spanning `cycles` cycles.
  std::map<std::string, std::map<std::string, StatSummary>> summarize(
      const std::vector<std::uint64_t>& before, const std::vector<std::uint64_t>& after, std::uint64_t cycles) const;

 private:
  std::vector<std::unique_ptr<StatGroup>> groups_;
};

}  // namespace atomsim
