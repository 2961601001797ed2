#include "models/l1/atomic_buffer.hpp"

#include <algorithm>
#include <stdexcept>

#include "models/atomic_update.hpp"

namespace atomsim::model {

using trace::AtomicOp;
using trace::DataType;

AtomicBuffer::AtomicBuffer(std::uint32_t entries) : entries_(entries) {
  if (entries == 0) throw std::invalid_argument("atomic buffer needs at least one entry");
}


std::optional<BufferedUpdate> AtomicBuffer::absorb(const BufferedUpdate& update) {
  ++clock_;
  auto it = index_.find(update.op.address);
  if (it != index_.end()) {
    Entry& e = entries_[it->second];
    if (e.update.kind == update.kind && e.update.type == update.type) {
      e.update.op.value = combine_updates(e.update.op.value, update.op.value, update.kind, update.type);
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
