#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>

#include "sim_helpers.hpp"
#include "traces/accelsim.hpp"
#include "traces/reader.hpp"
#include "traces/xz_text.hpp"
#include "sim/run.hpp"
#include "workloads/microbench/generator.hpp"

using namespace atomsim;
using namespace atomsim::testing;
namespace fs = std::filesystem;

namespace {

const fs::path kHandMade = fs::path(ATOMSIM_SOURCE_DIR) / "tests/data/accelsim/kernelslist.g";

std::vector<trace::WarpInst> records(trace::TraceReader& reader, std::uint64_t warp) {
  std::vector<trace::WarpInst> out;
  trace::WarpStream stream = reader.open_warp(0, warp);
  for (trace::WarpInst inst; stream.next(inst);) out.push_back(inst);
  return out;
}

std::string import_error(const std::string& text) {
  const fs::path file = temp_trace("bad-kernel-1.traceg");
  std::ofstream(file) << text;
  try {
    trace::accelsim::import_traces(file, temp_trace("bad.trace"));
  } catch (const trace::TraceError& e) {
    return std::string(e.what()).substr(file.string().size());
  }
  return "no error";
}

// A baseline microbenchmark trace of `blocks` CTAs of 4 warps, 2 iterations.
std::string baseline_trace(const std::string& name, std::uint32_t blocks) {
  workloads::MicrobenchParams p;
  p.variant = workloads::MicrobenchVariant::Baseline;
  p.blocks = blocks;
  p.warps_per_block = 4;
  p.iterations = 2;
  const std::string path = temp_trace(name);
  write_microbench_trace({p}, path);
  return path;
}

}  // namespace

// tests/data/accelsim/kernel-1.traceg: two CTAs of two warps, addresses in all
// three of the tracer's encodings, a warp that sends no records.
TEST_CASE("Accel-Sim import: a tracer's kernel becomes a trace of the same records", "[traces][accelsim]") {
  const std::string out = temp_trace("accelsim-import.trace");
  const auto summary = trace::accelsim::import_traces(kHandMade, out);
  REQUIRE(summary.kernels == 1);
  REQUIRE(summary.warp_instructions == 11);
  trace::TraceReader reader(out);
  const trace::KernelInfo& k = reader.kernel(0);
  REQUIRE(k.name == "_Z7scatterPfPKiPKf");
  REQUIRE(k.grid.x == 2);
  REQUIRE(k.block.x == 64);
  REQUIRE(k.registers_per_thread == 16);
  REQUIRE(k.program.size() == 5);  // one instruction per pc, in pc order
  REQUIRE(k.program[1].mnemonic == "IMAD.WIDE");
  REQUIRE(k.program[1].num_dst == 1);
  REQUIRE(k.program[1].dst[0] == 2);
  REQUIRE(k.program[1].num_src == 1);  // R255 (RZ) is no register
  REQUIRE(k.program[3].op == trace::OpClass::Red);
  REQUIRE(k.program[3].atomic_type == trace::DataType::F32);
  REQUIRE_FALSE(k.program[3].control.present);

  const auto warp0 = records(reader, 0);
  REQUIRE(warp0.size() == 5);
  REQUIRE(warp0[2].address[31] == 0x7f2000000000 + 31 * 4);  // base and stride
  REQUIRE(warp0[3].active_mask == 0xffff);
  REQUIRE(warp0[3].address[0] == 0x7f3000000100);  // base and deltas
  REQUIRE(warp0[3].address[1] == 0x7f3000000100);
  REQUIRE(warp0[3].address[3] == 0x7f3000000108);
  REQUIRE(warp0[3].address[4] == 0x7f3000000100);
  REQUIRE(warp0[3].value[0] == 0);  // Accel-Sim records carry no operands: the atomics add zero
  const auto warp1 = records(reader, 1);
  REQUIRE(warp1[2].address[1] == 0x7f20000000c0);  // listed lane by lane
  REQUIRE(records(reader, 2).empty());
  REQUIRE(records(reader, 3).size() == 2);
}

