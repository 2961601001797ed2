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
  struct Way {
    std::uint64_t line = 0;
    std::uint64_t last_use = 0;
    bool valid = false;
    bool dirty = false;
  };
  Way* find(std::uint64_t line);
  const Way* find(std::uint64_t line) const;
  std::uint32_t set_of(std::uint64_t line) const;
  std::uint32_t line_bytes_;
  std::uint32_t ways_;
  std::uint32_t sets_;
  std::uint64_t clock_ = 0;
  std::vector<Way> ways_storage_;
};

}  // namespace atomsim::model
