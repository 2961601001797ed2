#include "sim/engine/unit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace atomsim {

namespace {

std::atomic<bool> stop_requested{false};

// Helper threads that work beside the calendar's thread, one pool per process
// (SystemC runs one simulation per process at a time). Each step runs a job
// once on every thread and returns when all have finished it. A thread marks
// its finish, with two numbers the job left for the caller, in a cache line of
// its own: the caller gathers the lines in parallel instead of every thread
// taking turns on one shared counter.
class EvaluationWorkers {
 public:
  using Job = void (*)(void* context, unsigned thread);
  struct alignas(64) Finish {
    std::atomic<std::uint64_t> step{0};  // the last step this thread finished
    std::uint64_t report[3] = {0, 0, 0};  // what its part of that step left for the caller
  };

  explicit EvaluationWorkers(unsigned helpers) : staged_(helpers + 1), finishes_(helpers + 1) {
    for (auto& s : staged_) s.effects_for.resize(helpers + 1);
    for (unsigned t = 0; t < helpers; ++t) threads_.emplace_back([this, t] { serve(t + 1); });
  }
  ~EvaluationWorkers() {
    stopping_ = true;
    step_.fetch_add(1);
    step_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  unsigned threads() const { return static_cast<unsigned>(threads_.size() + 1); }
  std::vector<detail::StagedEffects>& staged() { return staged_; }
  // Thread `thread`'s report of the step it is in (written by its job), or of
  // the step just run (read by the caller once run_on_all returns).
  std::uint64_t* report(unsigned thread) { return finishes_[thread].report; }

  void run_on_all(Job job, void* context) {
    job_ = job;
    context_ = context;
    const std::uint64_t step = step_.fetch_add(1) + 1;
    if (sleepers_.load() > 0) step_.notify_all();
    job(context, 0);
    for (std::size_t t = 1; t < finishes_.size(); ++t)
      for (unsigned spins = 0; finishes_[t].step.load(std::memory_order_acquire) != step; ++spins) wait_a_little(spins);
  }

 private:
  // Spins briefly, then gives the core away: with more threads than cores
  // (several simulations at once, a busy machine) the thread waited for may
  // be the one that needs it.
  static void wait_a_little(unsigned spins) {
    if (spins < 1024) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      std::this_thread::yield();
    }
  }

  void serve(unsigned thread) {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t step = step_.load(std::memory_order_acquire);
      // Steps follow each other within microseconds while a kernel runs;
      // between kernels a helper sleeps.
      for (unsigned spins = 0; step == seen && spins < 20000; ++spins) {
        wait_a_little(spins);
        step = step_.load(std::memory_order_acquire);
      }
      if (step == seen) {
        ++sleepers_;
        step_.wait(step);
        --sleepers_;
        continue;
      }
      if (stopping_) return;
      seen = step;
      job_(context_, thread);
      finishes_[thread].step.store(step, std::memory_order_release);
    }
  }

  std::vector<detail::StagedEffects> staged_;  // one per thread; the calendar's is [0]
  std::vector<Finish> finishes_;               // one per thread; [0] is the caller's, not waited on
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> step_{0};
  std::atomic<unsigned> sleepers_{0};
  std::atomic<bool> stopping_{false};
  Job job_ = nullptr;
  void* context_ = nullptr;
};

unsigned requested_threads = 1;
Cycle requested_window = 1;
bool host_profiling = false;
std::atomic<std::uint64_t> dealings{0};

// A cheap host clock for weighing evaluations (its unit does not matter: only
// comparisons between units).
inline std::uint64_t host_ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

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

std::uint64_t units_dealt_by_cost() { return dealings.load(); }