TEST_CASE("Accel-Sim export and import again simulate alike", "[traces][accelsim]") {
  const std::string original = baseline_trace("accelsim-original.trace", 132);
  const fs::path dir = temp_trace("accelsim-exported");
  fs::remove_all(dir);
  trace::accelsim::export_traces(original, dir);
  REQUIRE(fs::exists(dir / "kernelslist.g"));
  const std::string back = temp_trace("accelsim-back.trace");
  trace::accelsim::import_traces(dir / "kernelslist.g", back);

  trace::TraceReader a(original), b(back);
  const trace::KernelInfo &ka = a.kernel(0), &kb = b.kernel(0);
  REQUIRE(ka.total_warps() == kb.total_warps());
  for (std::uint64_t w = 0; w < ka.total_warps(); w += 37) {
    const auto ra = records(a, w), rb = records(b, w);
    REQUIRE(ra.size() == rb.size());
    for (std::size_t i = 0; i < ra.size(); ++i) {
      const trace::StaticInst &sa = ka.program[ra[i].index], &sb = kb.program[rb[i].index];
      REQUIRE(sa.pc == sb.pc);
      REQUIRE(sa.mnemonic == sb.mnemonic);
      REQUIRE(ra[i].active_mask == rb[i].active_mask);
      if (trace::is_global_memory(sa.op))
        for (std::uint32_t m = ra[i].active_mask; m; m &= m - 1)
          REQUIRE(ra[i].address[std::countr_zero(m)] == rb[i].address[std::countr_zero(m)]);
    }
  }
  // What the round trip loses (control bits, predicate registers, operands)
  // moves the simulated time by little; both take their dependences from registers.
  const GpuParams params = h100_with({"sm.dependences=registers"});
  const KernelRun ra = run_one(params, original), rb = run_one(params, back);
  REQUIRE(rb.cycles == Approx(ra.cycles).epsilon(0.02));
  // The simulator reads the Accel-Sim files themselves as well.
  REQUIRE(simulate_trace(params, (dir / "kernelslist.g").string(), {}).front().cycles == rb.cycles);
}

// Accel-Sim's parser asserts a width on every load, store and atomic, shared
// ones and those whose lanes are all off included.
TEST_CASE("Accel-Sim export: every memory instruction has a width, shared ones a word per lane", "[traces][accelsim]") {
  const fs::path kernel = temp_trace("widths-kernel-1.traceg");
  std::ofstream(kernel) << "-kernel name = k\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 5\n\n#traces format = PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width\n\n"
                           "#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = 4\n"
                           "0000 ffffffff 1 R4 LDS.64 1 R2 0 0\n"
                           "0010 00000000 1 R6 LDG.E 1 R2 0 0\n"
                           "0020 00000005 0 STS 2 R2 R4 0 0\n"
                           "0030 ffffffff 0 EXIT 0 0 0\n\n#END_TB\n";
  const std::string imported = temp_trace("widths.trace");
  trace::accelsim::import_traces(kernel, imported);
  const fs::path dir = temp_trace("widths-exported");
  fs::remove_all(dir);
  trace::accelsim::export_traces(imported, dir);
  std::vector<std::string> lines;
  {
    std::ifstream in(dir / "kernel-1.traceg");
    for (std::string line; std::getline(in, line);)
      if (line.size() > 4 && std::isxdigit(static_cast<unsigned char>(line[0])) && line[4] == ' ') lines.push_back(line);
  }
  REQUIRE(lines.size() == 4);
  std::string lds = " LDS.64 1 R2 8 0";
  for (int lane = 0; lane < 32; ++lane) lds += fmt::format(" 0x{:016x}", lane * 8);
  REQUIRE(lines[0] == "0000 ffffffff 1 R4" + lds + " 0");
  REQUIRE(lines[1] == "0010 00000000 1 R6 LDG.E 1 R2 4 0 0");
  REQUIRE(lines[2] == "0020 00000005 0 STS 2 R2 R4 4 0 0x0000000000000000 0x0000000000000008 0");
  // and it reads back as the records it was made from
  const std::string back = temp_trace("widths-back.trace");
  trace::accelsim::import_traces(dir / "kernelslist.g", back);
  trace::TraceReader a(imported), b(back);
  REQUIRE(records(a, 0).size() == records(b, 0).size());
  REQUIRE(records(b, 0)[2].active_mask == 5);
}

