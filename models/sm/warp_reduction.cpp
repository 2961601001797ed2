#include "models/sm/warp_reduction.hpp"

#include <bit>

#include "models/atomic_update.hpp"

namespace atomsim::model {

bool warp_reducible(trace::OpClass op, trace::AtomicOp kind, trace::DataType type) {
  return op == trace::OpClass::Red && combinable_update(kind, type);
}

std::uint32_t combine_same_word_lanes(LsuOp& op) {
  std::uint32_t removed = 0;
  for (std::uint32_t open = op.active_mask; open; open &= open - 1) {
    const int keeper = std::countr_zero(open);
    for (std::uint32_t later = open & (open - 1); later; later &= later - 1) {
      const int lane = std::countr_zero(later);
      if (op.address[lane] != op.address[keeper]) continue;
      op.value[keeper] = combine_updates(op.value[keeper], op.value[lane], op.atomic_op, op.atomic_type);
      op.updates[keeper] = static_cast<std::uint8_t>(op.updates[keeper] + op.updates[lane]);
      op.active_mask &= ~(1u << lane);
      open &= ~(1u << lane);
      ++removed;
    }
  }
  return removed;
}

}  // namespace atomsim::model