// Units due per window. A window of W cycles runs in two steps. In the first,
// each thread runs the window's cycles for the units it keeps, one cycle after
// another; in each cycle it evaluates its units due, then applies what they did
// to units of their own domain (a unit that asked to run again in the same
// cycle does so in another round). In the second, each thread applies what the
// window's evaluations did to its units from other domains. A unit keeps its
// thread (its state stays in that core's caches), and all units of a domain
// share one, so nothing but the second step crosses threads. Each thread keeps
// the wake-ups of its own units (a ring of buckets for the next kRingCycles
// cycles, a map beyond), so that no thread touches another's units to schedule
// them; entries whose unit has since asked for an earlier cycle are skipped.
// A window starts at the first cycle any unit is due in.
//
// A window takes as long as its busiest thread, and units differ by tens of
// times in what an evaluation costs (a crossbar with a hundred inputs against
// an idle SM's). With several threads the calendar therefore times the
// evaluations of a stretch of windows now and then and deals the domains
// out again, the costliest first, each to the thread with the least so far.
// Results do not depend on which thread runs a domain, so neither the host's
// timing nor this dealing can change them.
class WakeCalendar : public sc_core::sc_module {
 public:
  explicit WakeCalendar(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    sc_core::sc_spawn_options options;
    options.spawn_method();
    options.dont_initialize();
    options.set_sensitivity(&tick_);
    sc_core::sc_spawn([this] { run(); }, sc_core::sc_gen_unique_name("run"), &options);
    threads_wanted_ = requested_threads;
    window_ = requested_window;
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
    units_.push_back(&unit);
    plan_stale_ = true;
  }
  void remove(const Unit& unit) { units_[unit.order_] = nullptr; }
  void link(const Unit& sender, const Unit& receiver, Cycle latency) {
    links_.push_back({sender.order_, receiver.order_, latency});
    plan_stale_ = true;
  }

  // Between kernels (no window running).
  void assign_threads(unsigned threads) {
    threads_wanted_ = threads;
    plan_stale_ = true;
  }
  void set_window(Cycle cycles) {
    window_ = cycles;
    plan_stale_ = true;
  }

  // What host profiling measured since it was last taken (see
  // take_host_profile), in ticks; measuring goes on afresh.
  HostProfile take_profile(double seconds_per_tick) {
    HostProfile profile;
    for (Unit* unit : units_) {
      if (!unit) continue;
      const Unit::HostUse use = std::exchange(unit->host_use_, Unit::HostUse{});
      profile.units.push_back({unit->name(), unit->thread_, use.evaluations, use.evaluate_ticks * seconds_per_tick,
                               use.apply_ticks * seconds_per_tick});
    }
    for (ThreadBusy& busy : thread_busy_) profile.thread_busy_seconds.push_back(std::exchange(busy.ticks, 0) * seconds_per_tick);
    profile.window_seconds = std::exchange(window_ticks_, 0) * seconds_per_tick;
    profile.windows = std::exchange(windows_, 0);
    return profile;
  }

  void schedule(Unit& unit, Cycle cycle) {
    // Inside a window each thread knows its own cycle without asking SystemC.
    const Cycle now = running_ != kNever ? detail::evaluation_cycle : current_cycle();
    if (cycle < now) cycle = now;
    if (cycle >= unit.pending_wake_) return;
    unit.pending_wake_ = cycle;
    // Inside a window only the unit's own thread asks (for the unit itself,
    // or applying what another did to it): it files the wake-up in its own
    // lane, and the calendar learns of it at the window's end.
    if (!plan_stale_) lanes_[unit.thread_].place(unit, cycle, now);  // else filed when the plan is made
    if (running_ != kNever) return;
    woken_from_outside_ = true;
    if (cycle >= planned_) return;
    planned_ = cycle;
    tick_.notify(sc_core::sc_time::from_value((cycle - now) * kPicosecondsPerCycle));
  }

 private:
  static constexpr Cycle kRingCycles = 4096;
  // Windows with fewer units due at their start than this run on the
  // calendar's thread alone: handing a few units to other threads costs more
  // than it saves.
  static constexpr std::size_t kSmallestSharedWindow = 6;
  static constexpr std::uint64_t kFailed = std::uint64_t(1) << 63;  // in a lane's report: an evaluation threw
  // Windows run between weighings, and how many windows a weighing times:
  // about 1.5% of windows pay for the clock reads.
  static constexpr std::uint64_t kWindowsBeforeFirstWeighing = 256;
  static constexpr std::uint64_t kWindowsBetweenWeighings = 16384;
  static constexpr std::uint64_t kWindowsWeighed = 256;

