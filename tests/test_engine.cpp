#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <fstream>
#include <filesystem>
#include <memory>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>

#include <unistd.h>

#include <fmt/format.h>

#include "harness.hpp"
#include "sim/engine/domain_plan.hpp"
#include "models/atomic_update.hpp"
#include "models/cache/tag_array.hpp"
#include "models/l1/atomic_buffer.hpp"
#include "sim/engine/erasable_queue.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/release_queue.hpp"
#include "sim/engine/simulation_control.hpp"
#include "sim/engine/stats.hpp"

using namespace atomsim;
using testing::Sink;
using testing::Source;
using testing::Token;

TEST_CASE("a bounded link applies latency and back-pressure through credits", "[engine][port]") {
  reset_simulation_context();
  Source<Token> source("source");
  Sink<Token> sink("sink", /*capacity=*/2, /*interval=*/10);
  source.out.bind(sink.in, /*latency=*/5);
  for (int i = 0; i < 4; ++i) source.schedule(0, Token{i});
  source.start();
  sc_core::sc_start();
  // Two messages fit at once; each later one leaves the cycle after the sink frees a slot.
  REQUIRE(source.sent_at == std::vector<Cycle>{0, 0, 6, 16});
  REQUIRE(sink.received.size() == 4);
  std::vector<Cycle> arrivals;
  for (auto& [t, m] : sink.received) arrivals.push_back(t);
  REQUIRE(arrivals == std::vector<Cycle>{5, 15, 25, 35});
  for (int i = 0; i < 4; ++i) REQUIRE(sink.received[i].second.id == i);
}

TEST_CASE("space a receiver frees in a cycle is the sender's from the next cycle, whichever ran first",
          "[engine][port]") {
  reset_simulation_context();
  Source<Token> source("source");
  Sink<Token> sink("sink", /*capacity=*/1);
  source.out.bind(sink.in, 1);
  // The source tries every cycle; the sink takes each message as it arrives.
  for (int i = 0; i < 4; ++i) source.schedule(i, Token{i});
  source.start();
  sc_core::sc_start();
  // The sink frees its one slot in the cycle a message arrives; the source,
  // evaluated in that same cycle, sees the slot only in the next.
  REQUIRE(source.sent_at == std::vector<Cycle>{0, 2, 4, 6});
  REQUIRE(sink.received.size() == 4);
}

TEST_CASE("with a window of cycles, space freed across domains is seen at the window's end, within a domain the next cycle",
          "[engine][port][window]") {
  struct Case {
    Cycle latency;
    std::vector<Cycle> sent_at;
  };
  // A link at least as long as the window joins two domains: the sink frees
  // its slot at each arrival (5, 14, 23), the source learns of it when the
  // window that began there ends, 3 cycles later than with a window of one
  // (0, 6, 12, 18). A shorter link puts both in one domain: the next cycle.
  for (const Case& c : {Case{5, {0, 9, 18, 27}}, Case{2, {0, 3, 6, 9}}}) {
    for (unsigned threads : {1u, 2u}) {
      reset_simulation_context();
      set_window_cycles(4);
      set_evaluation_threads(threads);
      Source<Token> source("source");
      Sink<Token> sink("sink", /*capacity=*/1);
      source.out.bind(sink.in, c.latency);
      for (int i = 0; i < 4; ++i) source.schedule(0, Token{i});
      source.start();
      sc_core::sc_start();
      INFO("latency " << c.latency << ", " << threads << " threads");
      REQUIRE(source.sent_at == c.sent_at);
      REQUIRE(sink.received.size() == 4);
      REQUIRE(sink.received.back().first == c.sent_at.back() + c.latency);
      // Time ends at the last cycle a unit ran in, not at its window's start.
      REQUIRE(current_cycle() == c.sent_at.back() + c.latency);
    }
  }
  set_window_cycles(1);
  set_evaluation_threads(1);
}

namespace {
// Fails in its first evaluation when `fail` is set.
class Failing : public Unit {
 public:
  Failing(const sc_core::sc_module_name& name, bool fail) : Unit(name), fail_(fail) { wake_at(0); }

