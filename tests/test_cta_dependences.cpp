// A load that polls a flag another CTA sets: the capture marks the values it
// waited for (tools/capture/awaited_values.cpp), and the simulation answers it
// only once a store to the word is performed at the word's slice.
#include <catch2/catch.hpp>

#include "sim_helpers.hpp"
#include "tools/capture/awaited_values.hpp"
#include "tools/capture/cta_order.hpp"
#include "traces/sass.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

constexpr std::uint64_t kFlag = 0x7f0000001000ull;
constexpr std::uint64_t kChain = 0x7f0000100000ull;

const std::vector<std::string> kFlagProgram = {
    "LDG.E R2, desc[UR4][R2.64]",              // 0: one hop of the chain
    "STG.E.STRONG.GPU desc[UR4][R6.64], R8",   // 1: the flag
    "LDG.E.STRONG.GPU R10, desc[UR4][R6.64]",  // 2: the poll
    "IADD3 R11, R10, 0x1, RZ",                 // 3
    "EXIT",                                    // 4
};

// The producer follows a chain of `hops` dependent loads, each a line of its
// own, then sets the flag to 1; any other warp reads the word at `polled`
// once, seeing 1, and uses it. With `awaits`, the trace carries both values.
std::vector<trace::WarpInst> flag_stream(bool producer, int hops, bool awaits, std::uint64_t polled = kFlag) {
  std::vector<trace::WarpInst> out;
  if (producer) {
    for (int h = 0; h < hops; ++h) {
      auto hop = record(0, 1);
      hop.address[0] = kChain + 4096ull * static_cast<std::uint64_t>(h);
      out.push_back(hop);
    }
    auto store = record(1, 1);
    store.address[0] = kFlag;
    store.value[0] = 1;
    store.value_lanes = awaits ? 1 : 0;
    out.push_back(store);
  } else {
    auto poll = record(2, 1);
    poll.address[0] = polled;
    poll.value[0] = 1;
    poll.value_lanes = awaits ? 1 : 0;
    out.push_back(poll);
    out.push_back(record(3, 1));
  }
  out.push_back(record(4, 1));
  return out;
}

// Warp 0 (CTA 0) is the producer, warp 1 (CTA 1) the poller.
std::string flag_kernel(const std::string& name, int hops, bool awaits, std::uint64_t polled = kFlag) {
  return write_kernel(name, kFlagProgram, 2, 1,
                      [&](std::uint64_t warp) { return flag_stream(warp == 0, hops, awaits, polled); });
}

std::uint64_t cta_end(const KernelRun& run, std::uint64_t cta) {
  for (const auto& span : run.ctas)
    if (span.cta == cta) return span.end;
  FAIL("CTA " << cta << " not recorded");
  return 0;
}

}  // namespace

TEST_CASE("Awaited values: a poll that saw another CTA's flag is answered once the flag's store is performed",
          "[awaited][memory]") {
  const GpuParams params = h100_with({});
  const KernelRun free_run = run_one(params, flag_kernel("flag-free", 12, false), true, false, true);
  const KernelRun waiting = run_one(params, flag_kernel("flag-waits", 12, true), true, false, true);
  const KernelRun shorter = run_one(params, flag_kernel("flag-waits-shorter", 6, true), true, false, true);
  // Without the values the poll returns at once; with them it waits for the
  // producer's dependent loads and its store: the poller ends as much later
  // as the producer stores later.
  REQUIRE(cta_end(free_run, 1) * 4 < cta_end(free_run, 0));
  REQUIRE(cta_end(waiting, 0) == cta_end(free_run, 0));
  const double producer_later = static_cast<double>(cta_end(waiting, 0)) - static_cast<double>(cta_end(shorter, 0));
  const double poller_later = static_cast<double>(cta_end(waiting, 1)) - static_cast<double>(cta_end(shorter, 1));
  REQUIRE(producer_later > 2000);
  // Within 250 cycles: the poller's shift has been the producer's plus 190
  // whatever the launch and CTA latencies (4534 against 4344, 3972 against 3782).
  REQUIRE(std::abs(poller_later - producer_later) < 250);
  // The poll's reply leaves the slice after the store's acknowledgement: the
  // poller ends no more than a round trip before the producer.
  REQUIRE(cta_end(waiting, 1) + 1500 > cta_end(waiting, 0));
  REQUIRE(total(waiting, "l2_slice", "awaiting_reads") == 1);
  REQUIRE(total(waiting, "l2_slice", "await_cycles") > 0);
  REQUIRE(total(waiting, "l2_slice", "awaits_released") == 0);
  REQUIRE(total(free_run, "l2_slice", "awaiting_reads") == 0);

  // A producer done before the poll arrives costs the poll nothing.
  const KernelRun early = run_one(params, flag_kernel("flag-early", 0, true), true, false, true);
  REQUIRE(total(early, "l2_slice", "awaits_released") == 0);
  REQUIRE(early.cycles < waiting.cycles);
}

