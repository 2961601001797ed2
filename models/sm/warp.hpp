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

// Register dependences of one warp: writes pending from the LSU (long) or the
// MIO (short), source registers those units have not yet read (a later write
// must wait for them), and results of fixed-latency pipes still in flight.
// The four pending sets are interleaved word by word so that the registers a
// kernel actually uses (the low ids) share one cache line: classification of
// every warp each cycle must not wander through memory.
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

class Scoreboard {
 public:
  enum Kind { LongWrite, LongRead, ShortWrite, ShortRead, kKinds };
  void set(Kind k, std::uint16_t reg) { bits_[reg >> 6][k] |= bit(reg); }
  void clear(Kind k, std::uint16_t reg) { bits_[reg >> 6][k] &= ~bit(reg); }
  bool pending(Kind k, std::uint16_t reg) const { return bits_[reg >> 6][k] & bit(reg); }
  bool pending_any(Kind a, Kind b, std::uint16_t reg) const {
    return (bits_[reg >> 6][a] | bits_[reg >> 6][b]) & bit(reg);
  }

  // Whether a register of `regs` has a pending `a` or `b`.
  bool pending_in(Kind a, Kind b, const RegSet& regs) const {
    return (((bits_[0][a] | bits_[0][b]) & regs.lo) | ((bits_[1][a] | bits_[1][b]) & regs.hi)) != 0;
  }
  // A fixed-latency result for `reg` becomes usable at `ready`.
  void add_result(std::uint16_t reg, Cycle ready, Cycle now) {
    std::uint8_t kept = 0;
    for (std::uint8_t i = 0; i < in_flight_count_; ++i)
      if (in_flight_[i].ready > now && in_flight_[i].reg != reg) in_flight_[kept++] = in_flight_[i];
    in_flight_count_ = kept;
    if (in_flight_count_ == in_flight_.size()) {
      // More results in flight than tracked one by one (only with extreme pipe
      // latencies): fold the oldest into a bound that holds every register.
      overflow_ready_ = std::max(overflow_ready_, in_flight_[0].ready);
      std::copy(in_flight_.begin() + 1, in_flight_.end(), in_flight_.begin());
      --in_flight_count_;
    }
    in_flight_[in_flight_count_++] = {reg, ready};
  }
  // When every register of `regs` may be read or overwritten, as far as fixed-latency pipes go.
  Cycle ready_at(const RegSet& regs) const {
    Cycle ready = overflow_ready_;
    for (std::uint8_t i = 0; i < in_flight_count_; ++i)
      if (regs.has(in_flight_[i].reg)) ready = std::max(ready, in_flight_[i].ready);
    return ready;
  }
  // When `reg` may be read or overwritten, as far as fixed-latency pipes go.
  Cycle ready_at(std::uint16_t reg) const {
    Cycle ready = overflow_ready_;
    for (std::uint8_t i = 0; i < in_flight_count_; ++i)
      if (in_flight_[i].reg == reg) ready = std::max(ready, in_flight_[i].ready);
    return ready;
  }

 private:
  static std::uint64_t bit(std::uint16_t reg) { return std::uint64_t(1) << (reg & 63); }
  struct InFlight {
    std::uint16_t reg;
    Cycle ready;
  };
  std::array<std::array<std::uint64_t, kKinds>, (trace::reg::kSpace + 63) / 64> bits_{};
  std::array<InFlight, 8> in_flight_{};
  std::uint8_t in_flight_count_ = 0;
  Cycle overflow_ready_ = 0;
};

struct Warp {
  bool resident = false;
  bool has_inst = false;
  bool exited = false;
  bool at_barrier = false;
  bool waiting_membar = false;
  bool resolving_branch = false;
  std::uint16_t slot = 0;
  std::uint32_t cta_slot = 0;
  std::uint32_t outstanding_memory = 0;
  Cycle next_issue = 0;
  Cycle launched_at = 0;
  std::uint32_t index = 0;        // next instruction (program index); its operands stay in the stream
  std::uint32_t active_mask = 0;
  Scoreboard scoreboard;
  trace::WarpStream stream;
};

}  // namespace atomsim::model
