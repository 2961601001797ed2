// The stores probe (workloads/latency/stores.cu, traces/h100/latency/stores.json
// and ncu-stores.csv) simulated from its own SASS: what scattered stores cost
// the L2 and DRAM when they write a sector in part, a whole sector or a line.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim_helpers.hpp"

using namespace atomsim;
using namespace atomsim::testing;

namespace {

// The addresses the probes' `store`-th store of warp `warp` (of `warps`) writes:
// the GPU's lines numbered store by store, `lanes_per_line` lanes to a line,
// each scattered over the window by an odd multiplier (32-bit arithmetic, as
// the probes).
void scattered_store(trace::WarpInst& inst, std::uint32_t store, std::uint64_t warps, std::uint64_t warp,
                     std::uint32_t lanes_per_line, std::uint32_t window_mask, std::uint32_t bytes_per_lane) {
  const std::uint32_t lines_per_store = 32 / lanes_per_line;
  for (std::uint32_t lane = 0; lane < 32; ++lane) {
    const std::uint32_t sequence =
        static_cast<std::uint32_t>((std::uint64_t(store) * warps + warp) * lines_per_store + lane / lanes_per_line);
    const std::uint32_t line = (sequence * 2654435761u) & window_mask;
    inst.address[lane] = 0x100000000ull + std::uint64_t(line) * 128 + (lane % lanes_per_line) * bytes_per_lane;
  }
}

struct StoreRun {
  double requests_per_cycle = 0;  // the GPU's line requests per SM cycle, steady state
  double dram_reads_per_request = 0, dram_writes_per_request = 0, dram_bytes_per_request = 0;
};

// Every SM's 32 warps (CTAs of 8) run stream_stores<bytes_per_lane / 4>'s loop:
// store k of trip t writes, for each lane, line (sequence x 2654435761) mod the
// window's lines (32-bit arithmetic, as the probe), its sequence counting the
// GPU's lines store by store, `lanes_per_line` lanes to a line. From DRAM: a
// 2 GB window of lines no launch wrote; else the L2's 8 MB, its lines in the L2
// at the start. The difference between two lengths, so that the launch, the
// L2's first filling and the last drain drop out.
StoreRun stream_stores(GpuParams params, std::uint32_t bytes_per_lane, std::uint32_t lanes_per_line, bool to_dram,
                       std::uint32_t active_sms) {
  const std::uint32_t width = bytes_per_lane / 4;
  const std::string function = fmt::format("_Z13stream_storesILi{}EEvPjjjiPx", width);
  const auto body = innermost_loop("stores.sass", function);
  std::vector<std::uint32_t> store_of(body.size(), 0);
  std::uint32_t stores = 0;
  for (std::size_t i = 0; i < body.size(); ++i)
    if (body[i].op == trace::OpClass::StoreGlobal) store_of[i] = stores++;
  REQUIRE(stores == 4);
  if (!to_dram) params.l2.start = "footprint";
  const std::uint32_t warps_per_cta = 8, warps_per_sm = 32, lines_per_store = 32 / lanes_per_line;
  const std::uint64_t warps = std::uint64_t(active_sms) * warps_per_sm;
  const std::uint32_t window_mask = static_cast<std::uint32_t>((to_dram ? 1ull << 31 : 8ull << 20) / 128 - 1);
  // Enough lines that the short run alone writes the L2's capacity over twice.
  const std::uint64_t l2_lines = std::uint64_t(params.l2.slices) * params.l2.slice_bytes / params.l2.line_bytes;
  const std::uint32_t short_trips =
      static_cast<std::uint32_t>(std::max<std::uint64_t>(2, (2 * l2_lines + warps * stores * lines_per_store - 1) / (warps * stores * lines_per_store)));
  auto run = [&](std::uint32_t trips) {
    auto path = write_program(function, body, active_sms * (warps_per_sm / warps_per_cta), warps_per_cta, [&](std::uint64_t warp) {
      std::vector<trace::WarpInst> s;
      for (std::uint32_t t = 0; t < trips; ++t)
        for (std::uint32_t i = 0; i < body.size(); ++i) {
          trace::WarpInst inst = record(i);
          if (body[i].op == trace::OpClass::StoreGlobal)
            scattered_store(inst, t * stores + store_of[i], warps, warp, lanes_per_line, window_mask, bytes_per_lane);
          s.push_back(inst);
        }
      return s;
    });
    KernelRun r = run_one(params, path, false);
    std::remove(path.c_str());
    return r;
  };
  const KernelRun shorter = run(short_trips), longer = run(2 * short_trips);
  const double requests = double(warps) * short_trips * stores * lines_per_store;
  auto per_request = [&](const char* name) { return (total(longer, "dram", name) - total(shorter, "dram", name)) / requests; };
  return {requests / static_cast<double>(longer.cycles - shorter.cycles), per_request("reads"), per_request("writes"),
          per_request("bytes")};
}

// The H100's line requests per SM cycle at one of the probe's points: the GPU's
// bytes per nanosecond over the whole launch (events), at the SM clock the
// probe ran at (1,980 MHz).
double measured_requests_per_cycle(std::uint32_t bytes_per_lane, std::uint32_t lanes_per_line, bool to_dram, std::uint32_t active_sms) {
  const auto doc = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/h100/latency/stores.json"));
  for (const auto& p : doc.at("points"))
    if (p.at("target") == (to_dram ? "dram" : "l2") && p.at("bytes_per_lane") == bytes_per_lane &&
        p.at("lanes_per_line") == lanes_per_line && p.at("active_sms") == active_sms)
      return p.at("bytes_per_ns").get<double>() / (bytes_per_lane * lanes_per_line) / 1.98;
  FAIL("no such point in stores.json");
  return 0;
}

}  // namespace

