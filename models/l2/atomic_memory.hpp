// The functional image of atomically updated words held by one L2 slice: an
// open-addressing hash table (linear probing, power-of-two size) because every
// atomic lane operation looks its word up here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::model {

struct AtomicCell {
  std::uint64_t bits = 0;
  std::uint64_t updates = 0;
  trace::DataType type = trace::DataType::None;
};

class AtomicMemory {
 public:
  // The word's cell, created (zero) on first use.
  AtomicCell& operator[](std::uint64_t address) {
    if (2 * (used_ + 1) > slots_.size()) grow();
    Slot& s = probe(slots_, address);
    if (!s.used) {
      s.used = true;
      s.address = address;
      ++used_;
    }
    return s.cell;
  }
  const AtomicCell& at(std::uint64_t address) const {
    if (!slots_.empty()) {
      const Slot& s = probe(slots_, address);
      if (s.used) return s.cell;
    }
    throw std::out_of_range("no atomic update at this address");
  }
  template <class Visit>
  void for_each(Visit visit) const {
    for (const Slot& s : slots_)
      if (s.used) visit(s.address, s.cell);
  }

 private:
  struct Slot {
    std::uint64_t address = 0;
    AtomicCell cell;
    bool used = false;
  };
  static std::size_t hash(std::uint64_t address) {
    address ^= address >> 29;
    address *= 0xBF58476D1CE4E5B9ull;
    return static_cast<std::size_t>(address ^ (address >> 32));
  }
  // The slot holding `address`, or the empty slot where it would go.
  template <class Slots>
  static auto probe(Slots& slots, std::uint64_t address) -> decltype(slots[0]) {
    const std::size_t mask = slots.size() - 1;
    for (std::size_t i = hash(address) & mask;; i = (i + 1) & mask)
      if (!slots[i].used || slots[i].address == address) return slots[i];
  }
  void grow() {
    std::vector<Slot> bigger(slots_.empty() ? 1024 : 2 * slots_.size());
    for (const Slot& s : slots_)
      if (s.used) probe(bigger, s.address) = s;
    slots_.swap(bigger);
  }
  std::vector<Slot> slots_;
  std::size_t used_ = 0;
};

}  // namespace atomsim::model
