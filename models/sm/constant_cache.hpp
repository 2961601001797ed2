// The caches an instruction's constant-bank operands (`c[0x0][0x210]`) are
// read from as it issues: one per sub-core, 64-byte lines, filled over a path
// the SM's sub-cores share. A warp whose next instruction's line is missing
// waits (imc_miss) until the fill arrives; warps of the sub-core missing on the
// same line wait for the same fill. The SM's first read of a bank in a launch
// goes further than the rest: a launch writes its parameters afresh.
// Measured by workloads/latency/constants.cu (docs/validation.md).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "sim/engine/params.hpp"
#include "sim/engine/unit.hpp"
#include "traces/trace.hpp"

namespace atomsim::model {

struct ConstantCacheParams {
  bool enabled = false;
  std::uint32_t line_bytes = 64;
  std::uint32_t lines = 32;
  Cycle fill_latency = 60;
  Cycle first_read_latency = 70;
  Cycle fill_interval = 32;

  void declare(ParamBinder b) {
    b.boolean("enabled", enabled,
              "hold an instruction with a constant-bank operand until its sub-core's constant cache has the line");
    b.integer("line_bytes", line_bytes, 4, 4096, "bytes of a constant cache line");
    b.integer("lines", lines, 1, 4096, "lines each sub-core's constant cache holds (least recently used goes)");
    b.integer("fill_latency", fill_latency, 1, 10000, "cycles from a fill leaving the shared path to the line being usable");
    b.integer("first_read_latency", first_read_latency, 0, 10000,
              "cycles more for the SM's first fill from a bank in a launch");
    b.integer("fill_interval", fill_interval, 1, 10000, "cycles between two fills leaving the path the sub-cores share");
  }
};

// The SM's side, shared by its sub-cores: one fill leaves every
// fill_interval cycles.
class ConstantFillPath {
 public:
  explicit ConstantFillPath(const ConstantCacheParams& p) : p_(p) { begin_kernel(); }
  void begin_kernel() {
    next_free_ = 0;
    bank_ready_.fill(kNever);
  }
  // The cycle a line of `bank` asked for at `now` is usable.
  Cycle fill(std::uint8_t bank, Cycle now) {
    const Cycle start = std::max(now, next_free_);
    next_free_ = start + p_.fill_interval;
    Cycle& first = bank_ready_[bank];
    if (first == kNever) {
      first = start + p_.fill_latency + p_.first_read_latency;
      return first;
    }
    return std::max(start + p_.fill_latency, first);
  }

 private:
  const ConstantCacheParams& p_;
  Cycle next_free_ = 0;
  std::array<Cycle, trace::ConstantOperand::kMaxBank + 1> bank_ready_{};
};

// A line's number: its bank above, its index in the bank below.
inline std::uint32_t constant_line(const trace::ConstantOperand& c, std::uint32_t line_bytes) {
  return (std::uint32_t(c.bank) << 16) | (c.offset / line_bytes);
}

// One sub-core's cache. A handful of lines are live at a time, so a scan finds one.
class ConstantCache {
 public:
  explicit ConstantCache(const ConstantCacheParams& p) : capacity_(p.lines) {}
  void clear() { lines_.clear(); }
  // The cycle `line` is usable from: at or before `now` when held; a miss
  // sends its fill and counts it.
  Cycle ready_at(std::uint32_t line, Cycle now, ConstantFillPath& path) {
    ++uses_;
    for (Line& l : lines_)
      if (l.line == line) {
        l.last_use = uses_;
        return l.ready;
      }
    ++fills_;
    Line fresh{line, path.fill(static_cast<std::uint8_t>(line >> 16), now), uses_};
    if (lines_.size() < capacity_) {
      lines_.push_back(fresh);
    } else {
      *std::min_element(lines_.begin(), lines_.end(), [](const Line& a, const Line& b) { return a.last_use < b.last_use; }) =
          fresh;
    }
    return fresh.ready;
  }
  std::uint64_t* fills_counter() { return &fills_; }

 private:
  struct Line {
    std::uint32_t line;
    Cycle ready;
    std::uint64_t last_use;
  };
  std::uint32_t capacity_;
  std::vector<Line> lines_;
  std::uint64_t uses_ = 0;
  std::uint64_t fills_ = 0;
};

}  // namespace atomsim::model
