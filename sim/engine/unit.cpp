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

// Helper threads that work beside the calendar's thread, one pool per process
// (SystemC runs one simulation per process at a time). Each step runs a job
// once on every thread and returns when all have finished it.
class EvaluationWorkers {
 public:
  using Job = void (*)(void* context, unsigned thread);

  explicit EvaluationWorkers(unsigned helpers) : staged_(helpers + 1) {
    for (auto& s : staged_) s.effects_for.resize(helpers + 1);
    for (unsigned t = 0; t < helpers; ++t) threads_.emplace_back([this, t] { serve(t + 1); });
  }
  ~EvaluationWorkers() {
    stopping_ = true;
    generation_.fetch_add(1);
    generation_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  unsigned threads() const { return static_cast<unsigned>(threads_.size() + 1); }
  std::vector<detail::StagedEffects>& staged() { return staged_; }

  void run_on_all(Job job, void* context) {
    job_ = job;
    context_ = context;
    remaining_.store(static_cast<unsigned>(threads_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1);
    if (sleepers_.load() > 0) generation_.notify_all();
    job(context, 0);
    while (remaining_.load(std::memory_order_acquire) != 0) pause();
  }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }

  void serve(unsigned thread) {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t g = generation_.load(std::memory_order_acquire);
      // Steps follow each other within microseconds while a kernel runs;
      // between kernels a helper sleeps.
      for (int spins = 0; g == seen && spins < 20000; ++spins) {
        pause();
        g = generation_.load(std::memory_order_acquire);
      }
      if (g == seen) {
        ++sleepers_;
        generation_.wait(g);
        --sleepers_;
        continue;
      }
      if (stopping_) return;
      seen = g;
      job_(context_, thread);
      remaining_.fetch_sub(1, std::memory_order_release);
    }
  }

  std::vector<detail::StagedEffects> staged_;  // one per thread; the calendar's is [0]
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<unsigned> remaining_{0};
  std::atomic<unsigned> sleepers_{0};
  std::atomic<bool> stopping_{false};
  Job job_ = nullptr;
  void* context_ = nullptr;
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

void request_stop() { stop_requested = true; }

// Units due per cycle: a ring of buckets for the next kWindow cycles, a map
// beyond. Entries whose unit has since asked for an earlier cycle are skipped.
// A cycle runs in rounds. In a round every unit due is evaluated, each on its
// own thread (a unit keeps its thread, and so its state stays in that core's
// caches), then each thread applies what the round's evaluations did to its
// units; a unit that asked to run again in the same cycle does so in the next round.
class WakeCalendar : public sc_core::sc_module {
 public:
  explicit WakeCalendar(const sc_core::sc_module_name& name) : sc_core::sc_module(name), buckets_(kWindow) {
    sc_core::sc_spawn_options options;
    options.spawn_method();
    options.dont_initialize();
    options.set_sensitivity(&tick_);
    sc_core::sc_spawn([this] { run(); }, sc_core::sc_gen_unique_name("run"), &options);
  }

  // The current simulation context's calendar, if it has one yet.
  static WakeCalendar* existing() { return context_ == sc_core::sc_get_curr_simcontext() ? current_ : nullptr; }
  static WakeCalendar& current() {
    if (context_ != sc_core::sc_get_curr_simcontext()) {
      context_ = sc_core::sc_get_curr_simcontext();
      current_ = new WakeCalendar("wake_calendar");  // lives as long as its (leaked) context
    }
    return *current_;
  }

  void add(Unit& unit) {
    unit.order_ = static_cast<std::uint32_t>(units_.size());
    unit.thread_ = unit.order_ % requested_threads;
    units_.push_back(&unit);
  }
  void remove(const Unit& unit) { units_[unit.order_] = nullptr; }
  void assign_threads(unsigned threads) {
    for (Unit* unit : units_)
      if (unit) unit->thread_ = unit->order_ % threads;
  }

  void schedule(Unit& unit, Cycle cycle) {
    // Inside an evaluation the cycle is known without asking SystemC.
    const Cycle now = running_ != kNever ? running_ : current_cycle();
    if (cycle < now) cycle = now;
    if (cycle >= unit.pending_wake_) return;
    unit.pending_wake_ = cycle;
    // Asked from inside a round (by the unit itself, or by what is applied to
    // it on its thread): the calendar files the request once the round is over.
    if (detail::StagedEffects* staged = detail::staged_effects) staged->wakes.push_back(&unit);
    else place(unit, cycle, now);
  }