TEST_CASE("Awaited values: a word no store of the kernel writes is released when nothing else can happen, and counted",
          "[awaited][memory][errors]") {
  const KernelRun run = run_one(h100_with({}), flag_kernel("flag-never", 2, true, kFlag + 8), true, false, true);
  REQUIRE(total(run, "l2_slice", "awaiting_reads") == 1);
  REQUIRE(total(run, "l2_slice", "awaits_released") == 1);
  REQUIRE(cta_end(run, 1) >= cta_end(run, 0));
}

TEST_CASE("Awaited values: the capture marks the polls that read another warp's store, and those stores", "[awaited][capture]") {
  const std::vector<trace::StaticInst> program = {
      trace::parse_sass_instruction("STG.E.STRONG.GPU desc[UR4][R6.64], R8", 0x00),
      trace::parse_sass_instruction("LDG.E.STRONG.GPU R10, desc[UR4][R6.64]", 0x10),
      trace::parse_sass_instruction("LDG.E R12, desc[UR4][R6.64]", 0x20),
      trace::parse_sass_instruction("STG.E desc[UR4][R2.64], R8", 0x30),
  };
  auto access = [](capture::WarpObservation& w, std::uint32_t index, std::uint32_t mask,
                   std::vector<std::pair<std::uint64_t, std::uint64_t>> lanes) {
    capture::ObservedInst e;
    e.index = index;
    e.mask = mask;
    e.operands = static_cast<std::int32_t>(w.operands.size());
    capture::LaneOperands ops;
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      ops.address[l] = lanes[l].first;
      ops.value[l] = lanes[l].second;
    }
    w.operands.push_back(ops);
    w.events.push_back(e);
  };
  std::vector<capture::WarpObservation> warps(3);
  // Warp 0 publishes flags A = 5 and B = 7, and stores elsewhere.
  access(warps[0], 0, 0b11, {{0x1000, 5}, {0x1004, 7}});
  access(warps[0], 3, 0b1, {{0x9000, 5}});
  // Warp 1 polls A twice (0, then 5), then B, seeing 9, a value no store wrote;
  // a weak load of A sees 5 but is no poll.
  access(warps[1], 1, 0b1, {{0x1000, 0}});
  access(warps[1], 1, 0b1, {{0x1000, 5}});
  access(warps[1], 1, 0b1, {{0x1004, 9}});
  access(warps[1], 2, 0b1, {{0x1000, 5}});
  // Warp 0 reading its own flag needs no waiting; warp 2 reads both.
  access(warps[0], 1, 0b1, {{0x1000, 5}});
  access(warps[2], 1, 0b11, {{0x1000, 5}, {0x1004, 7}});

  const capture::AwaitedValues marked = capture::mark_awaited_values(program, warps);
  REQUIRE(marked.awaiting_loads == 2);
  REQUIRE(marked.awaited_words == 2);
  REQUIRE(marked.storing_instructions == 1);
  REQUIRE(warps[1].operands[0].value_lanes == 0);
  REQUIRE(warps[1].operands[1].value_lanes == 1);
  REQUIRE(warps[1].operands[2].value_lanes == 0);
  REQUIRE(warps[1].operands[3].value_lanes == 0);
  REQUIRE(warps[0].operands[2].value_lanes == 0);
  REQUIRE(warps[2].operands[0].value_lanes == 0b11);
  REQUIRE(warps[0].operands[0].value_lanes == 0b11);  // the flags' store keeps its values
  REQUIRE(warps[0].operands[1].value_lanes == 0);     // the other store does not
}

