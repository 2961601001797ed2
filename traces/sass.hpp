// Reading SASS text (as printed by cuobjdump/nvdisasm) into static
// instructions: op class, mnemonic, registers for the scoreboard, access width
// and atomic kind. Used by trace producers that know a kernel's SASS.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::trace {

OpClass classify_opcode(std::string_view mnemonic);
// "REDG" of "REDG.E.ADD.F32"; whether the mnemonic carries a modifier (".ADD").
std::string_view opcode_base(std::string_view mnemonic);
bool has_modifier(std::string_view mnemonic, std::string_view modifier);
// A global load of GPU or system scope (.STRONG.GPU, .STRONG.SYS: volatile
// and relaxed or acquire loads of those scopes). An SM's L1 is not coherent
// with the others, so such a load is served by the L2 and leaves no copy in the L1.
bool is_coherent_load(const StaticInst& s);
// Bytes per lane a load or store moves, from its modifiers (.64, .128, .U8, ...).
std::uint8_t access_width(std::string_view mnemonic);

// Parses one instruction such as "@!P0 REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R10.64+0x4], R13 ;".
// The guard predicate, when present, is recorded as a source.
StaticInst parse_sass_instruction(std::string_view text, std::uint64_t pc);

// Whether a simulation can take the program's dependences from its control
// bits: every instruction has them, and none is a DEPBAR, which waits for a
// barrier's count to fall to an operand the trace does not carry.
bool control_bits_usable(const KernelInfo& kernel);

// What instruction `index` of `program` may wait for through its control
// bits: for each dependency barrier of its wait mask, the instructions that
// set that barrier (as their write or read barrier) nearest before it in the
// listing and, for a loop's previous iteration, last after it, among those
// `counts` accepts (e.g. those that ran); their indices, without repeats, in
// barrier order. Which of the two a warp waits for depends on the path it
// took. Empty without control bits.
std::vector<std::size_t> barrier_producers(const std::vector<StaticInst>& program, std::size_t index,
                                           const std::function<bool(std::size_t)>& counts = {});

// Extracts the instructions of one function from a cuobjdump --dump-sass listing;
// `text`, when given, receives each instruction's text. Throws TraceError when
// the function is not in the listing.
std::vector<StaticInst> parse_sass_function(std::string_view listing, std::string_view function,
                                            std::vector<std::string>* text = nullptr);

}  // namespace atomsim::trace