 protected:
  void evaluate() override {
    if (fail_) throw std::runtime_error(std::string(basename()) + " failed");
  }

 private:
  bool fail_;
};
}  // namespace

TEST_CASE("what an evaluation throws on a helper thread reaches the simulation's caller, the first unit's first",
          "[engine][threads]") {
  for (unsigned threads : {1u, 4u}) {
    reset_simulation_context();
    set_evaluation_threads(threads);
    std::vector<std::unique_ptr<Failing>> units;
    for (int i = 0; i < 16; ++i)
      units.push_back(std::make_unique<Failing>(("unit_" + std::to_string(i)).c_str(), i == 7 || i == 12));
    INFO(threads << " threads");
    REQUIRE_THROWS_WITH(sc_core::sc_start(), Catch::Contains("unit_7 failed"));
  }
  set_evaluation_threads(1);
}

TEST_CASE("what a failed window staged is dropped with it: the next simulation on the same threads gets its own messages alone",
          "[engine][threads][window]") {
  set_window_cycles(4);
  set_evaluation_threads(2);
  {
    // The source's first message crosses to the sink's domain in the window
    // in which unit_7 fails: staged, never applied.
    reset_simulation_context();
    Source<Token> source("source");
    Sink<Token> sink("sink", /*capacity=*/1);
    source.out.bind(sink.in, 5);
    std::vector<std::unique_ptr<Failing>> units;
    for (int i = 0; i < 16; ++i) units.push_back(std::make_unique<Failing>(("unit_" + std::to_string(i)).c_str(), i == 7));
    source.schedule(0, Token{99});
    source.start();
    REQUIRE_THROWS_WITH(sc_core::sc_start(), Catch::Contains("unit_7 failed"));
    REQUIRE(sink.received.empty());
  }
  reset_simulation_context();
  Source<Token> source("source");
  Sink<Token> sink("sink", /*capacity=*/1);
  source.out.bind(sink.in, 5);
  for (int i = 0; i < 4; ++i) source.schedule(0, Token{i});
  source.start();
  sc_core::sc_start();
  REQUIRE(sink.received.size() == 4);
  for (int i = 0; i < 4; ++i) REQUIRE(sink.received[i].second.id == i);
  set_window_cycles(1);
  set_evaluation_threads(1);
}

TEST_CASE("a release queue gives its items in a priority queue's order, in order or not", "[engine]") {
  // Interleaved streams, each in cycle order (a slice's atomic units), with
  // ties; then more streams than the queue keeps runs for, and items in no
  // order at all, which go to its heap.
  for (const unsigned streams : {1u, 3u, 16u, 40u, 0u}) {
    INFO("streams " << streams);
    ReleaseQueue<std::uint32_t> queue;
    using Item = std::pair<Cycle, std::uint32_t>;  // (ready, order scheduled): the order released
    std::priority_queue<Item, std::vector<Item>, std::greater<>> expected;
    std::mt19937 draw(streams);
    std::vector<Cycle> stream_at(std::max(streams, 1u), 0);
    std::uint32_t scheduled = 0;
    Cycle now = 0;
    for (int step = 0; step < 20000; ++step) {
      if (draw() % 3 != 0) {
        Cycle ready;
        if (streams == 0) {
          ready = now + draw() % 500;
        } else {
          Cycle& at = stream_at[draw() % streams];
          at = std::max(at, now) + draw() % 4;  // 0: a tie with the stream's last
          ready = at;
        }
        queue.push(ready, scheduled);
        expected.push({ready, scheduled++});
      } else if (!expected.empty()) {
        REQUIRE(queue.next_ready() == expected.top().first);
        REQUIRE(queue.next() == expected.top().second);
        now = expected.top().first;
        queue.pop();
        expected.pop();
      }
      REQUIRE(queue.size() == expected.size());
    }
    for (; !expected.empty(); expected.pop()) {
      REQUIRE(queue.next() == expected.top().second);
      queue.pop();
    }
    REQUIRE(queue.empty());
  }
}

