// The integer hash the native workloads draw their per-lane decisions from
// (the finaliser of Wang/Jenkins-style hashes, as in the "lowbias32" family),
// the same on the host and the device so that a CPU check can replay them.
#pragma once

#include <cstdint>

__host__ __device__ inline std::uint32_t mix32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  x ^= x >> 16;
  return x;
}
