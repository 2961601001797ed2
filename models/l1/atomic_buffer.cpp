#include "models/l1/atomic_buffer.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

namespace atomsim::model {

using trace::AtomicOp;
using trace::DataType;

AtomicBuffer::AtomicBuffer(std::uint32_t entries) : entries_(entries) {
  if (entries == 0) throw std::invalid_argument("atomic buffer needs at least one entry");
}

bool AtomicBuffer::combinable(AtomicOp kind, DataType type) {
  switch (kind) {
    case AtomicOp::Add:
      return type == DataType::F32 || type == DataType::F64 || type == DataType::U32 || type == DataType::S32 ||
             type == DataType::U64 || type == DataType::S64;
    case AtomicOp::Min: case AtomicOp::Max:
      return type == DataType::U32 || type == DataType::S32 || type == DataType::U64 || type == DataType::S64;
    case AtomicOp::And: case AtomicOp::Or: case AtomicOp::Xor:
      return true;
    default:
      return false;
  }
}

std::uint64_t AtomicBuffer::combine(std::uint64_t a, std::uint64_t b, AtomicOp kind, DataType type) {
  const bool wide = type == DataType::U64 || type == DataType::S64 || type == DataType::F64;
  const std::uint64_t mask = wide ? ~0ull : 0xFFFFFFFFull;
  a &= mask;
  b &= mask;
  switch (kind) {
    case AtomicOp::Add:
      if (type == DataType::F32) {
        float x, y;
        std::uint32_t xa = static_cast<std::uint32_t>(a), yb = static_cast<std::uint32_t>(b);
        std::memcpy(&x, &xa, 4);
        std::memcpy(&y, &yb, 4);
        float s = x + y;
        std::uint32_t bits;
        std::memcpy(&bits, &s, 4);
        return bits;
      }
      if (type == DataType::F64) return std::bit_cast<std::uint64_t>(std::bit_cast<double>(a) + std::bit_cast<double>(b));
      return (a + b) & mask;
    case AtomicOp::Min:
      if (type == DataType::S32) return std::int32_t(a) < std::int32_t(b) ? a : b;
      if (type == DataType::S64) return std::int64_t(a) < std::int64_t(b) ? a : b;
      return std::min(a, b);
    case AtomicOp::Max:
      if (type == DataType::S32) return std::int32_t(a) > std::int32_t(b) ? a : b;
      if (type == DataType::S64) return std::int64_t(a) > std::int64_t(b) ? a : b;
      return std::max(a, b);
    case AtomicOp::And: return a & b;
    case AtomicOp::Or: return a | b;
    case AtomicOp::Xor: return a ^ b;
    default: throw std::logic_error("combining a non-commutative atomic");
  }
}

std::optional<BufferedUpdate> AtomicBuffer::absorb(const BufferedUpdate& update) {
  ++clock_;
  auto it = index_.find(update.op.address);
  if (it != index_.end()) {
    Entry& e = entries_[it->second];
    if (e.update.kind == update.kind && e.update.type == update.type) {
      e.update.op.value = combine(e.update.op.value, update.op.value, update.kind, update.type);
      e.update.op.updates += update.op.updates;
      e.last_use = clock_;
      ++combined_;
      return std::nullopt;
    }
    // A different operation on the same word: the buffered one must go first.
    BufferedUpdate out = e.update;
    e = Entry{update, clock_, clock_, true};
    return out;
  }
  std::uint32_t slot = 0;
  bool found_free = false;
  for (std::uint32_t i = 0; i < entries_.size(); ++i) {
    if (!entries_[i].valid) { slot = i; found_free = true; break; }
    if (entries_[i].last_use < entries_[slot].last_use) slot = i;
  }
  std::optional<BufferedUpdate> evicted;
  if (!found_free) {
    evicted = entries_[slot].update;
    index_.erase(entries_[slot].update.op.address);
  }
  entries_[slot] = Entry{update, clock_, clock_, true};
  index_[update.op.address] = slot;
  return evicted;
}

std::optional<BufferedUpdate> AtomicBuffer::take(std::uint64_t address) {
  auto it = index_.find(address);
  if (it == index_.end()) return std::nullopt;
  Entry& e = entries_[it->second];
  BufferedUpdate out = e.update;
  e.valid = false;
  index_.erase(it);
  return out;
}

std::vector<BufferedUpdate> AtomicBuffer::drain() {
  std::vector<Entry*> live;
  for (auto& e : entries_)
    if (e.valid) live.push_back(&e);
  std::sort(live.begin(), live.end(), [](const Entry* a, const Entry* b) { return a->allocated < b->allocated; });
  std::vector<BufferedUpdate> out;
  for (Entry* e : live) {
    out.push_back(e->update);
    e->valid = false;
  }
  index_.clear();
  return out;
}

}  // namespace atomsim::model
