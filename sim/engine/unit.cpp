#include "sim/engine/unit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <vector>

namespace atomsim {

Cycle detail::evaluation_cycle = 0;

// Units due per cycle: a ring of buckets for the next kWindow cycles, a map
// beyond. Entries whose unit has since asked for an earlier cycle are skipped.
class WakeCalendar : public sc_core::sc_module {
 public:
  explicit WakeCalendar(const sc_core::sc_module_name& name) : sc_core::sc_module(name), buckets_(kWindow) {
    sc_core::sc_spawn_options options;
    options.spawn_method();
    options.dont_initialize();
    options.set_sensitivity(&tick_);
    sc_core::sc_spawn([this] { run(); }, sc_core::sc_gen_unique_name("run"), &options);
  }

  static WakeCalendar& current() {
    static sc_core::sc_simcontext* context = nullptr;
    static WakeCalendar* calendar = nullptr;
    if (context != sc_core::sc_get_curr_simcontext()) {
      context = sc_core::sc_get_curr_simcontext();
      calendar = new WakeCalendar("wake_calendar");  // lives as long as its (leaked) context
    }
    return *calendar;
  }

  void schedule(Unit& unit, Cycle cycle) {
    // Inside an evaluation the cycle is known without asking SystemC.
    const Cycle now = running_ != kNever ? running_ : current_cycle();
    if (cycle < now) cycle = now;
    if (cycle >= unit.pending_wake_) return;
    unit.pending_wake_ = cycle;
    if (cycle - now < kWindow) {
      buckets_[cycle % kWindow].push_back(&unit);
      ++in_buckets_;
    } else {
      far_[cycle].push_back(&unit);
    }
    if (cycle == running_ || cycle >= planned_) return;
    planned_ = cycle;
    tick_.notify(cycle == now ? sc_core::SC_ZERO_TIME
                              : sc_core::sc_time::from_value((cycle - now) * kPicosecondsPerCycle));
  }

 private:
  static constexpr Cycle kWindow = 4096;

  void run() {
    const Cycle now = current_cycle();
    detail::evaluation_cycle = now;
    planned_ = kNever;
    running_ = now;
    // Far wakes that have come within the window join their buckets before
    // this cycle's bucket runs: the calendar may jump straight to a far wake,
    // which must run in that very cycle.
    while (!far_.empty() && far_.begin()->first - now < kWindow) {
      for (Unit* unit : far_.begin()->second) {
        buckets_[far_.begin()->first % kWindow].push_back(unit);
        ++in_buckets_;
      }
      far_.erase(far_.begin());
    }
    std::vector<Unit*>& bucket = buckets_[now % kWindow];
    for (std::size_t i = 0; i < bucket.size(); ++i) {  // units may join this cycle while it runs
      Unit* unit = bucket[i];
      --in_buckets_;
      if (unit->pending_wake_ != now) continue;
      unit->pending_wake_ = kNever;
      unit->evaluate();
    }
    bucket.clear();
    running_ = kNever;
    Cycle next = kNever;
    if (in_buckets_ > 0) {
      for (Cycle c = now + 1; c < now + kWindow; ++c)
        if (!buckets_[c % kWindow].empty()) { next = c; break; }
    } else if (!far_.empty()) {
      next = far_.begin()->first;
    }
    if (next == kNever) return;
    planned_ = next;
    tick_.notify(sc_core::sc_time::from_value((next - now) * kPicosecondsPerCycle));
  }

  std::vector<std::vector<Unit*>> buckets_;
  std::map<Cycle, std::vector<Unit*>> far_;
  std::size_t in_buckets_ = 0;
  Cycle running_ = kNever;
  Cycle planned_ = kNever;
  sc_core::sc_event tick_;
};

Unit::Unit(const sc_core::sc_module_name& name) : sc_core::sc_module(name), calendar_(WakeCalendar::current()) {}

void Unit::wake_at(Cycle cycle) { calendar_.schedule(*this, cycle); }

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