  struct Link {
    std::uint32_t sender, receiver;
    Cycle latency;
  };
  struct alignas(64) ThreadBusy {  // a line each: written by its thread
    std::uint64_t ticks = 0;
  };

  // One thread's wake-ups.
  struct alignas(64) Lane {
    std::vector<std::vector<Unit*>> buckets = std::vector<std::vector<Unit*>>(kRingCycles);
    std::map<Cycle, std::vector<Unit*>> far;
    std::size_t in_buckets = 0;
    std::size_t taken = 0;  // entries of the current cycle's bucket already evaluated
    Cycle next = kNever;    // no unit is due before it (entries since skipped may make it early)

    void place(Unit& unit, Cycle cycle, Cycle now) {
      if (cycle - now < kRingCycles) {
        buckets[cycle % kRingCycles].push_back(&unit);
        ++in_buckets;
      } else {
        far[cycle].push_back(&unit);
      }
      next = std::min(next, cycle);
    }
    // Far wakes that have come within the ring join their buckets before
    // the cycle runs: the calendar may jump straight to a far wake.
    void bring_near(Cycle now) {
      while (!far.empty() && far.begin()->first - now < kRingCycles) {
        for (Unit* unit : far.begin()->second) {
          buckets[far.begin()->first % kRingCycles].push_back(unit);
          ++in_buckets;
        }
        far.erase(far.begin());
      }
    }
    // Units due at `next` (those asked for again in the current cycle, when it is `now`).
    std::size_t due_at_next(Cycle now) const {
      if (next == kNever) return 0;
      if (next - now < kRingCycles) return buckets[next % kRingCycles].size() - (next == now ? taken : 0);
      return far.begin()->second.size();
    }
    // After the last round of cycle `now`: where the lane's next unit due is.
    void find_next(Cycle now) {
      if (next != now) return;
      std::vector<Unit*>& bucket = buckets[now % kRingCycles];
      bucket.clear();
      taken = 0;
      next = kNever;
      if (in_buckets > 0) {
        for (Cycle c = now + 1; c < now + kRingCycles; ++c)
          if (!buckets[c % kRingCycles].empty()) { next = c; break; }
      } else if (!far.empty()) {
        next = far.begin()->first;
      }
    }
  };

  static void apply(detail::StagedEffects::Effects& effects, bool weighing) {
    const std::uint64_t* payloads = effects.payloads.data();
    if (weighing || host_profiling) {
      // What others do to a unit costs its thread too (a crossbar takes in
      // the packets of a hundred senders): it is charged to the unit.
      for (auto& e : effects.list) {
        const std::uint64_t begun = host_ticks();
        e.effect->apply_at_cycle_end(e.value, payloads);
        if (!e.changed) continue;
        const std::uint64_t spent = host_ticks() - begun;
        if (weighing) e.changed->cost_ += spent;
        if (host_profiling) e.changed->host_use_.apply_ticks += spent;
      }
    } else {
      for (auto& e : effects.list) e.effect->apply_at_cycle_end(e.value, payloads);
    }
    effects.list.clear();
    effects.payloads.clear();
  }

