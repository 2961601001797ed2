#include "sim/engine/stats.hpp"

#include <algorithm>
#include <stdexcept>

namespace atomsim {

void StatGroup::add(const std::string& name, StatKind kind, const std::uint64_t* value, std::string description) {
  for (const auto& e : entries_)
    if (e->name == name) throw std::logic_error("statistic registered twice: " + kind_ + "." + name);
  auto entry = std::make_unique<StatEntry>(StatEntry{name, kind, value, 0, std::move(description)});
  if (kind == StatKind::Constant) entry->value = &entry->constant;
  entries_.push_back(std::move(entry));
}

void StatGroup::add_counter(const std::string& name, const std::uint64_t* value, std::string description) {
  add(name, StatKind::Counter, value, std::move(description));
}
void StatGroup::add_counter(StatId id, const std::uint64_t* value, std::string description) {
  check_group(id);
  add(std::string(id.name), StatKind::Counter, value, std::move(description));
}
void StatGroup::add_busy(StatId id, const std::uint64_t* scaled_value, std::string description) {
  check_group(id);
  add(std::string(id.name), StatKind::Busy, scaled_value, std::move(description));
}
void StatGroup::check_group(StatId id) const {
  if (id.group != kind_)
    throw std::logic_error("statistic " + std::string(id.group) + "." + std::string(id.name) + " registered in group " + kind_);
}
void StatGroup::add_integral(const std::string& name, const std::uint64_t* value, std::string description) {
  add(name, StatKind::Integral, value, std::move(description));
}
void StatGroup::add_busy(const std::string& name, const std::uint64_t* scaled_value, std::string description) {
  add(name, StatKind::Busy, scaled_value, std::move(description));
}
void StatGroup::add_constant(const std::string& name, std::uint64_t value, std::string description) {
  add(name, StatKind::Constant, nullptr, std::move(description));
  entries_.back()->constant = value;
}

StatGroup& StatRegistry::group(const std::string& kind, const std::string& instance) {
  groups_.push_back(std::make_unique<StatGroup>(kind, instance));
  return *groups_.back();
}

std::vector<std::uint64_t> StatRegistry::snapshot() const {
  std::vector<std::uint64_t> values;
  for (const auto& g : groups_)
    for (const auto& e : g->entries()) values.push_back(*e->value);
  return values;
}

std::vector<const std::uint64_t*> StatRegistry::instances(StatId id) const {
  std::vector<const std::uint64_t*> found;
  for (const auto& g : groups_)
    if (g->kind() == id.group)
      for (const auto& e : g->entries())
        if (e->name == id.name) found.push_back(e->value);
  return found;
}

std::map<std::string, std::map<std::string, StatSummary>> StatRegistry::summarize(
    const std::vector<std::uint64_t>& before, const std::vector<std::uint64_t>& after, std::uint64_t cycles) const {
  std::map<std::string, std::map<std::string, StatSummary>> out;
  std::size_t index = 0;
  double span = cycles ? static_cast<double>(cycles) : 1.0;
  for (const auto& g : groups_) {
    for (const auto& e : g->entries()) {
      std::uint64_t delta = e->kind == StatKind::Constant ? after[index] : after[index] - before[index];
      ++index;
      double value = static_cast<double>(delta);
      if (e->kind == StatKind::Integral) value /= span;
      if (e->kind == StatKind::Busy) value = value / 65536.0 / span;
      StatSummary& s = out[g->kind()][e->name];
      if (s.instances == 0) {
        s.kind = e->kind;
        s.description = e->description;
      }
      ++s.instances;
      s.total += value;
      s.max = std::max(s.max, value);
    }
  }
  for (auto& [kind, stats] : out)
    for (auto& [name, s] : stats) s.mean = s.total / static_cast<double>(s.instances);
  return out;
}

}  // namespace atomsim
