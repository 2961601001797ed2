// In-memory view of atomsim trace format v1 (docs/trace-format.md): kernel
// launch metadata, the kernel's static SASS program, and per-warp dynamic
// instruction records.
#pragma once

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace atomsim::trace {

enum class OpClass : std::uint8_t {
  IntAlu = 0,   // integer / logic ALU
  FpAlu = 1,    // FADD, FMUL, FSEL, FSETP ...
  Fma = 2,      // FFMA, IMAD and other fused multiply-adds
  Sfu = 3,      // MUFU and conversions on the special-function unit
  Branch = 4,   // BRA, BSSY, BSYNC, WARPSYNC ...
  Shared = 5,   // LDS, STS, ATOMS
  Shuffle = 6,  // SHFL, MATCH (through the MIO)
  Vote = 7,     // VOTE, POPC, FLO on the ALU
  LoadGlobal = 8,
  StoreGlobal = 9,
  Atom = 10,    // global atomic with a result (ATOMG)
  Red = 11,     // global reduction without a result (REDG)
  Barrier = 12, // BAR.SYNC
  Membar = 13,  // MEMBAR, FENCE
  Exit = 14,
  Misc = 15,    // uniform datapath, constant loads, S2R, NOP ...
};
inline constexpr int kOpClassCount = 16;
const char* op_class_name(OpClass op);

enum class AtomicOp : std::uint8_t { None = 0, Add, Min, Max, Inc, Dec, And, Or, Xor, Exch, Cas };
// F32x2 and F32x4: vector atomics on two or four adjacent floats
// (REDG.E.ADD.F32x2 and .F32x4, as Triton emits), each float added on its own.
enum class DataType : std::uint8_t { None = 0, U32, S32, U64, S64, F32, F64, F16x2, BF16x2, F32x2, F32x4 };
const char* atomic_op_name(AtomicOp op);
// Bytes one lane's operand of this type takes: 16 for F32x4, 8 for the 64-bit
// types and F32x2, 4 otherwise.
inline std::uint32_t operand_bytes(DataType t) {
  if (t == DataType::F32x4) return 16;
  return t == DataType::U64 || t == DataType::S64 || t == DataType::F64 || t == DataType::F32x2 ? 8 : 4;
}
// Bytes of a lane's operand that a trace record's value holds: all of it, but
// for F32x4 its first two floats (docs/trace-format.md).
inline std::uint32_t value_bytes(DataType t) { return t == DataType::F32x4 ? 8 : operand_bytes(t); }
// Types whose value is a pair of floats, added apart: F32x2, and F32x4's first two floats.
inline bool holds_float_pair(DataType t) { return t == DataType::F32x2 || t == DataType::F32x4; }
// The sum of two F32x2 operands, each half a float rounded on its own.
std::uint64_t add_f32x2(std::uint64_t a, std::uint64_t b);
const char* data_type_name(DataType t);

inline bool is_global_memory(OpClass op) {
  return op == OpClass::LoadGlobal || op == OpClass::StoreGlobal || op == OpClass::Atom || op == OpClass::Red;
}
inline bool is_atomic(OpClass op) { return op == OpClass::Atom || op == OpClass::Red; }
// A WARPSYNC's record may carry, as every lane's value, how many different
// masks its lanes named (since format 1.3): each costs the warp a pass. Not
// the collective form (WARPSYNC.COLLECTIVE ... ENDCOLLECTIVE around a shuffle),
// whose cost is unmeasured.
inline bool is_warp_sync(std::string_view mnemonic) { return mnemonic == "WARPSYNC"; }
// Instructions whose records may carry operand values.
inline bool carries_values(OpClass op, std::string_view mnemonic) { return is_global_memory(op) || is_warp_sync(mnemonic); }

// Register numbering shared by producers and the scoreboard.
namespace reg {
inline constexpr std::uint16_t kPredicateBase = 256;  // P0..P6
inline constexpr std::uint16_t kUniformBase = 264;    // UR0..UR62
inline constexpr std::uint16_t kUniformPredicateBase = 328;  // UP0..UP6
inline constexpr std::uint16_t kSpace = 336;
}  // namespace reg

// The scheduling word the compiler gives each instruction on Volta and later
// GPUs (bits 105-125 of the 128-bit encoding): cycles before the warp's next
// instruction may issue, the dependency barrier (one of six per warp) the
// instruction's result or its operand reads hold until done, and the barriers
// it waits on. A GPU has no register scoreboard for variable-latency results:
// these barriers are the dependences.
struct ControlBits {
  static constexpr std::uint8_t kNoBarrier = 7;
  static constexpr std::uint32_t kMask = (1u << 21) - 1;
  std::uint32_t raw = 0;  // the 21 bits, stall count lowest
  bool present = false;   // the producer knew the encoding
  static ControlBits from_encoding_high_word(std::uint64_t high) { return {static_cast<std::uint32_t>(high >> 41) & kMask, true}; }
  // The yield bit (4) and operand-reuse flags (17-20) stay in `raw`: the model does not use them.
  std::uint8_t stall() const { return raw & 0xf; }
  std::uint8_t write_barrier() const { return (raw >> 5) & 7; }
  std::uint8_t read_barrier() const { return (raw >> 8) & 7; }
  std::uint8_t wait_mask() const { return (raw >> 11) & 0x3f; }
};

// An operand read straight from a constant bank, `c[0x0][0x210]`: the
// instruction issues only once its sub-core's constant cache holds the line.
// Register-indexed reads (LDC) go through the MIO instead and are not these.
struct ConstantOperand {
  static constexpr std::uint32_t kMaxBank = 31;
  static constexpr std::uint32_t kMaxOffset = 0xffff;
  std::uint8_t bank = 0;
  std::uint16_t offset = 0;
  bool present = false;
  // One number for the bank and offset (the trace's constant-operand section stores it plus one).
  std::uint32_t key() const { return (std::uint32_t(bank) << 16) | offset; }
  static ConstantOperand from_key(std::uint32_t key) {
    return {static_cast<std::uint8_t>(key >> 16), static_cast<std::uint16_t>(key & 0xffff), true};
  }
};

struct StaticInst {
  std::uint64_t pc = 0;
  OpClass op = OpClass::Misc;
  std::string mnemonic;  // SASS opcode with modifiers, empty when unknown
  std::uint8_t num_dst = 0;
  std::uint8_t num_src = 0;
  std::array<std::uint16_t, 2> dst{};
  std::array<std::uint16_t, 6> src{};
  std::uint8_t access_bytes = 0;  // per lane, memory operations only
  AtomicOp atomic_op = AtomicOp::None;
  DataType atomic_type = DataType::None;
  ControlBits control;
  ConstantOperand constant;
  // Costs the GPU measured that a trace's records cannot carry, set from a
  // capture's counters pass (sim/compare/measured_costs.hpp); 0: not measured.
  float shared_wavefronts = 0;  // shared memory: mean wavefronts an execution took (bank conflicts)
  float match_values = 0;       // MATCH.ANY: mean distinct values among an execution's lanes
};

struct Dim3 {
  std::uint32_t x = 1, y = 1, z = 1;
  std::uint64_t count() const { return std::uint64_t(x) * y * z; }
};

struct KernelInfo {
  std::string name;
  Dim3 grid;
  Dim3 block;
  std::uint32_t registers_per_thread = 0;
  std::uint32_t shared_bytes = 0;
  std::vector<StaticInst> program;
  // The order the GPU started the CTAs in, where the kernel numbers its work
  // by the order CTAs start (each CTA's first returning atomic on one counter
  // drew a ticket): cta_order[k] is the linear index of the CTA whose trace
  // the k-th CTA to start replays. Empty: grid order.
  std::vector<std::uint64_t> cta_order;

  std::uint32_t warps_per_cta() const { return static_cast<std::uint32_t>((block.count() + 31) / 32); }
  std::uint64_t total_warps() const { return grid.count() * warps_per_cta(); }
};

// One dynamic warp instruction. Lane arrays are meaningful for active lanes of
// memory operations (addresses) and for the lanes in value_lanes (raw bits):
// an atomic's operands (every active lane); the value a store wrote or a
// load observed, where it is a word a load awaits (docs/trace-format.md).
struct WarpInst {
  std::uint32_t index = 0;  // into KernelInfo::program
  std::uint32_t active_mask = 0;
  std::uint32_t value_lanes = 0;
  std::array<std::uint64_t, 32> address{};
  std::array<std::uint64_t, 32> value{};
};

// Any damage or misuse; the message names the file and byte offset.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace atomsim::trace
