// What one unit's evaluation does to another's state, staged until the cycle
// (or, across domains, the window) ends and applied by the thread that owns
// the unit it changes (sim/engine/unit.hpp: defer_to_cycle_end).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "sim/engine/cycle.hpp"

namespace atomsim {

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

}  // namespace atomsim
