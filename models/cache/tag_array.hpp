// Set-associative tag store with LRU replacement, shared by the L1 and L2 models.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace atomsim::model {

class TagArray {
 public:
  TagArray(std::uint64_t capacity_bytes, std::uint32_t line_bytes, std::uint32_t ways);
  // Looks the line up and refreshes its LRU position.
  bool access(std::uint64_t line);
  bool contains(std::uint64_t line) const;
  struct Victim {
    std::uint64_t line;
    bool dirty;
  };
  // Installs the line; returns the evicted valid line, if any.
  std::optional<Victim> insert(std::uint64_t line, bool dirty);
  void mark_dirty(std::uint64_t line);
  std::uint32_t sets() const { return sets_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t(0);  // no line address: lines are aligned
  static constexpr std::size_t kAbsent = ~std::size_t(0);
  // The way holding `line`, as an index into the arrays below, or kAbsent.
  std::size_t find(std::uint64_t line) const;
  std::size_t set_start(std::uint64_t line) const;
  std::uint32_t line_bytes_;
  std::uint32_t ways_;
  std::uint32_t sets_;
  std::uint64_t clock_ = 0;
  // A set's tags lie side by side (16 ways in two host cache lines), so that a
  // lookup reads only those; recency and dirty bits apart, touched on hits and fills.
  std::vector<std::uint64_t> lines_;
  std::vector<std::uint64_t> last_use_;
  std::vector<std::uint8_t> dirty_;
};

}  // namespace atomsim::model
