// The shared-memory probe (workloads/latency/shared_banks.cu,
// traces/datasets/h100/latency/shared_banks.json) simulated from its own SASS.
#include <catch2/catch.hpp>

#include <map>
#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

struct Span {
  std::uint64_t begin = 0, end = 0;  // [begin, end) in pcs
  bool contains(std::uint64_t pc) const { return pc >= begin && pc < end; }
};

// The radix sort's histogram loop as shared_banks.cu times it
// (histogram_loop<between>): each warp of CTAs of 4 reads 32 keys, one
// coalesced load at a time, and makes four shared-memory accesses per key;
// then its lane 0 adds its load time to two global counters and, after the
// CTA's barrier, the CTA's 1,024 counts go to the global histogram, one RED
// per 32 (none where nothing was counted); CTAs share `copies` copies of the
// histogram and the counters. The probe's 4,352 CTAs,
// `warps_per_sm` warps an SM; keys from the 16 MB window the L2 holds or from DRAM.
// Returns the mean cycles from the clock read before a key's load to the one
// after its first use (the probe's load_to_use_cycles): the warp-cycles the
// model spends at the instructions between the two reads.
double histogram_load_to_use(GpuParams params, int between, bool from_l2, std::uint32_t warps_per_sm, std::uint32_t copies = 1) {
  const std::string function =
      "_ZN44_GLOBAL__N__15d1191b_15_shared_banks_cu_main14histogram_loopILNS_7BetweenE" + std::to_string(between) + "EEEvPKjjjPjPyj";
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/shared_banks.sass");
  const auto program = trace::parse_sass_function(listing, function);
  std::uint64_t first_load = 0;
  for (const auto& s : program)
    if (s.op == trace::OpClass::LoadGlobal) {
      first_load = s.pc;
      break;
    }
  // A trip: one pass of the loop over the keys (a backward branch around the
  // first load) or, where the compiler unrolled all 32 keys, the span from the
  // first key's exit test to where the exits go. The flush: the loop after it.
  Span trip, flush;
  for (const auto& [from, to] : branches_of(listing, function)) {
    if (to < first_load && from > first_load) trip = {to, from + 16};
    if (from < first_load && to > first_load && trip.end == 0) trip = {from, to};
  }
  REQUIRE(trip.end != 0);
  for (const auto& [from, to] : branches_of(listing, function))
    if (to < from && to >= trip.end) flush = {to, from + 16};
  REQUIRE(flush.end != 0);
  std::vector<int> key_of(program.size(), -1);  // which of a trip's keys an instruction loads
  int keys_per_trip = 0;
  for (std::size_t i = 0; i < program.size(); ++i)
    if (trip.contains(program[i].pc) && program[i].op == trace::OpClass::LoadGlobal) key_of[i] = keys_per_trip++;
  REQUIRE(32 % keys_per_trip == 0);

  if (from_l2) params.l2.start = model::L2Start::Footprint;
  const std::uint32_t ctas = 4352;
  params.sm.max_ctas = warps_per_sm / 4;
  const std::uint64_t window_words = from_l2 ? 4ull << 20 : 1ull << 32;
  const bool counted = between != 0;
  auto path = write_program(function, program, ctas, 4, [&](std::uint64_t warp) {
    std::vector<trace::WarpInst> s;
    for (int t = 0; t < 32 / keys_per_trip; ++t)
      for (std::size_t i = 0; i < program.size(); ++i) {
        if (!trip.contains(program[i].pc)) continue;
        trace::WarpInst r = record(static_cast<std::uint32_t>(i));
        if (key_of[i] >= 0)
          for (std::uint32_t lane = 0; lane < 32; ++lane) {
            const std::uint64_t key = (warp / 4) * 4096 + (t * keys_per_trip + key_of[i]) * 128 + (warp % 4) * 32 + lane;
            r.address[lane] = 0x100000000ull + 4 * (key % window_words);
          }
        s.push_back(r);
      }
    std::uint32_t counter = 0;
    for (std::size_t i = 0; i < program.size(); ++i) {  // to the flush: lane 0's counters, the barrier
      const auto& inst = program[i];
      if (inst.pc < trip.end || inst.pc >= flush.begin || inst.op == trace::OpClass::Exit) continue;
      trace::WarpInst r = record(static_cast<std::uint32_t>(i));
      if (inst.op == trace::OpClass::Red) {
        r.active_mask = 1;
        r.address[0] = 0x300000000ull + 16 * ((warp / 4) % copies) + 8 * counter++;
        r.value[0] = 1;
      }
      s.push_back(r);
    }
    for (std::uint64_t step = 0; step < 8; ++step)
      for (std::size_t i = 0; i < program.size(); ++i) {
        if (!flush.contains(program[i].pc)) continue;
        trace::WarpInst r = record(static_cast<std::uint32_t>(i));
        if (program[i].op == trace::OpClass::Red) {
          if (!counted) continue;
          for (std::uint32_t lane = 0; lane < 32; ++lane) {
            r.address[lane] = 0x200000000ull + 4096 * ((warp / 4) % copies) + 4 * (step * 128 + (warp % 4) * 32 + lane);
            r.value[lane] = 1;
          }
        }
        s.push_back(r);
      }
    for (std::size_t i = 0; i < program.size(); ++i)
      if (program[i].pc >= flush.end && program[i].op == trace::OpClass::Exit) {
        s.push_back(record(static_cast<std::uint32_t>(i)));
        break;
      }
    return s;
  });
  const KernelRun run = run_one(params, path, false, true);
  std::remove(path.c_str());
  double waited = 0;
  int clock_reads = 0;
  for (std::size_t i = 0; i < program.size(); ++i) {
    if (!trip.contains(program[i].pc)) continue;
    if (clock_reads % 2 == 1)
      for (auto c : run.instructions[i].warp_cycles) waited += static_cast<double>(c);
    clock_reads += program[i].mnemonic.rfind("CS2R", 0) == 0;
  }
  REQUIRE(clock_reads == 2 * keys_per_trip);
  return waited / (double(ctas) * 4 * 32);
}


