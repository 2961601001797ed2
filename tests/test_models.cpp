#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <fstream>
#include <functional>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "sim_helpers.hpp"
#include "models/dispatch/cta_dispatcher.hpp"
#include "models/dram/dram.hpp"
#include "models/interconnect/crossbar.hpp"
#include "models/l1/l1.hpp"
#include "models/l2/l2_slice.hpp"
#include "models/mio/mio.hpp"
#include "models/sm/scheduler.hpp"
#include "traces/sass.hpp"

using namespace atomsim;
using namespace atomsim::model;
using testing::Sink;
using testing::Source;

namespace {

std::vector<Cycle> arrival_cycles(const auto& received) {
  std::vector<Cycle> out;
  for (const auto& [t, m] : received) out.push_back(t);
  return out;
}

std::uint64_t f32(float f) { return std::bit_cast<std::uint32_t>(f); }

MemPacket packet(MemPacket::Kind kind, std::uint64_t line, std::uint8_t sectors = 1) {
  MemPacket p;
  p.kind = kind;
  p.line = line;
  p.sectors = sectors;
  p.sector_mask = static_cast<std::uint8_t>((1u << sectors) - 1);  // the line's first sectors, written whole
  return p;
}

// A one-lane integer add from `sm` to the word at `line`.
MemPacket one_lane_reduction(LaneOpPool& pool, std::uint64_t line, std::uint16_t sm) {
  MemPacket r = packet(MemPacket::Kind::Reduction, line);
  r.source = sm;
  r.atomic_op = trace::AtomicOp::Add;
  r.atomic_type = trace::DataType::U32;
  r.ops = pool.acquire(0);
  pool.ops(r.ops)[0] = LaneOp{line, 1, 1};
  r.op_count = 1;
  return r;
}

// One L2 slice (index 0) with a DRAM behind it, fed by a source and replying
// into a sink; build it after reset_simulation_context().
struct SliceBench {
  explicit SliceBench(const L2Params& p, const DramParams& d = DramParams{1, 128.0, 20, 8, 256})
      : map(p.address_map()), slice("slice", p, 0, map, pool, stats), dram("dram", d, 1, stats) {
    source.out.bind(slice.requests(), 1);
    slice.replies().bind(sink.in, 1);
    slice.to_dram().bind(dram.request(0), 1);
    dram.reply(0).bind(slice.from_dram(), 1);
  }
  StatRegistry stats;
  AddressMap map;
  LaneOpPool pool{1};
  L2Slice slice;
  Dram dram;
  Source<MemPacket> source{"source"};
  Sink<MemPacket> sink{"sink", 1024};
};

// An L1 of `p` over four slices' address map, fed by a warp source and a
// kernel-end source, its requests and completions collected, replies fed in.
struct L1Bench {
  explicit L1Bench(const L1Params& p) : map(slices4()), l1("l1", p, 0, 1, map, pool, stats) {
    warps.out.bind(l1.lg_queue(0), 1);
    end.out.bind(l1.kernel_end(), 1);
    l1.to_l2().bind(to_l2.in, 1);
    l1.to_sm().bind(to_sm.in, 1);
    replies.out.bind(l1.from_l2(), 1);
  }
  static AddressMap slices4() {
    L2Params l2;
    l2.slices = 4;
    return AddressMap(l2.address_map());
  }
  StatRegistry stats;
  AddressMap map;
  LaneOpPool pool{1};
  L1 l1;
  Source<LsuOp> warps{"warps"};
  Source<KernelEnd> end{"end"};
  Sink<MemPacket> to_l2{"to_l2", 1024};
  Sink<Completion> to_sm{"to_sm", 64};
  Source<MemPacket> replies{"replies"};
};

// Cycles from the first reply to the last of `count` requests sent at once to
// a slice holding line 0x1000; `make(pool, i)` builds the i-th.
Cycle reply_spread(const L2Params& p, int count, const std::function<MemPacket(LaneOpPool&, int)>& make) {
  reset_simulation_context();
  SliceBench b(p);
  b.slice.preload(0x1000);
  for (int i = 0; i < count; ++i) b.source.schedule(0, make(b.pool, i));
  b.source.start();
  sc_core::sc_start();
  const std::vector<Cycle> t = arrival_cycles(b.sink.received);
  REQUIRE(t.size() == static_cast<std::size_t>(count));
  return t.back() - t.front();
}

}  // namespace

// Many inputs crowding one output that drains slowly (one atomic slice every
// SM sends to): each input waits its turn, none is served ahead of the rest.
TEST_CASE("crossbar: inputs crowding one output take turns", "[models][crossbar]") {
  reset_simulation_context();
  StatRegistry stats;
  constexpr std::uint32_t kInputs = 66, kPerInput = 20;
  CrossbarParams p{10, 4, 8, 1.0, 1.0};
  Crossbar xbar("xbar", p, kInputs, 1, stats);
  std::vector<std::unique_ptr<Source<MemPacket>>> sources;
  Sink<MemPacket> sink("sink", 4, 7);  // one packet every 7 cycles
  xbar.output(0).bind(sink.in, p.latency);
  for (std::uint32_t i = 0; i < kInputs; ++i) {
    sources.push_back(std::make_unique<Source<MemPacket>>(("source" + std::to_string(i)).c_str()));
    sources.back()->out.bind(xbar.input(i), 1);
    for (std::uint32_t k = 0; k < kPerInput; ++k) {
      MemPacket m = packet(MemPacket::Kind::Write, 128u * k);
      m.source = static_cast<std::uint16_t>(i);
      sources.back()->schedule(0, m);
    }
    sources.back()->start();
  }
  sc_core::sc_start();
  REQUIRE(sink.received.size() == kInputs * kPerInput);
  // Each input's last packet: an input served as often as the others finishes
  // with the last ones, within a round of every input.
  std::vector<std::size_t> last(kInputs);
  for (std::size_t n = 0; n < sink.received.size(); ++n) last[sink.received[n].second.source] = n;
  const auto [first_done, last_done] = std::minmax_element(last.begin(), last.end());
  CHECK(*last_done - *first_done <= 2 * kInputs);
  CHECK(*first_done >= (kPerInput - 2) * kInputs);
}

