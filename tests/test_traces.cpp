#include <catch2/catch.hpp>

#include <bit>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <chrono>
#include <memory>

#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "sim_helpers.hpp"
#include "models/atomic_update.hpp"
#include "traces/format.hpp"
#include "traces/prefetch.hpp"
#include "traces/reader.hpp"
#include "traces/sass.hpp"
#include "traces/validate.hpp"
#include "traces/writer.hpp"

using namespace atomsim::trace;

namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("atomsim-test-" + std::to_string(::getpid()) + "-" + name)).string();
}

KernelInfo small_kernel(const std::string& name, std::uint32_t warps) {
  KernelInfo k;
  k.name = name;
  k.grid = {2, 1, 1};
  k.block = {warps * 16, 1, 1};  // two CTAs of warps/2 warps each
  k.registers_per_thread = 32;
  k.shared_bytes = 1024;
  k.program.push_back(parse_sass_instruction("FFMA R4, R2, R3, R4", 0x00));
  k.program.push_back(parse_sass_instruction("LDG.E.64 R6, desc[UR4][R2.64+0x8]", 0x10));
  k.program.push_back(parse_sass_instruction("REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R10.64+0x4], R13", 0x20));
  k.program.push_back(parse_sass_instruction("@!P0 BRA 0x0", 0x30));
  k.program.push_back(parse_sass_instruction("EXIT", 0x40));
  k.program.push_back(parse_sass_instruction("STG.E.STRONG.GPU desc[UR4][R2.64], R5", 0x50));
  k.program.push_back(parse_sass_instruction("WARPSYNC R8", 0x60));
  return k;
}

// A deterministic stream exercising every address and value encoding.
std::vector<WarpInst> records_for(std::uint64_t warp, std::size_t n) {
  std::mt19937_64 rng(warp * 7919 + 1);
  std::vector<WarpInst> out;
  for (std::size_t i = 0; i < n; ++i) {
    WarpInst w;
    w.index = static_cast<std::uint32_t>(rng() % 7);
    w.active_mask = (i % 3 == 0) ? 0xFFFFFFFFu : static_cast<std::uint32_t>(rng());
    int mode = static_cast<int>(rng() % 4);
    std::uint64_t base = 0x7f0000000000ull + (rng() % 1000) * 4;
    for (int lane = 0; lane < 32; ++lane) {
      if (!((w.active_mask >> lane) & 1)) continue;
      switch (mode) {
        case 0: w.address[lane] = base; break;
        case 1: w.address[lane] = base + 4u * lane; break;
        case 2: w.address[lane] = base + (rng() % 100000); break;
        default: w.address[lane] = rng(); break;
      }
      w.value[lane] = (mode % 2) ? 0x3f800000u : static_cast<std::uint32_t>(rng());
    }
    // Some of a load's lanes and all of a store's carry values (those a load awaits).
    if (w.index == 1) w.value_lanes = w.active_mask & static_cast<std::uint32_t>(rng());
    if (w.index == 5 && mode < 2) w.value_lanes = w.active_mask;
    // A WARPSYNC whose lanes named several masks carries how many, on every lane.
    if (w.index == 6 && mode < 2 && w.active_mask) {
      w.value_lanes = w.active_mask;
      for (std::uint32_t m = w.active_mask; m; m &= m - 1) w.value[std::countr_zero(m)] = 2 + mode;
    }
    out.push_back(w);
  }
  return out;
}

void require_same(const WarpInst& a, const WarpInst& b, const KernelInfo& k) {
  REQUIRE(a.index == b.index);
  REQUIRE(a.active_mask == b.active_mask);
  const StaticInst& s = k.program[a.index];
  for (int lane = 0; lane < 32; ++lane) {
    if (!((a.active_mask >> lane) & 1)) continue;
    if (is_global_memory(s.op)) REQUIRE(a.address[lane] == b.address[lane]);
    if (is_atomic(s.op)) REQUIRE(a.value[lane] == b.value[lane]);
  }
  REQUIRE(a.value_lanes == (is_atomic(s.op) ? a.active_mask : b.value_lanes));
  for (std::uint32_t m = a.value_lanes; m; m &= m - 1) REQUIRE(a.value[std::countr_zero(m)] == b.value[std::countr_zero(m)]);
}

