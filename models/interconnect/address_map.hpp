// Maps physical addresses to L2 slices and partitions. The hash is chosen by
// name from the configuration.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>

namespace atomsim::model {

// How addresses spread over slices or channels: xor folds upper address bits
// into the index, modulo takes the chunk number alone.
enum class AddressHash : std::uint8_t { Xor, Modulo };
inline constexpr std::array<std::pair<const char*, AddressHash>, 2> kAddressHashNames{
    {{"xor", AddressHash::Xor}, {"modulo", AddressHash::Modulo}}};

struct AddressMapParams {
  std::uint32_t slices = 1;
  std::uint32_t partitions = 1;
  std::uint32_t line_bytes = 128;
  // Consecutive bytes that go to one slice before the hash moves on: a
  // multiple of the line.
  std::uint32_t interleave_bytes = 128;
  AddressHash hash = AddressHash::Xor;
  // Loads and stores of an SM enter at its own partition's slice, which keeps
  // a copy of the lines of the other partition it asks for (cache_slice).
  bool far_lines_cached_near = false;
};

// Folds upper bits of a chunk index into its lower ones, so that
// consecutive indices stay spread and power-of-two strides do not land on a
// few slices or channels.
inline std::uint64_t xor_fold(std::uint64_t index) { return index ^ (index >> 7) ^ (index >> 13) ^ (index >> 19); }

class AddressMap {
 public:
  explicit AddressMap(const AddressMapParams& p);
  std::uint64_t line_of(std::uint64_t address) const { return address & ~std::uint64_t(line_bytes_ - 1); }
  std::uint32_t slice_of(std::uint64_t address) const;
  std::uint32_t partition_of_slice(std::uint32_t slice) const { return slice * partitions_ / slices_; }
  std::uint32_t partition_of_sm(std::uint32_t sm) const { return sm % partitions_; }
  // The slice an atomic of `sm` enters the L2 at: its home slice, or for a
  // home in the other partition, the slice at the same place in the SM's own
  // partition, which passes it on to the home slice.
  std::uint32_t entry_slice(std::uint64_t address, std::uint32_t sm) const {
    const std::uint32_t home = slice_of(address), per_partition = slices_ / partitions_;
    return home % per_partition + partition_of_sm(sm) * per_partition;
  }
  // The slice a load or store of `sm` goes to: its entry slice where the
  // partitions keep copies of each other's lines, else the home slice.
  std::uint32_t cache_slice(std::uint64_t address, std::uint32_t sm) const {
    return far_lines_cached_near_ ? entry_slice(address, sm) : slice_of(address);
  }
  std::uint32_t slices() const { return slices_; }

 private:
  std::uint32_t slices_;
  std::uint32_t partitions_;
  std::uint32_t line_bytes_;
  std::uint32_t interleave_bytes_;
  bool xor_hash_;
  bool far_lines_cached_near_;
};

}  // namespace atomsim::model