// Two destinations behind one port (an LTC's two slices on the link between
// the partitions) share its flits; apart, each has its own.
TEST_CASE("crossbar: outputs that share a link share its bandwidth", "[models][crossbar]") {
  auto last_arrival = [](std::uint32_t outputs_per_link) {
    reset_simulation_context();
    StatRegistry stats;
    CrossbarParams p{10, 64, 64, 1.0, 1.0, outputs_per_link};
    Crossbar xbar("xbar", p, 2, 2, stats);
    Source<MemPacket> a("a"), b("b");
    Sink<MemPacket> to0("to0", 64), to1("to1", 64);
    a.out.bind(xbar.input(0), 1);
    b.out.bind(xbar.input(1), 1);
    xbar.output(0).bind(to0.in, p.latency);
    xbar.output(1).bind(to1.in, p.latency);
    for (int k = 0; k < 20; ++k) {
      MemPacket m = packet(MemPacket::Kind::Read, 128u * k);
      m.destination = 0;
      a.schedule(0, m);
      m.destination = 1;
      b.schedule(0, m);
    }
    a.start();
    b.start();
    sc_core::sc_start();
    REQUIRE(to0.received.size() == 20);
    REQUIRE(to1.received.size() == 20);
    return std::max(to0.received.back().first, to1.received.back().first);
  };
  const Cycle apart = last_arrival(1), shared = last_arrival(2);
  CHECK(apart >= 20 + 10);
  CHECK(apart <= 20 + 14);
  CHECK(shared >= 40 + 10);  // forty packets through one link at a flit a cycle
  CHECK(shared <= 40 + 14);
}

TEST_CASE("crossbar: one flit per cycle per port, latency plus serialization", "[models][crossbar]") {
  reset_simulation_context();
  StatRegistry stats;
  CrossbarParams p{10, 16, 64, 1.0, 1.0};
  Crossbar xbar("xbar", p, 1, 1, stats);
  Source<MemPacket> source("source");
  Sink<MemPacket> sink("sink", 64);
  source.out.bind(xbar.input(0), 1);
  xbar.output(0).bind(sink.in, p.latency);
  SECTION("single-flit packets stream at one per cycle") {
    for (int i = 0; i < 8; ++i) source.schedule(0, packet(MemPacket::Kind::Read, 128u * i));
    source.start();
    sc_core::sc_start();
    REQUIRE(arrival_cycles(sink.received) == std::vector<Cycle>{11, 12, 13, 14, 15, 16, 17, 18});
  }
  SECTION("a four-flit packet holds its ports for four cycles") {
    source.schedule(0, packet(MemPacket::Kind::Write, 0, 4));
    source.schedule(0, packet(MemPacket::Kind::Write, 128, 4));
    source.start();
    sc_core::sc_start();
    REQUIRE(arrival_cycles(sink.received) == std::vector<Cycle>{14, 18});
  }
}

TEST_CASE("DRAM: a channel moves bytes at its rate, then adds its latency", "[models][dram]") {
  reset_simulation_context();
  StatRegistry stats;
  DramParams p{1, 32.0, 100, 8, 256};
  Dram dram("dram", p, 1, stats);
  Source<DramRequest> source("source");
  Sink<DramRequest> sink("sink", 16);
  source.out.bind(dram.request(0), 1);
  dram.reply(0).bind(sink.in, 1);
  for (int i = 0; i < 4; ++i) source.schedule(0, DramRequest{false, 0, 512u * i, 128});
  source.start();
  sc_core::sc_start();
  // 128 B at 32 B/cycle: 4 cycles each, back to back from cycle 1.
  REQUIRE(arrival_cycles(sink.received) == std::vector<Cycle>{106, 110, 114, 118});
}

TEST_CASE("DRAM: a channel holds writes back while it serves reads, and a batch after reads costs the turnaround", "[models][dram]") {
  // One channel of 32 bytes a cycle, requests of 128 bytes (4 cycles each),
  // all sent at cycle 0 and taken at 1, in order; the reads' replies arrive
  // 100 + 1 cycles after their access ends.
  auto reads_back = [](std::uint32_t batch, double turnaround, const std::vector<bool>& writes) {
    reset_simulation_context();
    StatRegistry stats;
    DramParams p{1, 32.0, 100, 64, 256};
    p.write_batch = batch;
    p.write_turnaround_cycles = turnaround;
    Dram dram("dram", p, 1, stats);
    Source<DramRequest> source("source");
    Sink<DramRequest> sink("sink", 16);
    source.out.bind(dram.request(0), 1);
    dram.reply(0).bind(sink.in, 1);
    for (std::size_t i = 0; i < writes.size(); ++i) source.schedule(0, DramRequest{writes[i], 0, 512u * i, 128});
    source.start();
    sc_core::sc_start();
    return arrival_cycles(sink.received);
  };
  const std::vector<bool> mixed{false, true, false, true, false};
  // Batches of two: the first write waits behind the second read; the two
  // then go together after it, 8 cycles and one turnaround of 10.
  REQUIRE(reads_back(2, 10, mixed) == std::vector<Cycle>{106, 110, 132});
  REQUIRE(reads_back(2, 0, mixed) == std::vector<Cycle>{106, 110, 122});
  // Served as they come, each write after a read pays the turnaround.
  REQUIRE(reads_back(1, 10, mixed) == std::vector<Cycle>{106, 124, 142});
  // Writes alone never turn the bus: the first goes at once (the channel is
  // free), the next two as a batch, and the read after them.
  REQUIRE(reads_back(2, 10, {true, true, true, false}) == std::vector<Cycle>{118});
}

TEST_CASE("L2 slice: a request from the other partition costs its fraction of extra lookups", "[models][l2]") {
  // Eight reads of a cached line from an SM of the other partition, all at once:
  // the last reply's distance from the first is the tag pipeline's time for the rest.
  auto spread = [](double extra) {
    L2Params p;
    p.slices = 2;
    p.partitions = 2;  // slice 0 in partition 0, SM 1 in partition 1
    p.lookups_per_cycle = 1;
    p.hit_latency = 10;
    p.far_partition_extra_lookups = extra;
    return reply_spread(p, 8, [](LaneOpPool&, int) {
      MemPacket r = packet(MemPacket::Kind::Read, 0x1000);
      r.source = 1;
      return r;
    });
  };
  REQUIRE(spread(0) == 7);
  REQUIRE(spread(1) == 14);
  const Cycle half = spread(0.5);  // 7 x 1.5 lookups: 10 or 11 cycles, not rounded to either end
  REQUIRE(half >= 10);
  REQUIRE(half <= 11);
}

TEST_CASE("L2 slice: a store request is looked up once, whatever its sectors", "[models][l2]") {
  // Eight stores to a cached line at once: whole lines keep the tag pipeline no
  // longer than single sectors (stores probe, ncu-stores.csv: the same busy
  // fraction per request).
  auto spread = [](std::uint8_t sectors) {
    L2Params p;
    p.lookups_per_cycle = 1;
    p.hit_latency = 10;
    return reply_spread(p, 8, [sectors](LaneOpPool&, int) { return packet(MemPacket::Kind::Write, 0x1000, sectors); });
  };
  REQUIRE(spread(1) == 7);
  REQUIRE(spread(4) == 7);
}