std::string write_sample(const std::string& name, std::size_t records_per_warp = 3000) {
  std::string path = temp_path(name);
  TraceWriter w(path);
  for (int kernel = 0; kernel < 2; ++kernel) {
    KernelInfo k = small_kernel("kernel" + std::to_string(kernel), 4);
    if (kernel == 1) k.cta_order = {1, 0};
    w.begin_kernel(k);
    // Interleave warps, as a capture tool would.
    std::vector<std::vector<WarpInst>> streams;
    for (std::uint64_t warp = 0; warp < k.total_warps(); ++warp) streams.push_back(records_for(warp + 10 * kernel, records_per_warp));
    for (std::size_t i = 0; i < records_per_warp; ++i)
      for (std::uint64_t warp = 0; warp < k.total_warps(); ++warp) w.append(warp, streams[warp][i]);
    w.end_kernel();
  }
  w.finish();
  return path;
}

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

void write_all(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

TEST_CASE("traces round-trip every field through segments, kernels and interleaved warps", "[traces]") {
  std::string path = write_sample("roundtrip.trace");
  TraceReader reader(path);
  REQUIRE(reader.kernel_count() == 2);
  for (std::size_t k = 0; k < 2; ++k) {
    const KernelInfo& info = reader.kernel(k);
    KernelInfo expected = small_kernel("kernel" + std::to_string(k), 4);
    REQUIRE(info.name == expected.name);
    REQUIRE(info.grid.x == 2);
    REQUIRE(info.block.x == 64);
    REQUIRE(info.shared_bytes == 1024);
    REQUIRE(info.program.size() == expected.program.size());
    REQUIRE(info.program[2].mnemonic == "REDG.E.ADD.F32.FTZ.RN.STRONG.GPU");
    REQUIRE(info.program[2].atomic_op == AtomicOp::Add);
    REQUIRE(info.program[2].atomic_type == DataType::F32);
    REQUIRE(info.cta_order == (k == 1 ? std::vector<std::uint64_t>{1, 0} : std::vector<std::uint64_t>{}));
    for (std::uint64_t warp = 0; warp < info.total_warps(); ++warp) {
      auto expected_records = records_for(warp + 10 * k, 3000);
      WarpStream s = reader.open_warp(k, warp);
      WarpInst got;
      for (const auto& e : expected_records) {
        REQUIRE(s.next(got));
        require_same(got, e, info);
      }
      REQUIRE_FALSE(s.next(got));
    }
  }
  TraceSummary summary = validate_trace(path);
  REQUIRE(summary.kernels.size() == 2);
  REQUIRE(summary.kernels[0].warp_instructions == 4 * 3000);
  std::remove(path.c_str());
}

TEST_CASE("trace damage is reported with the file and byte offset, never a crash", "[traces][errors]") {
  std::string path = write_sample("damage.trace", 600);
  std::vector<char> good = read_all(path);
  std::string bad = temp_path("damaged.trace");
  auto open_and_read_all = [&](const std::string& p) {
    TraceReader r(p);
    for (std::size_t k = 0; k < r.kernel_count(); ++k)
      for (std::uint64_t w = 0; w < r.kernel(k).total_warps(); ++w) {
        WarpStream s = r.open_warp(k, w);
        WarpInst inst;
        while (s.next(inst)) {}
      }
  };

  SECTION("truncation anywhere") {
    for (std::size_t cut : {std::size_t(0), std::size_t(10), std::size_t(40), good.size() / 3, good.size() / 2, good.size() - 1}) {
      write_all(bad, std::vector<char>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(cut)));
      REQUIRE_THROWS_WITH(open_and_read_all(bad), Catch::Contains(bad) && Catch::Contains("byte offset"));
      REQUIRE_THROWS_AS(validate_trace(bad), TraceError);
    }
  }
  SECTION("a flipped byte in any chunk") {
    std::mt19937 rng(5);
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<char> copy = good;
      std::size_t at = format::kFileHeaderSize + rng() % (good.size() - format::kFileHeaderSize - format::kTrailerSize);
      copy[at] = static_cast<char>(copy[at] ^ 0x5A);
      write_all(bad, copy);
      REQUIRE_THROWS_WITH(validate_trace(bad), Catch::Contains(bad));
    }
  }
  SECTION("another version") {
    std::vector<char> copy = good;
    copy[8] = 2;  // major version 2, checksum fixed so that the version check is what fails
    std::uint32_t h = format::fnv1a(reinterpret_cast<unsigned char*>(copy.data()), 28);
    std::memcpy(copy.data() + 28, &h, 4);
    write_all(bad, copy);
    REQUIRE_THROWS_WITH(TraceReader(bad), Catch::Contains(fmt::format("unsupported trace version 2.{}", format::kVersionMinor)) && Catch::Contains("byte offset 0"));
  }
  SECTION("not a trace, or no file") {
    write_all(bad, std::vector<char>(100, 'x'));
    REQUIRE_THROWS_WITH(TraceReader(bad), Catch::Contains("not an atomsim trace"));
    REQUIRE_THROWS_WITH(TraceReader(temp_path("missing.trace")), Catch::Contains("cannot open trace"));
  }
  std::remove(bad.c_str());
  std::remove(path.c_str());
}

