// The dram_mix probe (workloads/latency/dram_mix.cu, traces/datasets/h100/latency/
// dram_mix.json, dram_mix-32.json and ncu-dram-mix*.csv) simulated from its own
// SASS: what a load that misses reads from DRAM, and what DRAM's channels take
// at mixes of reads and writes of lines no launch touched.
#include <catch2/catch.hpp>

#include <cstdio>
#include <functional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

struct MixPoint {
  int reads, writes, bytes;
};

struct MixRun {
  double accesses_per_ns = 0;  // the GPU's line accesses (loads' and stores' lines) a nanosecond at 1,980 MHz
  double dram_sectors_read_per_load = 0;
};

constexpr std::uint64_t kWindowLines = (1ull << 30) / 128;  // a gigabyte each for loads and stores

// The address of `lane` in the `n`-th load (or store) of warp `warp` of
// `warps`: the kernel's sequence, its line scattered over the window by an odd
// multiplier (32-bit arithmetic, as the probe), stores a window further on.
std::uint64_t mix_address(const MixPoint& m, std::uint64_t n, std::uint64_t warps, std::uint64_t warp, std::uint32_t lane, bool store) {
  const std::uint32_t lanes_per_line = static_cast<std::uint32_t>(m.bytes / 16), lines_per_inst = 32 / lanes_per_line;
  const auto sequence = static_cast<std::uint32_t>(n * warps * lines_per_inst + warp * lines_per_inst + lane / lanes_per_line);
  const std::uint64_t line = (sequence * 2654435761u) & (kWindowLines - 1);
  return 0x100000000ull + ((store ? kWindowLines : 0) + line) * 128 + lane % lanes_per_line * 16;
}

constexpr std::uint32_t kSms = 132, kWarpsPerSm = 32, kWarpsPerCta = 8;
constexpr std::uint64_t kWarps = std::uint64_t(kSms) * kWarpsPerSm;

// Every SM's 32 warps (CTAs of 8) run the probe loop `body` of `function`,
// touching `lines_a_trip` lines a trip, each warp's records of `trips` trips
// from `warp_records(trips, warp)`; the difference between two lengths, so
// that the launch, the L2's first filling with written lines and the last
// drain drop out. The L2 is cut to a tenth, so that lines pass through it
// sooner (no line is touched twice, so DRAM's rates do not depend on its
// size). Returns the lines a nanosecond at 1,980 MHz, and DRAM's sectors read
// a line of those `reading` of each trip's lines.
using WarpRecords = std::function<std::vector<trace::WarpInst>(std::uint32_t trips, std::uint64_t warp)>;
MixRun two_lengths(GpuParams params, const std::string& function, const std::vector<trace::StaticInst>& body, std::uint64_t lines_a_trip,
                   double reading, const WarpRecords& warp_records) {
  params.l2.slice_bytes = 65536;
  const std::uint64_t l2_lines = std::uint64_t(params.l2.slices) * params.l2.slice_bytes / params.l2.line_bytes;
  const auto short_trips = static_cast<std::uint32_t>(std::max<std::uint64_t>(2, (2 * l2_lines + lines_a_trip - 1) / lines_a_trip));
  auto run = [&](std::uint32_t trips) {
    auto path = write_program(function, body, kSms * (kWarpsPerSm / kWarpsPerCta), kWarpsPerCta,
                              [&](std::uint64_t warp) { return warp_records(trips, warp); });
    KernelRun r = run_one(params, path, false);
    std::remove(path.c_str());
    return r;
  };
  const KernelRun shorter = run(short_trips), longer = run(2 * short_trips);
  const double lines = double(lines_a_trip) * short_trips;
  auto more = [&](const char* name) { return total(longer, "dram", name) - total(shorter, "dram", name); };
  const double sectors_read = (more("bytes") - more("bytes_written")) / params.l2.sector_bytes;
  return {lines / static_cast<double>(longer.cycles - shorter.cycles) * 1.98, reading > 0 ? sectors_read / (lines * reading) : 0};
}