TEST_CASE("Accel-Sim traces compressed with xz read as the plain ones", "[traces][accelsim]") {
  const std::string original = baseline_trace("accelsim-xz-original.trace", 66);
  const fs::path plain = temp_trace("accelsim-xz-plain"), xz = temp_trace("accelsim-xz-compressed");
  fs::remove_all(plain);
  fs::remove_all(xz);
  trace::accelsim::export_traces(original, plain);
  trace::accelsim::export_traces(original, xz, 90, true);
  REQUIRE(fs::exists(xz / "kernel-1.traceg.xz"));
  REQUIRE_FALSE(fs::exists(xz / "kernel-1.traceg"));
  REQUIRE(fs::file_size(xz / "kernel-1.traceg.xz") * 4 < fs::file_size(plain / "kernel-1.traceg"));
  // The decompressed text is the plain export's, line for line.
  trace::TextLines a(plain / "kernel-1.traceg"), b(xz / "kernel-1.traceg.xz");
  std::uint64_t lines = 0;
  for (std::string la, lb; a.next(la);) {
    REQUIRE(b.next(lb));
    REQUIRE(la == lb);
    ++lines;
  }
  std::string after;
  REQUIRE_FALSE(b.next(after));
  REQUIRE(lines > 1000);
  const GpuParams params = h100_with({"sm.dependences=registers"});
  REQUIRE(simulate_trace(params, (xz / "kernelslist.g").string(), {}).front().cycles ==
          simulate_trace(params, (plain / "kernelslist.g").string(), {}).front().cycles);
  // A kernel file named alone, as the tracer's post-processing names it.
  REQUIRE(trace::accelsim::is_accelsim_path(xz / "kernel-1.traceg.xz"));
  REQUIRE(trace::accelsim::import_traces(xz / "kernel-1.traceg.xz", temp_trace("accelsim-xz-one.trace")).kernels == 1);
}