// REDs per microsecond (at the H100's 1,980 MHz) when every warp of 64 per SM
// runs red_lines (shared_banks.cu part five) from its SASS: 32 REDs, the r-th
// onto line (w + r) % lines of lines `line_stride` apart, lane l (of the
// first `lanes`) on word l + (w % spread) * stride.
double red_lines_per_us(const GpuParams& params, std::uint32_t lanes, std::uint32_t spread, std::uint32_t stride, std::uint32_t lines,
                        std::uint32_t line_stride) {
  const std::string function = "_ZN44_GLOBAL__N__15d1191b_15_shared_banks_cu_main9red_linesEPjjjijjj";
  const std::string listing = slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/shared_banks.sass");
  const auto program = trace::parse_sass_function(listing, function);
  Span loop;  // the unrolled loop: the backward branch around the REDs
  for (const auto& [from, to] : branches_of(listing, function))
    if (to < from) {
      int reds = 0;
      for (const auto& s : program) reds += s.pc >= to && s.pc <= from && s.op == trace::OpClass::Red;
      if (reds > 0) loop = {to, from + 16};
    }
  REQUIRE(loop.end != 0);
  int reds_per_trip = 0;
  for (const auto& s : program) reds_per_trip += loop.contains(s.pc) && s.op == trace::OpClass::Red;
  REQUIRE(32 % reds_per_trip == 0);
  const std::uint32_t ctas = 132 * 16, lane_mask = lanes == 32 ? 0xFFFFFFFFu : (1u << lanes) - 1;
  auto path = write_program(function, program, ctas, 4, [&](std::uint64_t warp) {
    std::vector<trace::WarpInst> s;
    std::uint32_t round = 0;
    for (int t = 0; t < 32 / reds_per_trip; ++t)
      for (std::size_t i = 0; i < program.size(); ++i) {
        if (!loop.contains(program[i].pc)) continue;
        trace::WarpInst r = record(static_cast<std::uint32_t>(i), lane_mask);
        if (program[i].op == trace::OpClass::Red) {
          const std::uint64_t line = (warp + round++) % lines;
          for (std::uint32_t lane = 0; lane < lanes; ++lane) {
            r.address[lane] = 0x100000000ull + line * line_stride * 128 + 4 * (lane + (warp % spread) * stride);
            r.value[lane] = 1;
          }
        }
        s.push_back(r);
      }
    for (std::size_t i = 0; i < program.size(); ++i)
      if (program[i].pc >= loop.end && program[i].op == trace::OpClass::Exit) {
        s.push_back(record(static_cast<std::uint32_t>(i), lane_mask));
        break;
      }
    return s;
  });
  const KernelRun run = run_one(params, path, false);
  std::remove(path.c_str());
  return double(ctas) * 4 * 32 / (double(run.cycles) / 1980.0);
}
}  // namespace

