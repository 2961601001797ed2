// Per-warp state held by a sub-core: the instruction buffer fed from the
// trace, the scoreboard and what the warp waits on.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <algorithm>
#include <stdexcept>

#include "models/sm/stall.hpp"
#include "sim/engine/unit.hpp"
#include "traces/reader.hpp"

namespace atomsim::model {

// A set of registers among the first 128 ids (dense ids: a kernel's registers
// usually all fit), as two masks, so that all of an instruction's operands are
// checked in one step.
struct RegSet {
  std::uint64_t lo = 0, hi = 0;
  static constexpr std::uint16_t kLimit = 128;
  void add(std::uint16_t reg) {
    if (reg < kLimit) (reg < 64 ? lo : hi) |= std::uint64_t(1) << (reg & 63);
  }
  bool has(std::uint16_t reg) const { return reg < kLimit && (((reg < 64 ? lo : hi) >> (reg & 63)) & 1); }
};

// Register dependences of one warp: writes pending from the LSU (long) or the
// MIO (short), source registers those units have not yet read (a later write
// must wait for them), and results of fixed-latency pipes still in flight.
// Laid out for the host's caches, as every dirty warp is classified each
// cycle: the pending sets of the first 64 registers (dense ids: usually all a
// kernel uses) and the results in flight share one cache line; the pending
// sets of higher registers come after it.
class alignas(64) Scoreboard {
 public:
  enum Kind { LongWrite, LongRead, ShortWrite, ShortRead, kKinds };
  void set(Kind k, std::uint16_t reg) { word(k, reg) |= bit(reg); }
  void clear(Kind k, std::uint16_t reg) { word(k, reg) &= ~bit(reg); }
  bool pending(Kind k, std::uint16_t reg) const { return word(k, reg) & bit(reg); }
  bool pending_any(Kind a, Kind b, std::uint16_t reg) const { return (word(a, reg) | word(b, reg)) & bit(reg); }
  // Whether a register of `regs` has a pending `a` or `b`.
  bool pending_in(Kind a, Kind b, const RegSet& regs) const {
    if ((first_[a] | first_[b]) & regs.lo) return true;
    return regs.hi && ((high_[0][a] | high_[0][b]) & regs.hi);
  }

  // A fixed-latency result for `reg` becomes usable at `ready`.
  void add_result(std::uint16_t reg, Cycle ready, Cycle now) {
    std::uint8_t kept = 0;
    for (std::uint8_t i = 0; i < count_; ++i)
      if (base_ + offset_[i] > now && reg_[i] != reg) {
        reg_[kept] = reg_[i];
        offset_[kept++] = offset_[i];
      }
    count_ = kept;
    if (count_ == 0 || ready - base_ > kMaxOffset) {  // keep offsets small: rebase on `now`
      for (std::uint8_t i = 0; i < count_; ++i) offset_[i] = static_cast<std::uint32_t>(base_ + offset_[i] - now);
      base_ = now;
    }
    if (reg >= kUntracked || count_ == kTracked) {
      // More results in flight than tracked one by one (not with the shipped
      // configurations' latencies), or a register id beyond the compact ones:
      // fold into a bound that holds every register, which can only delay.
      const Cycle folded = reg >= kUntracked ? ready : base_ + offset_[0];
      overflow_ready_ = std::max(overflow_ready_, folded);
      overflowed_ = true;
      if (reg >= kUntracked) return;
      std::copy(reg_.begin() + 1, reg_.end(), reg_.begin());
      std::copy(offset_.begin() + 1, offset_.end(), offset_.begin());
      --count_;
    }
    reg_[count_] = static_cast<std::uint8_t>(reg);
    offset_[count_++] = static_cast<std::uint32_t>(ready - base_);
  }
  // When every register of `regs` may be read or overwritten, as far as fixed-latency pipes go.
  Cycle ready_at(const RegSet& regs) const {
    Cycle ready = overflowed_ ? overflow_ready_ : 0;
    for (std::uint8_t i = 0; i < count_; ++i)
      if (regs.has(reg_[i])) ready = std::max(ready, base_ + offset_[i]);
    return ready;
  }
  // When `reg` may be read or overwritten, as far as fixed-latency pipes go.
  Cycle ready_at(std::uint16_t reg) const {
    Cycle ready = overflowed_ ? overflow_ready_ : 0;
    for (std::uint8_t i = 0; i < count_; ++i)
      if (reg_[i] == reg) ready = std::max(ready, base_ + offset_[i]);
    return ready;
  }