TEST_CASE("L2 slice: miss to DRAM, ROP throughput, same-address serialization that other words pass, functional updates", "[models][l2]") {
  reset_simulation_context();
  L2Params p;
  p.slices = 1;
  p.partitions = 1;
  p.slice_bytes = 1 << 20;
  p.ways = 16;
  p.lookups_per_cycle = 4;
  p.hit_latency = 10;
  p.mshrs = 8;
  p.input_buffer_flits = 256;
  p.rop_units_per_slice = 1;
  p.rop_ops_per_cycle = 1;
  p.rop_latency = 5;
  p.rop_returned_value_cost = 2;
  SliceBench bench(p);
  L2Slice& slice = bench.slice;
  LaneOpPool& pool = bench.pool;
  Source<MemPacket>& source = bench.source;
  Sink<MemPacket>& sink = bench.sink;

  const std::uint64_t line = 0x1000;
  source.schedule(0, packet(MemPacket::Kind::Read, line));  // warms the line: miss, DRAM, fill
  for (int i = 0; i < 8; ++i) {
    MemPacket r = packet(MemPacket::Kind::Reduction, line);
    r.atomic_op = trace::AtomicOp::Add;
    r.atomic_type = trace::DataType::F32;
    r.ops = pool.acquire(0);
    pool.ops(r.ops)[0] = LaneOp{line + 4u * i, f32(float(i + 1)), 1};
    r.op_count = 1;
    source.schedule(100, r);
  }
  for (int i = 0; i < 32; ++i) {  // one word, 32 requests (the L1 sends one per round)
    MemPacket same = packet(MemPacket::Kind::Reduction, line);
    same.atomic_op = trace::AtomicOp::Add;
    same.atomic_type = trace::DataType::F32;
    same.ops = pool.acquire(0);
    pool.ops(same.ops)[0] = LaneOp{line, f32(0.5f), 1};
    same.op_count = 1;
    source.schedule(200, same);
  }
  // Another word behind them: served next, with no wait of a word's own before them.
  MemPacket other = packet(MemPacket::Kind::Reduction, line);
  other.atomic_op = trace::AtomicOp::Add;
  other.atomic_type = trace::DataType::F32;
  other.request = 7;
  other.ops = pool.acquire(0);
  pool.ops(other.ops)[0] = LaneOp{line + 32, f32(2.0f), 1};
  other.op_count = 1;
  source.schedule(200, other);
  // One request of eight words in one sector costs the ROP what one word does.
  for (int words : {1, 8}) {
    MemPacket r = packet(MemPacket::Kind::Reduction, line);
    r.atomic_op = trace::AtomicOp::Add;
    r.atomic_type = trace::DataType::F32;
    r.ops = pool.acquire(0);
    for (int w = 0; w < words; ++w) pool.ops(r.ops)[w] = LaneOp{line + 64 + 4u * w, f32(1.0f), 1};
    r.op_count = static_cast<std::uint16_t>(words);
    source.schedule(words == 1 ? 400 : 500, r);
  }
  // An ATOM's old value leaves through the unit's return stage, rop_returned_value_cost
  // a value: two ATOMs' replies are that far apart, and a RED the unit takes
  // after them is not held behind their values.
  for (int k = 0; k < 3; ++k) {
    MemPacket atom = packet(k < 2 ? MemPacket::Kind::Atomic : MemPacket::Kind::Reduction, line);
    atom.atomic_op = trace::AtomicOp::Add;
    atom.atomic_type = trace::DataType::U32;
    atom.request = 8 + k;
    atom.ops = pool.acquire(0);
    pool.ops(atom.ops)[0] = LaneOp{line + 96 + 4u * k, 1, 1};
    atom.op_count = 1;
    source.schedule(600, atom);
  }
  source.start();
  sc_core::sc_start();

  auto reply_of = [&](std::uint32_t request) {
    auto r = std::find_if(sink.received.begin(), sink.received.end(), [&](const auto& x) { return x.second.request == request; });
    REQUIRE(r != sink.received.end());
    const Cycle at = r->first;
    sink.received.erase(r);
    return at;
  };
  const Cycle first_atom = reply_of(8), second_atom = reply_of(9), red_after_atoms = reply_of(10);
  REQUIRE(second_atom - first_atom == 2);
  REQUIRE(red_after_atoms < second_atom);
  // The unit took the 32 same-word requests one per cycle from 202 and this one
  // next; its reply may wait a cycle for the link behind the last same-word
  // reply ready in the same cycle.
  const Cycle served = 202 + 32 + 1 + 5 + 1, other_at = reply_of(7);
  REQUIRE(other_at >= served);
  REQUIRE(other_at <= served + 1);
  std::vector<Cycle> t = arrival_cycles(sink.received);
  REQUIRE(t.size() == 43);
  REQUIRE(t[42] - 500 == t[41] - 400);
  // Read miss: slice at 1, DRAM at 2 (1 cycle of transfer) + 20, back at 24, reply after the 10-cycle hit latency.
  REQUIRE(t[0] == 35);
  // Four lookups per cycle; one op per cycle in the ROP from cycle 102; 5-cycle ROP latency; 1-cycle link.
  REQUIRE(std::vector<Cycle>(t.begin() + 1, t.begin() + 9) == std::vector<Cycle>{109, 110, 111, 112, 113, 114, 115, 116});
  // 32 updates of one word, one a cycle from 202.
  REQUIRE(t[40] == 202 + 31 + 1 + 5 + 1);
  const auto& cell = slice.atomic_memory().at(line);
  REQUIRE(cell.updates == 33);
  REQUIRE(std::bit_cast<float>(static_cast<std::uint32_t>(cell.bits)) == 17.0f);
  REQUIRE(slice.atomic_memory().at(line + 28).updates == 1);
  REQUIRE(std::bit_cast<float>(static_cast<std::uint32_t>(slice.atomic_memory().at(line + 32).bits)) == 2.0f);
}

TEST_CASE("L2 slice: each atomic request costs the unit its sectors and the request overhead", "[models][l2]") {
  auto spacing = [](double overhead) {
    L2Params p;
    p.lookups_per_cycle = 4;
    p.rop_ops_per_cycle = 1;
    p.rop_latency = 5;
    p.rop_request_overhead = overhead;
    return reply_spread(p, 8, [](LaneOpPool& pool, int i) {
      MemPacket r = packet(MemPacket::Kind::Reduction, 0x1000);
      r.atomic_op = trace::AtomicOp::Add;
      r.atomic_type = trace::DataType::U32;
      r.ops = pool.acquire(0);
      pool.ops(r.ops)[0] = LaneOp{0x1000u + 4u * i, 1, 1};
      r.op_count = 1;
      return r;
    });
  };
  REQUIRE(spacing(0) == 7);
  REQUIRE(spacing(1) == 14);
  REQUIRE(spacing(0.5) >= 10);  // 7 x 1.5 cycles, not rounded per request
  REQUIRE(spacing(0.5) <= 11);
}