  // Thread `thread`'s part of a window: its units' cycles...
  static void evaluate_part(void* context, unsigned thread) {
    auto& calendar = *static_cast<WakeCalendar*>(context);
    const Cycle end = calendar.running_ + calendar.window_;
    Lane& lane = calendar.lanes_[thread];
    detail::StagedEffects& staged = calendar.workers_->staged()[thread];
    const bool weighing = calendar.weighing_;
    const bool timing = weighing || host_profiling;
    const std::uint64_t part_begun = host_profiling ? host_ticks() : 0;
    Cycle last = 0;
    lane.bring_near(calendar.running_);
    while (lane.next < end) {
      const Cycle now = lane.next;
      lane.bring_near(now);
      detail::evaluation_cycle = now;
      std::vector<Unit*>& bucket = lane.buckets[now % kRingCycles];
      while (lane.taken < bucket.size()) {  // a round; a unit may ask to run again in this cycle
        detail::staged_effects = &staged;
        for (const std::size_t round_end = bucket.size(); lane.taken < round_end; ++lane.taken) {
          Unit* unit = bucket[lane.taken];
          --lane.in_buckets;
          if (unit->pending_wake_ != now) continue;
          unit->pending_wake_ = kNever;
          staged.evaluating_domain = unit->domain_;
          last = now;
          const std::uint64_t begun = timing ? host_ticks() : 0;
          try {
            unit->evaluate();
          } catch (...) {
            staged.failures.emplace_back(unit->order_, std::current_exception());
          }
          if (timing) {
            const std::uint64_t spent = host_ticks() - begun;
            if (weighing) unit->cost_ += spent;
            if (host_profiling) {
              ++unit->host_use_.evaluations;
              unit->host_use_.evaluate_ticks += spent;
            }
          }
        }
        detail::staged_effects = nullptr;
        apply(staged.within_domain, weighing);
      }
      lane.find_next(now);
      if (!staged.failures.empty()) break;
    }
    detail::evaluation_cycle = end - 1;
    calendar.workers_->report(thread)[2] = last;
    if (host_profiling) calendar.thread_busy_[thread].ticks += host_ticks() - part_begun;
  }
  // ...then what the window's evaluations did to its units from other
  // domains, and when it next has units due.
  static void apply_part(void* context, unsigned thread) {
    auto& calendar = *static_cast<WakeCalendar*>(context);
    const std::uint64_t part_begun = host_profiling ? host_ticks() : 0;
    std::vector<detail::StagedEffects>& staged = calendar.workers_->staged();
    const Cycle end = calendar.running_ + calendar.window_;
    detail::evaluation_cycle = end - 1;
    for (detail::StagedEffects& from : staged) {
      auto& effects = from.effects_for[thread];
      if (!effects.list.empty()) apply(effects, calendar.weighing_);  // read, not written, when empty: the line stays shared
    }
    Lane& lane = calendar.lanes_[thread];
    std::uint64_t* report = calendar.workers_->report(thread);
    report[0] = lane.next;
    report[1] = lane.due_at_next(end) | (staged[thread].failures.empty() ? 0 : kFailed);
    if (host_profiling) calendar.thread_busy_[thread].ticks += host_ticks() - part_begun;
  }

  void run() {
    const Cycle now = current_cycle();
    detail::evaluation_cycle = now;
    planned_ = kNever;
    if (plan_stale_) plan();
    running_ = now;
    workers_ = &evaluation_workers();
    const unsigned threads = workers_->threads();
    if (threads > 1) weigh_now_and_then();
    // While weighing, what the calendar's own thread spends here outside the
    // windows (gathering the threads' reports) counts against that thread.
    struct Charge {
      WakeCalendar& calendar;
      std::uint64_t begun;
      ~Charge() { if (begun) calendar.calendar_cost_ += host_ticks() - begun; }
    } charge{*this, weighing_ ? host_ticks() : 0};
    // How many units are due: as the last window reported, or, when units
    // were woken from outside a window since, as the lanes say.
    std::size_t due = expected_due_;
    if (woken_from_outside_) {
      due = 0;
      for (Lane& lane : lanes_) {
        lane.bring_near(now);
        if (lane.next == now) due += lane.due_at_next(now);
      }
      woken_from_outside_ = false;
    }
    const std::uint64_t window_begun = weighing_ || host_profiling ? host_ticks() : 0;
    if (host_profiling && thread_busy_.size() != threads) thread_busy_.assign(threads, ThreadBusy{});
    if (threads > 1 && due * window_ >= kSmallestSharedWindow) {
      workers_->run_on_all(&WakeCalendar::evaluate_part, this);
      workers_->run_on_all(&WakeCalendar::apply_part, this);
    } else {
      for (unsigned t = 0; t < threads; ++t) evaluate_part(this, t);
      for (unsigned t = 0; t < threads; ++t) apply_part(this, t);
    }
    if (weighing_) calendar_cost_ -= host_ticks() - window_begun;
    if (host_profiling) {
      window_ticks_ += host_ticks() - window_begun;
      ++windows_;
    }
    // The first cycle any lane has a unit due in, and how many units it has
    // due then (entries since skipped count too: an estimate).
    Cycle next = kNever;
    Cycle last = now;
    due = 0;
    bool failed = false;
    for (unsigned t = 0; t < threads; ++t) {
      const std::uint64_t* report = workers_->report(t);
      failed |= (report[1] & kFailed) != 0;
      last = std::max(last, report[2]);
      const std::size_t lane_due = report[1] & ~kFailed;
      if (report[0] < next) {
        next = report[0];
        due = lane_due;
      } else if (report[0] == next) {
        due += lane_due;
      }
    }
    running_ = kNever;
    detail::evaluation_cycle = last;
    if (failed) rethrow_first_failure();
    if (stop_requested.exchange(false)) {
      sc_core::sc_stop();
      return;
    }
    if (next < now + window_)
      throw std::logic_error("wake calendar: a unit was woken inside a window that has run");
    expected_due_ = due;
    // With nothing left, time ends at the last cycle a unit ran in.
    if (next == kNever && last > now) next = last;
    if (next == kNever) return;
    planned_ = next;
    tick_.notify(sc_core::sc_time::from_value((next - now) * kPicosecondsPerCycle));
  }

