// The simulation context as a whole: starting afresh, and what its units
// still hold when a kernel cannot finish.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "sim/engine/simulation_control.hpp"
#include "sim/engine/unit.hpp"

namespace atomsim {

void reset_simulation_context() {
  // SystemC offers no public reset; replacing the global context is the
  // documented way simulators and test harnesses re-elaborate in one process.
  // The previous context is leaked deliberately: deleting it runs destructors
  // of modules that the caller has already destroyed.
  sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
  sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
  detail::evaluation_cycle = 0;
}

namespace {
void collect_units(const std::vector<sc_core::sc_object*>& objects, std::vector<const Unit*>& units) {
  for (const sc_core::sc_object* object : objects) {
    if (const auto* unit = dynamic_cast<const Unit*>(object)) units.push_back(unit);
    collect_units(object->get_child_objects(), units);
  }
}
}  // namespace

std::string describe_waiting_messages(std::size_t units) {
  struct Held {
    Cycle since;
    std::string text;
  };
  std::vector<const Unit*> all;
  collect_units(sc_core::sc_get_top_level_objects(), all);
  std::vector<Held> held;
  for (const Unit* unit : all) {
    const MessageBuffer* oldest = nullptr;
    std::size_t index = 0;
    for (std::size_t i = 0; i < unit->inputs().size(); ++i) {
      const MessageBuffer* b = unit->inputs()[i];
      if (b->waiting_messages() && (!oldest || b->oldest_arrival() < oldest->oldest_arrival())) {
        oldest = b;
        index = i;
      }
    }
    if (oldest)
      held.push_back({oldest->oldest_arrival(),
                      fmt::format("{} input {} since cycle {} ({} messages, {} of {} flits)", unit->name(), index,
                                  oldest->oldest_arrival(), oldest->waiting_messages(), oldest->occupied_flits(),
                                  oldest->capacity_flits())});
  }
  if (held.empty()) return {};
  std::stable_sort(held.begin(), held.end(), [](const Held& a, const Held& b) { return a.since < b.since; });
  std::string text = "oldest waiting messages: ";
  for (std::size_t i = 0; i < std::min(units, held.size()); ++i) text += (i ? "; " : "") + held[i].text;
  if (held.size() > units) text += fmt::format("; {} more units hold messages", held.size() - units);
  return text;
}

}  // namespace atomsim