// The counterpart of the H100's lts__d_atomic_input_cycles_active: a cycle a
// sector a request, whatever its lanes, an ATOM as a RED.
TEST_CASE("L2 slice: counts each atomic request's sectors once", "[models][l2]") {
  reset_simulation_context();
  SliceBench b(L2Params{});
  b.slice.preload(0x1000);
  const std::uint8_t sectors[] = {4, 1, 2};
  for (int i = 0; i < 3; ++i) {
    MemPacket r = one_lane_reduction(b.pool, 0x1000, 0);
    if (i == 1) r.kind = MemPacket::Kind::Atomic;
    r.sectors = sectors[i];
    r.sector_mask = static_cast<std::uint8_t>((1u << sectors[i]) - 1);
    b.source.schedule(0, r);
  }
  b.source.start();
  sc_core::sc_start();
  REQUIRE(b.sink.received.size() == 3);
  auto s = b.stats.summarize(std::vector<std::uint64_t>(b.stats.snapshot().size(), 0), b.stats.snapshot(), 1);
  REQUIRE(s["l2_slice"]["atomic_packets"].total == 3);
  REQUIRE(s["l2_slice"]["atomic_ops"].total == 3);
  REQUIRE(s["l2_slice"]["atomic_sectors"].total == 7);
}

TEST_CASE("Address map: a slice holds interleave_bytes of consecutive addresses; an SM's atomics enter its own partition",
          "[models][l2]") {
  L2Params p;
  p.slices = 8;
  p.partitions = 2;
  p.hash = model::AddressHash::Modulo;
  p.interleave_bytes = 512;
  const AddressMap map(p.address_map());
  for (std::uint64_t line = 0; line < 4; ++line) REQUIRE(map.slice_of(line * 128) == 0);
  REQUIRE(map.slice_of(512) == 1);
  REQUIRE(map.slice_of(5 * 512 + 100) == 5);
  // Slices 0-3 are partition 0, 4-7 partition 1; SM 0 is in partition 0, SM 1 in 1.
  REQUIRE(map.entry_slice(5 * 512, 1) == 5);  // home in the SM's partition
  REQUIRE(map.entry_slice(5 * 512, 0) == 1);  // the same place in partition 0
  REQUIRE(map.entry_slice(2 * 512, 1) == 6);
}

TEST_CASE("L2 slice: an atomic homed in the other partition is looked up and passed on; one passed on is applied here",
          "[models][l2]") {
  reset_simulation_context();
  L2Params p;
  p.slices = 2;
  p.partitions = 2;  // slice 0 in partition 0 (SM 0), slice 1 in partition 1 (SM 1)
  p.hash = model::AddressHash::Modulo;
  p.lookups_per_cycle = 1;
  p.far_partition_extra_lookups = 1;
  p.far_partition_latency = 50;
  p.rop_ops_per_cycle = 1;
  p.rop_latency = 5;
  SliceBench b(p);
  Sink<MemPacket> onward("onward", 64);
  Source<MemPacket> from_other("from_other");
  b.slice.to_other_partition().bind(onward.in, 1);
  from_other.out.bind(b.slice.from_other_partition(), 1);
  b.slice.preload(0x0);
  auto red = [&](std::uint64_t line, std::uint16_t sm) { return one_lane_reduction(b.pool, line, sm); };
  for (int i = 0; i < 4; ++i) b.source.schedule(0, red(0x80, 0));  // SM 0's atomics for slice 1
  from_other.schedule(0, red(0x0, 1));                               // SM 1's atomic, passed on by slice 1
  b.source.start();
  from_other.start();
  sc_core::sc_start();
  // Passed on toward slice 1, one lookup each (far_partition_extra_lookups per
  // sector), not applied here; the atomic from the other partition takes its
  // turn among them.
  const std::vector<Cycle> passed = arrival_cycles(onward.received);
  REQUIRE(passed.size() == 4);
  for (const auto& [at, m] : onward.received) REQUIRE(m.destination == 1);
  REQUIRE(passed.back() - passed.front() == 4);
  REQUIRE_THROWS(b.slice.atomic_memory().at(0x80));
  // Applied here and acknowledged to SM 1 without the far partition's latency: it paid its way on the link.
  REQUIRE(b.slice.atomic_memory().at(0x0).updates == 1);
  REQUIRE(b.sink.received.size() == 1);
  REQUIRE(b.sink.received[0].second.destination == 1);
  REQUIRE(b.sink.received[0].first < 20);
}

TEST_CASE("L2 slice: its own partition's atomics and those passed on from the other take turns", "[models][l2]") {
  reset_simulation_context();
  L2Params p;
  p.slices = 2;
  p.partitions = 2;
  p.hash = model::AddressHash::Modulo;
  p.lookups_per_cycle = 0.25;  // the inputs back up: a turn every 4 cycles
  p.rop_ops_per_cycle = 1;
  p.rop_latency = 5;
  SliceBench b(p);
  Source<MemPacket> from_other("from_other");
  from_other.out.bind(b.slice.from_other_partition(), 1);
  b.slice.preload(0x0);
  constexpr int kEach = 20;
  for (int i = 0; i < kEach; ++i) {
    b.source.schedule(0, one_lane_reduction(b.pool, 0x0, 0));      // SM 0, this partition
    from_other.schedule(0, one_lane_reduction(b.pool, 0x0, 1));    // SM 1, passed on by slice 1
  }
  b.source.start();
  from_other.start();
  sc_core::sc_start();
  REQUIRE(b.sink.received.size() == 2 * kEach);
  // Acknowledged in turns: among the first 2k, k from each partition (give or take one).
  int near = 0;
  for (int n = 0; n < 2 * kEach; ++n) {
    near += b.sink.received[n].second.destination == 0;
    CHECK(std::abs(2 * near - (n + 1)) <= 2);
  }
}

TEST_CASE("L2 slice: a head waiting for room on the link between the partitions is woken when room frees",
          "[models][l2]") {
  // The link onward holds one message and its far end takes one every 1,000
  // cycles. Atomics from the other partition arrive as the tag pipeline frees,
  // so the head that passes on finds the pipeline taken while the link is full
  // and nothing refuses it. Everything must still arrive.
  reset_simulation_context();
  L2Params p;
  p.slices = 2;
  p.partitions = 2;
  p.hash = model::AddressHash::Modulo;
  p.lookups_per_cycle = 0.25;
  p.far_partition_extra_lookups = 1;
  p.rop_ops_per_cycle = 1;
  p.rop_latency = 5;
  SliceBench b(p);
  Source<MemPacket> from_other("from_other");
  Sink<MemPacket> onward("onward", 1, 1000);
  from_other.out.bind(b.slice.from_other_partition(), 1);
  b.slice.to_other_partition().bind(onward.in, 1);
  constexpr int kPassing = 3, kHomed = 10;
  for (int i = 0; i < kPassing; ++i) b.source.schedule(0, one_lane_reduction(b.pool, 0x80, 0));
  b.slice.preload(0x0);
  for (int i = 0; i < kHomed; ++i)  // the pipeline frees every 4 cycles
    from_other.schedule(8 + 4 * i, one_lane_reduction(b.pool, 0x0, 1));
  b.source.start();
  from_other.start();
  sc_core::sc_start();
  REQUIRE(onward.received.size() == kPassing);
  REQUIRE(b.slice.atomic_memory().at(0x0).updates == kHomed);
  REQUIRE(b.sink.received.size() == kHomed);
}

