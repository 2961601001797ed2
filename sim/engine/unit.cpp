#include "sim/engine/unit.hpp"

#include "sim/engine/domain_plan.hpp"
#include "sim/engine/evaluation_workers.hpp"
#include "sim/engine/simulation_control.hpp"
#include "sim/engine/window_profile.hpp"
#include "sim/engine/wake_lane.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bitset>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <thread>
#include <vector>


namespace atomsim {

namespace {

std::atomic<bool> stop_requested{false};

using detail::DueList;
using detail::EvaluationWorkers;
using detail::host_ticks;
using detail::ThreadBusy;
using detail::wait_a_little;
using Lane = detail::WakeLane;

constexpr unsigned kMaxEvaluationThreads = 1024;
unsigned requested_threads = 1;
Cycle requested_window = 1;
bool host_profiling = false;
std::atomic<std::uint64_t> dealings{0};

EvaluationWorkers& evaluation_workers() { return detail::evaluation_workers(requested_threads); }

}  // namespace

void request_stop() { stop_requested = true; }

std::uint64_t units_dealt_by_cost() { return dealings.load(); }

// Domains due per window. In a window of W cycles each thread first applies
// what the window before did to the units of its domains from other domains
// (staged into one of two sets while the other is applied), then takes the
// domains of its own due in the window and runs each one's cycles: in each
// cycle the domain's units due, then what they did to each other (a unit that
// asked to run again in the same cycle does so in another round). Then it
// files its domains again by when they are next due. The threads meet once a
// window, and wait for no one inside it but for a thread still applying
// before its domains may be taken up: a thread that applies much (a
// crossbar's, taking in the packets of a hundred senders) does so beside the
// others' evaluations, not after the window's longest. Where no window
// follows at once, what was staged may wake units sooner than the lanes
// say: the calendar's thread applies it before it looks. A domain
// has a home thread (its state stays in that core's caches), which alone
// keeps its wake-ups (a ring of buckets for the next kRingCycles cycles, a map
// beyond; entries whose domain has since been filed earlier are skipped) and
// applies what is done to it, so nothing but the staged effects crosses
// threads. A window starts at the first cycle any domain is due in.
//
// A window takes as long as its busiest thread, and units differ by tens of
// times in what an evaluation costs (a crossbar with a hundred inputs against
// an idle SM's). With several threads the calendar therefore times the
// evaluations of a stretch of windows now and then and deals the domains out
// again, the costliest first, each to the thread with the least so far; and
// in long windows a thread that has run its own domains runs those other
// threads have not begun, as which thread is busiest changes from window to
// window. Results do not depend on which thread runs a domain, so neither
// the host's timing nor this dealing can change them.
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
  void remove(const Unit& unit) {
    units_[unit.order_] = nullptr;
    plan_stale_ = true;  // its domain forgets it
  }
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
    window_profile_.take(profile, seconds_per_tick, [this](std::uint32_t d) {
      return d < domains_.size() && domains_[d].count > 0 ? domain_units_[domains_[d].first]->name() : nullptr;
    });
    return profile;
  }

  void schedule(Unit& unit, Cycle cycle) {
    // Inside a window each thread knows its own cycle without asking SystemC.
    const Cycle now = running_ != kNever ? detail::evaluation_cycle : current_cycle();
    if (cycle < now) cycle = now;
    if (cycle >= unit.pending_wake_) return;
    unit.pending_wake_ = cycle;
    if (plan_stale_) {  // filed when the plan is made
      note_woken_from_outside(cycle, now);
      return;
    }
    Domain& domain = domains_[unit.domain_];
    domain.next = std::min(domain.next, cycle);
    // While a domain's cycles run only its own units ask (for themselves, or
    // taking what another unit of the domain did to them); its loop sees
    // them, and its home thread files the domain again after the window.
    if (detail::running_domain) return;
    // Otherwise it is the domain's home thread (applying what another domain
    // did to it) or the calendar between windows: the wake-up goes into the
    // home thread's lane, and the calendar learns of it at the window's end.
    file(unit.domain_, now);
    if (running_ != kNever) return;
    note_woken_from_outside(cycle, now);
  }

 private:
  void note_woken_from_outside(Cycle cycle, Cycle now) {
    woken_from_outside_ = true;
    if (cycle >= planned_) return;
    planned_ = cycle;
    tick_.notify(sc_core::sc_time::from_value((cycle - now) * kPicosecondsPerCycle));
  }

  // Windows with fewer units due at their start than this run on the
  // calendar's thread alone: handing a few units to other threads costs more
  // than it saves.
  static constexpr std::size_t kSmallestSharedWindow = 6;
  // Windows of fewer cycles than this keep each domain on its own thread.
  static constexpr Cycle kShortestWindowShared = 8;
  static constexpr std::uint64_t kFailed = std::uint64_t(1) << 63;  // in a lane's report: an evaluation threw
  static constexpr std::uint64_t kStaged = std::uint64_t(1) << 62;  // and: its thread staged effects across domains
  // Windows run between weighings, and how many windows a weighing times:
  // about 1.5% of windows pay for the clock reads.
  static constexpr std::uint64_t kWindowsBeforeFirstWeighing = 256;
  static constexpr std::uint64_t kWindowsBetweenWeighings = 16384;
  static constexpr std::uint64_t kWindowsWeighed = 256;

  using Link = detail::UnitLink;
  // Units joined by short links, whose cycles of a window run together on
  // one thread. Written by whichever thread runs it, a line of its own.
  struct alignas(64) Domain {
    std::uint32_t first = 0, count = 0;  // its units in domain_units_, in construction order
    Cycle next = kNever;       // no unit of it is due before it
    Cycle filed = kNever;      // the cycle its live entry in its home lane is filed at
    std::uint32_t home = 0;    // the thread that applies what is done to its units
    std::uint64_t last_run = 0;  // host ticks its last run in a shared window took
  };

  // Files a domain in its home lane at its next cycle, unless it is filed
  // there already as early.
  void file(std::uint32_t d, Cycle now) {
    Domain& domain = domains_[d];
    if (domain.next >= domain.filed) return;
    lanes_[domain.home].place(d, domain.next, now);
    domain.filed = domain.next;
  }

  void apply(detail::StagedEffects::Effects& effects, bool weighing) const {
    const std::uint64_t* payloads = effects.payloads.data();
    if (weighing || host_profiling) {
      // What others do to a unit costs its thread too (a crossbar takes in
      // the packets of a hundred senders): it is charged to the unit.
      for (auto& e : effects.list) {
        const std::uint64_t begun = host_ticks();
        e.effect->apply_at_cycle_end(e.value, payloads);
        if (e.changed == detail::StagedEffects::kCalendar) continue;
        const Unit* changed = units_[e.changed];
        if (!changed) continue;
        const std::uint64_t spent = host_ticks() - begun;
        if (weighing) changed->cost_ += spent;
        if (host_profiling) changed->host_use_.apply_ticks += spent;
      }
    } else {
      for (auto& e : effects.list) e.effect->apply_at_cycle_end(e.value, payloads);
    }
    effects.list.clear();
    effects.payloads.clear();
  }

  // One domain's cycles of the window, on the calling thread: each cycle the
  // units due, then what they did to each other (a unit that asked to run
  // again in the same cycle does so in another round).
  void run_domain(std::uint32_t d, Cycle end, detail::StagedEffects& staged, bool weighing, Cycle& last) {
    Domain& domain = domains_[d];
    Unit* const* const units = domain_units_.data() + domain.first;
    Unit* const* const units_end = units + domain.count;
    staged.evaluating_domain = d;
    detail::running_domain = true;
    while (domain.next < end && staged.failures.empty()) {
      const Cycle now = domain.next;
      detail::evaluation_cycle = now;
      last = std::max(last, now);
      Cycle next;
      do {
        detail::staged_effects = &staged;
        for (Unit* const* u = units; u != units_end; ++u)
          if ((*u)->pending_wake_ == now) evaluate(**u, staged, weighing);
        detail::staged_effects = nullptr;
        if (!staged.within_domain.list.empty()) apply(staged.within_domain, weighing);
        next = earliest_wake(domain);
      } while (next == now);
      domain.next = next;
    }
    detail::running_domain = false;
  }

  // The first cycle a unit of the domain asked to run in.
  Cycle earliest_wake(const Domain& domain) const {
    Cycle next = kNever;
    for (std::uint32_t u = domain.first; u < domain.first + domain.count; ++u)
      next = std::min(next, domain_units_[u]->pending_wake_);
    return next;
  }

  // Runs the domains of `list` no thread has claimed yet, each claimed
  // through its cursor; while host profiling, each run's time goes to `busy`.
  void run_unclaimed(DueList& list, Cycle end, detail::StagedEffects& staged, bool weighing, Cycle& last, ThreadBusy* busy) {
    const auto size = static_cast<std::uint32_t>(list.domains.size());
    for (std::uint32_t i; staged.failures.empty() && (i = list.cursor.fetch_add(1, std::memory_order_relaxed)) < size;) {
      const std::uint32_t d = list.domains[i];
      const bool timed = busy || runs_longest_first();
      const std::uint64_t begun = timed ? host_ticks() : 0;
      run_domain(d, end, staged, weighing, last);
      if (timed) {
        const std::uint64_t spent = host_ticks() - begun;
        domains_[d].last_run = spent;
        if (busy) busy->note_run(spent, d);
      }
      list.finished.fetch_add(1, std::memory_order_release);
    }
  }

  // Whether each thread runs its due domains longest first (evaluate_part),
  // for which each domain run is timed: only in windows the threads share.
  bool runs_longest_first() const { return together_ && window_ >= kShortestWindowShared; }

  static void evaluate(Unit& unit, detail::StagedEffects& staged, bool weighing) {
    unit.pending_wake_ = kNever;
    const bool timing = weighing || host_profiling;
    const std::uint64_t begun = timing ? host_ticks() : 0;
    try {
      unit.evaluate();
    } catch (...) {
      staged.failures.emplace_back(unit.order_, std::current_exception());
    }
    if (!timing) return;
    const std::uint64_t spent = host_ticks() - begun;
    if (weighing) unit.cost_ += spent;
    if (host_profiling) {
      ++unit.host_use_.evaluations;
      unit.host_use_.evaluate_ticks += spent;
    }
  }

  // Thread `thread`'s part of a window: the domains due in it from its own
  // lane, then those other threads have not begun yet...
  static void evaluate_part(void* context, unsigned thread) {
    auto& calendar = *static_cast<WakeCalendar*>(context);
    const Cycle end = calendar.running_ + calendar.window_;
    const std::uint64_t window = calendar.window_serial_;
    detail::StagedEffects& staged = calendar.workers_->staged()[thread];
    staged.staging_base = calendar.staging_base(window);
    const bool weighing = calendar.weighing_;
    const std::uint64_t part_begun = host_profiling ? host_ticks() : 0;
    ThreadBusy* const busy = host_profiling ? &calendar.window_profile_.threads()[thread] : nullptr;
    if (busy) busy->longest_run = 0;
    Cycle last = 0;
    DueList& own = calendar.due_[thread];
    own.domains.clear();
    calendar.lanes_[thread].take_due(
        end, [&calendar](std::uint32_t d, Cycle at) { return calendar.domains_[d].filed == at; },
        [&calendar, &own](std::uint32_t d) {
          calendar.domains_[d].filed = kNever;
          own.domains.push_back(d);
        });
    // Longest first, by what each took in its last run: a domain busy in
    // one window is mostly busy in the next, and one begun last would end
    // the window late while the threads that took up the others idle.
    if (calendar.runs_longest_first())
      std::sort(own.domains.begin(), own.domains.end(), [&calendar](std::uint32_t a, std::uint32_t b) {
        return calendar.domains_[a].last_run > calendar.domains_[b].last_run;
      });
    own.cursor.store(0, std::memory_order_relaxed);
    own.finished.store(0, std::memory_order_relaxed);
    own.window.store(window, std::memory_order_release);
    calendar.run_unclaimed(own, end, staged, weighing, last, busy);
    // A window lasts as long as its busiest thread: one that has run its own
    // domains runs those others have not begun. Which thread runs a domain
    // never changes what it does. In short windows a domain's state moving
    // to another core costs more than the wait it saves (the sparse write
    // baseline on 16 threads at lookahead 1: 3.1-3.5 s without, 4.9-5.0 s with).
    // A thread still applying what the window before staged has not listed
    // its domains yet: where the threads run together, it is come back to
    // once the others' lists are done (often the thread applying longest
    // holds a crossbar, whose list that thread itself runs).
    const auto threads = calendar.window_ >= kShortestWindowShared ? static_cast<unsigned>(calendar.due_.size()) : 1u;
    std::bitset<kMaxEvaluationThreads> visited;
    for (unsigned left = threads - 1, spins = 0; left > 0 && staged.failures.empty();) {
      bool listed_any = false;
      for (unsigned k = 1; k < threads && staged.failures.empty(); ++k) {
        if (visited[k]) continue;
        DueList& other = calendar.due_[(thread + k) % threads];
        const bool listed = other.window.load(std::memory_order_acquire) == window;
        if (!listed && calendar.together_) continue;
        visited[k] = true;
        --left;
        listed_any = true;
        if (listed) calendar.run_unclaimed(other, end, staged, weighing, last, busy);
      }
      if (!listed_any) wait_a_little(spins++);
    }
    detail::evaluation_cycle = end - 1;
    calendar.workers_->report(thread)[2] = last;
    if (host_profiling) calendar.window_profile_.threads()[thread].note_evaluate(host_ticks() - part_begun);
  }
  // ...after what the window before staged for its units, applied first
  // (every thread finished that window: nothing else touches its units'
  // state now, and a domain is taken up by another thread only once its
  // home thread has listed it, after this)...
  static void apply_part(void* context, unsigned thread) {
    auto& calendar = *static_cast<WakeCalendar*>(context);
    const std::uint64_t begun = host_profiling ? host_ticks() : 0;
    if (calendar.pending_) calendar.apply_staged_for(thread);
    if (host_profiling) calendar.window_profile_.threads()[thread].note_apply(host_ticks() - begun);
  }
  void apply_staged_for(unsigned thread) {
    detail::evaluation_cycle = pending_end_ - 1;
    for (detail::StagedEffects& from : workers_->staged()) {
      auto& effects = from.effects_for[pending_base_ + thread];
      if (!effects.list.empty()) apply(effects, weighing_);  // read, not written, when empty: the line stays shared
    }
  }
  // ...and, once its domains that others took up have run, those that ran
  // filed again. A thread waits for no other's evaluations.
  static void file_part(void* context, unsigned thread) {
    auto& calendar = *static_cast<WakeCalendar*>(context);
    const Cycle end = calendar.running_ + calendar.window_;
    detail::evaluation_cycle = end - 1;
    DueList& own = calendar.due_[thread];
    const auto due = static_cast<std::uint32_t>(own.domains.size());
    const std::uint32_t claimed = std::min(own.cursor.exchange(due, std::memory_order_relaxed), due);
    for (unsigned spins = 0; own.finished.load(std::memory_order_acquire) != claimed; ++spins) wait_a_little(spins);
    const std::uint64_t begun = host_profiling ? host_ticks() : 0;
    for (std::uint32_t d : own.domains) calendar.file(d, end - 1);
    detail::StagedEffects& staged = calendar.workers_->staged()[thread];
    bool staged_any = false;
    for (std::size_t t = 0; t < calendar.due_.size() && !staged_any; ++t)
      staged_any = !staged.effects_for[staged.staging_base + t].list.empty();
    Lane& lane = calendar.lanes_[thread];
    std::uint64_t* report = calendar.workers_->report(thread);
    report[0] = lane.next;
    report[1] = lane.due_at_next() | (staged.failures.empty() ? 0 : kFailed) | (staged_any ? kStaged : 0);
    if (host_profiling) calendar.window_profile_.threads()[thread].note_filing(host_ticks() - begun);
  }
  static void window_part(void* context, unsigned thread) {
    apply_part(context, thread);
    evaluate_part(context, thread);
    file_part(context, thread);
  }
  std::size_t staging_base(std::uint64_t window) const { return (window & 1) * due_.size(); }

  // What the last window staged, applied on the calendar's thread, where no
  // window follows at once or the threads are dealt out again.
  void apply_pending() {
    if (!pending_) return;
    const Cycle running = std::exchange(running_, pending_end_ - 1);  // wake-ups made as inside a window
    for (unsigned t = 0; t < workers_->threads(); ++t) apply_staged_for(t);
    running_ = running;
    pending_ = false;
  }

  void run() {
    const Cycle now = current_cycle();
    detail::evaluation_cycle = now;
    planned_ = kNever;
    if (plan_stale_) {
      apply_pending();
      plan();
    }
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
        if (lane.next == now) due += lane.due_at_next();
      }
      woken_from_outside_ = false;
    }
    const std::uint64_t window_begun = weighing_ || host_profiling ? host_ticks() : 0;
    if (host_profiling) window_profile_.prepare(threads);
    ++window_serial_;
    together_ = threads > 1 && due * window_ >= kSmallestSharedWindow;
    if (together_) {
      workers_->run_on_all(&WakeCalendar::window_part, this);
    } else {
      for (unsigned t = 0; t < threads; ++t) apply_part(this, t);
      for (unsigned t = 0; t < threads; ++t) evaluate_part(this, t);
      for (unsigned t = 0; t < threads; ++t) file_part(this, t);
    }
    if (host_profiling) window_profile_.note_window(window_begun, together_, domains_.size());
    if (weighing_) calendar_cost_ -= host_ticks() - window_begun;
    // The first cycle any lane has a unit due in, and how many units it has
    // due then (entries since skipped count too: an estimate).
    Cycle next = kNever;
    Cycle last = now;
    due = 0;
    bool failed = false;
    pending_ = false;
    for (unsigned t = 0; t < threads; ++t) {
      const std::uint64_t* report = workers_->report(t);
      failed |= (report[1] & kFailed) != 0;
      pending_ |= (report[1] & kStaged) != 0;
      last = std::max(last, report[2]);
      const std::size_t lane_due = report[1] & ~(kFailed | kStaged);
      if (report[0] < next) {
        next = report[0];
        due = lane_due;
      } else if (report[0] == next) {
        due += lane_due;
      }
    }
    pending_base_ = staging_base(window_serial_);
    pending_end_ = now + window_;
    // What was staged waits for the next window's threads only where that
    // window starts at once; otherwise it may wake units sooner than the
    // lanes say, and is applied now.
    if (pending_ && next != pending_end_ && !failed) {
      apply_pending();
      next = kNever;
      due = 0;
      for (Lane& lane : lanes_) {
        if (lane.next < next) {
          next = lane.next;
          due = lane.due_at_next();
        } else if (lane.next == next && next != kNever) {
          due += lane.due_at_next();
        }
      }
    }
    running_ = kNever;
    detail::evaluation_cycle = last;
    if (failed) rethrow_first_failure();
    if (stop_requested.exchange(false)) {
      apply_pending();
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
    std::vector<bool> present(units_.size());
    for (std::uint32_t i = 0; i < units_.size(); ++i) present[i] = units_[i] != nullptr;
    const detail::DomainPlan planned = detail::plan_domains(present, links_, window_, threads_wanted_);
    domains_.assign(planned.domains.size(), Domain{});
    for (std::uint32_t d = 0; d < domains_.size(); ++d) {
      domains_[d].first = planned.domains[d].first;
      domains_[d].count = planned.domains[d].count;
      domains_[d].home = planned.domains[d].home;
    }
    for (Unit* unit : units_) {
      if (!unit) continue;
      unit->domain_ = planned.domain_of[unit->order_];
      unit->thread_ = domains_[unit->domain_].home;
    }
    domain_units_.assign(planned.members.size(), nullptr);
    for (std::size_t k = 0; k < planned.members.size(); ++k) domain_units_[k] = units_[planned.members[k]];
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
    apply_pending();  // to the units' present home threads
    deal_by_cost(static_cast<unsigned>(lanes_.size()));
  }

  // The domains dealt out again by what their units cost while weighed.
  void deal_by_cost(unsigned threads) {
    const auto domains = static_cast<std::uint32_t>(domains_.size());
    std::vector<std::uint64_t> cost(domains, 0);
    std::vector<std::uint32_t> thread_of(domains, 0);
    for (Unit* unit : units_) {
      if (!unit) continue;
      cost[unit->domain_] += std::exchange(unit->cost_, 0);
      thread_of[unit->domain_] = unit->thread_;
    }
    thread_of = detail::deal_by_cost(cost, std::move(thread_of), threads, std::exchange(calendar_cost_, 0));
    for (std::uint32_t d = 0; d < domains; ++d) domains_[d].home = thread_of[d];
    for (Unit* unit : units_)
      if (unit) unit->thread_ = thread_of[unit->domain_];
    rebuild_lanes(threads);
    ++dealings;
  }

  // Each thread's lane filed anew from the domains' home threads and their
  // units' pending wake-ups.
  void rebuild_lanes(unsigned threads) {
    lanes_.clear();
    lanes_.resize(threads);
    due_ = std::vector<DueList>(threads);
    woken_from_outside_ = true;
    for (std::uint32_t d = 0; d < domains_.size(); ++d) {
      Domain& domain = domains_[d];
      domain.next = earliest_wake(domain);
      domain.filed = kNever;
      file(d, current_cycle());
    }
  }

  // What a window's evaluations threw: the first unit's, in construction
  // order, whichever thread ran it.
  void rethrow_first_failure() {
    std::pair<std::uint32_t, std::exception_ptr> first{UINT32_MAX, nullptr};
    for (detail::StagedEffects& staged : workers_->staged()) {
      for (auto& failure : staged.failures)
        if (failure.first < first.first) first = failure;
      staged.failures.clear();
      // What the failed window staged goes with it: the threads outlive this
      // simulation, and a later one must not apply it to units long gone.
      for (auto& effects : staged.effects_for) effects.list.clear(), effects.payloads.clear();
    }
    pending_ = false;
    if (first.second) std::rethrow_exception(first.second);
  }

  static inline sc_core::sc_simcontext* context_ = nullptr;
  static inline WakeCalendar* current_ = nullptr;
  std::vector<Unit*> units_;  // every unit, in construction order
  std::vector<Link> links_;
  std::vector<Lane> lanes_;   // by thread
  unsigned threads_wanted_ = 1;
  Cycle window_ = 1;
  std::vector<Domain> domains_;
  std::vector<Unit*> domain_units_;  // by domain (Domain::first, count)
  std::vector<DueList> due_;  // by thread: the domains it took due for the window running
  // Whether the last window staged effects across domains, which the threads
  // apply at the next window's start (or the calendar's thread before
  // anything else happens), where in effects_for, and that window's end.
  bool pending_ = false;
  bool together_ = false;  // whether the window running runs on every thread at once
  std::size_t pending_base_ = 0;
  Cycle pending_end_ = 0;
  std::uint64_t window_serial_ = 0;
  bool plan_stale_ = true;  // units, links, threads or window changed since the domains were formed
  EvaluationWorkers* workers_ = nullptr;
  std::size_t expected_due_ = 0;
  std::uint64_t windows_to_next_weighing_ = kWindowsBeforeFirstWeighing;
  bool weighing_ = false;  // evaluations are being timed
  std::uint64_t calendar_cost_ = 0;  // the calendar's own time outside windows while weighing
  detail::WindowProfile window_profile_;  // while host profiling
  bool woken_from_outside_ = true;
  Cycle running_ = kNever;  // the first cycle of the window running
  Cycle planned_ = kNever;
  sc_core::sc_event tick_;
};

void set_evaluation_threads(unsigned threads) {
  requested_threads = std::clamp(threads, 1u, kMaxEvaluationThreads);
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

}  // namespace atomsim
