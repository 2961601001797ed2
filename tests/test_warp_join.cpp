#include <catch2/catch.hpp>

#include <string_view>

#include "sim_helpers.hpp"
#include "tools/capture/warp_join.hpp"
#include "traces/capture_document.hpp"
#include "traces/reader.hpp"
#include "traces/sass.hpp"
#include "workloads/microbench/generator.hpp"

extern const char kMicrobenchSass[];

using namespace atomsim;
using namespace atomsim::capture;

namespace {

// What the Compute Sanitizer would report of an instruction: its kind, or
// nothing for instructions it does not patch.
std::optional<ObservedKind> observed_kind(const trace::StaticInst& s) {
  std::string_view base = std::string_view(s.mnemonic).substr(0, s.mnemonic.find('.'));
  if (trace::is_global_memory(s.op)) return ObservedKind::Memory;
  if (base == "SHFL") return ObservedKind::Shuffle;
  if (base == "BAR") return ObservedKind::Barrier;
  if (base == "EXIT") return ObservedKind::Exit;
  return std::nullopt;
}

// Every warp's joined stream, the launch joined on `threads` threads.
std::vector<std::vector<trace::WarpInst>> join_all(WarpJoiner& joiner, const std::vector<WarpObservation>& warps,
                                                   unsigned threads = 2) {
  std::vector<std::vector<trace::WarpInst>> joined(warps.size());
  joiner.join_launch(warps, threads, [&](std::uint64_t w, const trace::WarpInst& i) { joined[w].push_back(i); });
  return joined;
}

struct Reference {
  trace::KernelInfo kernel;
  std::vector<std::string> text;
  std::vector<std::vector<trace::WarpInst>> warps;
};

// The interpreter's streams stand for the GPU's: each warp's full record list.
Reference reference_streams(workloads::MicrobenchParams p) {
  std::string path = testing::temp_trace("join-" + std::string(workloads::variant_name(p.variant)) + ".trace");
  {
    trace::TraceWriter writer(path);
    workloads::write_microbench_kernel(p, writer);
    writer.finish();
  }
  Reference r;
  trace::TraceReader reader(path);
  r.kernel = reader.kernel(0);
  trace::parse_sass_function(kMicrobenchSass, workloads::microbench_function(p), &r.text);
  for (std::uint64_t w = 0; w < r.kernel.total_warps(); ++w) {
    auto stream = reader.open_warp(0, w);
    std::vector<trace::WarpInst> records;
    trace::WarpInst inst;
    while (stream.next(inst)) records.push_back(inst);
    r.warps.push_back(std::move(records));
  }
  std::filesystem::remove(path);
  return r;
}

// Keeps only what patching observes: reported instructions with the lanes whose guard held.
WarpObservation observe(const trace::KernelInfo& k, const std::vector<trace::WarpInst>& records) {
  WarpObservation obs;
  for (const auto& r : records) {
    auto kind = observed_kind(k.program[r.index]);
    if (!kind || r.active_mask == 0) continue;
    ObservedInst ev;
    ev.index = r.index;
    ev.mask = r.active_mask;
    ev.kind = *kind;
    if (*kind == ObservedKind::Memory) {
      ev.operands = static_cast<std::int32_t>(obs.operands.size());
      obs.operands.push_back({r.address, r.value});
    }
    obs.events.push_back(ev);
  }
  return obs;
}

std::vector<bool> observed_set(const Reference& r) {
  std::vector<bool> seen(r.kernel.program.size(), false);
  for (const auto& warp : r.warps)
    for (const auto& rec : warp)
      if (rec.active_mask && observed_kind(r.kernel.program[rec.index])) seen[rec.index] = true;
  return seen;
}

}  // namespace