TEST_CASE("L2 slice: dirty lines evicted while the DRAM queue is full wait for it, none is lost", "[models][l2]") {
  reset_simulation_context();
  L2Params p;
  p.slices = 1;
  p.partitions = 1;
  p.slice_bytes = 2 * p.line_bytes;  // one set of two ways
  p.ways = 2;
  p.lookups_per_cycle = 8;  // several evictions a cycle, more than the DRAM queue takes
  SliceBench b(p, DramParams{1, 4.0, 20, 1, 256});  // one request in the DRAM's queue
  constexpr int kWrites = 8;  // each after the second evicts a dirty line
  for (int i = 0; i < kWrites; ++i) b.source.schedule(0, packet(MemPacket::Kind::Write, p.line_bytes * (i + 1)));
  b.source.start();
  sc_core::sc_start();
  REQUIRE(b.sink.received.size() == kWrites);
  auto s = b.stats.summarize(std::vector<std::uint64_t>(b.stats.snapshot().size(), 0), b.stats.snapshot(), 1);
  REQUIRE(s["l2_slice"]["writebacks"].total == kWrites - 2);
  REQUIRE(s["dram"]["writes"].total == kWrites - 2);
}

TEST_CASE("L1: a RED or store holds its warp until acknowledged, or until sent; a fence waits for the acknowledgements", "[models][l1]") {
  reset_simulation_context();
  L1Params p;
  const bool when_sent = GENERATE(false, true);
  p.writes_held_until = when_sent ? WritesHeldUntil::Sent : WritesHeldUntil::Acknowledged;
  L1Bench b(p);
  auto [warps, to_l2, to_sm, replies] = std::tie(b.warps, b.to_l2, b.to_sm, b.replies);

  LsuOp red;
  red.warp_slot = 3;
  red.op = trace::OpClass::Red;
  red.atomic_op = trace::AtomicOp::Add;
  red.atomic_type = trace::DataType::U32;
  red.active_mask = 0xFFFFFFFF;
  for (int lane = 0; lane < 32; ++lane) red.address[lane] = 0x10000 + 128u * lane, red.value[lane] = 1;
  LsuOp store = red;
  store.op = trace::OpClass::StoreGlobal;
  store.atomic_op = trace::AtomicOp::None;
  store.atomic_type = trace::DataType::None;
  LsuOp fence;
  fence.kind = LsuOp::Kind::Membar;
  fence.warp_slot = 3;
  warps.schedule(0, red);
  warps.schedule(0, store);
  warps.schedule(0, fence);
  warps.start();
  sc_core::sc_start();  // nothing answers: every request sent, none acknowledged

  REQUIRE(to_l2.received.size() == 64);
  auto count = [&](Completion::Kind kind) {
    return std::count_if(to_sm.received.begin(), to_sm.received.end(), [&](const auto& c) { return c.second.kind == kind; });
  };
  REQUIRE(count(Completion::Kind::MemoryAck) == (when_sent ? 2 : 0));
  REQUIRE(count(Completion::Kind::MembarDone) == 0);
  if (when_sent) REQUIRE(to_sm.received.front().first <= to_l2.received[31].first + 3);

  const Cycle answered = to_l2.received.back().first + 100;
  for (const auto& [t, request] : to_l2.received) {
    MemPacket ack = request;
    ack.kind = request.kind == MemPacket::Kind::Write ? MemPacket::Kind::WriteAck : MemPacket::Kind::ReductionAck;
    replies.schedule(answered, ack);
  }
  replies.start();
  sc_core::sc_start();
  REQUIRE(count(Completion::Kind::MemoryAck) == 2);
  REQUIRE(count(Completion::Kind::MembarDone) == 1);
  for (const auto& [t, c] : to_sm.received)
    if (c.kind == Completion::Kind::MembarDone || !when_sent) REQUIRE(t > answered);
}

TEST_CASE("L1: loads of a line already asked of the L2 wait for its reply, or ask again", "[models][l1]") {
  reset_simulation_context();
  L1Params p;
  const bool wait = GENERATE(false, true);
  p.wait_on_pending_lines = wait;
  L1Bench b(p);
  auto [warps, to_l2, to_sm, replies, stats] = std::tie(b.warps, b.to_l2, b.to_sm, b.replies, b.stats);
  // Four warps load line 0x4000 (two its whole line, two one word), one warp line 0x8000.
  auto load = [](std::uint16_t warp, std::uint64_t first, std::uint64_t step) {
    LsuOp op;
    op.warp_slot = warp;
    op.op = trace::OpClass::LoadGlobal;
    op.active_mask = 0xFFFFFFFF;
    op.access_bytes = 4;
    for (int lane = 0; lane < 32; ++lane) op.address[lane] = first + step * lane;
    return op;
  };
  warps.schedule(0, load(0, 0x4000, 4));
  warps.schedule(0, load(1, 0x4000, 4));
  warps.schedule(0, load(2, 0x4010, 0));
  warps.schedule(0, load(3, 0x8000, 4));
  warps.schedule(0, load(4, 0x4010, 0));
  warps.start();
  sc_core::sc_start();  // nothing answers yet
  REQUIRE(to_l2.received.size() == (wait ? 2u : 5u));
  REQUIRE(to_sm.received.empty());

  const Cycle answered = 200;
  for (const auto& [t, request] : to_l2.received) {
    MemPacket reply = request;
    reply.kind = MemPacket::Kind::ReadReply;
    replies.schedule(answered, reply);
  }
  replies.start();
  sc_core::sc_start();
  // Every warp gets its registers once, when a reply for its line is back.
  REQUIRE(to_sm.received.size() == 5);
  std::set<std::uint16_t> answered_warps;
  for (const auto& [t, c] : to_sm.received) {
    REQUIRE(t > answered);
    answered_warps.insert(c.warp_slot);
  }
  REQUIRE(answered_warps.size() == 5);
  auto s = stats.summarize(std::vector<std::uint64_t>(stats.snapshot().size(), 0), stats.snapshot(), 1);
  REQUIRE(s["l1"]["load_line_misses"].total == (wait ? 2 : 5));
  REQUIRE(s["l1"]["load_line_pending_hits"].total == (wait ? 3 : 0));

  // Once back, the line is in the L1: a later load hits without asking.
  warps.schedule(500, load(5, 0x4000, 4));
  warps.start();
  sc_core::sc_start();
  REQUIRE(to_l2.received.size() == (wait ? 2u : 5u));
  REQUIRE(to_sm.received.size() == 6);
}