  // Forms the domains from the links, deals them out to the threads in order
  // and files every pending wake-up in its thread's lane.
  void plan() {
    std::vector<std::uint32_t> root(units_.size());
    for (std::uint32_t i = 0; i < root.size(); ++i) root[i] = i;
    auto find = [&root](std::uint32_t i) {
      while (root[i] != i) i = root[i] = root[root[i]];
      return i;
    };
    for (const Link& l : links_) {
      if (l.latency >= window_ || !units_[l.sender] || !units_[l.receiver]) continue;
      const std::uint32_t a = find(l.sender), b = find(l.receiver);
      if (a != b) root[std::max(a, b)] = std::min(a, b);  // the first unit built names the domain
    }
    std::vector<std::uint32_t> index(units_.size(), UINT32_MAX);
    domains_ = 0;
    for (Unit* unit : units_) {
      if (!unit) continue;
      std::uint32_t& domain = index[find(unit->order_)];
      if (domain == UINT32_MAX) domain = domains_++;
      unit->domain_ = domain;
      unit->thread_ = domain % threads_wanted_;
    }
    plan_stale_ = false;
    rebuild_lanes(threads_wanted_);
    windows_to_next_weighing_ = kWindowsBeforeFirstWeighing;
    weighing_ = false;
  }

  // Called before each window: starts or ends a stretch of timed windows,
  // and after one deals the domains out again by what they cost.
  void weigh_now_and_then() {
    if (windows_to_next_weighing_ > 0) {
      --windows_to_next_weighing_;
      return;
    }
    if (!weighing_) {
      weighing_ = true;
      windows_to_next_weighing_ = kWindowsWeighed;
      return;
    }
    weighing_ = false;
    windows_to_next_weighing_ = kWindowsBetweenWeighings;
    deal_by_cost(static_cast<unsigned>(lanes_.size()));
  }

  // Longest processing time first: each domain, costliest first, to the
  // thread with the least cost so far. Domains not evaluated while weighed
  // keep their thread.
  void deal_by_cost(unsigned threads) {
    std::vector<std::uint64_t> cost(domains_, 0);
    std::vector<std::uint32_t> thread_of(domains_, 0);
    for (Unit* unit : units_) {
      if (!unit) continue;
      cost[unit->domain_] += std::exchange(unit->cost_, 0);
      thread_of[unit->domain_] = unit->thread_;
    }
    std::vector<std::uint32_t> by_cost(domains_);
    for (std::uint32_t d = 0; d < domains_; ++d) by_cost[d] = d;
    std::stable_sort(by_cost.begin(), by_cost.end(), [&cost](std::uint32_t a, std::uint32_t b) { return cost[a] > cost[b]; });
    std::vector<std::uint64_t> load(threads, 0);
    load[0] = std::exchange(calendar_cost_, 0);
    for (std::uint32_t d : by_cost) {
      if (cost[d] == 0) break;
      const auto least = std::min_element(load.begin(), load.end());
      thread_of[d] = static_cast<std::uint32_t>(least - load.begin());
      *least += cost[d];
    }
    for (Unit* unit : units_)
      if (unit) unit->thread_ = thread_of[unit->domain_];
    rebuild_lanes(threads);
    ++dealings;
  }