// mixed_sectors<reads, writes, bytes>'s loop.
MixRun mixed_sectors(const GpuParams& params, const MixPoint& m) {
  const std::string function = fmt::format("_Z13mixed_sectorsILi{}ELi{}ELi{}EEvPjiPxS0_", m.reads, m.writes, m.bytes);
  const auto body = innermost_loop("dram_mix.sass", function);
  const std::uint64_t lines_per_inst = 32 / (m.bytes / 16);
  return two_lengths(params, function, body, kWarps * lines_per_inst * (m.reads + m.writes), double(m.reads) / (m.reads + m.writes),
                     [&](std::uint32_t trips, std::uint64_t warp) {
                       std::vector<trace::WarpInst> s;
                       for (std::uint32_t t = 0; t < trips; ++t) {
                         std::uint32_t load = 0, store = 0;
                         for (std::uint32_t i = 0; i < body.size(); ++i) {
                           trace::WarpInst inst = record(i);
                           const bool is_load = body[i].op == trace::OpClass::LoadGlobal, is_store = body[i].op == trace::OpClass::StoreGlobal;
                           if (is_load || is_store) {
                             const std::uint64_t n = std::uint64_t(t) * (is_load ? m.reads : m.writes) + (is_load ? load++ : store++);
                             for (std::uint32_t lane = 0; lane < 32; ++lane) inst.address[lane] = mix_address(m, n, kWarps, warp, lane, is_store);
                           }
                           s.push_back(inst);
                         }
                         REQUIRE(load == std::uint32_t(m.reads));
                         REQUIRE(store == std::uint32_t(m.writes));
                       }
                       return s;
                     });
}

// The probe's last point: every lane adds to the first word of a line of its
// own (scattered_reds's loop of 4 REDs), the lines scattered over a gigabyte
// no launch touched.
MixRun scattered_reds(const GpuParams& params) {
  const std::string function = "_Z14scattered_redsPjiPx";
  const auto body = innermost_loop("dram_mix.sass", function);
  const std::uint32_t reds = 4;
  return two_lengths(params, function, body, kWarps * 32 * reds, 1, [&](std::uint32_t trips, std::uint64_t warp) {
    std::vector<trace::WarpInst> s;
    for (std::uint32_t t = 0; t < trips; ++t) {
      std::uint32_t red = 0;
      for (std::uint32_t i = 0; i < body.size(); ++i) {
        trace::WarpInst inst = record(i);
        if (body[i].op == trace::OpClass::Red) {
          const std::uint64_t n = std::uint64_t(t) * reds + red++;
          for (std::uint32_t lane = 0; lane < 32; ++lane) {
            const auto sequence = static_cast<std::uint32_t>((n * kWarps + warp) * 32 + lane);
            inst.address[lane] = 0x100000000ull + ((sequence * 2654435761u) & (kWindowLines - 1)) * 128;
            inst.value[lane] = 1;
          }
        }
        s.push_back(inst);
      }
      REQUIRE(red == reds);
    }
    return s;
  });
}

// The H100's line accesses a nanosecond at a point (events, the whole launch),
// at the L2 fetch granularity the run had.
double measured_accesses_per_ns(const MixPoint& m, int granularity) {
  const std::string file = granularity == 64 ? "dram_mix.json" : "dram_mix-32.json";
  const auto doc = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/" + file));
  for (const auto& p : doc.at("points"))
    if (p.at("reads") == m.reads && p.at("writes") == m.writes && p.at("bytes") == m.bytes && p.at("granularity") == granularity)
      return p.at("accesses_per_ns").get<double>();
  FAIL("no such point in " + file);
  return 0;
}