TEST_CASE("L1: loads of GPU or system scope are served by the L2 and leave nothing in the L1", "[models][l1]") {
  reset_simulation_context();
  L1Params p;
  p.wait_on_pending_lines = true;
  L1Bench b(p);
  auto [warps, to_l2, to_sm, replies, stats] = std::tie(b.warps, b.to_l2, b.to_sm, b.replies, b.stats);
  auto load = [](std::uint16_t warp, bool coherent) {
    LsuOp op;
    op.warp_slot = warp;
    op.op = trace::OpClass::LoadGlobal;
    op.coherent_load = coherent;
    op.active_mask = 0xFFFFFFFF;
    op.access_bytes = 4;
    for (int lane = 0; lane < 32; ++lane) op.address[lane] = 0x4000 + 4 * lane;
    return op;
  };
  // A plain load asks for the line; a volatile poll of it does not wait for that reply but asks again.
  warps.schedule(0, load(0, false));
  warps.schedule(0, load(1, true));
  warps.start();
  sc_core::sc_start();
  REQUIRE(to_l2.received.size() == 2);
  for (const auto& [t, request] : to_l2.received) {
    MemPacket reply = request;
    reply.kind = MemPacket::Kind::ReadReply;
    replies.schedule(200, reply);
  }
  replies.start();
  sc_core::sc_start();
  REQUIRE(to_sm.received.size() == 2);
  // The plain load's line is in the L1, yet every later poll goes to the L2; a plain load still hits.
  warps.schedule(500, load(2, true));
  warps.schedule(500, load(3, true));
  warps.schedule(500, load(4, false));
  warps.start();
  sc_core::sc_start();
  REQUIRE(to_l2.received.size() == 4);
  auto s = stats.summarize(std::vector<std::uint64_t>(stats.snapshot().size(), 0), stats.snapshot(), 1);
  REQUIRE(s["l1"]["coherent_load_lines"].total == 3);
  REQUIRE(s["l1"]["load_line_hits"].total == 1);
  REQUIRE(s["l1"]["load_line_misses"].total == 1);

  // What the SASS says: volatile and GPU-scope loads are coherent, weak and CTA-scope ones are not.
  auto coherent = [](const std::string& mnemonic) {
    trace::StaticInst s;
    s.op = trace::OpClass::LoadGlobal;
    s.mnemonic = mnemonic;
    return trace::is_coherent_load(s);
  };
  REQUIRE(coherent("LDG.E.STRONG.SYS"));
  REQUIRE(coherent("LDG.E.64.STRONG.GPU"));
  REQUIRE_FALSE(coherent("LDG.E"));
  REQUIRE_FALSE(coherent("LDG.E.STRONG.SM"));
  REQUIRE_FALSE(coherent("LDG.E.CONSTANT"));
}

TEST_CASE("L1: RED lanes leave in per-line requests by rounds of distinct words, one L1 access per sector", "[models][l1]") {
  reset_simulation_context();
  L1Params p;
  p.capacity_bytes = 32768;
  p.sectors_per_cycle = 4;
  p.hit_latency = 10;
  p.lg_queue_depth = 4;
  p.max_inflight_instructions = 16;
  const bool buffered = GENERATE(false, true);
  p.atomic_buffer = buffered;
  p.atomic_buffer_entries = 64;
  L1Bench b(p);
  auto [warps, end, to_l2, to_sm, stats, pool] = std::tie(b.warps, b.end, b.to_l2, b.to_sm, b.stats, b.pool);

  LsuOp same;
  same.op = trace::OpClass::Red;
  same.atomic_op = trace::AtomicOp::Add;
  same.atomic_type = trace::DataType::F32;
  same.active_mask = 0xFFFFFFFF;
  for (int lane = 0; lane < 32; ++lane) { same.address[lane] = 0x1000; same.value[lane] = f32(1.0f); }
  LsuOp spread = same;
  for (int lane = 0; lane < 32; ++lane) spread.address[lane] = 0x10000 + 128u * lane;
  // Lane l updates word l (one line, four sectors), and word l / 4 (one sector, four lanes per word).
  LsuOp coalesced = same, quad = same;
  for (int lane = 0; lane < 32; ++lane) {
    coalesced.address[lane] = 0x20000 + 4u * lane;
    quad.address[lane] = 0x30000 + 4u * (lane / 4);
  }
  warps.schedule(0, same);
  warps.schedule(0, spread);
  if (!buffered) {
    warps.schedule(0, coalesced);
    warps.schedule(0, quad);
  }
  end.schedule(500, KernelEnd{});
  warps.start();
  end.start();
  sc_core::sc_start();

  auto s = stats.summarize(std::vector<std::uint64_t>(stats.snapshot().size(), 0), stats.snapshot(), 1);
  REQUIRE(s["l1"]["atomic_lane_ops_in"].total == (buffered ? 64 : 128));
  if (!buffered) {
    // As the H100 sends them (workloads/microbench/red_requests.cu): per line one
    // request per round, a round holding at most one lane of each word.
    // One word: 32 rounds of one sector. 32 lines: one request each.
    // One line of 32 words: one request of 32 lanes in 4 sectors. 8 words of 4 lanes: 4 rounds of 8 lanes in 1 sector.
    REQUIRE(to_l2.received.size() == 32 + 32 + 1 + 4);
    std::vector<std::pair<std::uint16_t, std::uint8_t>> shape;  // lanes, sectors
    for (const auto& [t, pk] : to_l2.received) shape.emplace_back(pk.op_count, pk.sectors);
    for (int i = 0; i < 64; ++i) REQUIRE(shape[i] == std::pair<std::uint16_t, std::uint8_t>{1, 1});
    REQUIRE(shape[64] == std::pair<std::uint16_t, std::uint8_t>{32, 4});
    for (int i = 65; i < 69; ++i) REQUIRE(shape[i] == std::pair<std::uint16_t, std::uint8_t>{8, 1});
    // The L1 works once per sector sent, four per cycle: the one-word instruction's
    // 32 sectors take 8 cycles, so the next instruction's requests leave from cycle 10.
    REQUIRE(to_l2.received[0].first == 2);
    REQUIRE(to_l2.received[32].first >= 10);
    REQUIRE(s["l1"]["atomic_ops_to_l2"].total == 128);
    REQUIRE(s["l1"]["atomic_packets_to_l2"].total == 69);
    REQUIRE(to_sm.received.empty());  // acknowledgements come from L2
  } else {
    // 31 updates combine into one entry; 32 distinct words take 32 more; all leave at kernel end.
    REQUIRE(s["l1"]["atomic_buffer_combines"].total == 31);
    REQUIRE(to_l2.received.size() == 33);
    REQUIRE(to_l2.received[0].first == 502);  // kernel end reaches the L1 at 501; the flush leaves at once
    std::uint64_t updates = 0;
    for (auto& [t, pk] : to_l2.received) updates += pool.ops(pk.ops)[0].updates;
    REQUIRE(updates == 64);
    REQUIRE(to_sm.received.size() == 2);  // buffered reductions retire at the L1
  }
}