TEST_CASE("Accel-Sim import: compressed data that is cut short, corrupt or not xz is one line naming the file", "[traces][accelsim][errors]") {
  const fs::path good = temp_trace("accelsim-good-kernel-1.traceg.xz");
  {
    trace::TextFileWriter out(good);
    std::string all;
    trace::TextLines lines(kHandMade.parent_path() / "kernel-1.traceg");
    for (std::string line; lines.next(line);) all += line + "\n";
    out.write(all);
    out.commit();
  }
  REQUIRE(trace::accelsim::import_traces(good, temp_trace("accelsim-good.trace")).warp_instructions == 11);
  std::ifstream in(good, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto error = [](const std::string& name, const std::string& content) {
    const fs::path file = temp_trace(name);
    std::ofstream(file, std::ios::binary) << content;
    try {
      trace::accelsim::import_traces(file, temp_trace("accelsim-bad.trace"));
    } catch (const trace::TraceError& e) {
      REQUIRE(std::string(e.what()).starts_with(file.string() + ": "));
      return std::string(e.what()).substr(file.string().size());
    }
    return std::string("no error");
  };
  REQUIRE(error("cut-kernel-1.traceg.xz", bytes.substr(0, bytes.size() / 2)).ends_with("the compressed data ends early"));
  std::string corrupt = bytes;
  for (std::size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 8; ++i) corrupt[i] = static_cast<char>(~corrupt[i]);
  REQUIRE(error("corrupt-kernel-1.traceg.xz", corrupt).ends_with("the compressed data is corrupt"));
  REQUIRE(error("text-kernel-1.traceg.xz", "-kernel name = k\n") == ": byte 12 of the compressed file: not in the xz format");
}

TEST_CASE("Accel-Sim import: a malformed file is one line naming its line and field", "[traces][accelsim][errors]") {
  const std::string header = "-kernel name = k\n-grid dim = (1,1,1)\n-block dim = (32,1,1)\n-accelsim tracer version = 5\n#\n";
  REQUIRE(import_error("-kernel name = k\n") == ":1: grid dim: missing from the header");
  REQUIRE(import_error(header + "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n0000 fffffff 1 X1 MOV 0 0 0\n#END_TB\n") ==
          ":10: reg_dests: 'X1' is not a general register (R<n>)");
  REQUIRE(import_error(header + "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n0000 ffffffff 0 EXIT 0 0 0\n#END_TB\n") ==
          ":11: insts: the warp ended 1 records short");
  REQUIRE(import_error(header + "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n0000 00000003 1 R1 LDG.E 1 R2 4 1 0x100\n#END_TB\n") ==
          ":10: stride: missing (the record ends early)");
  REQUIRE(import_error(header + "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n0000 00000003 1 R1 LDG.E 1 R2 4 7 0x100\n#END_TB\n") ==
          ":10: address mode: 7 is not 0 (list), 1 (base and stride) or 2 (base and deltas)");
  REQUIRE(import_error(header + "#BEGIN_TB\nthread block = 1,0,0\n") == ":7: thread block: (1,0,0) is outside the grid");
  REQUIRE(import_error(header + "#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\nzz ffffffff 0 EXIT 0 0 0\n#END_TB\n") ==
          ":10: pc: 'zz' is not a hexadecimal number");
  REQUIRE(import_error(header + "#BEGIN_TB\nthread block = 0,0,0\n") == ":7: #END_TB: the file ends inside a thread block");
  REQUIRE(import_error("-grid dim = (100000000,1,1)\n-block dim = (1024,1,1)\n#\n") ==
          ":3: grid dim: 3200000000 warps is more than an import takes (4194304)");
  // No half-written trace is left behind.
  REQUIRE_FALSE(fs::exists(temp_trace("bad.trace")));
}

// A capture whose trace is kept as Accel-Sim traces compares as the same
// capture with its own trace does, but for what the format cannot carry.
TEST_CASE("Accel-Sim traces in a capture folder are compared, and run in a sweep", "[traces][accelsim][compare]") {
  const fs::path capture = fs::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h200/corpus/xla-scatter-add-uniform";
  const fs::path copy = temp_trace("accelsim-capture");
  fs::remove_all(copy);
  fs::create_directories(copy / "trace");
  for (const auto& entry : fs::recursive_directory_iterator(capture)) {
    if (!entry.is_regular_file() || entry.path().filename() == "trace.atr") continue;
    fs::copy_file(entry.path(), copy / fs::relative(entry.path(), capture));
  }
  trace::accelsim::export_traces((capture / "trace/trace.atr").string(), copy / "trace");
  const auto original = run_command(std::string(ATOMSIM_BINARY) + " compare " + capture.string() + " --config h100 -q");
  const auto exported = run_command(std::string(ATOMSIM_BINARY) + " compare " + copy.string() + " --config h100 -q");
  INFO(exported.out + exported.err);
  REQUIRE(original.code == 0);
  REQUIRE(exported.code == 0);
  REQUIRE(exported.out.find("summary: cycles mean |error|") != std::string::npos);

  const fs::path spec = temp_trace("accelsim-sweep.toml");
  std::ofstream(spec) << "[sweep]\nname = \"accelsim\"\nconfigs = [\"h100\"]\n\n[axes]\n\"l2.slices\" = [80, 94]\n\n"
                      << "[[trace]]\nname = \"xla\"\npath = \"" << (copy / "trace/kernelslist.g").string() << "\"\n";
  const fs::path results = temp_trace("accelsim-sweep");
  fs::remove_all(results);
  const auto swept = run_command(std::string(ATOMSIM_BINARY) + " sweep run " + spec.string() + " --out " +
                                 results.string() + " -j 2");
  INFO(swept.out + swept.err);
  REQUIRE(swept.code == 0);
  std::size_t points = 0;
  for (const auto& e : fs::directory_iterator(results / "points")) points += e.path().extension() == ".json";
  REQUIRE(points == 2);
}
