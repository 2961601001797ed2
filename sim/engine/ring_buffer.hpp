// A bounded FIFO for the ports' buffers (sim/engine/port.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace atomsim {

// Bounded FIFO without per-element allocation. Its storage starts small and
// doubles as it fills, up to the bound: a buffer sized for its worst case
// (hundreds of entries) but holding a few at a time keeps its messages on a
// few host cache lines instead of cycling through all of its slots.
template <class T>
class RingBuffer {
 public:
  explicit RingBuffer(std::size_t capacity = 0)
      : slots_(std::min<std::size_t>(capacity, kInitialSlots)), slot_count_(slots_.size()), capacity_(capacity) {}
  bool empty() const { return size_ == 0; }
  bool full() const { return size_ == capacity_; }
  std::size_t size() const { return size_; }
  T& front() { return slots_[head_]; }
  const T& front() const { return slots_[head_]; }
  T& at(std::size_t i) {
    std::size_t k = head_ + i;  // below twice the storage: no division
    if (k >= slot_count_) k -= slot_count_;
    return slots_[k];
  }
  void push_back(T value) { append() = std::move(value); }
  // Room for one more at the back, to be filled in place.
  T& append() {
    assert(!full());
    if (size_ == slot_count_) grow();
    std::size_t tail = head_ + size_;
    if (tail >= slot_count_) tail -= slot_count_;
    ++size_;
    return slots_[tail];
  }
  // Moves the last element toward the front while `before(previous, last)` holds.
  template <class Before>
  void sift_back(Before before) {
    for (std::size_t i = size_ - 1; i > 0 && before(at(i), at(i - 1)); --i) std::swap(at(i), at(i - 1));
  }
  void pop_front() {
    assert(!empty());
    if (++head_ == slot_count_) head_ = 0;
    --size_;
  }

 private:
  static constexpr std::size_t kInitialSlots = 8;
  void grow() {
    std::vector<T> larger(std::min(capacity_, std::max<std::size_t>(1, 2 * slot_count_)));
    for (std::size_t i = 0; i < size_; ++i) larger[i] = std::move(at(i));
    slots_.swap(larger);
    slot_count_ = slots_.size();
    head_ = 0;
  }
  std::vector<T> slots_;
  std::size_t slot_count_;  // slots_.size(), kept: a vector's size divides by the element's size at each use
  std::size_t capacity_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace atomsim