  // Each thread's lane filed anew from the units' threads and pending wake-ups.
  void rebuild_lanes(unsigned threads) {
    lanes_.clear();
    lanes_.resize(threads);
    woken_from_outside_ = true;
    for (Unit* unit : units_)
      if (unit && unit->pending_wake_ != kNever) lanes_[unit->thread_].place(*unit, unit->pending_wake_, current_cycle());
  }

  // What a window's evaluations threw: the first unit's, in construction
  // order, whichever thread ran it.
  void rethrow_first_failure() {
    std::pair<std::uint32_t, std::exception_ptr> first{UINT32_MAX, nullptr};
    for (detail::StagedEffects& staged : workers_->staged()) {
      for (auto& failure : staged.failures)
        if (failure.first < first.first) first = failure;
      staged.failures.clear();
    }
    if (first.second) std::rethrow_exception(first.second);
  }

  static inline sc_core::sc_simcontext* context_ = nullptr;
  static inline WakeCalendar* current_ = nullptr;
  std::vector<Unit*> units_;  // every unit, in construction order
  std::vector<Link> links_;
  std::vector<Lane> lanes_;   // by thread
  unsigned threads_wanted_ = 1;
  Cycle window_ = 1;
  std::uint32_t domains_ = 0;
  bool plan_stale_ = true;  // units, links, threads or window changed since the domains were formed
  EvaluationWorkers* workers_ = nullptr;
  std::size_t expected_due_ = 0;
  std::uint64_t windows_to_next_weighing_ = kWindowsBeforeFirstWeighing;
  bool weighing_ = false;  // evaluations are being timed
  std::uint64_t calendar_cost_ = 0;  // the calendar's own time outside windows while weighing
  std::vector<ThreadBusy> thread_busy_;  // while host profiling: each thread's time in its parts of windows
  std::uint64_t window_ticks_ = 0;
  std::uint64_t windows_ = 0;
  bool woken_from_outside_ = true;
  Cycle running_ = kNever;  // the first cycle of the window running
  Cycle planned_ = kNever;
  sc_core::sc_event tick_;
};

void set_evaluation_threads(unsigned threads) {
  requested_threads = std::max(1u, threads);
  if (WakeCalendar* calendar = WakeCalendar::existing()) calendar->assign_threads(requested_threads);
}

namespace {
// Where host profiling began, to turn ticks into seconds.
struct ProfileClock {
  std::uint64_t ticks = 0;
  std::chrono::steady_clock::time_point time;
};
ProfileClock profile_start;
}  // namespace

void set_host_profiling(bool on) {
  if (WakeCalendar* calendar = WakeCalendar::existing()) calendar->take_profile(0);  // starts afresh
  host_profiling = on;
  profile_start = {host_ticks(), std::chrono::steady_clock::now()};
}

HostProfile take_host_profile() {
  WakeCalendar* calendar = WakeCalendar::existing();
  if (!host_profiling || !calendar) return {};
  const ProfileClock now{host_ticks(), std::chrono::steady_clock::now()};
  const double seconds = std::chrono::duration<double>(now.time - profile_start.time).count();
  const double seconds_per_tick = now.ticks > profile_start.ticks ? seconds / static_cast<double>(now.ticks - profile_start.ticks) : 0;
  profile_start = now;
  return calendar->take_profile(seconds_per_tick);
}

void set_window_cycles(Cycle cycles) {
  requested_window = std::max<Cycle>(1, cycles);
  if (WakeCalendar* calendar = WakeCalendar::existing()) calendar->set_window(requested_window);
}

Unit::Unit(const sc_core::sc_module_name& name) : sc_core::sc_module(name), calendar_(WakeCalendar::current()) {
  calendar_.add(*this);
}

Unit::~Unit() { calendar_.remove(*this); }

void Unit::schedule_wake(Cycle cycle) { calendar_.schedule(*this, cycle); }

void Unit::link_to(const Unit& receiver, Cycle latency) { calendar_.link(*this, receiver, latency); }

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