TEST_CASE("warp join rebuilds every microbenchmark warp's stream from the patched instructions alone", "[capture][join]") {
  using workloads::MicrobenchVariant;
  for (auto [variant, lanes, fraction] : {std::tuple{MicrobenchVariant::Baseline, 32u, 0.5},
                                          std::tuple{MicrobenchVariant::SwB, 1u, 1.0},
                                          std::tuple{MicrobenchVariant::SwS, 32u, 0.5},
                                          std::tuple{MicrobenchVariant::SwS, 1u, 0.25},
                                          std::tuple{MicrobenchVariant::Baseline, 1u, 0.25},
                                          std::tuple{MicrobenchVariant::SwB, 32u, 0.25}}) {
    workloads::MicrobenchParams p;
    p.variant = variant;
    p.blocks = 4;
    p.warps_per_block = 4;
    p.iterations = 5;
    p.primitives = 256;
    p.lanes_per_primitive = lanes;
    p.active_fraction = fraction;
    Reference ref = reference_streams(p);
    WarpJoiner joiner(ref.kernel.program, ref.text, observed_set(ref));
    INFO(workloads::variant_name(variant) << " lanes/primitive " << lanes << " active " << fraction);
    std::vector<WarpObservation> observations;
    for (const auto& truth : ref.warps) observations.push_back(observe(ref.kernel, truth));
    const auto all_joined = join_all(joiner, observations);
    for (std::size_t w = 0; w < ref.warps.size(); ++w) {
      const auto& truth = ref.warps[w];
      const std::vector<trace::WarpInst>& joined = all_joined[w];
      INFO("warp " << w);
      for (std::size_t i = 0; i < std::min(truth.size(), joined.size()); ++i) {
        const trace::StaticInst& s = ref.kernel.program[truth[i].index];
        INFO("record " << i << " pc 0x" << std::hex << s.pc << " " << s.mnemonic);
        REQUIRE(joined[i].index == truth[i].index);
        // Masks are exact where the GPU reports them and for branches; elsewhere
        // the joined mask holds the executing lanes, a superset of the guarded ones.
        const std::string& t = ref.text[truth[i].index];
        bool guard_counted = s.mnemonic.find(".DIV") != std::string::npos || t.find("BRA P") != std::string::npos ||
                             t.find("BRA !P") != std::string::npos;
        if ((observed_kind(s) && truth[i].active_mask) || (s.op == trace::OpClass::Branch && !guard_counted))
          REQUIRE(joined[i].active_mask == truth[i].active_mask);
        else
          REQUIRE((joined[i].active_mask & truth[i].active_mask) == truth[i].active_mask);
        if (trace::is_global_memory(s.op))
          for (std::uint32_t m = truth[i].active_mask; m; m &= m - 1)
            REQUIRE(joined[i].address[std::countr_zero(m)] == truth[i].address[std::countr_zero(m)]);
      }
      REQUIRE(joined.size() == truth.size());
    }
  }
}

TEST_CASE("warp join refuses observations no control-flow path explains", "[capture][join][errors]") {
  std::vector<std::string> text = {"S2R R0, SR_TID.X", "REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R0", "EXIT"};
  std::vector<trace::StaticInst> program;
  for (std::size_t i = 0; i < text.size(); ++i) program.push_back(trace::parse_sass_instruction(text[i], 16 * i));
  WarpJoiner joiner(program, text, {false, true, true});
  auto join = [&](const WarpObservation& warp) { join_all(joiner, {warp}); };

  WarpObservation exit_only;  // the unguarded reduction cannot be passed silently
  exit_only.events.push_back({2, 0xFFFFFFFFu, ObservedKind::Exit});
  REQUIRE_THROWS_WITH(join(exit_only), Catch::Contains("reached pc 0x10 (REDG.E.ADD.STRONG.GPU) without reporting it"));

  WarpObservation no_exit;
  no_exit.operands.resize(1);
  no_exit.events.push_back({1, 0xFFFFFFFFu, ObservedKind::Memory, 0, 0});
  REQUIRE_THROWS_WITH(join(no_exit), Catch::Contains("never reported its exit"));

  WarpObservation split;  // lanes 0-15 and 16-31 report one instruction apart but neither half exits
  split.operands.resize(1);
  split.events.push_back({1, 0x0000FFFFu, ObservedKind::Memory, 0, 0});
  split.events.push_back({2, 0xFFFFFFFFu, ObservedKind::Exit});
  REQUIRE_THROWS_WITH(join(split), Catch::Contains("without reporting it"));
}

namespace {
JoinInput load_fixture(const std::string& name) {
  return load_join_input(read_document(std::string(ATOMSIM_SOURCE_DIR) + "/tests/data/" + name));
}
}  // namespace

