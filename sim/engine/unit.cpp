#include "sim/engine/unit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <map>
#include <memory>
#include <thread>
#include <vector>

namespace atomsim {

Cycle detail::evaluation_cycle = 0;
thread_local detail::StagedEffects* detail::staged_effects = nullptr;

namespace {

std::atomic<bool> stop_requested{false};

// Helper threads that evaluate a round's units beside the calendar's thread,
// one pool per process (SystemC runs one simulation per process at a time).
// A round hands out its units one at a time through one ticket that holds the
// round's number, its unit count and the next unit's place: a helper can take
// a unit only with a ticket of the round in progress, so one that comes late
// never takes a unit of a later round.
class EvaluationWorkers {
  static constexpr unsigned kFieldBits = 20;

 public:
  using Evaluate = void (*)(Unit*);
  static constexpr std::size_t kMaxRound = (std::size_t(1) << kFieldBits) - 1;

  explicit EvaluationWorkers(unsigned helpers) : staged_(helpers + 1) {
    for (unsigned t = 0; t < helpers; ++t) threads_.emplace_back([this, t] { serve(t + 1); });
  }
  ~EvaluationWorkers() {
    stopping_ = true;
    ticket_.fetch_add(kRound);
    ticket_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  unsigned threads() const { return static_cast<unsigned>(threads_.size() + 1); }
  std::vector<detail::StagedEffects>& staged() { return staged_; }

  // Evaluates units[0..n) on every thread; returns once all have run.
  void run(Unit* const* units, std::size_t n, Evaluate evaluate) {
    units_ = units;
    evaluate_ = evaluate;
    remaining_.store(n, std::memory_order_relaxed);
    const std::uint64_t round = (ticket_.load(std::memory_order_relaxed) & kRoundMask) + kRound;
    ticket_.store(round | std::uint64_t(n) << kFieldBits);
    if (sleepers_.load() > 0) ticket_.notify_all();
    take_units(round, 0);
    while (remaining_.load(std::memory_order_acquire) != 0) pause();
  }

 private:
  static constexpr std::uint64_t kFieldMask = (std::uint64_t(1) << kFieldBits) - 1;
  static constexpr std::uint64_t kRound = std::uint64_t(1) << (2 * kFieldBits);
  static constexpr std::uint64_t kRoundMask = ~(kRound - 1);

  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  void take_units(std::uint64_t round, unsigned thread) {
    detail::staged_effects = &staged_[thread];
    std::uint64_t t = ticket_.load(std::memory_order_acquire);
    for (;;) {
      if ((t & kRoundMask) != round || (t & kFieldMask) >= (t >> kFieldBits & kFieldMask)) break;
      if (!ticket_.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel)) continue;
      evaluate_(units_[t & kFieldMask]);
      remaining_.fetch_sub(1, std::memory_order_release);
      t = ticket_.load(std::memory_order_acquire);
    }
    detail::staged_effects = nullptr;
  }

  void serve(unsigned thread) {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t t = ticket_.load(std::memory_order_acquire);
      // Rounds follow each other within microseconds while a kernel runs;
      // between kernels a helper sleeps.
      for (int spins = 0; (t & kRoundMask) == seen && spins < 20000; ++spins) {
        pause();
        t = ticket_.load(std::memory_order_acquire);
      }
      if ((t & kRoundMask) == seen) {
        ++sleepers_;
        ticket_.wait(t);
        --sleepers_;
        continue;
      }
      if (stopping_) return;
      seen = t & kRoundMask;
      take_units(seen, thread);
    }
  }

  std::vector<detail::StagedEffects> staged_;  // one per thread; the calendar's is [0]
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> ticket_{0};
  std::atomic<std::size_t> remaining_{0};
  std::atomic<unsigned> sleepers_{0};
  std::atomic<bool> stopping_{false};
  Unit* const* units_ = nullptr;
  Evaluate evaluate_ = nullptr;
};

unsigned requested_threads = 1;

EvaluationWorkers& evaluation_workers() {
  static std::unique_ptr<EvaluationWorkers> workers;
  if (!workers || workers->threads() != requested_threads) {
    workers.reset();
    workers = std::make_unique<EvaluationWorkers>(requested_threads - 1);
  }
  return *workers;
}

}  // namespace

void set_evaluation_threads(unsigned threads) { requested_threads = std::max(1u, threads); }
void request_stop() { stop_requested = true; }

