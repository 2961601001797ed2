// Items released by cycle, in the order a priority queue keyed on (cycle,
// order of scheduling) gives them, for a unit that schedules most of its
// items in cycle order. Such a unit keeps thousands of items pending (a slice
// whose atomic units run behind its lookups holds every reply until its
// unit's turn), and a binary heap of that size walks its depth in scattered
// memory at every release. Here items that come in cycle order are appended
// to a run kept in that order, and a release takes the earliest run head: an
// in-order stream costs a push and a pop at the ends of a queue. An item that
// fits no run starts one, up to kMaxRuns; beyond, it goes into a heap that
// releases take from too, so that items in any order stay correct.
#pragma once

#include <cstdint>
#include <deque>
#include <queue>
#include <vector>

#include "sim/engine/unit.hpp"

namespace atomsim {

template <class T>
class ReleaseQueue {
 public:
  bool empty() const { return earliest_ == kNone; }
  std::size_t size() const {
    std::size_t items = out_of_order_.size();
    for (const std::deque<Entry>& run : runs_) items += run.size();
    return items;
  }
  // The earliest item and its cycle; the queue must not be empty.
  Cycle next_ready() const { return earliest().ready; }
  const T& next() const { return earliest().item; }

  void push(Cycle ready, const T& item) {
    const Entry entry{ready, sequence_++, item};
    // The run whose last item is latest but not after `ready` keeps the runs
    // few when several in-order streams interleave.
    std::size_t fit = kNone, unused = kNone;
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      const std::deque<Entry>& run = runs_[r];
      if (run.empty()) {
        if (unused == kNone) unused = r;
      } else if (run.back().ready <= ready && (fit == kNone || run.back().ready > runs_[fit].back().ready)) {
        fit = r;
      }
    }
    if (fit == kNone) fit = unused;
    if (fit == kNone && runs_.size() < kMaxRuns) {
      fit = runs_.size();
      runs_.emplace_back();
    }
    if (fit == kNone) {
      out_of_order_.push(entry);
      if (earliest_ == kFromHeap || earliest_ == kNone || Earlier{}(entry, earliest())) earliest_ = kFromHeap;
      return;
    }
    runs_[fit].push_back(entry);
    // Appended behind another item, it is not a head: the earliest is unchanged.
    if (runs_[fit].size() == 1 && (earliest_ == kNone || Earlier{}(entry, earliest()))) earliest_ = fit;
  }

  void pop() {
    if (earliest_ == kFromHeap) out_of_order_.pop();
    else runs_[earliest_].pop_front();
    earliest_ = kNone;
    for (std::size_t r = 0; r < runs_.size(); ++r)
      if (!runs_[r].empty() && (earliest_ == kNone || Earlier{}(runs_[r].front(), earliest()))) earliest_ = r;
    if (!out_of_order_.empty() && (earliest_ == kNone || Earlier{}(out_of_order_.top(), earliest()))) earliest_ = kFromHeap;
  }

 private:
  static constexpr std::size_t kMaxRuns = 16;
  static constexpr std::size_t kNone = ~std::size_t(0);
  static constexpr std::size_t kFromHeap = kNone - 1;
  struct Entry {
    Cycle ready;
    std::uint64_t sequence;
    T item;
  };
  struct Earlier {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.ready != b.ready ? a.ready < b.ready : a.sequence < b.sequence;
    }
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const { return Earlier{}(b, a); }
  };
  const Entry& earliest() const { return earliest_ == kFromHeap ? out_of_order_.top() : runs_[earliest_].front(); }

  std::vector<std::deque<Entry>> runs_;  // each in (ready, sequence) order
  std::priority_queue<Entry, std::vector<Entry>, Later> out_of_order_;
  std::size_t earliest_ = kNone;  // the run whose head is the earliest item, or kFromHeap
  std::uint64_t sequence_ = 0;
};

}  // namespace atomsim
