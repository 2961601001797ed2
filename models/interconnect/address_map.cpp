#include "models/interconnect/address_map.hpp"

#include <bit>
#include <stdexcept>

namespace atomsim::model {

AddressMap::AddressMap(const AddressMapParams& p)
    : slices_(p.slices), partitions_(p.partitions), line_bytes_(p.line_bytes), xor_hash_(p.hash == "xor") {
  if (!std::has_single_bit(line_bytes_)) throw std::invalid_argument("line size must be a power of two");
  if (partitions_ == 0 || slices_ % partitions_ != 0) throw std::invalid_argument("slices must divide into partitions");
}

std::uint32_t AddressMap::slice_of(std::uint64_t address) const {
  std::uint64_t line = address / line_bytes_;
  if (xor_hash_) {
    // Consecutive lines go to consecutive slices, so a contiguous buffer
    // spreads evenly; folding in upper bits keeps power-of-two strides from
    // landing on a few slices.
    line ^= (line >> 7) ^ (line >> 13) ^ (line >> 19);
  }
  return static_cast<std::uint32_t>(line % slices_);
}

}  // namespace atomsim::model