// Units due per cycle: a ring of buckets for the next kWindow cycles, a map
// beyond. Entries whose unit has since asked for an earlier cycle are skipped.
// A cycle runs in rounds: every unit due is evaluated (on as many threads as
// asked), then what their evaluations staged is applied; a unit that asked to
// run again in the same cycle does so in the next round.
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

  std::uint32_t next_unit_order() { return units_++; }

  void schedule(Unit& unit, Cycle cycle) {
    // Inside an evaluation the cycle is known without asking SystemC.
    const Cycle now = running_ != kNever ? running_ : current_cycle();
    if (cycle < now) cycle = now;
    if (cycle >= unit.pending_wake_) return;
    unit.pending_wake_ = cycle;
    // Only the unit itself asks from inside its evaluation; the calendar
    // files the request once the round is over.
    if (detail::StagedEffects* staged = detail::staged_effects) staged->wakes.push_back(&unit);
    else place(unit, cycle, now);
  }

 private:
  static constexpr Cycle kWindow = 4096;
  // Rounds smaller than this run on the calendar's thread alone: handing a
  // few units to other threads costs more than it saves.
  static constexpr std::size_t kSmallestSharedRound = 6;
  static constexpr std::size_t kWideUnitInputs = 16;

  void place(Unit& unit, Cycle cycle, Cycle now) {
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

  static void evaluate_one(Unit* unit) {
    try {
      unit->evaluate();
    } catch (...) {
      detail::staged_effects->failures.emplace_back(unit->order_, std::current_exception());
    }
  }

  void evaluate_round() {
    EvaluationWorkers& workers = evaluation_workers();
    if (workers.threads() > 1 && round_.size() >= kSmallestSharedRound && round_.size() <= EvaluationWorkers::kMaxRound) {
      workers.run(round_.data(), round_.size(), &WakeCalendar::evaluate_one);
    } else {
      detail::staged_effects = &workers.staged()[0];
      for (Unit* unit : round_) evaluate_one(unit);
      detail::staged_effects = nullptr;
    }
  }

  // Applies what the round's evaluations staged, thread by thread: messages
  // into their receivers' buffers, credits to their senders, wake requests.
  void apply_staged(Cycle now) {
    for (detail::StagedEffects& staged : evaluation_workers().staged()) {
      for (auto& [effect, value] : staged.effects) effect->apply_at_cycle_end(value);
      staged.effects.clear();
      for (Unit* unit : staged.wakes)
        if (unit->pending_wake_ != kNever) place(*unit, unit->pending_wake_, now);
      staged.wakes.clear();
    }
  }

  // What a round's evaluations threw: the first unit's, in construction
  // order, whichever thread ran it.
  void rethrow_first_failure() {
    std::pair<std::uint32_t, std::exception_ptr> first{UINT32_MAX, nullptr};
    for (detail::StagedEffects& staged : evaluation_workers().staged()) {
      for (auto& failure : staged.failures)
        if (failure.first < first.first) first = failure;
      staged.failures.clear();
    }
    if (first.second) std::rethrow_exception(first.second);
  }

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
    std::size_t taken = 0;
    while (taken < bucket.size()) {  // a round may ask for more in this cycle
      round_.clear();
      std::size_t wide = 0;
      for (; taken < bucket.size(); ++taken) {
        Unit* unit = bucket[taken];
        --in_buckets_;
        if (unit->pending_wake_ != now) continue;
        unit->pending_wake_ = kNever;
        round_.push_back(unit);
        // Units with many inputs (crossbars) take longest: they go first, so
        // that the others fill the threads while they run.
        if (unit->inputs_.size() >= kWideUnitInputs) std::swap(round_[wide++], round_.back());
      }
      evaluate_round();
      apply_staged(now);
      rethrow_first_failure();
      if (stop_requested.exchange(false)) {
        in_buckets_ -= bucket.size() - taken;
        bucket.clear();
        running_ = kNever;
        sc_core::sc_stop();
        return;
      }
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
  std::vector<Unit*> round_;
  std::size_t in_buckets_ = 0;
  std::uint32_t units_ = 0;
  Cycle running_ = kNever;
  Cycle planned_ = kNever;
  sc_core::sc_event tick_;
};

Unit::Unit(const sc_core::sc_module_name& name)
    : sc_core::sc_module(name), calendar_(WakeCalendar::current()), order_(calendar_.next_unit_order()) {}

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
