#include "traces/prefetch.hpp"

#include <chrono>

namespace atomsim::trace {

WarpPrefetcher::WarpPrefetcher(TraceReader& reader, std::size_t kernel, std::vector<std::uint64_t> warps, std::size_t ahead)
    : reader_(reader), kernel_(kernel), warps_(std::move(warps)), reads_itself_(new std::atomic<bool>[warps_.size()]),
      slots_(std::max<std::size_t>(1, ahead)) {
  std::uint64_t largest = 0;
  for (std::uint64_t w : warps_) largest = std::max(largest, w);
  position_of_.assign(warps_.empty() ? 0 : largest + 1, UINT64_MAX);
  for (std::size_t p = 0; p < warps_.size(); ++p) {
    position_of_[warps_[p]] = p;
    reads_itself_[p].store(false, std::memory_order_relaxed);
  }
  // Reads the kernel's warp index before any other thread does.
  if (!warps_.empty()) reader_.warp_records(kernel_, warps_[0]);
  thread_ = std::thread([this] { run(); });
}

WarpPrefetcher::~WarpPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    room_.notify_one();
  }
  thread_.join();
}

// The order of the loads and stores below makes every segment read ahead
// taken: a warp that reads its own segment says so before looking at its slot
// a last time, and the reader ahead looks at that after saying it is reading
// the segment; one of the two sees the other.
void WarpPrefetcher::run() {
  for (std::uint64_t p = 0; p < warps_.size(); ++p) {
    if (reads_itself_[p].load()) continue;
    Slot& slot = slots_[p % slots_.size()];
    // The segment of the position this slot held before is taken when its
    // warp is opened (every warp is, once); until then there is no room.
    auto taken = [&slot] {
      const State state = state_of(slot.tag.load());
      return state != kReady && state != kTaking;
    };
    if (!taken()) {
      std::unique_lock<std::mutex> lock(mutex_);
      waiting_.store(true);
      // A wake-up missed between a look and the wait costs a millisecond at most.
      while (!taken() && !stop_.load()) room_.wait_for(lock, std::chrono::milliseconds(1));
      waiting_.store(false);
      if (stop_.load()) return;
    }
    slot.tag.store(tag(p, kFilling));
    if (reads_itself_[p].load()) {
      slot.tag.store(tag(p, kFree));
      continue;
    }
    try {
      slot.segment = reader_.read_first_segment(kernel_, warps_[p]);
    } catch (...) {
      slot.tag.store(tag(p, kFree));  // the warp reads it itself when opened, and reports what fails then
      continue;
    }
    slot.tag.store(tag(p, kReady));
  }
}

void WarpPrefetcher::discard(std::uint64_t warp) {
  const std::uint64_t p = warp < position_of_.size() ? position_of_[warp] : UINT64_MAX;
  if (p == UINT64_MAX) return;
  reads_itself_[p].store(true);
  Slot& slot = slots_[p % slots_.size()];
  // The reader ahead sees the mark before it begins the segment, or has begun
  // it: then it is waited for and let go.
  for (;;) {
    std::uint64_t t = slot.tag.load();
    if (t == tag(p, kFilling)) {
      std::this_thread::yield();
      continue;
    }
    if (t == tag(p, kReady)) {
      if (!slot.tag.compare_exchange_strong(t, tag(p, kTaking))) continue;
      slot.segment = WarpSegment{};
      slot.tag.store(tag(p, kFree));
      if (waiting_.load()) {
        std::lock_guard<std::mutex> lock(mutex_);
        room_.notify_one();
      }
    }
    return;
  }
}

bool WarpPrefetcher::holds(std::uint64_t warp) const {
  const std::uint64_t p = warp < position_of_.size() ? position_of_[warp] : UINT64_MAX;
  return p != UINT64_MAX && slots_[p % slots_.size()].tag.load() == tag(p, kReady);
}

WarpStream WarpPrefetcher::open_warp(std::uint64_t warp) {
  const std::uint64_t p = warp < position_of_.size() ? position_of_[warp] : UINT64_MAX;
  if (p == UINT64_MAX) return reader_.open_warp(kernel_, warp);
  Slot& slot = slots_[p % slots_.size()];
  for (bool said = false;;) {
    std::uint64_t t = slot.tag.load();
    if (t == tag(p, kReady)) {
      if (!slot.tag.compare_exchange_strong(t, tag(p, kTaking))) continue;
      WarpSegment segment = std::move(slot.segment);
      slot.tag.store(tag(p, kFree));
      if (waiting_.load()) {
        std::lock_guard<std::mutex> lock(mutex_);
        room_.notify_one();
      }
      prefetched_opens_.fetch_add(1, std::memory_order_relaxed);
      return reader_.open_warp(kernel_, warp, &segment);
    }
    if (t == tag(p, kFilling)) {
      std::this_thread::yield();  // being read: a few microseconds
      continue;
    }
    // Not read ahead: read it here, unless the reader ahead has begun it since.
    if (said) return reader_.open_warp(kernel_, warp);
    reads_itself_[p].store(true);
    said = true;
  }
}

}  // namespace atomsim::trace
