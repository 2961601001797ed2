// Per-warp state held by a sub-core: the instruction buffer fed from the
// trace, the scoreboard and what the warp waits on.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <algorithm>

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
// cycle: the pending sets of the first 128 registers (dense ids: usually all a
// kernel uses) fill one cache line, the results in flight the next, and the
// pending sets of higher registers come last.
class alignas(64) Scoreboard {
 public:
  enum Kind { LongWrite, LongRead, ShortWrite, ShortRead, kKinds };
  void set(Kind k, std::uint16_t reg) { word(k, reg) |= bit(reg); }
  void clear(Kind k, std::uint16_t reg) { word(k, reg) &= ~bit(reg); }
  bool pending(Kind k, std::uint16_t reg) const { return word(k, reg) & bit(reg); }
  bool pending_any(Kind a, Kind b, std::uint16_t reg) const { return (word(a, reg) | word(b, reg)) & bit(reg); }
  // Whether a register of `regs` has a pending `a` or `b`.
  bool pending_in(Kind a, Kind b, const RegSet& regs) const {
    return (((low_[0][a] | low_[0][b]) & regs.lo) | ((low_[1][a] | low_[1][b]) & regs.hi)) != 0;
  }

  // A fixed-latency result for `reg` becomes usable at `ready`.
  void add_result(std::uint16_t reg, Cycle ready, Cycle now) {
    std::uint8_t kept = 0;
    for (std::uint8_t i = 0; i < in_flight_count_; ++i)
      if (in_flight_ready_[i] > now && in_flight_reg_[i] != reg) {
        in_flight_reg_[kept] = in_flight_reg_[i];
        in_flight_ready_[kept++] = in_flight_ready_[i];
      }
    in_flight_count_ = kept;
    if (in_flight_count_ == kTracked) {
      // More results in flight than tracked one by one (only with extreme pipe
      // latencies): fold the oldest into a bound that holds every register.
      overflow_ready_ = std::max(overflow_ready_, in_flight_ready_[0]);
      overflowed_ = true;
      std::copy(in_flight_reg_.begin() + 1, in_flight_reg_.end(), in_flight_reg_.begin());
      std::copy(in_flight_ready_.begin() + 1, in_flight_ready_.end(), in_flight_ready_.begin());
      --in_flight_count_;
    }
    in_flight_reg_[in_flight_count_] = reg;
    in_flight_ready_[in_flight_count_++] = ready;
  }
  // When every register of `regs` may be read or overwritten, as far as fixed-latency pipes go.
  Cycle ready_at(const RegSet& regs) const {
    Cycle ready = overflowed_ ? overflow_ready_ : 0;
    for (std::uint8_t i = 0; i < in_flight_count_; ++i)
      if (regs.has(in_flight_reg_[i])) ready = std::max(ready, in_flight_ready_[i]);
    return ready;
  }
  // When `reg` may be read or overwritten, as far as fixed-latency pipes go.
  Cycle ready_at(std::uint16_t reg) const {
    Cycle ready = overflowed_ ? overflow_ready_ : 0;
    for (std::uint8_t i = 0; i < in_flight_count_; ++i)
      if (in_flight_reg_[i] == reg) ready = std::max(ready, in_flight_ready_[i]);
    return ready;
  }

 private:
  static constexpr int kLowWords = RegSet::kLimit / 64;
  static constexpr int kWords = (trace::reg::kSpace + 63) / 64;
  static constexpr std::uint8_t kTracked = 6;
  static std::uint64_t bit(std::uint16_t reg) { return std::uint64_t(1) << (reg & 63); }
  std::uint64_t& word(Kind k, std::uint16_t reg) {
    return reg < RegSet::kLimit ? low_[reg >> 6][k] : high_[(reg >> 6) - kLowWords][k];
  }
  std::uint64_t word(Kind k, std::uint16_t reg) const { return const_cast<Scoreboard*>(this)->word(k, reg); }

  std::array<std::array<std::uint64_t, kKinds>, kLowWords> low_{};
  std::uint8_t in_flight_count_ = 0;
  bool overflowed_ = false;
  std::array<std::uint16_t, kTracked> in_flight_reg_{};
  std::array<Cycle, kTracked> in_flight_ready_{};
  Cycle overflow_ready_ = 0;
  std::array<std::array<std::uint64_t, kKinds>, kWords - kLowWords> high_{};
};

// Fields in the order an issue touches them: the warp's scheduling state and
// its trace stream share the first cache lines, the scoreboard follows.
struct alignas(64) Warp {
  bool resident = false;
  bool has_inst = false;
  bool exited = false;
  bool at_barrier = false;
  bool waiting_membar = false;
  bool resolving_branch = false;
  std::uint16_t slot = 0;
  std::uint32_t outstanding_memory = 0;
  std::uint32_t index = 0;        // next instruction (program index); its operands stay in the stream
  std::uint32_t active_mask = 0;
  std::uint32_t cta_slot = 0;
  Cycle next_issue = 0;
  trace::WarpStream stream;
  Cycle launched_at = 0;
  Scoreboard scoreboard;
};

}  // namespace atomsim::model
