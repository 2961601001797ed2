#include "models/interconnect/address_map.hpp"

#include <bit>
#include <stdexcept>

namespace atomsim::model {

AddressMap::AddressMap(const AddressMapParams& p)
    : slices_(p.slices), partitions_(p.partitions), line_bytes_(p.line_bytes), interleave_bytes_(p.interleave_bytes),
      xor_hash_(p.hash == AddressHash::Xor), far_lines_cached_near_(p.far_lines_cached_near && p.partitions > 1) {
  if (!std::has_single_bit(line_bytes_)) throw std::invalid_argument("line size must be a power of two");
  if (!std::has_single_bit(interleave_bytes_) || interleave_bytes_ < line_bytes_)
    throw std::invalid_argument("slice interleave must be a power of two of at least a line");
  if (partitions_ == 0 || slices_ % partitions_ != 0) throw std::invalid_argument("slices must divide into partitions");
}

std::uint32_t AddressMap::slice_of(std::uint64_t address) const {
  std::uint64_t chunk = address / interleave_bytes_;
  return static_cast<std::uint32_t>((xor_hash_ ? xor_fold(chunk) : chunk) % slices_);
}

}  // namespace atomsim::model