// Every point of the histogram loop against the model:
// tests/atomsim_tests "[shared-loop-table]" (about a minute).
TEST_CASE("Shared memory: the radix sort's histogram loop, every point simulated", "[.][shared-loop-table]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/shared_banks.json"));
  const auto params = h100_with({});
  const std::map<std::string, int> between = {{"nothing", 0}, {"atomic_digits", 1}, {"atomic_conflict_free", 2},
                                              {"atomic_key_free", 3}, {"store_digits", 4}};
  std::printf("| between loads | histogram copies | source | warps/SM | H100 load-to-use | model | error |\n|---|---|---|---|---|---|---|\n");
  for (const auto& p : measured["sort_histogram"]["points"]) {
    const auto b = between.find(p["between"].get<std::string>());
    if (b == between.end()) continue;
    const int warps = p["warps_per_sm"];
    const double on_h100 = p["load_to_use_cycles"], simulated = histogram_load_to_use(params, b->second, p["source"] == "l2", warps);
    std::printf("| %s | 1 | %s | %d | %.0f | %.0f | %+.1f%% |\n", b->first.c_str(), p["source"].get<std::string>().c_str(), warps, on_h100,
                simulated, 100 * (simulated / on_h100 - 1));
  }
  for (const auto& p : measured["flush_copies"]) {
    const int warps = p["warps_per_sm"], copies = p["copies"];
    if (copies == 1) continue;  // the atomic_digits rows above
    const double on_h100 = p["load_to_use_cycles"], simulated = histogram_load_to_use(params, 1, p["source"] == "l2", warps, copies);
    std::printf("| atomic_digits | %d | %s | %d | %.0f | %.0f | %+.1f%% |\n", copies, p["source"].get<std::string>().c_str(), warps,
                on_h100, simulated, 100 * (simulated / on_h100 - 1));
  }
}

// Part five against the model: tests/atomsim_tests "[red-lines-table]".
TEST_CASE("L2: REDs crowding onto a few lines, every point of shared_banks.json simulated", "[.][red-lines-table]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/shared_banks.json"));
  const auto params = h100_with({});
  const std::map<std::string, std::array<std::uint32_t, 3>> shapes = {
      {"line", {32, 1, 0}}, {"sector", {8, 1, 0}}, {"word", {1, 1, 0}}, {"words_of_a_sector", {1, 8, 1}}, {"sectors_of_a_line", {1, 4, 8}}};
  std::printf("| words | lines | lines apart | H100 REDs/us | model | error |\n|---|---|---|---|---|---|\n");
  for (const auto& p : measured["red_lines"]) {
    const auto& shape = shapes.at(p["words"].get<std::string>());
    const double on_h100 = p["requests_per_us"],
                 simulated = red_lines_per_us(params, shape[0], shape[1], shape[2], p["lines"], p["line_stride"]);
    std::printf("| %s | %d | %d | %.0f | %.0f | %+.1f%% |\n", p["words"].get<std::string>().c_str(), p["lines"].get<int>(),
                p["line_stride"].get<int>(), on_h100, simulated, 100 * (simulated / on_h100 - 1));
  }
}