TEST_CASE("a ring buffer keeps its order as its storage grows to its bound, wrapped or not", "[engine][port]") {
  RingBuffer<int> ring(20);
  std::deque<int> expected;
  int next = 0;
  auto same = [&] {
    REQUIRE(ring.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) REQUIRE(ring.at(i) == expected[i]);
  };
  // Pushes and pops by turns, so that the storage grows while its contents
  // wrap round its end (a few in, fewer out), up to the bound and back.
  for (auto [in, out] : {std::pair{6, 4}, {10, 3}, {9, 9}, {13, 2}, {3, 20}, {20, 0}}) {
    for (int k = 0; k < in && !ring.full(); ++k) {
      ring.push_back(next);
      expected.push_back(next++);
      same();
    }
    for (int k = 0; k < out && !ring.empty(); ++k) {
      REQUIRE(ring.front() == expected.front());
      ring.pop_front();
      expected.pop_front();
    }
    same();
  }
  REQUIRE(ring.full());
  // An element sifted toward the front passes those that should follow it.
  ring.pop_front();
  expected.pop_front();
  ring.push_back(-1);
  expected.push_front(-1);
  ring.sift_back([](int a, int b) { return a < b; });
  same();
}

TEST_CASE("an erasable queue keeps the order of what is left whichever items are taken out", "[engine]") {
  // Pushes at the back and erasures at the front, the back and anywhere
  // between, in runs long enough to grow the storage and reclaim its front.
  ErasableQueue<std::uint64_t> queue;
  std::deque<std::uint64_t> expected;
  std::mt19937 draw(7);
  std::uint64_t next = 0;
  for (int step = 0; step < 20000; ++step) {
    const bool growing = (step / 500) % 2 == 0;
    const bool push = expected.empty() || (growing ? draw() % 4 != 0 : draw() % 4 == 0);
    if (push) {
      queue.push_back(next);
      expected.push_back(next++);
    } else {
      const std::size_t i = draw() % 3 == 0 ? 0 : draw() % expected.size();
      queue.erase(i);
      expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(i));
    }
    REQUIRE(queue.size() == expected.size());
    REQUIRE(queue.empty() == expected.empty());
    if (!expected.empty()) {
      REQUIRE(queue.front() == expected.front());
      REQUIRE(queue.back() == expected.back());
      REQUIRE(queue[expected.size() / 2] == expected[expected.size() / 2]);
    }
    if (step % 97 == 0) REQUIRE(std::equal(queue.begin(), queue.end(), expected.begin(), expected.end()));
  }
}

TEST_CASE("a link counts capacity in flits", "[engine][port]") {
  reset_simulation_context();
  Source<Token> source("source");
  Sink<Token> sink("sink", /*capacity=*/4, /*interval=*/10);
  source.out.bind(sink.in, 1);
  source.schedule(0, Token{0, 3});
  source.schedule(0, Token{1, 2});  // 3 + 2 > 4: waits for the first to drain
  source.start();
  sc_core::sc_start();
  REQUIRE(source.sent_at == std::vector<Cycle>{0, 2});
}

namespace {
// A unit that takes messages in and never serves them: a deadlock in miniature.
class Stuck : public Unit {
 public:
  Stuck(const sc_core::sc_module_name& name, std::uint32_t capacity) : Unit(name), in(*this, capacity) {}
  InPort<Token> in;

 protected:
  void evaluate() override {}
};
}  // namespace

TEST_CASE("a port brings forward the first arrived message a pick takes, the others keeping their order", "[engine][port]") {
  reset_simulation_context();
  Stuck unit("unit", 8);
  for (int id : {0, 1, 2, 3}) unit.in.deliver(Token{id}, id == 3 ? 5 : 0);  // 3 arrives at cycle 5
  auto ids = [&] {
    std::vector<int> out;
    while (!unit.in.empty()) {
      out.push_back(unit.in.front().id);
      unit.in.pop();
    }
    return out;
  };
  CHECK_FALSE(unit.in.bring_forward(0, [](const Token& t) { return t.id == 0 || t.id == 3; }));  // the head itself, one not yet arrived
  REQUIRE(unit.in.bring_forward(0, [](const Token& t) { return t.id >= 1; }));
  CHECK(unit.in.front().id == 1);
  REQUIRE(unit.in.bring_forward(5, [](const Token& t) { return t.id == 3; }));
  CHECK(ids() == std::vector<int>{3, 1, 0, 2});
}

