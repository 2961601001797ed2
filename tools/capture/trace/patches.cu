// Device patches of the trace pass, called by the Compute Sanitizer before each
// instrumented instruction of the captured kernel, once per lane that runs it.
// The lanes of a call are the lanes running the instruction together; the
// lowest of them appends one record for the warp. A launch that is not
// captured gets a null userdata and returns at once.
#include <sanitizer_patching.h>

#include "tools/capture/trace/records.hpp"

using namespace atomsim::capture::device;

namespace {

__device__ __forceinline__ std::uint32_t lane_id() {
  std::uint32_t lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__device__ __forceinline__ std::uint32_t warp_index(const Control* c) {
  std::uint64_t cta = blockIdx.x + std::uint64_t(gridDim.x) * (blockIdx.y + std::uint64_t(gridDim.y) * blockIdx.z);
  std::uint32_t thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  return static_cast<std::uint32_t>(cta * c->warps_per_cta + thread / 32);
}

// Reads a word at the L2, where atomics are performed: an atomic add of zero.
__device__ __forceinline__ std::uint64_t read_word(std::uint64_t address, std::uint32_t bytes) {
  if (bytes == 8) return atomicAdd(reinterpret_cast<unsigned long long*>(address), 0ull);
  return atomicAdd(reinterpret_cast<unsigned int*>(address), 0u);
}

struct Call {
  Control* control;
  std::uint32_t active, lane, leader, warp;
};

__device__ __forceinline__ Call begin(void* userdata) {
  Call call;
  call.control = static_cast<Control*>(userdata);
  call.active = __activemask();
  call.lane = lane_id();
  call.leader = __ffs(call.active) - 1;
  call.warp = warp_index(call.control);
  return call;
}

// The lock of the 8-byte word holding `address` (a 4-byte word shares its
// neighbour's, so that 4- and 8-byte atomics on overlapping words exclude each other).
__device__ __forceinline__ std::uint32_t lock_of(const Control* c, std::uint64_t address) {
  return static_cast<std::uint32_t>(((address >> 3) * 0x9E3779B97F4A7C15ull) >> (64 - c->lock_bits));
}

// Takes the locks of the `words` 8-byte words from each running lane's
// address, in ascending order (so that two warps never each hold a lock the
// other waits for), and notes them in the warp's pending entry. All running
// lanes call it.
__device__ void acquire_locks(const Call& call, Pending& pending, std::uint64_t address, std::uint32_t words) {
  Control* c = call.control;
  // The leader gathers the lanes' locks, sorted and without repeats (tools
  // patches may not use warp reductions).
  std::uint32_t sorted[kMaxLocks];
  std::uint32_t count = 0;
  for (std::uint32_t m = call.active; m; m &= m - 1)
    for (std::uint32_t word = 0; word < words; ++word) {
      const std::uint32_t lock = __shfl_sync(call.active, lock_of(c, address + 8 * word), __ffs(m) - 1);
      if (call.lane != call.leader) continue;
      std::uint32_t at = count;
      while (at > 0 && sorted[at - 1] > lock) --at;
      if (at > 0 && sorted[at - 1] == lock) continue;
      for (std::uint32_t k = count; k > at; --k) sorted[k] = sorted[k - 1];
      sorted[at] = lock;
      ++count;
    }
  if (call.lane == call.leader) {
    for (std::uint32_t k = 0; k < count; ++k) {
      while (atomicCAS(&c->locks[sorted[k]], 0u, 1u) != 0u) __nanosleep(32);
      pending.locks[k] = sorted[k];
    }
    pending.lock_count = count;
  }
  __syncwarp(call.active);
}

__device__ void release_locks(Control* c, Pending& pending) {
  __threadfence();
  for (std::uint32_t k = 0; k < pending.lock_count; ++k) atomicExch(&c->locks[pending.locks[k]], 0u);
  pending.lock_count = 0;
}

// Reads the after-values of the warp's last atomic and lets the next atomic in.
// Its own lanes read their words (same thread, so ordered after the atomic);
// the leader reads those of lanes not running now.
__device__ void settle(const Call& call) {
  Control* c = call.control;
  Pending& pending = c->pending[call.warp];
  std::uint32_t slot = call.lane == call.leader ? pending.slot : 0;
  slot = __shfl_sync(call.active, slot, call.leader);
  if (!slot) return;
  // A 16-byte atomic's second word is in the next slot.
  LaneData* data[2] = {&c->lanes[slot - 1], &c->lanes[slot]};
  const std::uint32_t slots = data[0]->bytes == 16 ? 2 : 1;
  std::uint32_t mask = pending.mask;
  auto read_after = [&](std::uint32_t lane) {
    for (std::uint32_t k = 0; k < slots; ++k)
      data[k]->after[lane] = read_word(data[k]->address[lane], slots == 2 ? 8 : data[k]->bytes);
  };
  if ((mask >> call.lane) & 1) read_after(call.lane);
  __syncwarp(call.active);
  if (call.lane == call.leader) {
    for (std::uint32_t m = mask & ~call.active; m; m &= m - 1) read_after(__ffs(m) - 1);
    pending.slot = 0;
    release_locks(c, pending);
  }
  __syncwarp(call.active);
}

// Appends the warp's record with `lane_slots` consecutive LaneData slots;
// returns the first one's index + 1 (0 without any) to every lane.
__device__ std::uint32_t append(const Call& call, std::uint64_t pc, EventKind kind, std::uint64_t target,
                                std::uint32_t lane_slots) {
  Control* c = call.control;
  std::uint32_t slot = 0;
  if (call.lane == call.leader) {
    unsigned long long index = atomicAdd(&c->event_count, 1ull);
    if (lane_slots) slot = static_cast<std::uint32_t>(atomicAdd(&c->lane_count, 1ull * lane_slots) + 1);
    if (index >= c->event_capacity || (lane_slots && slot + lane_slots - 1 > c->lane_capacity)) {
      atomicExch(&c->overflow, 1u);
      slot = 0;
    } else {
      Event& e = c->events[index];
      e.pc = pc;
      e.target = target;
      e.warp = call.warp;
      e.mask = call.active;
      e.kind = kind;
      e.slot = slot;
    }
  }
  return __shfl_sync(call.active, slot, call.leader);
}

__device__ SanitizerPatchResult record(void* userdata, std::uint64_t pc, EventKind kind, std::uint64_t target = 0) {
  if (!userdata) return SANITIZER_PATCH_SUCCESS;
  Call call = begin(userdata);
  settle(call);
  append(call, pc, kind, target, 0);
  return SANITIZER_PATCH_SUCCESS;
}

}  // namespace

extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_global_access(void* userdata, std::uint64_t pc, void* ptr,
                                                                              std::uint32_t bytes, std::uint32_t flags,
                                                                              const void* data) {
  if (!userdata) return SANITIZER_PATCH_SUCCESS;
  Call call = begin(userdata);
  Control* c = call.control;
  settle(call);
  // Atomics report no data pointer; they are serialised so that their effect can be read.
  bool atomic = data == nullptr && (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE);
  // A 16-byte atomic (REDG.E.ADD.F32x4) is read as two 8-byte words, each in a slot of its own.
  const bool two_words = atomic && bytes == 16;
  Pending& pending = c->pending[call.warp];
  const std::uint64_t address = reinterpret_cast<std::uint64_t>(ptr);
  if (atomic) acquire_locks(call, pending, address, two_words ? 2 : 1);
  std::uint32_t slot = append(call, pc, kMemory, 0, two_words ? 2 : 1);
  if (slot) {
    LaneData& d = c->lanes[slot - 1];
    d.address[call.lane] = address;
    if (call.lane == call.leader) {
      d.bytes = bytes;
      d.atomic = atomic;
    }
    if (two_words) {
      LaneData& second = c->lanes[slot];
      second.address[call.lane] = address + 8;
      if (call.lane == call.leader) {
        second.bytes = bytes;
        second.atomic = atomic;
      }
      d.before[call.lane] = read_word(address, 8);
      second.before[call.lane] = read_word(address + 8, 8);
    } else if (atomic && (bytes == 4 || bytes == 8)) {
      d.before[call.lane] = read_word(address, bytes);
    } else if (flags & SANITIZER_MEMORY_DEVICE_FLAG_WRITE) {
      std::uint64_t written = 0;
      if (bytes <= 8) memcpy(&written, data, bytes);
      d.before[call.lane] = written;
    } else if (bytes == 4) {
      d.before[call.lane] = *static_cast<const volatile std::uint32_t*>(ptr);
    } else if (bytes == 8) {
      d.before[call.lane] = *static_cast<const volatile std::uint64_t*>(ptr);
    }
  }
  __syncwarp(call.active);
  if (atomic && call.lane == call.leader) {
    if (slot) {
      pending.slot = slot;
      pending.mask = call.active;
    } else {
      release_locks(c, pending);  // out of room: nothing to settle
    }
  }
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_other_access(void* userdata, std::uint64_t pc, void*,
                                                                             std::uint32_t, std::uint32_t, const void*) {
  return record(userdata, pc, kMemory);
}

extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_shuffle(void* userdata, std::uint64_t pc) {
  return record(userdata, pc, kShuffle);
}

extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_barrier(void* userdata, std::uint64_t pc, std::uint32_t,
                                                                        std::uint32_t, std::uint32_t) {
  return record(userdata, pc, kBarrier);
}

// A WARPSYNC's record carries how many different masks its lanes named (lanes
// syncing with groups of their own), in the record's target: each lane learns
// the masks of the lanes below it and counts itself if none named its own.
extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_syncwarp(void* userdata, std::uint64_t pc, std::uint32_t mask) {
  if (!userdata) return SANITIZER_PATCH_SUCCESS;
  Call call = begin(userdata);
  settle(call);
  bool first_of_its_mask = true;
  for (std::uint32_t m = call.active; m; m &= m - 1) {
    const std::uint32_t other = __ffs(m) - 1;
    const std::uint32_t named = __shfl_sync(call.active, mask, other);
    if (other < call.lane && named == mask) first_of_its_mask = false;
  }
  const std::uint32_t masks = __popc(__ballot_sync(call.active, first_of_its_mask));
  append(call, pc, kSyncwarp, masks, 0);
  return SANITIZER_PATCH_SUCCESS;
}

extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_call(void* userdata, std::uint64_t pc, std::uint64_t target,
                                                                     std::uint32_t) {
  return record(userdata, pc, kCall, target);
}

extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_return(void* userdata, std::uint64_t pc) {
  return record(userdata, pc, kReturn);
}

extern "C" __device__ __noinline__ SanitizerPatchResult atomsim_exit(void* userdata, std::uint64_t pc) {
  return record(userdata, pc, kExit);
}
