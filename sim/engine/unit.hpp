// A Unit is one hardware component: a SystemC module with a single evaluation
// method that runs only when something may have changed for it. Units never
// tick idly: they ask to be woken at a future cycle (a timer of their own) and
// are woken by their input ports when a message arrives. Wake-ups go through
// one calendar per simulation (a SystemC process driven by one event), which
// keeps scheduling O(1) however many units are busy in a cycle.
//
// Units due in one cycle see each other only as the cycle began: what an
// evaluation does to another unit (a message sent, buffer space freed, a
// shared slot given back) is staged and applied once every unit due has run.
// The order units run in within a cycle therefore cannot change a result, and
// the calendar may run them on several threads (set_evaluation_threads) with
// results bit-identical to one thread's.
//
// Units joined by links shorter than the calendar's window (set_window_cycles)
// form a domain. The calendar runs the window's cycles domain by domain, each
// domain's on one thread with no wait between cycles; what a unit does to a
// unit of another domain takes effect at the window's end. A message across
// domains takes at least a window to arrive, so only freed buffer space is
// seen later than with a window of one cycle: at the window's end, at most
// window - 1 cycles late. The windows depend on the units alone, never on the
// threads.
#pragma once

#include <systemc>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace atomsim {

using Cycle = std::uint64_t;
inline constexpr Cycle kNever = std::numeric_limits<Cycle>::max();

// One simulated cycle is one nanosecond of SystemC time; clock ratios between
// units are expressed through rates, not through SystemC clocks.
inline constexpr std::uint64_t kPicosecondsPerCycle = 1000;

inline Cycle current_cycle() { return sc_core::sc_time_stamp().value() / kPicosecondsPerCycle; }

namespace detail {
// The cycle units are being evaluated in, set by the wake calendar; cheaper
// than asking SystemC for the time on every port operation. Per thread: within
// a window each thread's domains run their own cycles.
inline thread_local Cycle evaluation_cycle = 0;
}  // namespace detail

class WakeCalendar;
class Unit;

// Something an evaluation changes in another unit's state, applied at the end
// of the cycle (after every unit due has run) by the thread that evaluates
// the unit it changes, so that no two threads ever touch one unit's state.
class CycleEndEffect {
 public:
  // `value` is what defer_to_cycle_end was given; for defer_with_payload, it
  // is where the payload's copy begins in `payloads`.
  virtual void apply_at_cycle_end(std::uint64_t value, const std::uint64_t* payloads) = 0;

 protected:
  ~CycleEndEffect() = default;
};

namespace detail {
// Words appended as copied from a message, never zeroed first (a vector's
// growth would write each word twice).
class PayloadWords {
 public:
  const std::uint64_t* data() const { return words_.get(); }
  std::size_t size() const { return size_; }
  void clear() { size_ = 0; }
  // A word, then `count` bytes from `bytes` in the words after it.
  void append(std::uint64_t word, const void* bytes, std::size_t count) {
    const std::size_t words = 1 + (count + 7) / 8;
    if (size_ + words > capacity_) grow(size_ + words);
    words_[size_] = word;
    std::memcpy(words_.get() + size_ + 1, bytes, count);
    size_ += words;
  }

 private:
  void grow(std::size_t needed) {
    const std::size_t capacity = std::max(needed, 2 * capacity_);
    auto larger = std::make_unique_for_overwrite<std::uint64_t[]>(capacity);
    if (size_) std::memcpy(larger.get(), words_.get(), size_ * sizeof(std::uint64_t));
    words_ = std::move(larger);
    capacity_ = capacity;
  }
  std::unique_ptr<std::uint64_t[]> words_;
  std::size_t size_ = 0, capacity_ = 0;
};

// What this thread's evaluations staged, by the thread that is to apply it;
// null outside an evaluation, where effects apply at once (set-up code and
// tests drive ports directly).
struct StagedEffects {
  // Sixteen bytes: a thread applying a crossbar's share reads hundreds of
  // these a window from other cores' caches.
  struct Staged {
    CycleEndEffect* effect;
    std::uint32_t value;
    std::uint32_t changed;  // the order of the unit whose state it changes (kCalendar: the calendar's), charged with applying it
  };
  static constexpr std::uint32_t kCalendar = UINT32_MAX;
  // Effects in the order they were staged, with copies of what they carry
  // (a message) beside them, so that the applying thread reads one list
  // written in sequence rather than each sender's own buffer.
  struct alignas(64) Effects {  // a line each: different threads read them
    std::vector<Staged> list;
    PayloadWords payloads;
    void stage(CycleEndEffect& effect, std::uint32_t value, std::uint32_t changed) { list.push_back({&effect, value, changed}); }
    void stage_with_payload(CycleEndEffect& effect, std::uint64_t stamp, const void* payload, std::size_t bytes,
                            std::uint32_t changed) {
      list.push_back({&effect, static_cast<std::uint32_t>(payloads.size()), changed});
      payloads.append(stamp, payload, bytes);
    }
  };
  // Across domains, by applying thread, two sets: a window stages into one
  // (from staging_base) while each thread applies what the window before
  // staged for it from the other, before it evaluates.
  std::vector<Effects> effects_for;
  std::size_t staging_base = 0;
  Effects within_domain;  // applied at the cycle's end by this thread
  // Where an effect on `changed` is staged (see defer_to_cycle_end).
  Effects& for_unit(const Unit* changed);
  std::uint32_t evaluating_domain = 0;
  std::vector<std::pair<std::uint32_t, std::exception_ptr>> failures;  // unit order, what it threw
};
inline thread_local StagedEffects* staged_effects = nullptr;
// Whether this thread is running a domain's cycles of a window (its units'
// wake-ups are then the domain's own business).
inline thread_local bool running_domain = false;
}  // namespace detail

