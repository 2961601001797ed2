#include "models/cache/tag_array.hpp"

#include <stdexcept>

namespace atomsim::model {

TagArray::TagArray(std::uint64_t capacity_bytes, std::uint32_t line_bytes, std::uint32_t ways)
    : line_bytes_(line_bytes), ways_(ways) {
  if (line_bytes == 0 || ways == 0 || capacity_bytes < std::uint64_t(line_bytes) * ways)
    throw std::invalid_argument("cache geometry: capacity must hold at least one set");
  sets_ = static_cast<std::uint32_t>(capacity_bytes / line_bytes / ways);
  ways_storage_.resize(std::uint64_t(sets_) * ways_);
}

std::uint32_t TagArray::set_of(std::uint64_t line) const {
  std::uint64_t index = line / line_bytes_;
  index ^= index >> 17;  // spread power-of-two strides over sets
  return static_cast<std::uint32_t>(index % sets_);
}

TagArray::Way* TagArray::find(std::uint64_t line) {
  Way* set = &ways_storage_[std::uint64_t(set_of(line)) * ways_];
  for (std::uint32_t w = 0; w < ways_; ++w)
    if (set[w].valid && set[w].line == line) return &set[w];
  return nullptr;
}

const TagArray::Way* TagArray::find(std::uint64_t line) const { return const_cast<TagArray*>(this)->find(line); }

bool TagArray::access(std::uint64_t line) {
  Way* way = find(line);
  if (!way) return false;
  way->last_use = ++clock_;
  return true;
}

bool TagArray::contains(std::uint64_t line) const { return find(line) != nullptr; }

std::optional<TagArray::Victim> TagArray::insert(std::uint64_t line, bool dirty) {
  if (Way* way = find(line)) {
    way->dirty |= dirty;
    way->last_use = ++clock_;
    return std::nullopt;
  }
  Way* set = &ways_storage_[std::uint64_t(set_of(line)) * ways_];
  Way* victim = &set[0];
  for (std::uint32_t w = 0; w < ways_; ++w) {
    if (!set[w].valid) { victim = &set[w]; break; }
    if (set[w].last_use < victim->last_use) victim = &set[w];
  }
  std::optional<Victim> evicted;
  if (victim->valid) evicted = Victim{victim->line, victim->dirty};
  *victim = Way{line, ++clock_, true, dirty};
  return evicted;
}

void TagArray::mark_dirty(std::uint64_t line) {
  if (Way* way = find(line)) way->dirty = true;
}

}  // namespace atomsim::model