// Observations the H100 made of SW-S with 32 lanes per primitive and half the
// lanes active (the first 8 warps of the launch): idle lanes leave the peer
// loop with the warp and skip the next round, which the join once took for
// another pass around the loop through the unobserved BRA.DIV path.
TEST_CASE("warp join rebuilds the H100's SW-S streams as the committed faithful trace has them", "[capture][join]") {
  JoinInput input = load_fixture("join-input-sws-lpp32-af0.5.json");
  const std::vector<trace::StaticInst> program = input.program();
  WarpJoiner joiner(program, input.text, input.observed());
  const auto all_joined = join_all(joiner, input.warps);

  trace::TraceReader committed(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/traces/sws-lpp32-af0.5-thr8/trace.atr");
  REQUIRE(committed.kernel(0).program.size() == program.size());
  for (std::size_t w = 0; w < input.warps.size(); ++w) {
    INFO("warp " << w);
    const std::vector<trace::WarpInst>& joined = all_joined[w];
    auto stream = committed.open_warp(0, w);
    trace::WarpInst expected;
    std::size_t n = 0;
    while (stream.next(expected)) {
      INFO("record " << n);
      REQUIRE(n < joined.size());
      REQUIRE(joined[n].index == expected.index);
      REQUIRE(joined[n].active_mask == expected.active_mask);
      ++n;
    }
    REQUIRE(n == joined.size());
    REQUIRE(n > 1000);
  }
}

TEST_CASE("a saved join input round-trips and damaged ones are refused by field", "[capture][join][errors]") {
  JoinInput input = load_fixture("join-input-sws-lpp32-af0.5.json");
  JoinInput again = load_join_input(save_join_input(input));
  REQUIRE(again.kernel == input.kernel);
  REQUIRE(again.pcs == input.pcs);
  REQUIRE(again.text == input.text);
  REQUIRE(again.warps.size() == input.warps.size());
  for (std::size_t w = 0; w < input.warps.size(); ++w) {
    REQUIRE(again.warps[w].lanes == input.warps[w].lanes);
    REQUIRE(again.warps[w].events.size() == input.warps[w].events.size());
    for (std::size_t e = 0; e < input.warps[w].events.size(); ++e) {
      REQUIRE(again.warps[w].events[e].index == input.warps[w].events[e].index);
      REQUIRE(again.warps[w].events[e].mask == input.warps[w].events[e].mask);
      REQUIRE(again.warps[w].events[e].kind == input.warps[w].events[e].kind);
    }
  }
  REQUIRE_THROWS_WITH(load_join_input("{"), Catch::Contains("not JSON"));
  REQUIRE_THROWS_WITH(load_join_input(R"({"schema":"other"})"), Catch::Contains("key 'schema'"));
  REQUIRE_THROWS_WITH(load_join_input(R"({"schema":"atomsim-join-input-1","kernel":"k","sass":[[0,"EXIT"]],"warps":[{"lanes":1,"events":[[5,1,6,0]]}]})"),
                      Catch::Contains("names instruction 5 of 1"));
  REQUIRE_THROWS_WITH(load_join_input(R"({"schema":"atomsim-join-input-1","kernel":"k","sass":[[0,"EXIT"]],"warps":[{"lanes":1,"events":[[0,1,9,0]]}]})"),
                      Catch::Contains("unknown event kind 9"));
  REQUIRE_THROWS_WITH(load_join_input(R"({"schema":"atomsim-join-input-1","kernel":"k"})"), Catch::Contains("malformed join input"));
  // Numbers out of a field's range were once cast (undefined for 3.3e19 as an int).
  REQUIRE_THROWS_WITH(load_join_input(R"({"schema":"atomsim-join-input-1","kernel":"k","sass":[[0,"EXIT"]],"warps":[{"lanes":1,"events":[[0,1,3.3e19,0]]}]})"),
                      Catch::Contains("key 'events'"));
  REQUIRE_THROWS_WITH(load_join_input(R"({"schema":"atomsim-join-input-1","kernel":"k","sass":[[0,"EXIT"]],"warps":[{"lanes":-1,"events":[]}]})"),
                      Catch::Contains("key 'lanes'"));
}

// Observations the H100 made of a kernel written outside the project: a loop
// unrolled twice, each half a block of eight REDs that a lane enters when a
// per-lane hash is under the active fraction (15%). A lane whose next block is
// in the loop's second iteration meets it first in the first iteration, where
// the lanes it shares the block with still have an earlier block to make: the
// join used to send it in there and stop with lanes waiting on each other.
// Warps whose second iteration reports nothing must still run it.
TEST_CASE("warp join orders lanes whose next observation is in a later loop iteration", "[capture][join]") {
  JoinInput input = load_fixture("join-input-baseline-af0.15.json");
  const std::vector<trace::StaticInst> program = input.program();
  const std::vector<bool> reports = input.observed();
  WarpJoiner joiner(program, input.text, reports);
  std::vector<std::vector<trace::WarpInst>> all_joined;
  REQUIRE_NOTHROW(all_joined = join_all(joiner, input.warps));
  auto index_of = [&](std::uint64_t pc) {
    auto it = std::find(input.pcs.begin(), input.pcs.end(), pc);
    REQUIRE(it != input.pcs.end());
    return static_cast<std::uint32_t>(it - input.pcs.begin());
  };
  const std::uint32_t loop_head = index_of(0x320), back_branch = index_of(0xab0);
  const std::uint32_t first_block = index_of(0x6c0), second_block = index_of(0x9a0);
  for (std::size_t w = 0; w < input.warps.size(); ++w) {
    INFO("warp " << w);
    const WarpObservation& warp = input.warps[w];
    std::size_t heads = 0, back_branches = 0, observed = 0;
    std::uint32_t entered_first = 0, entered_second = 0;
    for (const trace::WarpInst& i : all_joined[w]) {
      if (i.index == loop_head) {
        ++heads;
        REQUIRE(i.active_mask == warp.lanes);  // the trip count is a kernel argument: every lane runs every iteration
        entered_first = entered_second = 0;
      }
      if (i.index == back_branch) ++back_branches;
      if (i.index == first_block || i.index == second_block) {
        std::uint32_t& entered = i.index == first_block ? entered_first : entered_second;
        REQUIRE((entered & i.active_mask) == 0);  // a lane enters each block at most once per iteration
        entered |= i.active_mask;
      }
      if (reports[i.index] && i.active_mask) ++observed;
    }
    REQUIRE(observed == warp.events.size());
    REQUIRE(back_branches == heads);
    REQUIRE(heads == 2);  // the kernel was launched with four iterations, unrolled by two
  }
  REQUIRE(joiner.retried_guesses() > 0);  // the first guess in such warps leads nowhere
}

// A loop none of whose iterations reports anything (an index calculation over
// a tensor's dimensions, as PyTorch's kernels do): the observations cannot
// tell how often it ran, the count pass of the same launch can.
TEST_CASE("warp join runs a loop no observation sees as often as the count pass counted", "[capture][join]") {
  JoinInput input;
  input.kernel = "invisible_loop";
  input.text = {"S2R R0, SR_TID.X", "MOV R1, RZ", "IADD3 R1, R1, 0x1, RZ", "ISETP.LT.AND P0, PT, R1, c[0x0][0x210], PT",
                "@P0 BRA 0x20", "STG.E desc[UR4][R2.64], R0", "EXIT"};
  for (std::size_t i = 0; i < input.text.size(); ++i) input.pcs.push_back(16 * i);
  const std::size_t warps = 4;
  for (std::size_t w = 0; w < warps; ++w) {
    WarpObservation obs;
    obs.events.push_back({5, 0xFFFFFFFFu, ObservedKind::Memory, 0, 0});
    obs.operands.emplace_back();
    obs.events.push_back({6, 0xFFFFFFFFu, ObservedKind::Exit, 0, -1});
    input.warps.push_back(obs);
  }
  // Joined records of instruction `index` with lanes in them, over every warp.
  auto runs_of = [](const JoinInput& in, std::uint32_t index, const std::vector<std::uint64_t>& counts) {
    const std::vector<trace::StaticInst> program = in.program();
    WarpJoiner joiner(program, in.text, in.observed());
    if (!counts.empty()) joiner.use_counts(counts);
    std::size_t n = 0;
    for (const auto& warp : join_all(joiner, in.warps))
      for (const trace::WarpInst& i : warp) n += i.index == index && i.active_mask;
    return n;
  };
  auto back_edges = [&](const std::vector<std::uint64_t>& counts) { return runs_of(input, 4, counts); };
  REQUIRE(back_edges({}) == 0);  // nothing says the loop went round: once through
  // The GPU ran the loop 3 times in each of the 4 warps: the branch 12 times, the instruction before the loop 4.
  REQUIRE(back_edges({4, 4, 12, 12, 12, 4, 4}) == warps * 2);
  input.counts = {4, 4, 12, 12, 12, 4, 4};
  JoinInput again = load_join_input(save_join_input(input));
  REQUIRE(again.counts == input.counts);
  REQUIRE_THROWS_WITH(load_join_input(R"({"schema":"atomsim-join-input-1","kernel":"k","sass":[[0,"EXIT"]],"warps":[],"counts":[1,2]})"),
                      Catch::Contains("key 'counts'"));

  // A uniform forward branch over a block that reports nothing (PyTorch's
  // general index calculation, skipped for contiguous tensors): the shorter
  // way skips it; the counts say the GPU ran it.
  JoinInput skip;
  skip.kernel = "invisible_block";
  skip.text = {"S2R R0, SR_TID.X", "ISETP.NE.AND P0, PT, R0, c[0x0][0x210], PT", "@P0 BRA 0x50", "IADD3 R1, R1, 0x1, RZ",
               "IADD3 R1, R1, 0x2, RZ", "STG.E desc[UR4][R2.64], R0", "EXIT"};
  for (std::size_t i = 0; i < skip.text.size(); ++i) skip.pcs.push_back(16 * i);
  skip.warps = input.warps;
  auto block_runs = [&](const std::vector<std::uint64_t>& counts) { return runs_of(skip, 3, counts); };
  REQUIRE(block_runs({}) == 0);
  REQUIRE(block_runs({4, 4, 4, 4, 4, 4, 4}) == warps);
  REQUIRE(block_runs({4, 4, 4, 0, 0, 4, 4}) == 0);
}

// The join walks warps on many threads: the streams, the guesses and the warp
// named in an error must be the same whatever their number.
TEST_CASE("warp join gives the same streams and errors on any number of threads", "[capture][join]") {
  JoinInput input = load_fixture("join-input-baseline-af0.15.json");
  const std::vector<trace::StaticInst> program = input.program();
  WarpJoiner one(program, input.text, input.observed());
  const auto serial = join_all(one, input.warps, 1);
  for (unsigned threads : {2u, 3u, 8u}) {
    INFO(threads << " threads");
    WarpJoiner many(program, input.text, input.observed());
    const auto parallel = join_all(many, input.warps, threads);
    REQUIRE(parallel.size() == serial.size());
    for (std::size_t w = 0; w < serial.size(); ++w) {
      REQUIRE(parallel[w].size() == serial[w].size());
      for (std::size_t i = 0; i < serial[w].size(); ++i) {
        REQUIRE(parallel[w][i].index == serial[w][i].index);
        REQUIRE(parallel[w][i].active_mask == serial[w][i].active_mask);
      }
    }
    REQUIRE(many.guessed_branches() == one.guessed_branches());
    REQUIRE(many.retried_guesses() == one.retried_guesses());
  }
  // Two damaged warps: the lower one is named, however the threads race.
  for (std::size_t damaged : {std::size_t{700}, std::size_t{3000}}) input.warps[damaged].events.pop_back();
  for (unsigned threads : {1u, 2u, 8u}) {
    WarpJoiner joiner(program, input.text, input.observed());
    REQUIRE_THROWS_WITH(join_all(joiner, input.warps, threads), Catch::StartsWith("warp 700: "));
  }
}

// A switch compiled to a jump table (BRX through a constant bank) names no
// target: its cases are the blocks nothing else leads to, and each lane goes
// to the one nearest its next observation.
TEST_CASE("warp join follows an indirect branch to the case its lanes report from", "[capture][join]") {
  JoinInput input;
  input.kernel = "switch";
  input.text = {"S2R R0, SR_TID.X",           "LDC R4, c[0x2][R0]",   "BRX R4 -0x30",
                "STG.E desc[UR4][R2.64], R0", "BRA 0x80",             "IADD3 R1, R1, 0x1, RZ",
                "STG.E desc[UR4][R6.64], R0", "BRA 0x80",             "EXIT"};
  for (std::size_t i = 0; i < input.text.size(); ++i) input.pcs.push_back(16 * i);
  WarpObservation second_case, split;
  second_case.events = {{6, 0xFFFFFFFFu, ObservedKind::Memory, 0, 0}, {8, 0xFFFFFFFFu, ObservedKind::Exit, 0, -1}};
  second_case.operands.emplace_back();
  split.events = {{3, 0x0000FFFFu, ObservedKind::Memory, 0, 0}, {6, 0xFFFF0000u, ObservedKind::Memory, 0, 1},
                  {8, 0xFFFFFFFFu, ObservedKind::Exit, 0, -1}};
  split.operands.resize(2);
  input.warps = {second_case, split};
  const std::vector<trace::StaticInst> program = input.program();
  WarpJoiner joiner(program, input.text, input.observed());
  const auto joined = join_all(joiner, input.warps);
  auto lanes_at = [](const std::vector<trace::WarpInst>& warp, std::uint32_t index) {
    std::uint32_t mask = 0;
    for (const trace::WarpInst& i : warp)
      if (i.index == index) mask |= i.active_mask;
    return mask;
  };
  REQUIRE(lanes_at(joined[0], 5) == 0xFFFFFFFFu);  // the second case's first instruction ran
  REQUIRE(lanes_at(joined[0], 3) == 0);
  REQUIRE(lanes_at(joined[1], 3) == 0x0000FFFFu);
  REQUIRE(lanes_at(joined[1], 5) == 0xFFFF0000u);
  REQUIRE(lanes_at(joined[1], 8) == 0xFFFFFFFFu);
}

// PyTorch's grid_sampler_2d_backward_kernel<float, int> on the H200 (4,096 CTAs
// of 8 warps): the interpolation mode picks its code through a jump table,
// which the join once could not pass ("cannot reach its next observed pc").
// Tagged apart from [join], which make test-threads runs: under
// ThreadSanitizer its 58 MB input takes 9 GB (1.9 GB without).
TEST_CASE("warp join joins grid_sample's backward as the count pass counted it", "[capture][join-large]") {
  JoinInput input = load_fixture("join-input-grid-sample-backward.json.zst");
  REQUIRE(!input.counts.empty());
  std::vector<std::uint64_t> executions(input.pcs.size(), 0);
  RejoinResult result;
  REQUIRE_NOTHROW(result = rejoin(input, 2, [&](std::uint64_t, const trace::WarpInst& i) { ++executions[i.index]; }));
  REQUIRE(result.warp_instructions > 28'000'000);
  REQUIRE(executions == input.counts);
}

// The capture suite's saved inputs (traces/datasets/h200/capture-suite: eager, compiled,
// graph-replayed and spawned PyTorch kernels, grid_sample backward magnified
// and minified, XLA, CuPy and the launch APIs, H200): each joins, and every
// instruction runs as often as its count pass counted.
TEST_CASE("warp join joins every capture-suite input as its count pass counted it", "[capture][join-suite]") {
  const std::filesystem::path suite = std::filesystem::path(ATOMSIM_SOURCE_DIR) / "traces/datasets/h200/capture-suite";
  std::size_t joined = 0, counted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(suite)) {
    const auto saved = entry.path() / "trace" / "join-input.json.zst";
    if (!std::filesystem::exists(saved)) continue;
    INFO(entry.path().filename().string());
    const JoinInput input = load_join_input(read_document(saved.string()));
    std::vector<std::uint64_t> executions(input.pcs.size(), 0);
    RejoinResult result;
    REQUIRE_NOTHROW(result = rejoin(input, 2, [&](std::uint64_t, const trace::WarpInst& i) { ++executions[i.index]; }));
    REQUIRE(result.warp_instructions > 0);
    ++joined;
    REQUIRE(executions == input.counts);
    ++counted;
  }
  REQUIRE(joined == 12);
  REQUIRE(counted == 12);
}