TEST_CASE("A stalled simulation names the units holding the oldest waiting messages", "[engine][port]") {
  reset_simulation_context();
  REQUIRE(describe_waiting_messages().empty());
  Source<Token> early("early"), late("late");
  Stuck first("first_stuck", 4), second("second_stuck", 8);
  early.out.bind(first.in, 3);
  late.out.bind(second.in, 3);
  for (int i = 0; i < 6; ++i) early.schedule(10, Token{i});  // two stay behind: the buffer holds 4
  late.schedule(50, Token{9, 2});
  early.start();
  late.start();
  sc_core::sc_start();
  REQUIRE(describe_waiting_messages() ==
          "oldest waiting messages: first_stuck input 0 since cycle 13 (4 messages, 4 of 4 flits); "
          "second_stuck input 0 since cycle 53 (1 messages, 2 of 8 flits)");
  REQUIRE(describe_waiting_messages(1) ==
          "oldest waiting messages: first_stuck input 0 since cycle 13 (4 messages, 4 of 4 flits); "
          "1 more units hold messages");
}

TEST_CASE("a rate server spaces work by its rate", "[engine][rate]") {
  RateServer half(0.5);
  REQUIRE(half.occupy(0, 1) == 2);
  REQUIRE(half.occupy(0, 1) == 4);
  REQUIRE_FALSE(half.free(3));
  REQUIRE(half.free(4));
  REQUIRE(half.occupy(10, 3) == 16);  // idle time is not banked
  REQUIRE(half.busy_cycles() == 10);
  RateServer l2(0.868);  // one L2 clock per 1/0.868 SM cycles
  Cycle done = 0;
  for (int i = 0; i < 868; ++i) done = l2.occupy(0, 1);
  REQUIRE(done == 1000);
}

TEST_CASE("the tag array evicts the least recently used way", "[engine][cache]") {
  model::TagArray tags(/*capacity=*/2 * 128, /*line=*/128, /*ways=*/2);  // one set, two ways
  REQUIRE_FALSE(tags.insert(0x000, false));
  REQUIRE_FALSE(tags.insert(0x080, true));
  REQUIRE(tags.access(0x000));  // 0x080 is now least recent
  auto victim = tags.insert(0x100, false);
  REQUIRE(victim);
  REQUIRE(victim->line == 0x080);
  REQUIRE(victim->dirty);
  REQUIRE(tags.contains(0x000));
  REQUIRE_FALSE(tags.contains(0x080));
}

TEST_CASE("the tag array keeps each line's valid and dirty sectors", "[engine][cache]") {
  model::TagArray tags(/*capacity=*/2 * 128, /*line=*/128, /*ways=*/2, /*sector=*/32);  // one set of two lines of 4 sectors
  REQUIRE(tags.all_sectors() == 0b1111);
  REQUIRE_FALSE(tags.allocate(0x000));  // room without data
  REQUIRE(tags.contains(0x000));
  REQUIRE(tags.valid_sectors(0x000) == 0);
  tags.write(0x000, 0b0010);
  REQUIRE_FALSE(tags.fill(0x000, 0b0100));
  REQUIRE(tags.access_sectors(0x000) == model::SectorMask{0b0110});
  REQUIRE_FALSE(tags.access_sectors(0x080));
  REQUIRE_FALSE(tags.fill(0x080, 0b0001));  // a fill installs an absent line
  REQUIRE(tags.access(0x080));              // 0x000 is now least recent
  auto victim = tags.insert(0x100, false);
  REQUIRE(victim);
  REQUIRE(victim->line == 0x000);
  REQUIRE(victim->dirty == 0b0010);  // only the written sector goes back
  REQUIRE(tags.valid_sectors(0x100) == 0b1111);
  REQUIRE_THROWS(model::TagArray(2 * 128, 128, 2, 48));  // sectors must divide the line
}