TEST_CASE("Stores: a sector written in part is read from DRAM first, and DRAM takes sectors at the probe's rate", "[stores][memory]") {
  // The L2 cut to a tenth, so that a few hundred thousand lines pass through it
  // as the probe's 8.65 million do through the H100's: the rates measured are
  // DRAM's, which do not depend on the L2's size (the H100's, on 16, 33 and
  // 132 SMs alike).
  const GpuParams params = h100_with({"l2.slice_bytes=65536"});
  // 4-byte stores, one a line: each reads its sector and writes it back
  // (ncu-stores.csv: 8.60 M sectors read and 8.59-9.17 M written for 8.65 M
  // requests); whole sectors write without reading.
  const StoreRun partial = stream_stores(params, 4, 1, true, 132);
  CHECK(partial.dram_reads_per_request == Approx(1).margin(0.02));
  CHECK(partial.dram_writes_per_request == Approx(1).margin(0.02));
  CHECK(partial.dram_bytes_per_request == Approx(64).margin(2));
  const StoreRun sector = stream_stores(params, 4, 8, true, 132);
  CHECK(sector.dram_reads_per_request == 0);
  CHECK(sector.dram_writes_per_request == Approx(1).margin(0.02));
  CHECK(sector.dram_bytes_per_request == Approx(32).margin(1));
  // Rates: the H100's whole launch includes the L2's first filling, a few
  // percent of its requests at the L2's rate, which the model's difference
  // leaves out.
  const double partial_measured = measured_requests_per_cycle(4, 1, true, 132);
  const double sector_measured = measured_requests_per_cycle(4, 8, true, 132);
  const double line_measured = measured_requests_per_cycle(4, 32, true, 132);
  const StoreRun line = stream_stores(params, 4, 32, true, 132);
  WARN(fmt::format("requests per SM cycle, model / H100: partial sectors {:.2f} / {:.2f}, sectors {:.2f} / {:.2f}, lines {:.2f} / {:.2f}",
                   partial.requests_per_cycle, partial_measured, sector.requests_per_cycle, sector_measured,
                   line.requests_per_cycle, line_measured));
  CHECK(partial.requests_per_cycle == Approx(partial_measured).epsilon(0.12));
  CHECK(sector.requests_per_cycle == Approx(sector_measured).epsilon(0.12));
  CHECK(line.requests_per_cycle == Approx(line_measured).epsilon(0.12));
}

// Every 132-SM point of the probe against the model, for docs/validation.md:
// tests/atomsim_tests "[stores-table]" (about two minutes).
TEST_CASE("Stores: every point of the stores probe on all SMs, simulated", "[.][stores-table]") {
  const GpuParams params = h100_with({"l2.slice_bytes=65536"});
  for (const bool to_dram : {false, true})
    for (const auto& [bytes, lanes] : {std::pair{4u, 1u}, {16u, 1u}, {4u, 8u}, {16u, 2u}, {4u, 32u}}) {
      // Into the L2: its full size, so that the probe's 8 MB window stays in it.
      const StoreRun r = stream_stores(to_dram ? params : h100_with({}), bytes, lanes, to_dram, 132);
      const double measured = measured_requests_per_cycle(bytes, lanes, to_dram, 132);
      std::printf("%-4s %2u B a lane, %2u lanes a line: %6.2f requests per SM cycle, H100 %6.2f (%+.1f%%); DRAM reads %.2f, writes %.2f, bytes %.1f a request\n",
                  to_dram ? "dram" : "l2", bytes, lanes, r.requests_per_cycle, measured, 100 * (r.requests_per_cycle / measured - 1),
                  r.dram_reads_per_request, r.dram_writes_per_request, r.dram_bytes_per_request);
    }
}