TEST_CASE("a warp prefetcher hands out the streams the reader gives, read ahead or not, in any order", "[traces][prefetch]") {
  std::string path = write_sample("prefetch.trace");
  TraceReader reader(path);
  const KernelInfo& info = reader.kernel(1);
  // Kernel 1 starts CTA 1 first: its warps 2 and 3, then CTA 0's 0 and 1.
  WarpPrefetcher prefetcher(reader, 1, {2, 3, 0, 1}, 2);
  for (int waited = 0; !prefetcher.holds(2) && waited < 10000; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  REQUIRE(prefetcher.holds(2));
  REQUIRE_FALSE(prefetcher.holds(0));  // two ahead at most
  for (std::uint64_t warp : {2, 0, 3, 1}) {  // 0 before 3: a CTA started out of turn
    INFO("warp " << warp);
    WarpStream s = prefetcher.open_warp(warp);
    WarpInst got;
    for (const auto& e : records_for(warp + 10, 3000)) {
      REQUIRE(s.next(got));
      require_same(got, e, info);
    }
    REQUIRE_FALSE(s.next(got));
  }
  REQUIRE(prefetcher.prefetched_opens() >= 1);
  std::remove(path.c_str());
}

TEST_CASE("a damaged trace read through a warp prefetcher fails as it fails without one", "[traces][prefetch][errors]") {
  std::string path = write_sample("prefetch-damage.trace", 600);
  std::vector<char> good = read_all(path);
  std::string bad = temp_path("prefetch-damaged.trace");
  // What reading every warp of kernel 0 gives: the error, or a digest of the records.
  auto outcome = [&](bool prefetch) -> std::string {
    try {
      TraceReader r(bad);
      std::unique_ptr<WarpPrefetcher> prefetcher;
      if (prefetch) prefetcher = std::make_unique<WarpPrefetcher>(r, 0, std::vector<std::uint64_t>{0, 1, 2, 3}, 4);
      std::uint64_t digest = 0;
      for (std::uint64_t w = 0; w < 4; ++w) {
        WarpStream s = prefetcher ? prefetcher->open_warp(w) : r.open_warp(0, w);
        WarpInst inst;
        while (s.next(inst)) digest = digest * 31 + inst.index + inst.active_mask + inst.address[0];
      }
      return std::to_string(digest);
    } catch (const TraceError& e) {
      return e.what();
    }
  };
  std::mt19937 rng(11);
  int failures = 0;
  for (int trial = 0; trial < 30; ++trial) {
    std::vector<char> copy = good;
    std::size_t at = format::kFileHeaderSize + rng() % (good.size() / 2);
    copy[at] = static_cast<char>(copy[at] ^ 0x5A);
    write_all(bad, copy);
    const std::string plain = outcome(false);
    INFO("byte " << at << ": " << plain);
    REQUIRE(outcome(true) == plain);
    failures += plain.find("byte offset") != std::string::npos;
  }
  REQUIRE(failures > 0);
  std::remove(bad.c_str());
  std::remove(path.c_str());
}

TEST_CASE("a kernel's CTA order names each CTA of its grid once, or the kernel is refused by name", "[traces][errors]") {
  auto decode = [](std::vector<std::uint64_t> order) {
    KernelInfo k = small_kernel("k", 2);
    k.cta_order = std::move(order);
    const std::vector<unsigned char> bytes = format::encode_kernel(k);
    const std::string file = "k.trace";
    const format::Origin origin{&file, "kernel chunk", 48};
    format::ByteReader in(bytes.data(), bytes.size(), origin);
    return format::decode_kernel(in);
  };
  REQUIRE(decode({1, 0}).cta_order == std::vector<std::uint64_t>{1, 0});
  REQUIRE_THROWS_WITH(decode({1, 1}), Catch::Contains("k.trace") && Catch::Contains("CTA order names CTA 1 twice"));
  REQUIRE_THROWS_WITH(decode({0, 2}), Catch::Contains("outside the grid of 2"));
  REQUIRE_THROWS_WITH(decode({0}), Catch::Contains("byte offset"));
}

TEST_CASE("a WARPSYNC's record carries how many masks its lanes named, 2 to 32, or is refused by name", "[traces][errors]") {
  const KernelInfo k = small_kernel("k", 2);
  auto round_trip = [&](std::uint64_t masks, std::uint64_t odd_lane_masks) {
    WarpInst sync;
    sync.index = 6;
    sync.active_mask = 0xFFFFFFFFu;
    sync.value_lanes = 0xFFFFFFFFu;
    for (int lane = 0; lane < 32; ++lane) sync.value[lane] = lane % 2 ? odd_lane_masks : masks;
    format::ByteWriter out;
    format::encode_record(out, k.program[6], sync, format::kInitialPreviousIndex, format::kInitialPreviousMask);
    const std::string file = "k.trace";
    const format::Origin origin{&file, "segment", 48};
    format::ByteReader in(out.bytes.data(), out.bytes.size(), origin);
    WarpInst read;
    format::decode_record(in, k.program, read, format::kInitialPreviousIndex, format::kInitialPreviousMask);
    return read;
  };
  const WarpInst read = round_trip(5, 5);
  REQUIRE(read.value_lanes == 0xFFFFFFFFu);
  REQUIRE(read.value[31] == 5);
  REQUIRE_THROWS_WITH(round_trip(1, 1), Catch::Contains("k.trace") && Catch::Contains("a WARPSYNC's lanes name 1 masks"));
  REQUIRE_THROWS_WITH(round_trip(33, 33), Catch::Contains("name 33 masks"));
  REQUIRE_THROWS_WITH(round_trip(3, 4), Catch::Contains("the same on every lane"));
  // An FFMA's values are not written: only memory instructions and WARPSYNCs carry them.
  WarpInst ffma = read;
  ffma.index = 0;
  format::ByteWriter out;
  format::encode_record(out, k.program[0], ffma, format::kInitialPreviousIndex, format::kInitialPreviousMask);
  REQUIRE(out.bytes.size() == 1);
}

TEST_CASE("trace info gives each WARPSYNC's spread of the masks its lanes named", "[traces]") {
  std::string path = write_sample("warpsync.trace", 400);
  const TraceSummary s = validate_trace(path);
  std::remove(path.c_str());
  // records_for: a WARPSYNC record carries 2 or 3 masks where its mode is below 2, none (one mask) otherwise.
  const auto& shapes = s.kernels[0].warp_syncs;
  REQUIRE(shapes.size() == 1);
  const auto& shape = shapes.at(0x60);
  auto executions = [&](int masks) { return static_cast<double>(shape.at(masks - 1)); };
  REQUIRE(executions(1) > 0);
  REQUIRE(executions(2) > 0);
  REQUIRE(executions(3) > 0);
  REQUIRE(executions(4) == 0);
}

TEST_CASE("a writer that is not finished leaves no trace behind", "[traces][errors]") {
  std::string path = temp_path("unfinished.trace");
  {
    TraceWriter w(path);
    w.begin_kernel(small_kernel("k", 2));
    REQUIRE_THROWS_AS(w.append(99, WarpInst{}), TraceError);
  }
  REQUIRE_FALSE(std::filesystem::exists(path));
  REQUIRE_FALSE(std::filesystem::exists(path + ".partial"));
}

TEST_CASE("a writer killed mid-write leaves nothing that validates as a trace", "[traces][errors]") {
  // A capture or generator killed (SIGKILL: no destructor runs) part way through
  // its records: the trace's name never appears, and what it was writing fails validation.
  std::string path = temp_path("killed.trace");
  std::filesystem::remove(path);
  std::filesystem::remove(path + ".partial");
  pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    TraceWriter w(path);
    w.begin_kernel(small_kernel("k", 4096));
    WarpInst inst;
    inst.active_mask = 0xFFFFFFFF;
    for (std::uint64_t warp = 0; warp < 4096; ++warp) {
      for (int i = 0; i < 64; ++i) {
        inst.index = static_cast<std::uint32_t>(i % 4);
        for (int lane = 0; lane < 32; ++lane) inst.address[lane] = 0x1000 + 4096 * warp + 64 * i + 4 * lane;
        w.append(warp, inst);
      }
      w.end_warp(warp);
      if (warp == 2048) raise(SIGKILL);
    }
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE_FALSE(std::filesystem::exists(path));
  REQUIRE(std::filesystem::exists(path + ".partial"));
  REQUIRE(std::filesystem::file_size(path + ".partial") > 0);
  REQUIRE_THROWS_AS(validate_trace(path + ".partial"), TraceError);
  std::filesystem::remove(path + ".partial");
}

TEST_CASE("uniform and strided addresses cost a few bytes per record", "[traces]") {
  std::string path = temp_path("compact.trace");
  {
    TraceWriter w(path);
    KernelInfo k = small_kernel("k", 2);
    w.begin_kernel(k);
    for (int i = 0; i < 20000; ++i) {
      WarpInst inst;
      inst.index = 2;  // REDG
      inst.active_mask = 0xFFFFFFFF;
      for (int lane = 0; lane < 32; ++lane) {
        inst.address[lane] = 0x7f0000000000ull + 36u * i + 4u * lane;
        inst.value[lane] = 0x3f800000;
      }
      w.append(0, inst);
    }
    w.end_kernel();
    w.finish();
  }
  // Raw: 1 flag + 1 index + 8 base + 4 stride + 8 uniform value = 22 B per record before compression.
  TraceSummary s = validate_trace(path);
  REQUIRE(s.raw_bytes == 22u * 20000);
  REQUIRE(s.file_bytes < s.raw_bytes);
  std::remove(path.c_str());
}

TEST_CASE("SASS listings give each instruction the control bits of its encoding and traces keep them", "[traces][sass]") {
  using atomsim::testing::Control;
  const std::string listing = atomsim::testing::listing_with_control({
      {"REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R10.64], R13", Control{4, 7, 0, 0}},
      {"LDS R20, [R4]", Control{1, 2, 7, 0}},
      {"@P0 BRA 0x0", Control{5, 7, 7, 0b101}},
  });
  std::vector<StaticInst> program = parse_sass_function(listing, "k");
  REQUIRE(program.size() == 3);
  for (const auto& s : program) REQUIRE(s.control.present);
  REQUIRE(program[0].control.stall() == 4);
  REQUIRE(program[0].control.read_barrier() == 0);
  REQUIRE(program[0].control.write_barrier() == ControlBits::kNoBarrier);
  REQUIRE(program[1].control.write_barrier() == 2);
  REQUIRE(program[2].control.wait_mask() == 0b101);
  REQUIRE(program[2].control.stall() == 5);
  // The encoding of a real sm_90 loop branch: stall 5, waits on barrier 0.
  const ControlBits bra = ControlBits::from_encoding_high_word(0x001fea000383ffffull);
  REQUIRE(bra.stall() == 5);
  REQUIRE(bra.wait_mask() == 0b1);
  REQUIRE(bra.write_barrier() == ControlBits::kNoBarrier);

  // A listing without the second word (older GPUs, or text only) has none.
  std::string one_word = listing;
  for (std::size_t at; (at = one_word.find("\n                                          /*")) != std::string::npos;)
    one_word.erase(at, one_word.find('\n', at + 1) - at);
  for (const auto& s : parse_sass_function(one_word, "k")) REQUIRE_FALSE(s.control.present);

  // Through a trace: kept where known, absent where not, refused out of range.
  auto round_trip = [&](std::vector<StaticInst> p) {
    const std::string path = temp_path("control.trace");
    KernelInfo k;
    k.name = "k";
    k.program = std::move(p);
    {
      TraceWriter w(path);
      w.begin_kernel(k);
      w.end_kernel();
      w.finish();
    }
    TraceReader reader(path);
    REQUIRE(reader.version_minor() == format::kVersionMinor);
    KernelInfo back = reader.kernel(0);
    std::remove(path.c_str());
    return back.program;
  };
  program[1].control = ControlBits{};
  std::vector<StaticInst> back = round_trip(program);
  REQUIRE(back[0].control.present);
  REQUIRE(back[0].control.raw == program[0].control.raw);
  REQUIRE_FALSE(back[1].control.present);
  REQUIRE(back[2].control.raw == program[2].control.raw);
  for (auto& s : program) s.control = ControlBits{};
  for (const auto& s : round_trip(program)) REQUIRE_FALSE(s.control.present);
  program[0].control = ControlBits{1u << 22, true};
  REQUIRE_THROWS_WITH(round_trip(program), Catch::Contains("kernel chunk") && Catch::Contains("control bits out of range"));
}

TEST_CASE("SASS text gives an instruction's constant-bank operand and traces keep it", "[traces][sass]") {
  const StaticInst uldc = parse_sass_instruction("ULDC.64 UR4, c[0x0][0x210]", 0);
  REQUIRE(uldc.constant.present);
  REQUIRE(uldc.constant.bank == 0);
  REQUIRE(uldc.constant.offset == 0x210);
  const StaticInst negated = parse_sass_instruction("@P0 FFMA R2, R3, -c[0x3][0x1c], R4", 16);
  REQUIRE(negated.constant.present);
  REQUIRE(negated.constant.bank == 3);
  REQUIRE(negated.constant.offset == 0x1c);
  // Read through the MIO (LDC) or at an offset a register names: not an issue-time read.
  REQUIRE_FALSE(parse_sass_instruction("LDC R1, c[0x0][0x28]", 32).constant.present);
  REQUIRE_FALSE(parse_sass_instruction("IMAD R1, R2, c[0x0][R3+0x4], R5", 48).constant.present);
  REQUIRE_FALSE(parse_sass_instruction("IADD3 R1, R2, 0x10, RZ", 64).constant.present);

  std::vector<StaticInst> program = {uldc, negated, parse_sass_instruction("EXIT", 32)};
  auto round_trip = [&](const std::vector<StaticInst>& p) {
    const std::string path = temp_path("constants.trace");
    KernelInfo k;
    k.name = "k";
    k.program = p;
    {
      TraceWriter w(path);
      w.begin_kernel(k);
      w.end_kernel();
      w.finish();
    }
    TraceReader reader(path);
    KernelInfo back = reader.kernel(0);
    std::remove(path.c_str());
    return back.program;
  };
  const std::vector<StaticInst> back = round_trip(program);
  REQUIRE(back[0].constant.key() == uldc.constant.key());
  REQUIRE(back[1].constant.key() == negated.constant.key());
  REQUIRE_FALSE(back[2].constant.present);
  program[0].constant.bank = 40;
  REQUIRE_THROWS_WITH(round_trip(program), Catch::Contains("kernel chunk") && Catch::Contains("constant bank 40 out of range"));
}

TEST_CASE("An instruction's control bits name what it may wait for: each barrier's nearest setter before it and last after it",
          "[traces][sass]") {
  using atomsim::testing::Control;
  // Control{stall, write barrier, read barrier, wait mask}; 7 is no barrier.
  const std::vector<StaticInst> program = parse_sass_function(atomsim::testing::listing_with_control({
      {"LOP3.LUT R5, R10, R11, RZ, 0xc0, !PT", Control{1, 7, 7, 0b10}},         // 0: barrier 1, set last at 4 (the loop's previous iteration)
      {"MATCH.ANY R10, R4", Control{1, 0, 7, 0}},                                 // 1: sets 0
      {"REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R12.64], R13", Control{1, 7, 2, 0}},  // 2: read barrier 2
      {"IADD3 R12, R10, R2, RZ", Control{1, 7, 7, 0b101}},                       // 3: barriers 0 and 2
      {"SHFL.IDX PT, R11, R4, R5, 0x1f", Control{1, 1, 7, 0b1}},                 // 4: sets 1, waits on 0
  }), "k");
  REQUIRE(barrier_producers(program, 0) == std::vector<std::size_t>{4});
  REQUIRE(barrier_producers(program, 1).empty());
  REQUIRE(barrier_producers(program, 3) == std::vector<std::size_t>{1, 2});
  REQUIRE(barrier_producers(program, 4) == std::vector<std::size_t>{1});
  // Barrier 0 set both before (1) and after (4) the instruction that waits on it: both named, before first.
  std::vector<StaticInst> looped = program;
  looped[4].control = ControlBits{looped[4].control.raw & ~(7u << 5), true};  // the SHFL now sets barrier 0
  REQUIRE(looped[4].control.write_barrier() == 0);
  REQUIRE(barrier_producers(looped, 3) == std::vector<std::size_t>{1, 4, 2});
  std::vector<StaticInst> without = program;
  for (auto& s : without) s.control = ControlBits{};
  REQUIRE(barrier_producers(without, 3).empty());
}

TEST_CASE("SASS text gives op class, registers, width and atomic kind", "[traces][sass]") {
  StaticInst red = parse_sass_instruction("@!P1 REDG.E.ADD.F32.FTZ.RN.STRONG.GPU desc[UR6][R10.64+0x4], R13", 0);
  REQUIRE(red.op == OpClass::Red);
  REQUIRE(red.num_dst == 0);
  // guard P1, address pair R10:R11, uniform descriptor UR6, data R13
  std::vector<std::uint16_t> srcs(red.src.begin(), red.src.begin() + red.num_src);
  std::sort(srcs.begin(), srcs.end());
  REQUIRE(srcs == std::vector<std::uint16_t>{10, 11, 13, reg::kPredicateBase + 1, reg::kUniformBase + 6});
  REQUIRE(red.access_bytes == 4);
  StaticInst setp = parse_sass_instruction("ISETP.GE.U32.AND P0, PT, R2, UR5, PT", 0);
  REQUIRE(setp.op == OpClass::IntAlu);
  REQUIRE(setp.num_dst == 1);
  REQUIRE(setp.dst[0] == reg::kPredicateBase + 0);
  StaticInst wide = parse_sass_instruction("IMAD.WIDE.U32 R10, R11, 0x24, R2", 0);
  REQUIRE(wide.op == OpClass::Fma);
  REQUIRE(wide.num_dst == 2);
  REQUIRE(wide.dst[1] == 11);
  StaticInst shfl = parse_sass_instruction("SHFL.DOWN PT, R11, R12, 0x10, 0x1f", 0);
  REQUIRE(shfl.op == OpClass::Shuffle);
  REQUIRE(shfl.num_dst == 1);
  REQUIRE(shfl.dst[0] == 11);
  REQUIRE(classify_opcode("MUFU.RCP") == OpClass::Sfu);
  REQUIRE(classify_opcode("BAR.SYNC.DEFER_BLOCKING") == OpClass::Barrier);
}

// Two floats as one 8-byte word, the first in the low half.
static std::uint64_t pack(float lo, float hi) {
  return std::uint64_t{std::bit_cast<std::uint32_t>(lo)} | std::uint64_t{std::bit_cast<std::uint32_t>(hi)} << 32;
}

// Triton's scatters add two or four adjacent floats with one vector RED (the
// two-float one was once read as a 4-byte U32; torch.compile's index_add_ on
// the H200 uses the four-float one). A record's value is a float pair: all of
// F32x2's operand, F32x4's first two floats.
TEST_CASE("vector float atomics decode to their width and add as float pairs", "[traces][sass]") {
  const struct {
    const char* sass;
    DataType type;
    std::uint32_t bytes;
    const char* name;
  } cases[] = {{"REDG.E.ADD.F32x2.FTZ.RN.STRONG.GPU desc[UR4][R2.64], R4", DataType::F32x2, 8, "f32x2"},
               {"REDG.E.ADD.F32x4.FTZ.RN.STRONG.GPU desc[UR4][R10.64], R32", DataType::F32x4, 16, "f32x4"}};
  for (const auto& c : cases) {
    INFO(c.sass);
    const StaticInst s = parse_sass_instruction(c.sass, 0x40);
    REQUIRE(s.atomic_type == c.type);
    REQUIRE(s.atomic_op == AtomicOp::Add);
    REQUIRE(s.access_bytes == c.bytes);
    REQUIRE(operand_bytes(c.type) == c.bytes);
    REQUIRE(value_bytes(c.type) == 8);
    REQUIRE(std::string(data_type_name(c.type)) == c.name);
    REQUIRE(atomsim::model::combine_updates(pack(1.0f, 2.0f), pack(3.0f, 4.0f), AtomicOp::Add, c.type) == pack(4.0f, 6.0f));
  }
  REQUIRE(add_f32x2(pack(1.5f, -2.0f), pack(0.25f, 3.0f)) == pack(1.75f, 1.0f));
}
