// Set-associative tag store with LRU replacement, shared by the L1 and L2 models.
// Each line keeps which of its sectors hold data and which are dirty (bit i:
// the line's i-th sector), so that a cache that allocates on a partial write
// knows what it must still read and write back.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace atomsim::model {

using SectorMask = std::uint8_t;
inline constexpr std::uint32_t kMaxSectorsPerLine = 8;

class TagArray {
 public:
  // `sector_bytes` divides `line_bytes` into at most kMaxSectorsPerLine sectors (default: one a line).
  TagArray(std::uint64_t capacity_bytes, std::uint32_t line_bytes, std::uint32_t ways, std::uint32_t sector_bytes = 0);
  SectorMask all_sectors() const { return all_sectors_; }
  // Looks the line up and refreshes its LRU position.
  bool access(std::uint64_t line);
  // The same, returning the sectors of the line that hold data (nothing when absent).
  std::optional<SectorMask> access_sectors(std::uint64_t line);
  bool contains(std::uint64_t line) const;
  // Drops the line, clean or not (no write-back); returns whether it was present.
  bool invalidate(std::uint64_t line);
  struct Victim {
    std::uint64_t line;
    SectorMask dirty;  // sectors to write back
  };
  // Installs the line with every sector valid (clean, or all dirty); returns the evicted line, if any.
  std::optional<Victim> insert(std::uint64_t line, bool dirty);
  // Makes room for the line without data (no sector valid) unless it is present.
  std::optional<Victim> allocate(std::uint64_t line);
  // Sectors of the line that hold data (none when absent).
  SectorMask valid_sectors(std::uint64_t line) const;
  // Marks sectors as holding data (read from below), installing the line if absent.
  std::optional<Victim> fill(std::uint64_t line, SectorMask sectors);
  // Marks sectors written: they hold data and are dirty. The line must be
  // present. Returns whether a clean line became dirty.
  bool write(std::uint64_t line, SectorMask sectors);
  // Lines holding dirty sectors.
  std::uint64_t dirty_lines() const { return dirty_lines_; }
  // Makes a dirty line clean, keeping its data: the first dirty one from way
  // `draw` (of all sets' ways, modulo their number) on; what to write back of it.
  std::optional<Victim> clean_from(std::uint64_t draw);
  std::uint32_t sets() const { return sets_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t(0);  // no line address: lines are aligned
  static constexpr std::size_t kAbsent = ~std::size_t(0);
  // The way holding `line`, as an index into the arrays below, or kAbsent.
  std::size_t find(std::uint64_t line) const;
  std::size_t set_start(std::uint64_t line) const;
  std::uint32_t line_bytes_;
  std::uint32_t ways_;
  SectorMask all_sectors_;
  std::uint32_t sets_;
  std::uint64_t clock_ = 0;
  // A set's tags lie side by side (16 ways in two host cache lines), so that a
  // lookup reads only those; recency and dirty bits apart, touched on hits and fills.
  std::vector<std::uint64_t> lines_;
  std::vector<std::uint64_t> last_use_;
  std::vector<SectorMask> valid_;
  std::vector<SectorMask> dirty_;
  std::uint64_t dirty_lines_ = 0;
  // The way the line takes: the first empty one, else the least recently used; evicts it.
  std::size_t make_room(std::uint64_t line, std::optional<Victim>& evicted);
  // The line's way, made room for when absent.
  std::size_t way_for(std::uint64_t line, std::optional<Victim>& evicted);
};

}  // namespace atomsim::model