 private:
  static constexpr int kWords = (trace::reg::kSpace + 63) / 64;
  static constexpr std::uint8_t kTracked = 4;
  static constexpr std::uint16_t kUntracked = 255;  // ids from here on are not tracked one by one
  static constexpr Cycle kMaxOffset = 0xffffffffu;
  static std::uint64_t bit(std::uint16_t reg) { return std::uint64_t(1) << (reg & 63); }
  std::uint64_t& word(Kind k, std::uint16_t reg) { return reg < 64 ? first_[k] : high_[(reg >> 6) - 1][k]; }
  std::uint64_t word(Kind k, std::uint16_t reg) const { return const_cast<Scoreboard*>(this)->word(k, reg); }

  // First cache line.
  std::array<std::uint64_t, kKinds> first_{};
  Cycle base_ = 0;  // results in flight are ready at base_ + offset_
  std::array<std::uint32_t, kTracked> offset_{};
  std::array<std::uint8_t, kTracked> reg_{};
  std::uint8_t count_ = 0;
  bool overflowed_ = false;
  // Rarely touched.
  Cycle overflow_ready_ = 0;
  std::array<std::array<std::uint64_t, kKinds>, kWords - 1> high_{};
};

// The six dependency barriers of a warp, as the compiler's control bits use
// them (trace::ControlBits): how many issued instructions still hold each, and
// for the instructions of fixed-latency pipes that set one, when it frees. An
// instruction waits until every barrier of its mask is free. Which unit holds
// a barrier names the stall: LG instructions long_scoreboard, the MIO's short.
class DependencyBarriers {
 public:
  static constexpr int kCount = 6;
  void hold(std::uint8_t b, bool lg) {
    ++held_[b];
    held_mask_ |= bit(b);
    if (lg && ++held_by_lg_[b] == 1) lg_mask_ |= bit(b);
  }
  // Returns whether the barrier became free.
  bool release(std::uint8_t b, bool lg) {
    if (held_[b] == 0 || (lg && held_by_lg_[b] == 0)) throw std::logic_error("a dependency barrier freed more often than held");
    if (lg && --held_by_lg_[b] == 0) lg_mask_ &= ~bit(b);
    if (--held_[b] > 0) return false;
    held_mask_ &= ~bit(b);
    return true;
  }
  // A fixed-latency pipe's instruction holds barrier `b` until cycle `at`.
  void hold_until(std::uint8_t b, Cycle at) { timed_[b] = std::max(timed_[b], at); }
  std::uint8_t held(std::uint8_t mask) const { return held_mask_ & mask; }
  bool any_held() const { return held_mask_ != 0; }
  std::uint8_t held_by_lg(std::uint8_t mask) const { return lg_mask_ & mask; }
  // When the timed holds of the barriers in `mask` have all ended.
  Cycle free_at(std::uint8_t mask) const {
    Cycle at = 0;
    for (int b = 0; b < kCount; ++b)
      if (mask & bit(b)) at = std::max(at, timed_[b]);
    return at;
  }

 private:
  static std::uint8_t bit(std::uint8_t b) { return static_cast<std::uint8_t>(1u << b); }
  std::uint8_t held_mask_ = 0, lg_mask_ = 0;
  std::array<std::uint16_t, kCount> held_{}, held_by_lg_{};
  std::array<Cycle, kCount> timed_{};
};

// Fields in the order an issue touches them: the warp's scheduling state and
// the hot part of its trace stream (whose current record is the warp's next
// instruction) share the first cache line, the scoreboard follows.
struct alignas(64) Warp {
  bool resident : 1 = false;
  bool has_inst : 1 = false;
  bool exited : 1 = false;
  bool at_barrier : 1 = false;
  bool waiting_membar : 1 = false;
  bool resolving_branch : 1 = false;
  std::uint16_t slot = 0;
  std::uint32_t outstanding_memory = 0;
  Cycle next_issue = 0;
  trace::WarpStream stream;  // index() and active_mask() give the next instruction
  std::uint32_t cta_slot = 0;
  Cycle launched_at = 0;
  Scoreboard scoreboard;
  DependencyBarriers barriers;  // used instead of the scoreboard where the program has control bits

  std::uint32_t index() const { return stream.index(); }
  std::uint32_t active_mask() const { return stream.active_mask(); }
};

}  // namespace atomsim::model