TEST_CASE("Shared memory: the histogram loop without a flush and REDs spread over 32 lines take the H100's time", "[models][memory]") {
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/shared_banks.json"));
  const auto params = h100_with({});
  const auto within = [](double simulated, double on_h100, double tolerance) {
    INFO("simulated " << simulated << " against " << on_h100 << " measured");
    CHECK(std::abs(simulated / on_h100 - 1) <= tolerance);
  };
  // Loads from the L2 with 32 warps an SM, only lane 0's counters as atomics:
  // 15%, as loads wait behind the atomics their entry slice passes on to the
  // other partition (docs/notes/2026-11-23-atomics-in-the-l2.md, "SMs that crowd one slice, served in
  // turn": +11% since the slices take the two partitions' atomics in turn) and
  // since requests enter a slice at a flit an L2 clock ("The crossbar into a
  // slice at a flit an L2 clock": +14.4%); 17% since an SM's updates of one
  // word leave 3.5 cycles apart (every warp's lane 0 adds to the same two
  // counters: +16.3%, "One SM's updates of one word").
  for (const auto& p : measured["sort_histogram"]["points"])
    if (p["between"] == "nothing" && p["source"] == "l2" && p["warps_per_sm"] == 32)
      within(histogram_load_to_use(params, 0, true, 32), p["load_to_use_cycles"], 0.17);
  // One-word REDs from every warp onto 32 lines: the slices' atomic rate.
  for (const auto& p : measured["red_lines"])
    if (p["words"] == "word" && p["lines"] == 32 && p["line_stride"] == 1)
      within(red_lines_per_us(params, 1, 1, 0, 32, 1), p["requests_per_us"], 0.15);
}

TEST_CASE("Shared memory: a conflicted load's result comes two cycles a wavefront later (part six)", "[models][memory]") {
  // One warp's dependent loads, the loop of shared_banks.sass's dependent_loads, with
  // the wavefronts a counters pass would measure of k words in one bank.
  const auto measured = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/shared_banks.json"));
  const auto params = h100_with({"gpu.sms=1", "l2.slices=2", "l2.partitions=1"});
  const std::string function = probe_function("shared_banks.sass", "dependent_loadsEPKjiPjPx");
  // The timed loop, 0x1d0-0x210: LEA of the loaded index, LDS, the count and the branch back.
  std::vector<trace::StaticInst> body;
  for (const auto& s : probe_program("shared_banks.sass", "dependent_loadsEPKjiPjPx"))
    if (s.pc >= 0x1d0 && s.pc <= 0x210) body.push_back(s);
  REQUIRE(body.size() == 5);
  REQUIRE(trace::opcode_base(body[2].mnemonic) == "LDS");
  auto step_cycles = [&](int ways) {
    const std::string counters = counters_with_costs(function, body, 0, static_cast<float>(ways));
    auto cycles = [&](int trips) {
      auto path = write_program(function, body, 1, 1, [&](std::uint64_t) {
        std::vector<trace::WarpInst> s;
        for (int i = 0; i < trips; ++i)
          for (std::uint32_t k = 0; k < body.size(); ++k) s.push_back(record(k));
        return s;
      });
      KernelRun run = run_one(params, path, true, false, false, counters);
      std::remove(path.c_str());
      return static_cast<double>(run.cycles);
    };
    const double step = (cycles(512) - cycles(256)) / 256;
    std::remove(counters.c_str());
    return step;
  };
  const double base = step_cycles(1);
  for (const auto& p : measured["dependent_loads"]) {
    if (p["pattern"] != "bank_ways" && p["pattern"] != "conflict_free") continue;
    const int ways = p["k"];
    const double added = step_cycles(ways) - base;
    const double added_h100 = p["cycles_per_step"].get<double>() - measured["dependent_loads"][0]["cycles_per_step"].get<double>();
    INFO(ways << " words in a bank: " << added << " cycles more a step against " << added_h100);
    CHECK(std::abs(added - added_h100) <= 1.5);
  }
}
