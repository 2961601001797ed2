// Accel-Sim's trace format (the text its NVBit tracer writes, versions 3 to 5
// and 6's extra immediate): a kernelslist.g naming kernel-N.traceg files
// (kernel-N.traceg.xz, xz-compressed, as its current tracer may write them), each
// a header of "-key = value" lines and, per thread block, each warp's
// instructions as "[line] PC mask ndst dst... OPCODE nsrc src... width
// [mode addresses...] [imm...]" (docs/trace-format.md, "Accel-Sim traces").
//
// Read into an atomsim trace and written from one. The two differ in what
// they carry: Accel-Sim's records have no control bits, no predicate or
// uniform registers and no atomic operands, so an imported trace's
// dependences are its general registers' and its atomics update by zero.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace atomsim::trace::accelsim {

// Whether `path` names Accel-Sim traces: a kernelslist.g, or one kernel's .traceg or .traceg.xz.
bool is_accelsim_path(const std::filesystem::path& path);

struct ImportSummary {
  std::size_t kernels = 0;
  std::uint64_t warp_instructions = 0;
};

// Reads the kernels `path` names (in kernelslist.g's order) and writes them as
// one atomsim trace at `out` (written whole or not at all). Throws TraceError
// naming the file, line and field of the first thing it cannot read.
ImportSummary import_traces(const std::filesystem::path& path, const std::string& out);

// The atomsim trace to simulate for `path`: `path` itself, or, for Accel-Sim
// traces, their import, kept under the system's temporary folder by the
// files' names, sizes and times so that later runs (a sweep's points) reuse it.
std::string simulation_trace(const std::string& path);

// Writes every kernel of the atomsim trace `trace` as kernel-N.traceg in
// `dir` (kernel-N.traceg.xz when `compress`, as the tracer writes them with
// TRACE_FILE_COMPRESS=1), with the kernelslist.g that names them (tracer
// version 5, addresses listed lane by lane, at most one destination and four
// source registers).
// `binary_version` is the header's compute capability: 90 for the H100 and
// H200, as their tracer writes it; Accel-Sim's public releases read Hopper
// SASS only under Ampere's opcode map (80).
void export_traces(const std::string& trace, const std::filesystem::path& dir, unsigned binary_version = 90,
                   bool compress = false);

}  // namespace atomsim::trace::accelsim