TEST_CASE("the tag array counts its dirty lines and cleans the first from a drawn way, keeping its data", "[engine][cache]") {
  model::TagArray tags(/*capacity=*/2 * 128, /*line=*/128, /*ways=*/2, /*sector=*/32);
  REQUIRE_FALSE(tags.clean_from(0));  // nothing dirty
  REQUIRE_FALSE(tags.allocate(0x000));
  REQUIRE_FALSE(tags.allocate(0x080));
  REQUIRE(tags.write(0x080, 0b0001));        // a clean line made dirty
  REQUIRE_FALSE(tags.write(0x080, 0b0010));  // already dirty
  REQUIRE(tags.dirty_lines() == 1);
  const auto cleaned = tags.clean_from(0);  // way 0 holds 0x000, clean: the next dirty way
  REQUIRE(cleaned);
  REQUIRE(cleaned->line == 0x080);
  REQUIRE(cleaned->dirty == 0b0011);
  REQUIRE(tags.dirty_lines() == 0);
  REQUIRE(tags.valid_sectors(0x080) == 0b0011);  // kept, clean
  REQUIRE(tags.write(0x000, 0b0100));
  REQUIRE(tags.clean_from(3)->line == 0x000);  // wraps past the last way
  REQUIRE(tags.write(0x080, 0b1000));
  tags.access(0x000);
  const auto victim = tags.insert(0x100, false);  // evicts 0x080, dirty
  REQUIRE(victim);
  REQUIRE(victim->line == 0x080);
  REQUIRE(victim->dirty == 0b1000);
  REQUIRE(tags.dirty_lines() == 0);
}

TEST_CASE("the atomic buffer combines, evicts LRU and drains in age order", "[engine][lab]") {
  using model::AtomicBuffer;
  using model::BufferedUpdate;
  using model::LaneOp;
  auto f32 = [](float f) { return std::uint64_t(std::bit_cast<std::uint32_t>(f)); };
  AtomicBuffer buffer(2);
  auto add = [&](std::uint64_t address, float v) {
    return buffer.absorb(BufferedUpdate{LaneOp{address, f32(v), 1}, trace::AtomicOp::Add, trace::DataType::F32});
  };
  REQUIRE_FALSE(add(0x10, 1.0f));
  REQUIRE_FALSE(add(0x10, 2.5f));
  REQUIRE(buffer.combined() == 1);
  REQUIRE_FALSE(add(0x20, 4.0f));
  auto evicted = add(0x30, 8.0f);  // 0x10 was used least recently
  REQUIRE(evicted);
  REQUIRE(evicted->op.address == 0x10);
  REQUIRE(evicted->op.value == f32(3.5f));
  REQUIRE(evicted->op.updates == 2);
  auto rest = buffer.drain();
  REQUIRE(rest.size() == 2);
  REQUIRE(rest[0].op.address == 0x20);
  REQUIRE(rest[1].op.address == 0x30);
  REQUIRE(buffer.size() == 0);
  REQUIRE_FALSE(model::combinable_update(trace::AtomicOp::Exch, trace::DataType::U32));
  REQUIRE_FALSE(model::combinable_update(trace::AtomicOp::Min, trace::DataType::F32));
}

TEST_CASE("statistics summarize counters, time averages and utilization over a window", "[engine][stats]") {
  StatRegistry registry;
  std::uint64_t a = 5, b = 7, level = 0, busy = 0;
  registry.group("unit", "0").add_counter("events", &a, "");
  registry.group("unit", "1").add_counter("events", &b, "");
  registry.group("unit", "0").add_integral("level", &level, "");
  registry.group("unit", "0").add_busy("util", &busy, "");
  auto before = registry.snapshot();
  a += 10;
  b += 30;
  level += 200;            // 2 units held for 100 cycles
  busy += 50 * 65536;      // 50 busy cycles
  auto s = registry.summarize(before, registry.snapshot(), 100);
  REQUIRE(s["unit"]["events"].total == 40);
  REQUIRE(s["unit"]["events"].max == 30);
  REQUIRE(s["unit"]["events"].mean == 20);
  REQUIRE(s["unit"]["level"].total == Approx(2.0));
  REQUIRE(s["unit"]["util"].total == Approx(0.5));
}