// The red_requests probe on one SM (docs/notes/2026-11-23-atomics-in-the-l2.md, "One SM's updates of
// one word"): rounds onto one word leave same_word_interval apart whoever
// sends them, another word's rounds pass them; a request takes one flit where
// its header and operands fit, else a flit and one a sector; a store's partial
// sectors travel packed behind a flit of byte masks.
TEST_CASE("L1: updates of one word leave same_word_interval apart, other words' pass them; requests' flits", "[models][l1]") {
  const double interval = GENERATE(0.0, 3.5);
  reset_simulation_context();
  L1Params p;
  p.sectors_per_cycle = 4;
  p.atomic_header_bytes = 24;
  p.same_word_interval = interval;
  p.waiting_atomic_instructions = 4;
  L1Bench b(p);
  LsuOp one_word;
  one_word.op = trace::OpClass::Red;
  one_word.atomic_op = trace::AtomicOp::Add;
  one_word.atomic_type = trace::DataType::F32;
  one_word.access_bytes = 4;
  one_word.active_mask = 0xFFFFFFFF;
  for (int lane = 0; lane < 32; ++lane) { one_word.address[lane] = 0x1000; one_word.value[lane] = f32(1.0f); }
  LsuOp other_word = one_word, four_words = one_word, store = one_word;
  for (int lane = 0; lane < 32; ++lane) {
    other_word.address[lane] = 0x2000;
    four_words.address[lane] = 0x3000 + 4u * (lane % 4);         // 8 rounds of a sector's 4 words
    store.address[lane] = 0x4000 + 128u * (lane / 4) + 32u * (lane % 4);  // a word in each sector of 8 lines
  }
  store.op = trace::OpClass::StoreGlobal;
  b.warps.schedule(0, one_word);
  b.warps.schedule(0, other_word);
  b.warps.schedule(400, four_words);
  b.warps.schedule(800, store);
  b.warps.start();
  sc_core::sc_start();
  std::map<std::uint64_t, std::vector<Cycle>> sent;  // by the first word updated
  for (const auto& [t, pk] : b.to_l2.received) {
    if (pk.kind == MemPacket::Kind::Write) {
      CHECK(pk.flits() == 2);  // four bytes in four sectors: the masks' flit and one of bytes
      continue;
    }
    const std::uint64_t word = b.pool.ops(pk.ops)[0].address;
    sent[word & ~std::uint64_t(0xF)].push_back(t);
    CHECK(pk.flits() == (pk.op_count == 1 ? 1u : 2u));  // a word with its header; four words: header and sector
  }
  REQUIRE(sent[0x1000].size() == 32);
  REQUIRE(sent[0x2000].size() == 32);
  REQUIRE(sent[0x3000].size() == 8);
  if (interval == 0) {
    // All leave as the pipeline works them, arriving a message a cycle: one word's, then the other's.
    CHECK(sent[0x1000].back() - sent[0x1000].front() == 31);
    CHECK(sent[0x2000].front() > sent[0x1000].back());
  } else {
    // 31 intervals of 3.5 cycles; the other word's rounds interleave, not wait behind them.
    CHECK(sent[0x1000].back() - sent[0x1000].front() == Approx(31 * 3.5).margin(1));
    // The pipeline takes the second instruction once the first's 32 sectors are worked (8 cycles).
    CHECK(sent[0x2000].front() - sent[0x1000].front() <= 10);
    CHECK(sent[0x2000].back() - sent[0x1000].back() <= 10);
    CHECK(sent[0x3000].back() - sent[0x3000].front() == Approx(7 * 3.5).margin(1));
  }
}

// Nsight Compute's counts on the H100 for ten lane patterns
// (traces/datasets/h100/microbench/red_requests, workloads/microbench/red_requests.cu):
// the L1 model sends, per RED instruction, the L2 requests and sectors the GPU did.
TEST_CASE("L1: RED requests and sectors per instruction match the H100 on every probed lane pattern", "[models][l1]") {
  const std::string dir = std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/red_requests/";
  const auto launches = testing::ncu_launches(dir + "ncu.csv");
  const auto patterns = nlohmann::json::parse(std::ifstream(dir + "patterns.json"))["patterns"];
  REQUIRE(launches.size() == patterns.size());
  auto column = [&](std::size_t launch, const std::string& name) { return testing::ncu_value(launches[launch], name); };
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    const int lanes_per_word = patterns[i]["lanes_per_word"], stride = patterns[i]["word_stride"];
    INFO("lanes per word " << lanes_per_word << ", word stride " << stride);
    const double instructions = column(i, "smsp__inst_executed_op_global_red.sum");
    const double requests = column(i, "lts__t_requests_srcunit_tex_op_red.sum") / instructions;
    const double sectors = column(i, "lts__t_sectors_srcunit_tex_op_red.sum") / instructions;

    reset_simulation_context();
    StatRegistry stats;
    L2Params l2;
    AddressMap map(l2.address_map());
    LaneOpPool pool{1};
    L1Params p;
    L1 l1("l1", p, 0, 1, map, pool, stats);
    Source<LsuOp> warps("warps");
    Sink<MemPacket> to_l2("to_l2", 1024);
    Sink<Completion> to_sm("to_sm", 64);
    Source<MemPacket> replies("replies");
    Source<KernelEnd> end("end");
    warps.out.bind(l1.lg_queue(0), 1);
    end.out.bind(l1.kernel_end(), 1);
    l1.to_l2().bind(to_l2.in, 1);
    l1.to_sm().bind(to_sm.in, 1);
    replies.out.bind(l1.from_l2(), 1);
    LsuOp red;
    red.op = trace::OpClass::Red;
    red.atomic_op = trace::AtomicOp::Add;
    red.atomic_type = trace::DataType::F32;
    red.active_mask = 0xFFFFFFFF;
    for (int lane = 0; lane < 32; ++lane) red.address[lane] = 0x40000 + 4u * (lane / lanes_per_word) * stride;
    warps.schedule(0, red);
    warps.start();
    end.start();
    sc_core::sc_start();
    std::uint64_t sent_sectors = 0;
    for (const auto& [t, pk] : to_l2.received) sent_sectors += pk.sectors;
    REQUIRE(static_cast<double>(to_l2.received.size()) == Approx(requests));
    REQUIRE(static_cast<double>(sent_sectors) == Approx(sectors));
  }
}