// Stops the simulation at the end of the current cycle (SystemC's sc_stop may
// be called only from the calendar's thread).
void request_stop();

// What a unit's input buffer says about the messages it holds, for the
// deadlock report (the ports themselves are typed by message; see port.hpp).
class MessageBuffer {
 public:
  virtual std::size_t waiting_messages() const = 0;
  // The arrival cycle of the oldest message held; kNever when empty.
  virtual Cycle oldest_arrival() const = 0;
  virtual std::uint32_t occupied_flits() const = 0;
  virtual std::uint32_t capacity_flits() const = 0;

 protected:
  ~MessageBuffer() = default;
};

class Unit : public sc_core::sc_module {
 public:
  explicit Unit(const sc_core::sc_module_name& name);
  ~Unit() override;

  // Ensures evaluate() runs at `cycle` (or earlier). Cheap when already due sooner.
  void wake_at(Cycle cycle) {
    if (cycle < pending_wake_) schedule_wake(cycle);
  }
  // The current cycle, for use inside evaluate() (and the port operations it makes).
  static Cycle now() { return detail::evaluation_cycle; }

  // The thread that evaluates this unit and applies what others do to it.
  std::uint32_t thread() const { return thread_; }
  // The domain it runs in (see above).
  std::uint32_t domain() const { return domain_; }
  // Its place in construction order.
  std::uint32_t order() const { return order_; }

  // Input buffers register themselves with the unit that owns them.
  void add_input(const MessageBuffer& buffer) { inputs_.push_back(&buffer); }
  // Ports tell the calendar whom they join and how long their messages take:
  // units joined by a link shorter than the window share a domain.
  void link_to(const Unit& receiver, Cycle latency);
  const std::vector<const MessageBuffer*>& inputs() const { return inputs_; }

 protected:
  virtual void evaluate() = 0;

 private:
  friend class WakeCalendar;
  void schedule_wake(Cycle cycle);
  // Read by every thread that sends this unit something (defer_to_cycle_end),
  // so kept on a host cache line apart from what its own thread writes while
  // it runs: a sender reads a clean shared line instead of taking the line
  // from the unit's core on every message.
  alignas(64) WakeCalendar& calendar_;
  std::uint32_t order_;  // construction order: whose error is reported when several units fail in one cycle
  std::uint32_t thread_ = 0;
  std::uint32_t domain_ = 0;  // dense index among the calendar's domains
  std::vector<const MessageBuffer*> inputs_;
  alignas(64) Cycle pending_wake_ = kNever;
  // Host time its evaluations and the effects applied to it took while the
  // calendar weighed them: bookkeeping of the schedule, not the unit's state.
  mutable std::uint64_t cost_ = 0;
  // The same, and its evaluations, while host profiling is on.
  struct HostUse {
    std::uint64_t evaluations = 0, evaluate_ticks = 0, apply_ticks = 0;
  };
  mutable HostUse host_use_;
};

// Applies `effect` with `value` at the end of the current cycle, or of the
// window when `changed` (the unit whose state it changes; null: the
// calendar's) lies in another domain than the unit evaluated, on the thread of
// `changed`, when called from an evaluation; at once otherwise.
inline void defer_to_cycle_end(CycleEndEffect& effect, std::uint32_t value, const Unit* changed) {
  if (detail::StagedEffects* staged = detail::staged_effects)
    staged->for_unit(changed).stage(effect, value, changed ? changed->order() : detail::StagedEffects::kCalendar);
  else
    effect.apply_at_cycle_end(value, nullptr);
}

// The same for an effect that carries a word (`stamp`) and a copy of
// `payload` (trivially copyable) after it, which it reads from the payloads
// it is given when applied: a message behind its arrival cycle, copied once
// from the sender's buffer.
template <class T>
void defer_with_payload(CycleEndEffect& effect, std::uint64_t stamp, const T& payload, const Unit* changed) {
  static_assert(std::is_trivially_copyable_v<T>, "a payload is copied as bytes");
  if (detail::StagedEffects* staged = detail::staged_effects) {
    staged->for_unit(changed).stage_with_payload(effect, stamp, &payload, sizeof(T),
                                                 changed ? changed->order() : detail::StagedEffects::kCalendar);
  } else {
    std::uint64_t words[1 + (sizeof(T) + 7) / 8];
    words[0] = stamp;
    std::memcpy(words + 1, &payload, sizeof(T));
    effect.apply_at_cycle_end(0, words);
  }
}

inline detail::StagedEffects::Effects& detail::StagedEffects::for_unit(const Unit* changed) {
  return changed && changed->domain() == evaluating_domain ? within_domain
                                                            : effects_for[staging_base + (changed ? changed->thread() : 0)];
}

// When a simulation stops with work left: the units whose input buffers hold
// the oldest waiting messages, oldest first (at most `units`), one line, e.g.
// "oldest waiting messages: l2_slice_3 input 0 since cycle 812 (4 messages,
// 4 of 4 flits); ...". Empty when no buffer holds a message.
std::string describe_waiting_messages(std::size_t units = 4);

// Starts a fresh SystemC context so that several simulations can run one after
// another in the same process (the CLI runs three variants; tests run many).
void reset_simulation_context();

}  // namespace atomsim