TEST_CASE("Configuration text that is not UTF-8 is refused naming the line and byte", "[engine][params]") {
  // A truncated two-byte sequence once made the TOML parser read past its buffer.
  REQUIRE_THROWS_WITH(ParamSource::from_text("[gpu]\nname = '\xC8'", "bad.toml"),
                      "bad.toml: line 2 (byte offset 14): not UTF-8 text");
  REQUIRE(utf8_problem("name = 'Grüße €'").empty());
  REQUIRE_FALSE(utf8_problem("\xED\xA0\x80").empty());  // a surrogate
  ParamSource source = ParamSource::from_text("[gpu]\nname = 'h100'", "good.toml");
  REQUIRE_THROWS_WITH(source.apply_override("gpu.name=\xC8"), "--set 'gpu.name': line 1 (byte offset 9): not UTF-8 text");
}

TEST_CASE("a configuration with a base takes the keys it leaves out from the base file", "[engine][params]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("atomsim-base-{}", ::getpid());
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; };
  write("parent.toml", "[l2]\nslices = 80\nways = 16\n");
  write("child.toml", "base = \"parent.toml\"\n[l2]\nslices = 94\n");
  write("loop.toml", "base = \"loop.toml\"\n");
  write("orphan.toml", "base = \"missing.toml\"\n");
  ParamSource child = ParamSource::from_file((dir / "child.toml").string());
  REQUIRE(child.get_integer("l2.slices", 1, 1000) == 94);  // the file's own value wins
  REQUIRE(child.get_integer("l2.ways", 1, 1000) == 16);    // the rest comes from the base
  child.check_all_claimed();                                // 'base' itself is no parameter
  // An error in an inherited value names the file the value came from.
  REQUIRE_THROWS_WITH(child.get_integer("l2.ways", 1, 8), Catch::Contains("parent.toml") && Catch::Contains("l2.ways"));
  REQUIRE_THROWS_WITH(ParamSource::from_file((dir / "loop.toml").string()), Catch::Contains("files deep"));
  REQUIRE_THROWS_WITH(ParamSource::from_file((dir / "orphan.toml").string()),
                      Catch::Contains("orphan.toml: key 'base'") && Catch::Contains("missing.toml"));
  fs::remove_all(dir);
}

TEST_CASE("parameters: missing, unknown, out-of-range and mistyped keys name the key and file", "[engine][params]") {
  auto source = [] {
    return ParamSource::from_text("[l2]\nslices = 80\nhash = \"xor\"\nrate = 0.5\n", "test.toml");
  };
  {
    ParamSource s = source();
    ParamBinder b(s, "l2");
    std::uint32_t slices;
    std::string hash;
    double rate;
    b.integer("slices", slices, 1, 100, "");
    b.choice("hash", hash, {"xor", "modulo"}, "");
    b.real("rate", rate, 0, 1, "");
    REQUIRE(slices == 80);
    REQUIRE(rate == 0.5);
    REQUIRE_NOTHROW(s.check_all_claimed());
  }
  {
    ParamSource s = source();
    ParamBinder b(s, "l2");
    std::uint32_t slices;
    REQUIRE_THROWS_WITH(b.integer("slices", slices, 1, 64, ""), Catch::Contains("test.toml") && Catch::Contains("'l2.slices'") && Catch::Contains("out of range"));
  }
  {
    ParamSource s = source();
    ParamBinder b(s, "l2");
    std::uint32_t slices;
    b.integer("slices", slices, 1, 100, "");
    REQUIRE_THROWS_WITH(s.check_all_claimed(), Catch::Contains("unknown key 'l2.hash'"));
  }
  {
    ParamSource s = source();
    ParamBinder b(s, "l2");
    std::uint32_t ways;
    REQUIRE_THROWS_WITH(b.integer("ways", ways, 1, 100, ""), Catch::Contains("missing key 'l2.ways'"));
  }
  {
    ParamSource s = source();
    ParamBinder b(s, "l2");
    std::string hash;
    s.apply_override("l2.hash=cubic");
    REQUIRE_THROWS_WITH(b.choice("hash", hash, {"xor", "modulo"}, ""), Catch::Contains("--set l2.hash") && Catch::Contains("not one of"));
  }
  {
    ParamSource s = source();
    REQUIRE_THROWS_WITH(s.apply_override("l2.slicez=4"), Catch::Contains("unknown key 'l2.slicez'"));
    REQUIRE_THROWS_WITH(s.apply_override("novalue"), Catch::Contains("expected key=value"));
    ParamBinder b(s, "l2");
    double rate;
    s.apply_override("l2.rate=\"fast\"");
    REQUIRE_THROWS_WITH(b.real("rate", rate, 0, 1, ""), Catch::Contains("must be a number"));
  }
  REQUIRE_THROWS_WITH(ParamSource::from_text("[l2\nslices=", "broken.toml"), Catch::Contains("broken.toml"));
  REQUIRE_THROWS_WITH(ParamSource::from_file("/nonexistent/x.toml"), Catch::Contains("/nonexistent/x.toml"));
}

