// The L2 capacity probe (workloads/latency/l2_capacity.cu,
// traces/datasets/h100/latency/ncu-l2-capacity.csv) simulated: every SM's warps read,
// or write whole lines of, the first F MB of a buffer twice, in a grid-stride
// order; what the second pass moves from and to DRAM says how much of the
// footprint the L2 kept.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <functional>

#include "models/interconnect/address_map.hpp"
#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

// Two kernels of the probe's two passes (its grid: 8 CTAs of 256 threads an SM,
// 16 bytes a thread a trip); the DRAM sectors the second reads and writes.
std::pair<double, double> second_pass_dram(const GpuParams& params, bool write, std::uint64_t megabytes) {
  const std::uint64_t ctas = 132 * 8, threads = ctas * 256, n = (megabytes << 20) / 16;
  trace::KernelInfo k;
  k.name = write ? "write_pass" : "read_pass";
  k.grid = {static_cast<std::uint32_t>(ctas), 1, 1};
  k.block = {256, 1, 1};
  k.registers_per_thread = 32;
  k.program = {trace::parse_sass_instruction(write ? "STG.E.128 desc[UR4][R2.64], R4" : "LDG.E.128 R4, desc[UR4][R2.64]", 0),
               trace::parse_sass_instruction("EXIT", 16)};
  const std::string path = temp_trace(fmt::format("l2-capacity-{}-{}.trace", write ? "write" : "read", megabytes));
  {
    trace::TraceWriter w(path);
    for (int pass = 0; pass < 2; ++pass) {
      w.begin_kernel(k);
      for (std::uint64_t warp = 0; warp < k.total_warps(); ++warp) {
        // The second pass's CTAs read what the first's next CTA read: on the
        // SM beside, of the other partition (the GPU need not place a
        // launch's CTAs as it placed the one before).
        const std::uint64_t reads_as = pass == 0 ? warp : (warp + 8) % k.total_warps();
        for (std::uint64_t first = reads_as * 32; first < n; first += threads) {
          auto access = record(0);
          for (std::uint32_t lane = 0; lane < 32; ++lane) access.address[lane] = 0x7f0000000000ull + (first + lane) * 16;
          w.append(warp, access);
        }
        w.append(warp, record(1));
      }
      w.end_kernel();
    }
    w.finish();
  }
  trace::TraceReader reader(path);
  Gpu gpu(params);
  RunOptions options;
  options.progress = false;
  options.check_atomics = false;
  gpu.run_kernel(reader, 0, options);
  const KernelRun second = gpu.run_kernel(reader, 1, options);
  std::remove(path.c_str());
  const double written = total(second, "dram", "bytes_written");
  return {(total(second, "dram", "bytes") - written) / 32, written / 32};
}

// Lines whose home slice is in partition 0, from 0x7f0000000000 on.
std::vector<std::uint64_t> lines_of_partition_zero(const GpuParams& params, std::size_t count) {
  const model::AddressMap map(params.l2.address_map());
  std::vector<std::uint64_t> lines;
  for (std::uint64_t line = 0x7f0000000000ull; lines.size() < count; line += 128)
    if (map.partition_of_slice(map.slice_of(line)) == 0) lines.push_back(line);
  return lines;
}

// A kernel of two one-warp CTAs: warp 1, on the SM of partition 1, makes two
// passes over `lines`, `visit` appending its records for each line; then both
// warps run the program's last instruction (EXIT).
KernelRun two_passes(const GpuParams& params, const std::string& name, const std::vector<std::string>& program,
                     const std::vector<std::uint64_t>& lines,
                     const std::function<void(int pass, std::uint64_t line, std::vector<trace::WarpInst>&)>& visit) {
  auto path = write_kernel(name, program, 2, 1, [&](std::uint64_t warp) {
    std::vector<trace::WarpInst> s;
    if (warp == 1)
      for (int pass = 0; pass < 2; ++pass)
        for (std::uint64_t line : lines) visit(pass, line, s);
    s.push_back(record(static_cast<std::uint32_t>(program.size() - 1), 1));
    return s;
  });
  KernelRun run = run_one(params, path);
  std::remove(path.c_str());
  return run;
}

}  // namespace

