// A kernel's program as the SM's sub-cores read it: per static instruction,
// where it goes (a pipe, the MIO, the LSU), its latency, its operands and the
// compiler's control bits (decoded once per kernel by decode_program).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "models/sm/sm.hpp"

namespace atomsim::model {

using trace::OpClass;

// LsuReduced: a RED that the warp-reduction unit combines on its way to the LG queue.
enum class Route : std::uint8_t { Pipe, Mio, Lsu, LsuReduced, Barrier, Membar };
constexpr int kGeneralRegisters = 255;  // R0..R254; RZ is not a register
inline constexpr std::uint32_t kNoConstantLine = UINT32_MAX;
enum PipeIndex : std::uint8_t { kIntAlu, kFpAlu, kFma, kVote, kBranch, kMisc, kPipeCount };

// What the SM needs of a static instruction, compactly. Registers are renumbered
// densely per kernel (in order of first use) so that the registers a kernel
// uses share the first words of each warp's scoreboard. Two cache lines since
// the control bits joined (no cost measured: docs/performance.md).
struct alignas(64) InstTiming {
  OpClass op = OpClass::Misc;
  Route route = Route::Pipe;
  std::uint8_t pipe = kMisc;
  bool resolves_branch = false;
  bool syncs_lanes = false;  // a WARPSYNC: its lanes' masks say how long it holds the warp
  std::uint8_t num_src = 0;
  std::uint8_t num_dst = 0;
  bool operands_in_sets = true;  // every register is below RegSet::kLimit
  std::uint8_t shared_bytes_per_lane = 0;  // shared-memory instructions: what each lane moves
  bool coherent_load = false;              // served by the L2, past the L1 (trace::is_coherent_load)
  MioPipe mio_pipe = MioPipe::Shuffle;     // MIO instructions: which of the MIO's pipes
  float measured_mio_units = 0;            // what the GPU measured of MioOp::units (0: not measured)
  std::uint32_t constant_line = kNoConstantLine;  // its constant-bank operand's line (sm.constant_cache)
  std::array<std::uint16_t, 6> src{};
  std::array<std::uint16_t, kMaxDestinations> dst{};
  std::uint16_t latency = 1;
  // The compiler's control bits, where the program has them and the
  // configuration uses them (sm.dependences): then they, not the registers,
  // say what the instruction waits for.
  bool control_bits = false;
  std::uint8_t stall = 1;
  std::uint8_t wait_mask = 0;
  std::uint8_t write_barrier = trace::ControlBits::kNoBarrier;
  std::uint8_t read_barrier = trace::ControlBits::kNoBarrier;
  RegSet src_set, dst_set;
};


struct SmProgram {
  std::vector<InstTiming> timing;
};

}  // namespace atomsim::model
