// The wake calendar's per-thread bookkeeping (sim/engine/unit.cpp): each
// thread's lane of domains by the cycle they are next due, and the list of
// domains it took due for the window running, which other threads may help run.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <vector>

#include "sim/engine/unit.hpp"

namespace atomsim::detail {

// One thread's wake-ups: its home domains by the cycle they are next due.
// An entry is live while its domain is still filed at that cycle.
struct alignas(64) WakeLane {
  static constexpr Cycle kRingCycles = 4096;  // cycles ahead kept in buckets; a map beyond

  std::vector<std::vector<std::uint32_t>> buckets = std::vector<std::vector<std::uint32_t>>(kRingCycles);
  std::map<Cycle, std::vector<std::uint32_t>> far;
  std::size_t in_buckets = 0;
  Cycle next = kNever;  // no domain is due before it (entries since skipped may make it early)

  void place(std::uint32_t domain, Cycle cycle, Cycle now) {
    if (cycle - now < kRingCycles) {
      buckets[cycle % kRingCycles].push_back(domain);
      ++in_buckets;
    } else {
      far[cycle].push_back(domain);
    }
    next = std::min(next, cycle);
  }
  // Far wakes that have come within the ring join their buckets: the
  // calendar may jump straight to a far wake.
  void bring_near(Cycle now) {
    while (!far.empty() && far.begin()->first - now < kRingCycles) {
      for (std::uint32_t domain : far.begin()->second) {
        buckets[far.begin()->first % kRingCycles].push_back(domain);
        ++in_buckets;
      }
      far.erase(far.begin());
    }
  }
  // Entries due at `next` (an estimate: some may have been passed over since).
  std::size_t due_at_next() const {
    if (next == kNever) return 0;
    if (!far.empty() && far.begin()->first == next) return far.begin()->second.size();
    return buckets[next % kRingCycles].size();
  }
  // Takes out every live entry due before `end`, in cycle order.
  template <class Live, class Take>
  void take_due(Cycle end, Live live, Take take) {
    while (next < end) {
      const Cycle now = next;
      bring_near(now);
      std::vector<std::uint32_t>& bucket = buckets[now % kRingCycles];
      for (std::uint32_t domain : bucket)
        if (live(domain, now)) take(domain);
      in_buckets -= bucket.size();
      bucket.clear();
      next = kNever;
      if (in_buckets > 0) {
        for (Cycle c = now + 1; c < now + kRingCycles; ++c)
          if (!buckets[c % kRingCycles].empty()) { next = c; break; }
      }
      if (!far.empty()) next = std::min(next, far.begin()->first);
    }
  }
};

// The domains a thread takes due at a window's start, which other threads
// may run too once they have run their own: each is claimed through the
// cursor, and counted in `finished` once run, so that the thread applies
// nothing to a domain another still runs. `window` says which window the
// list is for, so that a thread that looks early takes nothing from the
// window before.
struct alignas(64) DueList {
  std::vector<std::uint32_t> domains;
  std::atomic<std::uint32_t> cursor{0};
  std::atomic<std::uint32_t> finished{0};
  std::atomic<std::uint64_t> window{0};
};

}  // namespace atomsim::detail