TEST_CASE("a statistic named by its id registers only in its own group", "[engine][stats]") {
  constexpr StatId kHits{"l1", "hits"};
  std::uint64_t hits = 0;
  StatRegistry registry;
  StatGroup& l1 = registry.group("l1", "sm0");
  l1.add_counter(kHits, &hits, "hits");
  REQUIRE(l1.entries().back()->name == "hits");
  StatGroup& l2 = registry.group("l2_slice", "0");
  REQUIRE_THROWS_WITH(l2.add_counter(kHits, &hits, "hits"), "statistic l1.hits registered in group l2_slice");
  REQUIRE_THROWS_WITH(l1.add_counter(kHits, &hits, "hits"), "statistic registered twice: l1.hits");
}

TEST_CASE("wake calendar plan: units joined by links shorter than a window share a domain", "[engine][plan]") {
  using atomsim::detail::UnitLink;
  // Units 0-1 linked at 1 cycle, 2-3 at 1 cycle, 1-2 at 8 cycles; unit 4 is gone.
  const std::vector<bool> present{true, true, true, true, false, true};
  const std::vector<UnitLink> links{{0, 1, 1}, {3, 2, 1}, {1, 2, 8}, {4, 5, 1}};
  const auto short_window = atomsim::detail::plan_domains(present, links, 4, 2);
  REQUIRE(short_window.domains.size() == 3);  // {0,1}, {2,3}, {5}
  REQUIRE(short_window.domain_of == std::vector<std::uint32_t>{0, 0, 1, 1, UINT32_MAX, 2});
  REQUIRE(short_window.members == std::vector<std::uint32_t>{0, 1, 2, 3, 5});
  REQUIRE(short_window.domains[1].first == 2);
  REQUIRE(short_window.domains[1].count == 2);
  REQUIRE(short_window.domains[2].home == 0);  // dealt to the two threads in turn
  REQUIRE(short_window.domains[1].home == 1);
  // A window as long as the 8-cycle link joins all four.
  const auto long_window = atomsim::detail::plan_domains(present, links, 16, 2);
  REQUIRE(long_window.domains.size() == 2);
  REQUIRE(long_window.domains[0].count == 4);
}

TEST_CASE("wake calendar dealing: costliest domains first, each to the least loaded thread", "[engine][plan]") {
  // Costs 5, 9, 0, 4, 3 over two threads, thread 0 starting with 2 of the
  // calendar's own: 9 to thread 1 (9), 5 to 0 (7), 4 to 0 (11), 3 to 1 (12).
  const auto dealt = atomsim::detail::deal_by_cost({5, 9, 0, 4, 3}, {1, 1, 1, 1, 1}, 2, 2);
  REQUIRE(dealt == std::vector<std::uint32_t>{0, 1, 1, 0, 1});  // the domain of no cost keeps its thread
}
