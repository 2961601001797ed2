// What the trace pass's device patches record, shared by the patches (nvcc)
// and the host side of the trace pass. Plain structs: the host copies them back
// byte for byte.
#pragma once

#include <cstdint>

namespace atomsim::capture::device {

enum EventKind : std::uint32_t { kMemory = 0, kShuffle, kBarrier, kSyncwarp, kCall, kReturn, kExit };

// One instrumented warp instruction, appended by the lowest lane that ran it.
struct Event {
  std::uint64_t pc;        // absolute
  std::uint64_t target;    // calls: the callee's absolute pc; WARPSYNC: the different masks its lanes named
  std::uint32_t warp;      // linear CTA index * warps per CTA + warp in the CTA
  std::uint32_t mask;      // lanes that ran it
  std::uint32_t kind;      // EventKind
  std::uint32_t slot;      // global memory: LaneData index + 1; 0 = none
};

// Per-lane operands of a global memory instruction. For atomics, the word each
// lane updates is read just before and just after the instruction, with every
// other atomic on that word held off meanwhile, so after - before is what the
// instruction added; a 16-byte atomic takes two slots, the second for the
// words 8 bytes on. For a store of up to 8 bytes, `before` is the value it
// writes; for a load of 4 or 8 bytes, the word as read just before the load
// (what a load polling a flag sees, but for a store landing in between).
struct LaneData {
  std::uint64_t address[32];
  std::uint64_t before[32];
  std::uint64_t after[32];
  std::uint32_t bytes;     // access width
  std::uint32_t atomic;    // 1 when the instruction was an atomic
  std::uint64_t reserved;
};

// An atomic whose after-values are still to be read, per warp, and the word
// locks its warp holds until then (ascending).
constexpr std::uint32_t kMaxLocks = 64;  // two words for each of 32 lanes

struct Pending {
  std::uint32_t slot;      // LaneData index + 1; 0 = none
  std::uint32_t mask;
  std::uint32_t lock_count;
  std::uint32_t locks[kMaxLocks];
};

struct Control {
  Event* events;
  LaneData* lanes;
  Pending* pending;        // one per warp of the launch
  std::uint64_t event_capacity;
  std::uint64_t lane_capacity;
  unsigned long long event_count;
  unsigned long long lane_count;
  // One lock per group of words (a hash of the 8-byte word's address), held
  // from an atomic until its warp's next instrumented instruction: an atomic
  // waits only for those that update its words, not for every other one.
  std::uint32_t* locks;
  std::uint32_t lock_bits; // the table has 2^lock_bits locks
  std::uint32_t warps_per_cta;
  std::uint32_t overflow;
  std::uint32_t reserved;
};

}  // namespace atomsim::capture::device
