#include "models/atomic_update.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

namespace atomsim::model {

using trace::AtomicOp;
using trace::DataType;

bool combinable_update(AtomicOp kind, DataType type) {
  switch (kind) {
    case AtomicOp::Add:
      return type == DataType::F32 || type == DataType::F64 || type == DataType::U32 || type == DataType::S32 ||
             type == DataType::U64 || type == DataType::S64 || trace::holds_float_pair(type);
    case AtomicOp::Min: case AtomicOp::Max:
      return type == DataType::U32 || type == DataType::S32 || type == DataType::U64 || type == DataType::S64;
    case AtomicOp::And: case AtomicOp::Or: case AtomicOp::Xor:
      return true;
    default:
      return false;
  }
}

std::uint64_t combine_updates(std::uint64_t a, std::uint64_t b, AtomicOp kind, DataType type) {
  const std::uint64_t mask = trace::value_bytes(type) == 8 ? ~0ull : 0xFFFFFFFFull;
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
      if (trace::holds_float_pair(type)) return trace::add_f32x2(a, b);
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

}  // namespace atomsim::model