namespace {

// The lds_stores probe (workloads/latency/lds_stores.cu, traces/h100/latency/lds_stores.json)
// simulated from its SASS: every SM's warps (CTAs of 8) run its loop, each step a
// conflict-free shared load and, after it, a 4-byte store to a line of the L2's
// 8 MB (in the L2 from the start), `lanes_per_line` lanes to a line, the lines
// in the probe's order. The difference between two lengths.
struct LdsStoresRun {
  double cycles_per_step = 0, requests_per_sm_cycle = 0;
};

LdsStoresRun lds_stores(GpuParams params, bool loads, bool stores, std::uint32_t lanes_per_line, std::uint32_t warps_per_sm) {
  const std::string function = fmt::format("_Z10lds_storesILb{}ELb{}EEvPjjjiPxS0_", int(loads), int(stores));
  const auto body = innermost_loop("lds_stores.sass", function, true);
  std::vector<std::uint32_t> store_of(body.size(), 0);
  std::uint32_t store_count = 0, load_count = 0;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i].op == trace::OpClass::StoreGlobal) store_of[i] = store_count++;
    load_count += body[i].op == trace::OpClass::Shared;
  }
  const std::uint32_t steps = std::max(store_count, load_count);
  REQUIRE(steps == 4);
  params.l2.start = "footprint";
  const std::uint32_t sms = params.sms, warps_per_cta = 8, lines_per_store = 32 / std::max(1u, lanes_per_line);
  const std::uint64_t warps = std::uint64_t(sms) * warps_per_sm;
  const std::uint32_t window_mask = static_cast<std::uint32_t>((8ull << 20) / 128 - 1);
  auto run = [&](std::uint32_t trips) {
    auto path = write_program(function, body, sms * warps_per_sm / warps_per_cta, warps_per_cta, [&](std::uint64_t warp) {
      std::vector<trace::WarpInst> s;
      for (std::uint32_t t = 0; t < trips; ++t)
        for (std::uint32_t i = 0; i < body.size(); ++i) {
          trace::WarpInst inst = record(i);
          if (body[i].op == trace::OpClass::StoreGlobal)
            scattered_store(inst, t * store_count + store_of[i], warps, warp, lanes_per_line, window_mask, 4);
          s.push_back(inst);
        }
      return s;
    }, 4096);
    KernelRun r = run_one(params, path, false);
    std::remove(path.c_str());
    return r;
  };
  const std::uint32_t trips = 8;
  const KernelRun shorter = run(trips), longer = run(2 * trips);
  const double cycles = static_cast<double>(longer.cycles - shorter.cycles);
  return {cycles / (trips * steps), stores ? double(warps_per_sm) * trips * steps * lines_per_store / cycles : 0};
}

}  // namespace

// Every point of the lds_stores probe against the model, for docs/validation.md:
// tests/atomsim_tests "[lds-stores-table]" (about two minutes). The model's
// rates are the GPU's, steady state, against the H100's whole launches
// (events, at the probe's 1,980 MHz): where the slices saturate, the H100's
// warps share them unevenly, and a median warp's time says little of the rate.
TEST_CASE("Stores: shared loads behind scattered stores, every point of the lds_stores probe simulated", "[.][lds-stores-table]") {
  const auto doc = nlohmann::json::parse(slurp(std::string(ATOMSIM_SOURCE_DIR) + "/traces/h100/latency/lds_stores.json"));
  const GpuParams params = h100_with({});
  const double sms = doc.at("sms");
  std::printf("| loads | stores, lanes a line | warps an SM | H100 cycles a step (median warp) | model (mean) | H100 line requests an SM cycle (launch) | model | error |\n"
              "|---|---|---|---|---|---|---|---|\n");
  for (const auto& p : doc.at("points")) {
    const bool loads = p.at("loads"), stores = p.at("stores");
    const std::uint32_t lanes = p.at("lanes_per_line"), warps = p.at("warps_per_sm");
    const LdsStoresRun r = lds_stores(params, loads, stores, lanes, warps);
    const double h100_rate = p.at("requests_per_ns").get<double>() / 1.98 / sms;
    std::printf("| %s | %s | %u | %.1f | %.1f | %.3f | %.3f | %s |\n", loads ? "yes" : "no", stores ? std::to_string(lanes).c_str() : "no",
                warps, p.at("cycles_per_step").get<double>(), r.cycles_per_step, h100_rate, r.requests_per_sm_cycle,
                stores ? fmt::format("{:+.1f}%", 100 * (r.requests_per_sm_cycle / h100_rate - 1)).c_str() : "-");
    std::fflush(stdout);
  }
}
