// LAB-style L1 atomic buffer (Dalmia et al., HPCA 2022): a small fully
// associative store of pending commutative updates. An update to a buffered
// address is combined in place; a miss allocates an entry, evicting the least
// recently used one, whose combined update then goes to L2 as one operation.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/messages.hpp"
#include "traces/trace.hpp"

namespace atomsim::model {

struct BufferedUpdate {
  LaneOp op;  // op.updates counts the lane updates combined
  trace::AtomicOp kind = trace::AtomicOp::Add;
  trace::DataType type = trace::DataType::F32;
};

class AtomicBuffer {
 public:
  explicit AtomicBuffer(std::uint32_t entries);
  // Combines or allocates; returns the entry evicted to make room, if any.
  std::optional<BufferedUpdate> absorb(const BufferedUpdate& update);
  // Removes the entry for `address`, if buffered (an ATOM with a result must see it applied first).
  std::optional<BufferedUpdate> take(std::uint64_t address);
  // Empties the buffer in allocation-age order (deterministic).
  std::vector<BufferedUpdate> drain();
  std::size_t size() const { return index_.size(); }
  std::uint64_t combined() const { return combined_; }

 private:
  struct Entry {
    BufferedUpdate update;
    std::uint64_t last_use = 0;
    std::uint64_t allocated = 0;
    bool valid = false;
  };
  std::vector<Entry> entries_;
  std::unordered_map<std::uint64_t, std::uint32_t> index_;
  std::uint64_t clock_ = 0;
  std::uint64_t combined_ = 0;
};

}  // namespace atomsim::model
