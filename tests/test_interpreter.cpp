#include <catch2/catch.hpp>

#include <bit>
#include <cstring>

#include "traces/sass.hpp"
#include "workloads/sass/interpreter.hpp"

using namespace atomsim;

namespace {

// A listing in cuobjdump's layout, as the generator reads it.
std::string listing(const std::vector<std::string>& lines) {
  std::string out = "\t\tFunction : test_kernel\n";
  char pc[16];
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::snprintf(pc, sizeof pc, "%04zx", i * 16);
    out += std::string("        /*") + pc + "*/                   " + lines[i] + " ;\n";
  }
  return out;
}

std::vector<trace::WarpInst> run(const std::vector<std::string>& lines, std::vector<std::uint8_t> parameters = {}) {
  std::vector<std::string> text;
  auto program = trace::parse_sass_function(listing(lines), "test_kernel", &text);
  sass::Interpreter interpreter(program, text);
  sass::LaunchConfig launch;
  launch.grid = {1, 1, 1};
  launch.block = {32, 1, 1};
  launch.parameters = std::move(parameters);
  std::vector<trace::WarpInst> out;
  interpreter.run_warp(launch, 0, 0, [&](const trace::WarpInst& w) { out.push_back(w); });
  return out;
}

}  // namespace

TEST_CASE("SASS interpreter: a divergent branch runs the taken lanes first and reconverges at BSYNC", "[interpreter]") {
  // Even lanes skip the reduction; odd lanes add their lane id to [R2 + 4*lane].
  auto trace = run({
      "S2R R0, SR_TID.X",                       // 0
      "LOP3.LUT R1, R0, 0x1, RZ, 0xc0, !PT",    // 1: R1 = lane & 1
      "ISETP.NE.AND P0, PT, R1, RZ, PT",        // 2: P0 = odd
      "MOV R2, 0x1000",                         // 3
      "MOV R3, RZ",                             // 4
      "IMAD.WIDE.U32 R4, R0, 0x4, R2",          // 5: address
      "BSSY B0, 0x90",                          // 6
      "@!P0 BRA 0x90",                          // 7: even lanes jump to the BSYNC
      "REDG.E.ADD.STRONG.GPU desc[UR4][R4.64], R0",  // 8
      "BSYNC B0",                               // 9
      "EXIT",                                   // 10
  });
  std::vector<std::uint32_t> pcs;
  for (const auto& w : trace) pcs.push_back(w.index);
  // The even lanes (taken) reach BSYNC first and wait; the odd lanes run the
  // reduction, then BSYNC again: two BSYNC records, as the H100 counts them.
  REQUIRE(pcs == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 9, 8, 9, 10});
  REQUIRE(trace[8].active_mask == 0x55555555u);
  const auto& red = trace[9];
  REQUIRE(red.active_mask == 0xAAAAAAAAu);
  REQUIRE(red.address[1] == 0x1004);
  REQUIRE(red.address[31] == 0x1000 + 4 * 31);
  REQUIRE(red.value[31] == 31);
  REQUIRE(trace[11].active_mask == 0xFFFFFFFFu);
}

TEST_CASE("SASS interpreter: integer, float and warp-wide operations", "[interpreter]") {
  std::vector<std::uint8_t> params(8);
  std::uint32_t divisor = 7, dividend = 100;
  std::memcpy(params.data(), &dividend, 4);
  std::memcpy(params.data() + 4, &divisor, 4);
  auto trace = run({
      "S2R R0, SR_TID.X",                              // 0
      "LDC R1, c[0x0][0x210]",                         // 1: 100
      "ULDC UR4, c[0x0][0x214]",                       // 2: 7 (uniform)
      "IMAD.HI.U32 R2, R1, 0x80000000, RZ",            // 3: (100 * 2^31) >> 32 = 50
      "SHF.R.U32.HI R3, RZ, 0x2, R1",                  // 4: 100 >> 2 = 25
      "I2FP.F32.U32 R4, R0",                           // 5: float(lane)
      "FFMA R5, R4, 2, R4",                            // 6: 3 * lane
      "SHFL.DOWN PT, R6, R0, 0x10, 0x1f",              // 7: lane + 16, own value above 15
      "MATCH.ANY R7, R1",                              // 8: all lanes hold 100
      "VOTE.ANY R8, PT, PT",                           // 9: active mask
      "POPC R9, R8",                                   // 10: 32
      "HFMA2.MMA R10, -RZ, RZ, 1.625, 0",              // 11: 0x3e800000 = 0.25f
      "MOV R12, 0x2000",                               // 12
      "MOV R13, RZ",                                   // 13
      "REDG.E.ADD.STRONG.GPU desc[UR4][R12.64], R2",   // 14
      "REDG.E.ADD.STRONG.GPU desc[UR4][R12.64+0x4], R3",  // 15
      "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR4][R12.64+0x8], R5",  // 16
      "REDG.E.ADD.STRONG.GPU desc[UR4][R12.64+0xc], R6",  // 17
      "REDG.E.ADD.STRONG.GPU desc[UR4][R12.64+0x10], R7",  // 18
      "REDG.E.ADD.STRONG.GPU desc[UR4][R12.64+0x14], R9",  // 19
      "REDG.E.ADD.STRONG.GPU desc[UR4][R12.64+0x18], R10",  // 20
      "EXIT",
  }, params);
  REQUIRE(trace.size() == 22);
  REQUIRE(trace[14].value[3] == 50);
  REQUIRE(trace[15].value[3] == 25);
  REQUIRE(std::bit_cast<float>(static_cast<std::uint32_t>(trace[16].value[5])) == 15.0f);
  REQUIRE(trace[17].value[3] == 19);
  REQUIRE(trace[17].value[20] == 20);
  REQUIRE(trace[18].value[0] == 0xFFFFFFFFu);
  REQUIRE(trace[19].value[9] == 32);
  REQUIRE(trace[20].value[0] == 0x3e800000u);
  REQUIRE(trace[16].address[0] == 0x2008);
}

TEST_CASE("SASS interpreter: unsupported instructions are reported, not guessed", "[interpreter][errors]") {
  REQUIRE_THROWS_WITH(run({"DMMA.8x8x4 R0, R2, R4, R0", "EXIT"}), Catch::Contains("unsupported instruction") && Catch::Contains("DMMA"));
}
