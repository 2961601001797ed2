// A pipelined resource that accepts work at a fixed rate (sim/engine/port.hpp's
// units use it for their pipes and links).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "sim/engine/unit.hpp"

namespace atomsim {

// A pipelined resource that accepts work at a fixed rate (e.g. one request per
// L2 clock when the L2 runs slower than the SM). Time is kept in 1/65536 cycle
// so that fractional rates stay exact and deterministic.
class RateServer {
 public:
  static constexpr std::uint64_t kScale = 1u << 16;
  RateServer() = default;
  explicit RateServer(double units_per_cycle) { set_rate(units_per_cycle); }
  void set_rate(double units_per_cycle) {
    if (!(units_per_cycle > 0)) throw std::invalid_argument("rate must be positive");
    cost_per_unit_ = static_cast<std::uint64_t>(kScale / units_per_cycle + 0.5);
    if (cost_per_unit_ == 0) cost_per_unit_ = 1;
  }
  // First cycle during which new work may start (a server faster than one
  // unit per cycle takes several units in one cycle).
  Cycle free_at() const { return next_free_ / kScale; }
  bool free(Cycle now) const { return next_free_ < (now + 1) * kScale; }
  // Occupies the server for `units` of work starting no earlier than `now`;
  // returns the cycle at which that work has passed through.
  Cycle occupy(Cycle now, std::uint64_t units) { return occupy_scaled(now, units * cost_per_unit_); }
  // The same for work that costs `weight` times as much per unit.
  Cycle occupy(Cycle now, std::uint64_t units, double weight) {
    return occupy_scaled(now, static_cast<std::uint64_t>(static_cast<double>(units * cost_per_unit_) * weight + 0.5));
  }
  std::uint64_t busy_cycles() const { return busy_scaled_ / kScale; }
  const std::uint64_t* busy_scaled() const { return &busy_scaled_; }

 private:
  Cycle occupy_scaled(Cycle now, std::uint64_t cost) {
    std::uint64_t start = std::max(next_free_, now * kScale);
    next_free_ = start + cost;
    busy_scaled_ += cost;
    return (next_free_ + kScale - 1) / kScale;
  }
  std::uint64_t cost_per_unit_ = kScale;
  std::uint64_t next_free_ = 0;
  std::uint64_t busy_scaled_ = 0;
};

}  // namespace atomsim
