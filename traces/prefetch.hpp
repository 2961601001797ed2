// Reads and decompresses, on a thread of its own, the first segment of each
// warp of a kernel in the order its CTAs will start, a bounded number of warps
// before they are opened. A CTA's start then finds its warps' first records
// ready: the SM that starts it would otherwise read and decompress them itself
// while every simulation thread waits for its window to end. A warp opened
// before its segment is ready reads it itself; a stream's contents never
// depend on which did.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <memory>
#include <thread>
#include <vector>

#include "traces/reader.hpp"

namespace atomsim::trace {

class WarpPrefetcher {
 public:
  // `warps`: the kernel's warps in the order they will be opened (each once).
  // `ahead`: how many warps' segments may wait to be opened at once.
  WarpPrefetcher(TraceReader& reader, std::size_t kernel, std::vector<std::uint64_t> warps, std::size_t ahead);
  ~WarpPrefetcher();
  WarpPrefetcher(const WarpPrefetcher&) = delete;
  WarpPrefetcher& operator=(const WarpPrefetcher&) = delete;
  // As TraceReader::open_warp, from any thread; each warp once.
  WarpStream open_warp(std::uint64_t warp);
  // The warp will never be opened (its CTA is skipped): its segment is not
  // read ahead, or is let go, so that the reader ahead goes on. From the
  // thread that opens warps, while none opens one.
  void discard(std::uint64_t warp);
  // Whether the warp's first segment is read and waits to be opened.
  bool holds(std::uint64_t warp) const;
  // Warps opened with a segment read ahead, so far.
  std::uint64_t prefetched_opens() const { return prefetched_opens_.load(std::memory_order_relaxed); }

 private:
  // A slot holds the segment of one position in the order at a time; its tag
  // says which, (position + 1) << 2, and what state it is in.
  enum State : std::uint64_t { kFree = 0, kFilling = 1, kReady = 2, kTaking = 3 };
  static std::uint64_t tag(std::uint64_t position, State state) { return (position + 1) << 2 | state; }
  static State state_of(std::uint64_t tag) { return static_cast<State>(tag & 3); }
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> tag{0};
    WarpSegment segment;
  };
  void run();

  TraceReader& reader_;
  const std::size_t kernel_;
  const std::vector<std::uint64_t> warps_;
  std::vector<std::uint64_t> position_of_;  // by warp
  std::unique_ptr<std::atomic<bool>[]> reads_itself_;  // by position: its warp was opened before its segment was read ahead
  std::vector<Slot> slots_;
  std::atomic<bool> stop_{false};
  // While the reader ahead waits for a slot's segment to be taken.
  std::mutex mutex_;
  std::condition_variable room_;
  std::atomic<bool> waiting_{false};
  std::atomic<std::uint64_t> prefetched_opens_{0};
  std::thread thread_;
};

}  // namespace atomsim::trace