// DRAM's sectors read a load at a read-only point, or a RED at the REDs' (bytes
// 4; Nsight Compute, the second launch of the point).
double measured_sectors_read_per_load(const MixPoint& m, int granularity) {
  const std::string file = granularity == 64 ? "ncu-dram-mix.csv" : "ncu-dram-mix-32.csv";
  const std::string kernel =  // its commas dropped with the values' separators
      m.bytes == 4 ? std::string("scattered_reds") : fmt::format("void mixed_sectors<{} {} {}>", m.reads, m.writes, m.bytes);
  const double loads = m.bytes == 4 ? 132.0 * 32 * 64 * 4 * 32 : 132.0 * 32 * 512 * (32 / (m.bytes / 16));
  int launch = 0;
  for (const auto& l : ncu_launches(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/latency/" + file))
    if (l.at("Kernel Name").rfind(kernel, 0) == 0 && l.at("Metric Name") == "dram__sectors_read.sum" && launch++ == 1)
      return std::stod(l.at("Metric Value")) / loads;
  FAIL("no second launch of " + kernel + " in " + file);
  return 0;
}

}  // namespace

TEST_CASE("DRAM: a load that misses reads 64 bytes, writes among reads cost their channel more", "[dram][memory]") {
  const GpuParams params = h100_with({});
  // Loads of a sector each: two sectors read, or one with the granularity at 32.
  const MixPoint reads{4, 0, 32};
  const MixRun read64 = mixed_sectors(params, reads);
  CHECK(measured_sectors_read_per_load(reads, 64) == Approx(2).margin(0.02));
  CHECK(read64.dram_sectors_read_per_load == Approx(2).margin(0.02));
  GpuParams sector_fetch = params;
  sector_fetch.l2.fetch_bytes = 32;
  const MixRun read32 = mixed_sectors(sector_fetch, reads);
  CHECK(measured_sectors_read_per_load(reads, 32) == Approx(1).margin(0.02));
  CHECK(read32.dram_sectors_read_per_load == Approx(1).margin(0.02));
  // A read's access costs the same however many of its 64 bytes it moves.
  CHECK(read64.accesses_per_ns == Approx(measured_accesses_per_ns(reads, 64)).epsilon(0.08));
  CHECK(read32.accesses_per_ns == Approx(measured_accesses_per_ns(reads, 32)).epsilon(0.08));
  // Writes alone are slower than reads alone, and a mix of the two slower than both.
  const MixPoint writes{0, 2, 32}, mixed{1, 3, 32};
  const MixRun written = mixed_sectors(params, writes), mix = mixed_sectors(params, mixed);
  WARN(fmt::format("accesses a ns, model / H100: reads {:.1f} / {:.1f}, writes {:.1f} / {:.1f}, 1:3 {:.1f} / {:.1f}", read64.accesses_per_ns,
                   measured_accesses_per_ns(reads, 64), written.accesses_per_ns, measured_accesses_per_ns(writes, 64),
                   mix.accesses_per_ns, measured_accesses_per_ns(mixed, 64)));
  CHECK(written.accesses_per_ns == Approx(measured_accesses_per_ns(writes, 64)).epsilon(0.08));
  CHECK(mix.accesses_per_ns == Approx(measured_accesses_per_ns(mixed, 64)).epsilon(0.08));
  CHECK(mix.accesses_per_ns < 0.92 * written.accesses_per_ns);
}

// Every point against the model, for docs/validation.md: tests/atomsim_tests "[dram-mix-table]".
TEST_CASE("DRAM: every point of the dram_mix probe, simulated", "[.][dram-mix-table]") {
  const GpuParams params = h100_with({});
  GpuParams sector_fetch = params;
  sector_fetch.l2.fetch_bytes = 32;
  std::printf("| granularity | bytes | reads : writes | H100 accesses a ns | model | error | DRAM sectors read a load, H100 / model |\n|---|---|---|---|---|---|---|\n");
  for (const int granularity : {64, 32})
    for (const MixPoint& m : std::vector<MixPoint>{{4, 0, 32}, {3, 1, 32}, {2, 1, 32}, {1, 1, 32}, {1, 2, 32}, {1, 3, 32}, {0, 2, 32},
                                                   {4, 0, 64}, {1, 1, 64}, {0, 2, 64}, {4, 0, 128}, {1, 1, 128}, {0, 2, 128}}) {
      const MixRun r = mixed_sectors(granularity == 64 ? params : sector_fetch, m);
      const double h100 = measured_accesses_per_ns(m, granularity);
      const std::string loads =
          m.writes == 0 ? fmt::format("{:.2f} / {:.2f}", measured_sectors_read_per_load(m, granularity), r.dram_sectors_read_per_load) : "";
      std::printf("| %d | %d | %d : %d | %.2f | %.2f | %+.1f%% | %s |\n", granularity, m.bytes, m.reads, m.writes, h100, r.accesses_per_ns,
                  100 * (r.accesses_per_ns / h100 - 1), loads.c_str());
      std::fflush(stdout);
    }
  for (const int granularity : {64, 32}) {
    const MixRun r = scattered_reds(granularity == 64 ? params : sector_fetch);
    const MixPoint reds{0, 0, 4};
    const double h100 = measured_accesses_per_ns(reds, granularity);
    std::printf("| %d | REDs of 4 | - | %.2f | %.2f | %+.1f%% | %.2f / %.2f |\n", granularity, h100, r.accesses_per_ns,
                100 * (r.accesses_per_ns / h100 - 1), measured_sectors_read_per_load(reds, granularity), r.dram_sectors_read_per_load);
  }
}