TEST_CASE("MIO: shared dispatch at one per cycle, results after the pipe latency", "[models][mio]") {
  reset_simulation_context();
  StatRegistry stats;
  MioParams p{8, 1.0, 1.0, 1.0, 0.5, 24, 30, 20};
  Mio mio("mio", p, 2, stats);
  Source<MioOp> a("a"), b("b");
  Sink<Completion> sink("sink", 64);
  a.out.bind(mio.queue(0), 1);
  b.out.bind(mio.queue(1), 1);
  mio.to_sm().bind(sink.in, 1);
  MioOp shuffle;
  shuffle.op = trace::OpClass::Shuffle;
  shuffle.num_dst = 1;
  MioOp sfu = shuffle;
  sfu.op = trace::OpClass::Sfu;
  sfu.pipe = MioPipe::Sfu;
  for (int i = 0; i < 3; ++i) a.schedule(0, shuffle);
  for (int i = 0; i < 2; ++i) b.schedule(0, sfu);
  a.start();
  b.start();
  sc_core::sc_start();
  // One dispatch per cycle from cycle 1, alternating queues; the SFU pipe takes one every 2 cycles.
  std::vector<Cycle> t = arrival_cycles(sink.received);
  REQUIRE(t.size() == 5);
  std::sort(t.begin(), t.end());
  // Shuffles dispatched at 1, 3, 5 (queue a, 24-cycle pipe) interleave with SFU ops at 2 and 4
  // (queue b, 20-cycle pipe taking one every 2 cycles); results cross a 1-cycle link.
  REQUIRE(t == std::vector<Cycle>{22, 24, 25, 27, 29});
}

TEST_CASE("dispatcher occupancy: warps, registers, shared memory and CTA slots each bound CTAs per SM", "[models][dispatch]") {
  trace::KernelInfo k;
  k.block = {256, 1, 1};  // 8 warps
  SmLimits h100{64, 32, 65536, 256, 233472};
  k.registers_per_thread = 32;  // 32 x 32 = 1024 registers per warp: 8 CTAs by registers, 8 by warps
  REQUIRE(ctas_per_sm(k, h100) == 8);
  k.registers_per_thread = 72;  // 2304 -> 2304 per warp (multiple of 256): 65536 / (2304 x 8) = 3
  REQUIRE(ctas_per_sm(k, h100) == 3);
  k.registers_per_thread = 30;  // 960 rounds up to 1024
  k.shared_bytes = 48 * 1024;   // 228 KB / 48 KB = 4
  REQUIRE(ctas_per_sm(k, h100) == 4);
  k.shared_bytes = 0;
  k.block = {32, 1, 1};  // one warp: the 32 CTA slots bind before the 64 warps
  REQUIRE(ctas_per_sm(k, h100) == 32);
  k.registers_per_thread = 255;
  k.block = {1024, 1, 1};  // 32 warps x 8192 registers: does not fit
  REQUIRE(ctas_per_sm(k, h100) == 0);
}

TEST_CASE("dispatcher: first CTAs after the launch latency, then one per SM per interval, breadth-first", "[models][dispatch]") {
  reset_simulation_context();
  StatRegistry stats;
  CtaDispatcher d("dispatcher", DispatchParams{100, 10}, 2, 0, stats);
  Sink<CtaLaunch> sm0("sm0", 8), sm1("sm1", 8);
  Source<CtaDone> done1("done1");
  d.to_sm(0).bind(sm0.in, 1);
  d.to_sm(1).bind(sm1.in, 1);
  Source<CtaDone> done0("done0");
  done0.out.bind(d.from_sm(0), 1);
  done1.out.bind(d.from_sm(1), 1);
  d.begin_kernel(5, 2, 1);  // two CTAs fit per SM
  done1.schedule(200, CtaDone{});
  done1.start();
  sc_core::sc_start();
  // CTAs 0 and 1 leave at 100 (one per SM), 2 and 3 at 110; links take a cycle.
  REQUIRE(arrival_cycles(sm0.received) == std::vector<Cycle>{101, 111});
  REQUIRE(sm0.received[0].second.cta == 0);
  REQUIRE(sm1.received[0].second.cta == 1);
  REQUIRE(sm0.received[1].second.cta == 2);
  // CTA 4 waits for a free slot: SM 1 reports a CTA done at 200 (seen at 201).
  REQUIRE(arrival_cycles(sm1.received) == std::vector<Cycle>{101, 111, 202});
  REQUIRE(sm1.received[2].second.cta == 4);
}

TEST_CASE("dispatcher: CTAs start in the order the trace gives, unless told grid order", "[models][dispatch]") {
  for (const CtaOrder order : {CtaOrder::Trace, CtaOrder::Grid}) {
    reset_simulation_context();
    StatRegistry stats;
    DispatchParams params{100, 10};
    params.cta_order = order;
    CtaDispatcher d("dispatcher", params, 2, 0, stats);
    Sink<CtaLaunch> sm0("sm0", 8), sm1("sm1", 8);
    d.to_sm(0).bind(sm0.in, 1);
    d.to_sm(1).bind(sm1.in, 1);
    Source<CtaDone> done0("done0"), done1("done1");
    done0.out.bind(d.from_sm(0), 1);
    done1.out.bind(d.from_sm(1), 1);
    d.begin_kernel(5, 2, 1, {4, 2, 0, 3, 1});
    done1.schedule(200, CtaDone{});
    done1.start();
    sc_core::sc_start();
    auto ctas = [](const auto& sink) {
      std::vector<std::uint64_t> out;
      for (const auto& r : sink.received) out.push_back(r.second.cta);
      return out;
    };
    if (order == CtaOrder::Trace) {
      REQUIRE(ctas(sm0) == std::vector<std::uint64_t>{4, 0});
      REQUIRE(ctas(sm1) == std::vector<std::uint64_t>{2, 3, 1});
    } else {
      REQUIRE(ctas(sm0) == std::vector<std::uint64_t>{0, 2});
      REQUIRE(ctas(sm1) == std::vector<std::uint64_t>{1, 3, 4});
    }
  }
}

TEST_CASE("warp schedulers: GTO stays on its warp, LRR rotates", "[models][sm]") {
  std::vector<SchedulerCandidate> all = {{0, 5}, {1, 3}, {2, 9}};
  GtoScheduler gto;
  REQUIRE(all[gto.pick(all)].slot == 1);  // oldest
  REQUIRE(all[gto.pick(all)].slot == 1);  // greedy: same warp while eligible
  std::vector<SchedulerCandidate> without_1 = {{0, 5}, {2, 9}};
  REQUIRE(without_1[gto.pick(without_1)].slot == 0);  // then the oldest remaining
  LrrScheduler lrr;
  REQUIRE(all[lrr.pick(all)].slot == 0);
  REQUIRE(all[lrr.pick(all)].slot == 1);
  REQUIRE(all[lrr.pick(all)].slot == 2);
  REQUIRE(all[lrr.pick(all)].slot == 0);
}