TEST_CASE("L2 capacity: what the probe's second pass moves to and from DRAM, simulated beside the H100", "[.][l2-capacity-table]") {
  // One metric a line: "Run","ID",...,"Metric Name","Metric Unit","Metric Value".
  std::ifstream csv(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/ncu-l2-capacity.csv");
  std::vector<std::pair<std::string, std::map<std::string, double>>> runs;
  std::vector<std::string> header;
  for (std::string line; std::getline(csv, line);) {
    const auto f = csv_fields(line);
    if (header.empty()) { header = f; continue; }
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < f.size() && i < header.size(); ++i) row[header[i]] = f[i];
    if (runs.empty() || runs.back().first != row["Run"]) runs.push_back({row["Run"], {}});
    std::string value = row["Metric Value"];
    value.erase(std::remove(value.begin(), value.end(), ','), value.end());
    runs.back().second[row["Metric Name"]] = std::stod(value);
  }
  REQUIRE(runs.size() >= 2);
  const GpuParams home_only = h100_with({"l2.far_lines_cached_near=false"});
  const GpuParams near_copies = h100_with({"l2.far_lines_cached_near=true"});
  std::printf("| pass | MB | footprint sectors | H100 DRAM sectors read / written | model, home slices only | with near copies |\n"
              "|---|---|---|---|---|---|\n");
  for (const auto& [run, metrics] : runs) {
    const bool write = run.starts_with("write");
    const std::uint64_t mb = std::stoull(run.substr(run.find('-') + 1));
    const auto [read_home, write_home] = second_pass_dram(home_only, write, mb);
    const auto [read_near, write_near] = second_pass_dram(near_copies, write, mb);
    std::printf("| %s | %llu | %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f |\n", write ? "write" : "read",
                static_cast<unsigned long long>(mb), static_cast<double>(mb << 20) / 32, metrics.at("dram__sectors_read.sum"),
                metrics.at("dram__sectors_write.sum"), read_home, write_home, read_near, write_near);
  }
}

TEST_CASE("L2 capacity: with near copies an SM's loads of the other partition's lines are served from a copy in its own", "[models][memory]") {
  // Two SMs, one a partition, and two slices: the SM of partition 1 reads
  // 2,048 lines of partition 0's slice (256 KB, twice its L1) twice.
  const std::vector<std::string> small = {"gpu.sms=2", "l2.slices=2", "l2.partitions=2"};
  auto read_twice = [&](bool near) {
    auto overrides = small;
    overrides.push_back(std::string("l2.far_lines_cached_near=") + (near ? "true" : "false"));
    const GpuParams params = h100_with(overrides);
    const std::vector<std::string> program = {"LDG.E R4, desc[UR4][R2.64]", "EXIT"};
    return two_passes(params, near ? "near-copies" : "home-only", program, lines_of_partition_zero(params, 2048),
                      [](int, std::uint64_t line, auto& s) {
                        auto load = record(0, 1);
                        load.address[0] = line;
                        s.push_back(load);
                      });
  };
  const KernelRun home_only = read_twice(false), near = read_twice(true);
  REQUIRE(total(home_only, "l2_slice", "near_copy_hits") == 0);
  REQUIRE(total(near, "l2_slice", "near_copy_misses") == 2048);
  REQUIRE(total(near, "l2_slice", "near_copy_hits") == 2048);
  // Each line read from DRAM once either way; the second pass is a near hit, shorter than a far one.
  REQUIRE(total(near, "dram", "reads") == total(home_only, "dram", "reads"));
  REQUIRE(near.cycles < home_only.cycles);
}

TEST_CASE("L2 capacity: an atomic drops the copies of its line that it makes stale, in the L1 and near the SM", "[models][memory]") {
  // The SM of partition 1 loads 64 lines of partition 0's slice, sends a RED
  // to a word of each that adds the loaded value (so the line is in its L1
  // when the RED leaves), then loads them again: the second pass finds neither
  // its L1's copies nor its own partition's, and goes to the home slice.
  const GpuParams params = h100_with({"gpu.sms=2", "l2.slices=2", "l2.partitions=2", "l2.far_lines_cached_near=true"});
  const std::vector<std::uint64_t> lines = lines_of_partition_zero(params, 64);
  const std::vector<std::string> program = {"LDG.E R4, desc[UR4][R2.64]", "REDG.E.ADD.STRONG.GPU desc[UR4][R2.64], R4", "EXIT"};
  auto run_with_reds = [&](bool reds) {
    return two_passes(params, reds ? "stale-copies" : "kept-copies", program, lines, [&](int pass, std::uint64_t line, auto& s) {
      auto load = record(0, 1);
      load.address[0] = line;
      s.push_back(load);
      if (pass == 0 && reds) {
        auto red = record(1, 1);
        red.address[0] = line;
        red.value[0] = 1;
        s.push_back(red);
      }
    });
  };
  const KernelRun kept = run_with_reds(false), stale = run_with_reds(true);
  REQUIRE(total(kept, "l1", "load_line_hits") == 64);
  REQUIRE(total(stale, "l1", "atomic_invalidations") == 64);
  REQUIRE(total(stale, "l1", "load_line_hits") == 0);
  REQUIRE(total(stale, "l2_slice", "near_copies_dropped") == 64);
  REQUIRE(total(stale, "l2_slice", "near_copy_hits") == 0);
  REQUIRE(total(stale, "l2_slice", "near_copy_misses") == 128);
}
