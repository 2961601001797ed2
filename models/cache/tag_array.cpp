#include "models/cache/tag_array.hpp"

#include <stdexcept>

namespace atomsim::model {

TagArray::TagArray(std::uint64_t capacity_bytes, std::uint32_t line_bytes, std::uint32_t ways)
    : line_bytes_(line_bytes), ways_(ways) {
  if (line_bytes == 0 || ways == 0 || capacity_bytes < std::uint64_t(line_bytes) * ways)
    throw std::invalid_argument("cache geometry: capacity must hold at least one set");
  sets_ = static_cast<std::uint32_t>(capacity_bytes / line_bytes / ways);
  const std::uint64_t n = std::uint64_t(sets_) * ways_;
  lines_.assign(n, kEmpty);
  last_use_.assign(n, 0);
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

bool TagArray::access(std::uint64_t line) {
  const std::size_t i = find(line);
  if (i == kAbsent) return false;
  last_use_[i] = ++clock_;
  return true;
}

bool TagArray::contains(std::uint64_t line) const { return find(line) != kAbsent; }

std::optional<TagArray::Victim> TagArray::insert(std::uint64_t line, bool dirty) {
  if (const std::size_t i = find(line); i != kAbsent) {
    dirty_[i] |= dirty;
    last_use_[i] = ++clock_;
    return std::nullopt;
  }
  // The first empty way, else the least recently used.
  const std::size_t start = set_start(line);
  std::size_t victim = start;
  for (std::size_t i = start; i < start + ways_; ++i) {
    if (lines_[i] == kEmpty) { victim = i; break; }
    if (last_use_[i] < last_use_[victim]) victim = i;
  }
  std::optional<Victim> evicted;
  if (lines_[victim] != kEmpty) evicted = Victim{lines_[victim], dirty_[victim] != 0};
  lines_[victim] = line;
  last_use_[victim] = ++clock_;
  dirty_[victim] = dirty;
  return evicted;
}

void TagArray::mark_dirty(std::uint64_t line) {
  if (const std::size_t i = find(line); i != kAbsent) dirty_[i] = 1;
}

}  // namespace atomsim::model
