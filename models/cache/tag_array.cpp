#include "models/cache/tag_array.hpp"

#include <stdexcept>

namespace atomsim::model {

TagArray::TagArray(std::uint64_t capacity_bytes, std::uint32_t line_bytes, std::uint32_t ways, std::uint32_t sector_bytes)
    : line_bytes_(line_bytes), ways_(ways) {
  if (line_bytes == 0 || ways == 0 || capacity_bytes < std::uint64_t(line_bytes) * ways)
    throw std::invalid_argument("cache geometry: capacity must hold at least one set");
  if (sector_bytes == 0) sector_bytes = line_bytes;
  if (line_bytes % sector_bytes != 0 || line_bytes / sector_bytes > kMaxSectorsPerLine)
    throw std::invalid_argument("cache geometry: a line must hold whole sectors, at most 8");
  all_sectors_ = static_cast<SectorMask>((1u << (line_bytes / sector_bytes)) - 1);
  sets_ = static_cast<std::uint32_t>(capacity_bytes / line_bytes / ways);
  const std::uint64_t n = std::uint64_t(sets_) * ways_;
  lines_.assign(n, kEmpty);
  last_use_.assign(n, 0);
  valid_.assign(n, 0);
  dirty_.assign(n, 0);
}

std::size_t TagArray::set_start(std::uint64_t line) const {
  std::uint64_t index = line / line_bytes_;
  index ^= index >> 17;  // spread power-of-two strides over sets
  return static_cast<std::size_t>(index % sets_) * ways_;
}

std::size_t TagArray::find(std::uint64_t line) const {
  const std::size_t start = set_start(line);
  for (std::size_t i = start; i < start + ways_; ++i)
    if (lines_[i] == line) return i;
  return kAbsent;
}

bool TagArray::access(std::uint64_t line) { return access_sectors(line).has_value(); }

std::optional<SectorMask> TagArray::access_sectors(std::uint64_t line) {
  const std::size_t i = find(line);
  if (i == kAbsent) return std::nullopt;
  last_use_[i] = ++clock_;
  return valid_[i];
}

bool TagArray::contains(std::uint64_t line) const { return find(line) != kAbsent; }

bool TagArray::invalidate(std::uint64_t line) {
  const std::size_t i = find(line);
  if (i == kAbsent) return false;
  dirty_lines_ -= dirty_[i] != 0;
  lines_[i] = kEmpty;
  last_use_[i] = 0;
  valid_[i] = 0;
  dirty_[i] = 0;
  return true;
}

std::size_t TagArray::make_room(std::uint64_t line, std::optional<Victim>& evicted) {
  const std::size_t start = set_start(line);
  std::size_t victim = start;
  for (std::size_t i = start; i < start + ways_; ++i) {
    if (lines_[i] == kEmpty) { victim = i; break; }
    if (last_use_[i] < last_use_[victim]) victim = i;
  }
  if (lines_[victim] != kEmpty) evicted = Victim{lines_[victim], dirty_[victim]};
  dirty_lines_ -= dirty_[victim] != 0;
  lines_[victim] = line;
  last_use_[victim] = ++clock_;
  valid_[victim] = 0;
  dirty_[victim] = 0;
  return victim;
}

std::size_t TagArray::way_for(std::uint64_t line, std::optional<Victim>& evicted) {
  const std::size_t i = find(line);
  return i == kAbsent ? make_room(line, evicted) : i;
}

std::optional<TagArray::Victim> TagArray::insert(std::uint64_t line, bool dirty) {
  std::optional<Victim> evicted;
  const std::size_t i = way_for(line, evicted);
  last_use_[i] = ++clock_;
  valid_[i] = all_sectors_;
  if (dirty) {
    dirty_lines_ += !dirty_[i];
    dirty_[i] = all_sectors_;
  }
  return evicted;
}

std::optional<TagArray::Victim> TagArray::allocate(std::uint64_t line) {
  std::optional<Victim> evicted;
  const std::size_t i = way_for(line, evicted);
  last_use_[i] = ++clock_;
  return evicted;
}

SectorMask TagArray::valid_sectors(std::uint64_t line) const {
  const std::size_t i = find(line);
  return i == kAbsent ? 0 : valid_[i];
}

std::optional<TagArray::Victim> TagArray::fill(std::uint64_t line, SectorMask sectors) {
  std::optional<Victim> evicted;
  const std::size_t i = way_for(line, evicted);
  valid_[i] |= sectors;
  return evicted;
}

bool TagArray::write(std::uint64_t line, SectorMask sectors) {
  const std::size_t i = find(line);
  if (i == kAbsent || !sectors) return false;
  valid_[i] |= sectors;
  const bool became_dirty = !dirty_[i];
  dirty_[i] |= sectors;
  dirty_lines_ += became_dirty;
  return became_dirty;
}

std::optional<TagArray::Victim> TagArray::clean_from(std::uint64_t draw) {
  if (dirty_lines_ == 0) return std::nullopt;
  std::size_t i = draw % lines_.size();
  while (!dirty_[i]) i = i + 1 == lines_.size() ? 0 : i + 1;
  const Victim v{lines_[i], dirty_[i]};
  dirty_[i] = 0;
  --dirty_lines_;
  return v;
}

}  // namespace atomsim::model