 private:
  static constexpr Cycle kWindow = 4096;
  // Rounds smaller than this run on the calendar's thread alone: handing a
  // few units to other threads costs more than it saves.
  static constexpr std::size_t kSmallestSharedRound = 6;

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

  // Thread `thread`'s part of a round: its units' evaluations...
  static void evaluate_part(void* context, unsigned thread) {
    auto& calendar = *static_cast<WakeCalendar*>(context);
    EvaluationWorkers& workers = *calendar.workers_;
    detail::staged_effects = &workers.staged()[thread];
    for (Unit* unit : calendar.parts_[thread]) {
      try {
        unit->evaluate();
      } catch (...) {
        detail::staged_effects->failures.emplace_back(unit->order_, std::current_exception());
      }
    }
    detail::staged_effects = nullptr;
  }
  // ...then what every thread's evaluations did to its units.
  static void apply_part(void* context, unsigned thread) {
    auto& calendar = *static_cast<WakeCalendar*>(context);
    std::vector<detail::StagedEffects>& staged = calendar.workers_->staged();
    detail::staged_effects = &staged[thread];
    for (detail::StagedEffects& from : staged) {
      for (auto& [effect, value] : from.effects_for[thread]) effect->apply_at_cycle_end(value);
      from.effects_for[thread].clear();
    }
    detail::staged_effects = nullptr;
  }

  void run_round(Cycle now) {
    const unsigned threads = workers_->threads();
    if (threads > 1 && round_size_ >= kSmallestSharedRound) {
      workers_->run_on_all(&WakeCalendar::evaluate_part, this);
      workers_->run_on_all(&WakeCalendar::apply_part, this);
    } else {
      for (unsigned t = 0; t < threads; ++t) evaluate_part(this, t);
      for (unsigned t = 0; t < threads; ++t) apply_part(this, t);
    }
    for (auto& part : parts_) part.clear();
    std::pair<std::uint32_t, std::exception_ptr> first_failure{UINT32_MAX, nullptr};
    for (detail::StagedEffects& staged : workers_->staged()) {
      for (Unit* unit : staged.wakes)
        if (unit->pending_wake_ != kNever) place(*unit, unit->pending_wake_, now);
      staged.wakes.clear();
      // What a round's evaluations threw: the first unit's, in construction
      // order, whichever thread ran it.
      for (auto& failure : staged.failures)
        if (failure.first < first_failure.first) first_failure = failure;
      staged.failures.clear();
    }
    if (first_failure.second) std::rethrow_exception(first_failure.second);
  }

  void run() {
    const Cycle now = current_cycle();
    detail::evaluation_cycle = now;
    planned_ = kNever;
    running_ = now;
    workers_ = &evaluation_workers();
    if (parts_.size() != workers_->threads()) {
      parts_.assign(workers_->threads(), {});
      assign_threads(workers_->threads());
    }
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
      round_size_ = 0;
      for (; taken < bucket.size(); ++taken) {
        Unit* unit = bucket[taken];
        --in_buckets_;
        if (unit->pending_wake_ != now) continue;
        unit->pending_wake_ = kNever;
        parts_[unit->thread_].push_back(unit);
        ++round_size_;
      }
      run_round(now);
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

  static inline sc_core::sc_simcontext* context_ = nullptr;
  static inline WakeCalendar* current_ = nullptr;
  std::vector<std::vector<Unit*>> buckets_;
  std::map<Cycle, std::vector<Unit*>> far_;
  std::vector<Unit*> units_;                // every unit, in construction order
  std::vector<std::vector<Unit*>> parts_;   // this round's units, by thread
  std::size_t round_size_ = 0;
  EvaluationWorkers* workers_ = nullptr;
  std::size_t in_buckets_ = 0;
  Cycle running_ = kNever;
  Cycle planned_ = kNever;
  sc_core::sc_event tick_;
};

void set_evaluation_threads(unsigned threads) {
  requested_threads = std::max(1u, threads);
  if (WakeCalendar* calendar = WakeCalendar::existing()) calendar->assign_threads(requested_threads);
}

Unit::Unit(const sc_core::sc_module_name& name) : sc_core::sc_module(name), calendar_(WakeCalendar::current()) {
  calendar_.add(*this);
}

Unit::~Unit() { calendar_.remove(*this); }

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
