// Which of a unit's many inputs hold messages, kept as bits
// (sim/engine/port.hpp).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/engine/unit.hpp"

namespace atomsim {

// Calls `visit(id)` for each bit set in `words` from `from` up to (not
// including) `to`, in index order, passing over bits set in `passed_over`,
// until `visit` returns false (then returns false itself). Each word is read
// once before its bits are visited, so `visit` may clear them.
template <class Visit>
bool for_each_set_bit(const std::uint64_t* words, std::uint32_t from, std::uint32_t to, Visit&& visit,
                      const std::uint64_t* passed_over = nullptr) {
  if (from >= to) return true;
  for (std::uint32_t w = from >> 6, last = (to - 1) >> 6; w <= last; ++w) {
    std::uint64_t bits = words[w];
    if (passed_over) bits &= ~passed_over[w];
    if (w == from >> 6) bits &= ~std::uint64_t(0) << (from & 63);
    if (const std::uint32_t end = to - (w << 6); w == last && end < 64) bits &= (std::uint64_t(1) << end) - 1;
    for (; bits; bits &= bits - 1)
      if (!visit((w << 6) + static_cast<std::uint32_t>(std::countr_zero(bits)))) return false;
  }
  return true;
}

// For units with many inputs: the inputs holding messages, so that an
// evaluation visits those instead of scanning every port. Kept as bits, so
// that the order inputs were marked in (which depends on the order their
// senders' messages were applied) never matters. Each input also keeps the
// first cycle it may move in (its head's arrival, or a busy link's end),
// read from one array: messages reach a crossbar at a window's start for all
// of the window's cycles, and looking at each input's buffer every cycle to
// learn that its head has not arrived cost more than moving the packets.
class ActiveInputs {
 public:
  explicit ActiveInputs(std::size_t inputs = 0)
      : words_((inputs + 63) / 64, 0), due_(inputs, 0), inputs_(static_cast<std::uint32_t>(inputs)) {}
  // Input `id` holds messages, and may move from cycle `due` on.
  void mark(std::uint32_t id, Cycle due = 0) {
    std::uint64_t& word = words_[id >> 6];
    const std::uint64_t bit = std::uint64_t(1) << (id & 63);
    active_ += (word & bit) == 0;
    word |= bit;
    due_[id] = due;
  }
  // Called while visiting input `id`: it may move next in cycle `due`.
  void wait_until(std::uint32_t id, Cycle due) {
    due_[id] = due;
    earliest_ = std::min(earliest_, due);
  }
  // Visits the active inputs that may move by `now` in index order,
  // starting one input further along at each call so that no input is always
  // served first; `still_active(id)` says whether to keep each. Inputs set in
  // `passed_over` (a bit per input, as this set keeps them) stay active
  // without being visited. Returns the first cycle after `now` an input
  // passed over for its cycle, or told to wait, may move (kNever: none).
  template <class Visit>
  Cycle visit(Cycle now, Visit still_active, const std::uint64_t* passed_over = nullptr) {
    earliest_ = kNever;
    if (active_ == 0) return earliest_;
    start_ = start_ + 1 == inputs_ ? 0 : start_ + 1;
    visit_range(now, start_, inputs_, still_active, passed_over);
    visit_range(now, 0, start_, still_active, passed_over);
    return earliest_;
  }
  bool empty() const { return active_ == 0; }
  // Input `id`, told to wait until kNever, may move from cycle `due` on.
  void resume_at(std::uint32_t id, Cycle due) { due_[id] = due; }

 private:
  template <class Visit>
  void visit_range(Cycle now, std::uint32_t from, std::uint32_t to, Visit& still_active, const std::uint64_t* passed_over) {
    for_each_set_bit(words_.data(), from, to, [&](std::uint32_t id) {
      if (due_[id] > now) {
        earliest_ = std::min(earliest_, due_[id]);
        return true;
      }
      if (!still_active(id)) {
        words_[id >> 6] &= ~(std::uint64_t(1) << (id & 63));
        --active_;
      }
      return true;
    }, passed_over);
  }
  std::vector<std::uint64_t> words_;
  std::vector<Cycle> due_;
  Cycle earliest_ = kNever;
  std::uint32_t inputs_ = 0;
  std::uint32_t start_ = 0;
  std::uint32_t active_ = 0;
};

}  // namespace atomsim
