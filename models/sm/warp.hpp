// Per-warp state held by a sub-core: the instruction buffer fed from the
// trace, the scoreboard and what the warp waits on.
#pragma once

#include <array>
#include <bitset>
#include <cstdint>
#include <vector>

#include "models/sm/stall.hpp"
#include "sim/engine/unit.hpp"
#include "traces/reader.hpp"

namespace atomsim::model {

// Register dependences of one warp. Writes pending from the LSU (long) or
// the MIO (short), and source registers those units have not yet read (a
// later write must wait for them); plus results of fixed-latency pipes still
// in flight. Classification reads only the bitsets and the short in-flight
// list, which keeps the per-cycle scheduling pass within a few cache lines.
class Scoreboard {
 public:
  enum Kind { LongWrite, LongRead, ShortWrite, ShortRead, kKinds };
  void add(Kind k, std::uint16_t reg) {
    if (count_[k][reg]++ == 0) pending_[k].set(reg);
  }
  void remove(Kind k, std::uint16_t reg) {
    if (--count_[k][reg] == 0) pending_[k].reset(reg);
  }
  bool pending(Kind k, std::uint16_t reg) const { return pending_[k].test(reg); }
  // A fixed-latency result for `reg` becomes usable at `ready`.
  void add_result(std::uint16_t reg, Cycle ready, Cycle now) {
    std::erase_if(in_flight_, [&](const InFlight& f) { return f.ready <= now || f.reg == reg; });
    in_flight_.push_back({reg, ready});
  }
  // When `reg` may be read or overwritten, as far as fixed-latency pipes go.
  Cycle ready_at(std::uint16_t reg) const {
    for (const InFlight& f : in_flight_)
      if (f.reg == reg) return f.ready;
    return 0;
  }

 private:
  struct InFlight {
    std::uint16_t reg;
    Cycle ready;
  };
  std::array<std::bitset<trace::reg::kSpace>, kKinds> pending_{};
  std::vector<InFlight> in_flight_;
  std::array<std::array<std::uint8_t, trace::reg::kSpace>, kKinds> count_{};
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
  trace::WarpInst inst;
  Scoreboard scoreboard;
  trace::WarpStream stream;
};

}  // namespace atomsim::model