TEST_CASE("CTA order: the CTAs that each drew one ticket from one counter start in ticket order", "[awaited][capture]") {
  using capture::TicketDraw;
  // Instruction 3 is each CTA's ticket; instruction 5, a later atomic on words of their own, is not a counter.
  std::vector<TicketDraw> draws = {{5, 0, 0x2000, 7}, {3, 2, 0x1000, 0}, {3, 0, 0x1000, 2}, {3, 1, 0x1000, 1},
                                   {5, 1, 0x2004, 0}, {5, 2, 0x2008, 1}};
  REQUIRE(capture::ticket_order(draws, 3) == std::vector<std::uint64_t>{2, 1, 0});
  // Not a counter: a CTA that drew twice, a CTA without a ticket, tickets from two words, a ticket drawn twice.
  REQUIRE(capture::ticket_order({{3, 0, 0x1000, 0}, {3, 0, 0x1000, 1}, {3, 1, 0x1000, 2}}, 3).empty());
  REQUIRE(capture::ticket_order({{3, 0, 0x1000, 0}, {3, 1, 0x1000, 1}}, 3).empty());
  REQUIRE(capture::ticket_order({{3, 0, 0x1000, 0}, {3, 1, 0x1004, 1}}, 2).empty());
  REQUIRE(capture::ticket_order({{3, 0, 0x1000, 4}, {3, 1, 0x1000, 4}}, 2).empty());
}

TEST_CASE("CTA order: a poller that drew the later ticket waits for the CTA that drew the earlier one, whatever their grid order",
          "[awaited][memory]") {
  // As flag_kernel, but the producer is CTA 1 and the poller CTA 0; the trace's
  // order starts the producer first. On one SM with room for one CTA at a time
  // the poller, started first in grid order, would wait for a CTA that cannot
  // start: released, and counted.
  std::vector<trace::StaticInst> parsed;
  for (std::size_t i = 0; i < kFlagProgram.size(); ++i) parsed.push_back(trace::parse_sass_instruction(kFlagProgram[i], 16 * i));
  auto stream = [](std::uint64_t warp) { return flag_stream(warp == 1, 4, true); };
  auto write = [&](const std::string& name, std::vector<std::uint64_t> order) {
    trace::KernelInfo k;
    k.name = name;
    k.grid = {2, 1, 1};
    k.block = {32, 1, 1};
    k.registers_per_thread = 32;
    k.shared_bytes = 200 * 1024;  // one CTA an SM
    k.program = parsed;
    k.cta_order = std::move(order);
    const std::string path = temp_trace(name + ".trace");
    trace::TraceWriter w(path);
    w.begin_kernel(k);
    for (std::uint64_t warp = 0; warp < 2; ++warp)
      for (const auto& inst : stream(warp)) w.append(warp, inst);
    w.end_kernel();
    w.finish();
    return path;
  };
  const GpuParams one_sm = h100_with({"gpu.sms=1"});
  const KernelRun ordered = run_one(one_sm, write("ticket-order", {1, 0}), true, false, true);
  REQUIRE(total(ordered, "l2_slice", "awaits_released") == 0);
  REQUIRE(ordered.ctas.front().cta == 1);
  const KernelRun grid = run_one(one_sm, write("grid-order", {}), true, false, true);
  REQUIRE(total(grid, "l2_slice", "awaits_released") == 1);
  REQUIRE(grid.ctas.front().cta == 0);
}
