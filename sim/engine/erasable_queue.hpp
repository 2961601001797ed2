// A queue of trivially copyable items in contiguous storage from which an
// item anywhere can be taken out, the shorter side moving up by one. A unit
// whose waiting requests leave from the middle of its queue (those ahead of
// them wait for their turn) pays a short memmove per send, where
// std::deque's segmented moves cost more than the send itself (the L1's
// outgoing requests on the sparse write baseline: a fifth of its host time).
#pragma once

#include <algorithm>
#include <cstddef>
#include <type_traits>
#include <vector>

namespace atomsim {

template <class T>
class ErasableQueue {
  static_assert(std::is_trivially_copyable_v<T>, "items are moved as bytes");

 public:
  bool empty() const { return head_ == items_.size(); }
  std::size_t size() const { return items_.size() - head_; }
  T* begin() { return items_.data() + head_; }
  T* end() { return items_.data() + items_.size(); }
  const T* begin() const { return items_.data() + head_; }
  const T* end() const { return items_.data() + items_.size(); }
  T& operator[](std::size_t i) { return items_[head_ + i]; }
  const T& operator[](std::size_t i) const { return items_[head_ + i]; }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return items_.back(); }
  const T& back() const { return items_.back(); }

  void push_back(const T& item) {
    // The room that erasures at the front leave is taken back once it is
    // half the storage: each item moves at most once per its length of pushes.
    if (head_ > 0 && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    items_.push_back(item);
  }
  // Takes out the item at `i` (0 is the front).
  void erase(std::size_t i) {
    T* const first = begin();
    if (i < size() / 2) {
      std::copy_backward(first, first + i, first + i + 1);
      ++head_;
    } else {
      std::copy(first + i + 1, end(), first + i);
      items_.pop_back();
    }
    if (empty()) {
      items_.clear();
      head_ = 0;
    }
  }

 private:
  std::vector<T> items_;
  std::size_t head_ = 0;
};

}  // namespace atomsim
