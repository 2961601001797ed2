#include "sim/gpu.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <thread>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "models/dram/dram.hpp"
#include "models/interconnect/address_map.hpp"
#include "models/interconnect/crossbar.hpp"
#include "models/l1/l1.hpp"
#include "models/l2/l2_slice.hpp"
#include "models/mio/mio.hpp"
#include "models/sm/sm.hpp"
#include "traces/prefetch.hpp"
#include "traces/sass.hpp"

namespace atomsim {

using namespace model;

namespace {
// Warps whose first segments the prefetcher may hold before they are opened:
// ahead of a few hundred CTA starts, at a few kilobytes a warp.
constexpr std::size_t kPrefetchedWarps = 1024;
}  // namespace

struct Gpu::Units {
  AddressMap map;
  LaneOpPool pool;
  std::vector<std::unique_ptr<Sm>> sms;
  std::vector<std::unique_ptr<Mio>> mios;
  std::vector<std::unique_ptr<L1>> l1s;
  std::unique_ptr<Crossbar> request_network, reply_network, partition_network;
  std::vector<std::unique_ptr<L2Slice>> slices;
  std::unique_ptr<Dram> dram;
  std::unique_ptr<CtaDispatcher> dispatcher;
  Units(const AddressMapParams& p, std::uint32_t sms) : map(p), pool(sms) {}
};

Gpu::Gpu(const GpuParams& p) : params_(p), created_(std::chrono::steady_clock::now()) {
  reset_simulation_context();
  units_ = std::make_unique<Units>(p.l2.address_map(), p.sms);
  Units& u = *units_;
  const std::uint32_t slices = p.l2.slices;
  // Links between clusters take the lookahead, and what follows them as much
  // less, so that a request's path is as long as with a lookahead of one.
  const Cycle between = p.lookahead_cycles;
  const Cycle stretch = between - 1;
  DramParams dram = p.dram;
  dram.latency -= 2 * stretch;
  DispatchParams dispatch = p.dispatch;
  dispatch.launch_latency -= stretch;
  dispatch.cta_done_latency -= stretch;
  for (std::uint32_t i = 0; i < p.sms; ++i) {
    u.sms.push_back(std::make_unique<Sm>(fmt::format("sm{}", i).c_str(), p.sm, p.placement_offset, stats_));
    u.mios.push_back(std::make_unique<Mio>(fmt::format("mio{}", i).c_str(), p.mio, p.sm.subcores, stats_));
    u.l1s.push_back(std::make_unique<L1>(fmt::format("l1_{}", i).c_str(), p.l1, static_cast<std::uint16_t>(i),
                                         p.sm.subcores, u.map, u.pool, stats_));
  }
  u.request_network = std::make_unique<Crossbar>(std::string(kRequestNetworkName).c_str(), p.request_network, p.sms, slices, stats_);
  u.reply_network = std::make_unique<Crossbar>("reply_network", p.reply_network, slices, p.sms, stats_);
  u.partition_network = std::make_unique<Crossbar>("partition_network", p.partition_network, slices, slices, stats_);
  for (std::uint32_t s = 0; s < slices; ++s)
    u.slices.push_back(std::make_unique<L2Slice>(fmt::format("l2_slice{}", s).c_str(), p.l2, s, u.map, u.pool, stats_));
  u.dram = std::make_unique<Dram>("dram", dram, slices, stats_);
  u.dispatcher = std::make_unique<CtaDispatcher>("dispatcher", dispatch, p.sms, p.sms, stats_);

  for (std::uint32_t i = 0; i < p.sms; ++i) {
    Sm& sm = *u.sms[i];
    L1& l1 = *u.l1s[i];
    Mio& mio = *u.mios[i];
    for (std::uint32_t s = 0; s < p.sm.subcores; ++s) {
      sm.lg_queue(s).bind(l1.lg_queue(s), 1);
      sm.mio_queue(s).bind(mio.queue(s), 1);
    }
    l1.to_sm().bind(sm.lsu_completions(), 1);
    mio.to_sm().bind(sm.mio_completions(), 1);
    l1.to_l2().bind(u.request_network->input(i), between);
    u.reply_network->output(i).bind(l1.from_l2(), p.reply_network.latency - stretch);
    u.dispatcher->to_sm(i).bind(sm.cta_launch(), between);
    sm.cta_done().bind(u.dispatcher->from_sm(i), dispatch.cta_done_latency);
    u.dispatcher->kernel_end(i).bind(l1.kernel_end(), between);
  }
  for (std::uint32_t s = 0; s < slices; ++s) {
    L2Slice& slice = *u.slices[s];
    u.request_network->output(s).bind(slice.requests(), p.request_network.latency - stretch);
    slice.replies().bind(u.reply_network->input(s), between);
    slice.to_other_partition().bind(u.partition_network->input(s), between);
    u.partition_network->output(s).bind(slice.from_other_partition(), p.partition_network.latency - stretch);
    slice.to_dram().bind(u.dram->request(s), between);
    u.dram->reply(s).bind(slice.from_dram(), between);
  }
}

Gpu::~Gpu() = default;

namespace {
double as_number(std::uint64_t bits, trace::DataType type) {
  switch (type) {
    case trace::DataType::F32: {
      float f;
      std::uint32_t b = static_cast<std::uint32_t>(bits);
      std::memcpy(&f, &b, 4);
      return f;
    }
    case trace::DataType::F64: return std::bit_cast<double>(bits);
    case trace::DataType::S32: return static_cast<std::int32_t>(bits);
    case trace::DataType::S64: return static_cast<double>(static_cast<std::int64_t>(bits));
    case trace::DataType::U64: return static_cast<double>(bits);
    default: return static_cast<double>(static_cast<std::uint32_t>(bits));
  }
}

// With nothing left to happen, a read waiting for a value no store will
// write would stop the kernel: the one that has waited longest is answered
// (counted as l2_slice.awaits_released), and the run goes on. False when none waits.
bool release_oldest_awaiting_read(const std::vector<std::unique_ptr<L2Slice>>& slices) {
  L2Slice* oldest = nullptr;
  for (auto& slice : slices)
    if (slice->oldest_awaiting_read() != kNever && (!oldest || slice->oldest_awaiting_read() < oldest->oldest_awaiting_read()))
      oldest = slice.get();
  if (!oldest) return false;
  oldest->release_awaiting_read(current_cycle() + 1);
  return true;
}
}  // namespace

FunctionalCheck Gpu::check_atomics() const {
  FunctionalCheck c;
  std::unordered_map<std::uint64_t, const AtomicCell*> applied;
  for (const auto& slice : units_->slices)
    slice->atomic_memory().for_each([&](std::uint64_t address, const AtomicCell& cell) { applied[address] = &cell; });
  for (const auto& [address, e] : expected_) {
    ++c.addresses;
    c.lane_updates_expected += e.updates;
    auto it = applied.find(address);
    if (it == applied.end()) {
      ++c.count_mismatches;
      continue;
    }
    const AtomicCell& cell = *it->second;
    c.lane_updates_applied += cell.updates;
    if (cell.updates != e.updates) ++c.count_mismatches;
    if (!e.summable) continue;
    ++c.values_compared;
    if (cell.type != trace::DataType::F32 && cell.type != trace::DataType::F64) {
      const bool wide = cell.type == trace::DataType::U64 || cell.type == trace::DataType::S64;
      const std::uint64_t mask = wide ? ~0ull : 0xFFFFFFFFull;
      if ((cell.bits & mask) != (e.bits_sum & mask)) ++c.value_mismatches;
      continue;
    }
    double value = as_number(cell.bits, cell.type);
    double error = std::fabs(value - e.sum);
    // Rounding bound of summing n terms in single precision, in any order.
    double eps = cell.type == trace::DataType::F32 ? 0x1p-23 : cell.type == trace::DataType::F64 ? 0x1p-52 : 0;
    double tolerance = static_cast<double>(e.updates) * eps * e.magnitude;
    if (error > tolerance) ++c.value_mismatches;
    if (e.magnitude > 0) c.max_relative_error = std::max(c.max_relative_error, error / e.magnitude);
  }
  for (const auto& [address, cell] : applied)
    if (!expected_.count(address)) ++c.count_mismatches;  // an update nobody issued
  return c;
}

// The L2 as a GPU has it after earlier launches over the same data: every
// line the kernel's global memory instructions touch, warp by warp.
void Gpu::warm_l2(trace::TraceReader& reader, std::size_t kernel) {
  Units& u = *units_;
  const trace::KernelInfo& info = reader.kernel(kernel);
  trace::WarpInst inst;
  for (std::uint64_t w = 0; w < info.total_warps(); ++w) {
    trace::WarpStream stream = reader.open_warp(kernel, w);
    while (stream.next(inst)) {
      if (!trace::is_global_memory(info.program[inst.index].op)) continue;
      for (std::uint32_t m = inst.active_mask; m; m &= m - 1) {
        const std::uint64_t address = inst.address[std::countr_zero(m)] + params_.placement_offset;
        u.slices[u.map.slice_of(address)]->preload(u.map.line_of(address));
      }
    }
  }
}

// What the SMs' hooks see during a kernel. The hooks run on whichever thread
// evaluates their SM: each SM's observations are kept apart and folded in SM
// order after each stretch of simulation, so that the expected sums do not
// depend on the threads.
class Gpu::Observations {
 public:
  Observations(Gpu& gpu, const RunOptions& options, KernelRun& run)
      : gpu_(gpu), options_(options), run_(run), seen_(gpu.units_->sms.size()) {}

  SmHooks hooks_for(std::uint32_t sm) {
    SeenBySm& by_sm = seen_[sm];
    SmHooks hooks;
    if (options_.check_atomics)
      hooks.on_atomic = [&by_sm](const trace::StaticInst& s, std::uint32_t active_mask, const SmHooks::Lanes& address,
                                 const SmHooks::Lanes& value) {
        for (std::uint32_t m = active_mask; m; m &= m - 1) {
          const int lane = std::countr_zero(m);
          by_sm.atomics.push_back({&s, address[lane], value[lane]});
        }
      };
    if (options_.profile_instructions)
      hooks.on_warp_cycles = [&by_sm](std::uint32_t instruction, model::WarpState state, Cycle cycles) {
        by_sm.warp_cycles.push_back({instruction, state, cycles});
      };
    if (options_.record_ctas)
      hooks.on_cta = [&by_sm, &run = run_, sm](std::uint64_t cta, bool started, Cycle cycle) {
        if (started) {
          by_sm.cta_places[cta] = by_sm.ctas.size();
          by_sm.ctas.push_back(KernelRun::CtaSpan{cta, sm, cycle - run.start, 0});
        } else {
          by_sm.ctas[by_sm.cta_places.at(cta)].end = cycle - run.start;
        }
      };
    return hooks;
  }

  // Folds what the SMs saw since the last fold, in SM order.
  void fold() {
    for (SeenBySm& by_sm : seen_) {
      for (const SeenBySm::AtomicLane& lane : by_sm.atomics) {
        const trace::StaticInst& s = *lane.inst;
        Expected& e = gpu_.expected_[lane.address];
        using trace::DataType;
        e.summable &= s.atomic_op == trace::AtomicOp::Add &&
                      (s.atomic_type == DataType::F32 || s.atomic_type == DataType::F64 || s.atomic_type == DataType::U32 ||
                       s.atomic_type == DataType::S32 || s.atomic_type == DataType::U64 || s.atomic_type == DataType::S64);
        double v = as_number(lane.value, s.atomic_type);
        e.sum += v;
        e.bits_sum += lane.value;
        e.magnitude += std::fabs(v);
        ++e.updates;
      }
      by_sm.atomics.clear();
      for (const SeenBySm::WarpCycles& w : by_sm.warp_cycles)
        run_.instructions[w.instruction].warp_cycles[static_cast<int>(w.state)] += w.cycles;
      by_sm.warp_cycles.clear();
    }
  }

  // Every SM's CTAs, by when they started.
  void collect_ctas(KernelRun& run) const {
    for (const SeenBySm& by_sm : seen_) run.ctas.insert(run.ctas.end(), by_sm.ctas.begin(), by_sm.ctas.end());
    std::stable_sort(run.ctas.begin(), run.ctas.end(),
                     [](const KernelRun::CtaSpan& a, const KernelRun::CtaSpan& b) { return a.start < b.start; });
  }

 private:
  struct SeenBySm {
    struct AtomicLane {
      const trace::StaticInst* inst;
      std::uint64_t address, value;
    };
    struct WarpCycles {
      std::uint32_t instruction;
      model::WarpState state;
      Cycle cycles;
    };
    std::vector<AtomicLane> atomics;
    std::vector<WarpCycles> warp_cycles;
    std::vector<KernelRun::CtaSpan> ctas;
    std::unordered_map<std::uint64_t, std::size_t> cta_places;  // a CTA's place in ctas
  };
  Gpu& gpu_;
  const RunOptions& options_;
  KernelRun& run_;
  std::vector<SeenBySm> seen_;
};

// Sampled simulation's bookkeeping for one kernel (sim/sampling.hpp): it
// snapshots the statistics when a window opens and closes, skips CTAs at the
// dispatcher or moves warps on by loop trips, and keeps what the skipped work
// is given of each window.
class Gpu::SampledRun {
 public:
  SampledRun(Gpu& gpu, trace::TraceReader& reader, std::size_t kernel, KernelRun& run,
             const std::unique_ptr<trace::WarpPrefetcher>& prefetcher)
      : gpu_(gpu), reader_(reader), kernel_(kernel), run_(run), prefetcher_(prefetcher),
        sampler_(gpu.params_.sample, std::uint64_t(run.ctas_per_sm) * gpu.params_.sms, reader.kernel(kernel).grid.count(),
                 kernel_instructions(reader, kernel)),
        issued_(gpu.stats_.instances(smsp_stat::kWarpInstructions)),
        awaiting_(gpu.stats_.instances(StatId{"l2_slice", "awaiting_reads"})) {
    const auto& program = reader.kernel(kernel).program;
    barriers_ = std::any_of(program.begin(), program.end(), [](const trace::StaticInst& s) { return s.op == trace::OpClass::Barrier; });
  }
  bool active() const { return sampler_.active(); }
  // How long the next stretch of simulation should be: an eighth of a
  // window's instructions at the last stretch's rate, so that windows and
  // their halves end near where they should.
  Cycle stretch_cycles() const { return stretch_; }

  void after_stretch() {
    CtaDispatcher& dispatcher = *gpu_.units_->dispatcher;
    const Sampler::Progress now{current_cycle(), dispatcher.finished() - skipped_ctas_, dispatcher.dispatched(), sum(issued_)};
    if (now.cycle > last_.cycle && now.warp_instructions > last_.warp_instructions) {
      const double per_cycle = static_cast<double>(now.warp_instructions - last_.warp_instructions) /
                               static_cast<double>(now.cycle - last_.cycle);
      stretch_ = std::clamp<Cycle>(static_cast<Cycle>(sampler_.window_instructions() / 8 / per_cycle), 16, 2000);
    }
    last_ = now;
    switch (sampler_.observe(now)) {
      case Sampler::Action::None: return;
      case Sampler::Action::OpenWindow:
        at_open_ = gpu_.stats_.snapshot();
        instructions_at_open_ = warp_cycles();
        window_opened_ = now.cycle;
        return;
      case Sampler::Action::CloseWindow: break;
    }
    // A read that waits for another warp's store may wait for work that
    // would be skipped.
    if (sampler_.outcome().windows == 0 && sum(awaiting_) > 0) {
      sampler_.refuse("its loads wait for other warps' stores");
      return;
    }
    const std::vector<std::uint64_t> at_close = gpu_.stats_.snapshot();
    window_stats_.resize(at_close.size());
    for (std::size_t i = 0; i < at_close.size(); ++i) window_stats_[i] = static_cast<double>(at_close[i] - at_open_[i]);
    const auto cycles = warp_cycles();
    window_instructions_.resize(cycles.size());
    for (std::size_t i = 0; i < cycles.size(); ++i) window_instructions_[i] = static_cast<double>(cycles[i] - instructions_at_open_[i]);
    add_window(sampler_.settle_pending(true));
    const std::uint64_t skipped = sampler_.mode() == SampleMode::Waves ? skip_ctas(now) : skip_loop_trips(now);
    const double factor = sampler_.account_skip(last_ctas_, skipped);
    if (factor > 0) {
      pending_stats_ = window_stats_;
      pending_instructions_ = window_instructions_;
    }
    add_window(factor);
  }

  // The skipped work's share, added to the kernel's statistics (`after`, a
  // snapshot at its end), cycles and instruction profile.
  void finish(std::vector<std::uint64_t>& after) {
    // A skip no window followed: the window before it gives the other half too.
    add_window(sampler_.settle_pending(false), pending_stats_, pending_instructions_);
    for (std::size_t i = 0; i < extra_stats_.size(); ++i) after[i] += static_cast<std::uint64_t>(std::llround(extra_stats_[i]));
    SamplingOutcome o = sampler_.outcome();
    run_.cycles += static_cast<Cycle>(std::llround(o.cycles_extrapolated));
    o.error_estimate *= run_.cycles ? o.cycles_extrapolated / static_cast<double>(run_.cycles) : 0;
    if (o.requested && !o.sampled && o.refused.empty())
      o.refused = o.mode == SampleMode::Loops ? "no window found room to skip trips before the warps' ends"
                                              : "the kernel ended before a window closed";
    std::size_t i = 0;
    for (auto& instruction : run_.instructions)
      for (auto& c : instruction.warp_cycles)
        if (i < extra_instructions_.size()) c += static_cast<std::uint64_t>(std::llround(extra_instructions_[i++]));
    run_.sampling = o;
  }

 private:
  // A window's statistics (the last one's by default), `factor` times, to the skipped work's.
  void add_window(double factor) { add_window(factor, window_stats_, window_instructions_); }
  void add_window(double factor, const std::vector<double>& stats, const std::vector<double>& instructions) {
    if (factor == 0) return;
    extra_stats_.resize(stats.size());
    for (std::size_t i = 0; i < stats.size(); ++i) extra_stats_[i] += factor * stats[i];
    extra_instructions_.resize(instructions.size());
    for (std::size_t i = 0; i < instructions.size(); ++i) extra_instructions_[i] += factor * instructions[i];
  }

  static std::uint64_t kernel_instructions(trace::TraceReader& reader, std::size_t kernel) {
    std::uint64_t total = 0;
    for (std::uint64_t w = 0; w < reader.kernel(kernel).total_warps(); ++w) total += reader.warp_records(kernel, w);
    return total;
  }
  static std::uint64_t sum(const std::vector<const std::uint64_t*>& values) {
    std::uint64_t total = 0;
    for (const std::uint64_t* v : values) total += *v;
    return total;
  }
  std::vector<std::uint64_t> warp_cycles() const {
    std::vector<std::uint64_t> all;
    for (const auto& instruction : run_.instructions) all.insert(all.end(), instruction.warp_cycles.begin(), instruction.warp_cycles.end());
    return all;
  }

  // By waves: the dispatcher skips the next CTAs.
  std::uint64_t skip_ctas(const Sampler::Progress& now) {
    last_ctas_ = sampler_.ctas_to_skip(now);
    if (last_ctas_ == 0) return 0;
    CtaDispatcher& dispatcher = *gpu_.units_->dispatcher;
    const trace::KernelInfo& info = reader_.kernel(kernel_);
    const std::uint64_t first = dispatcher.skip(last_ctas_);
    std::uint64_t instructions = 0;
    for (std::uint64_t k = first; k < first + last_ctas_; ++k)
      for (std::uint64_t cta = dispatcher.cta_started(k), i = 0; i < info.warps_per_cta(); ++i) {
        const std::uint64_t warp = cta * info.warps_per_cta() + i;
        instructions += reader_.warp_records(kernel_, warp);
        if (prefetcher_) prefetcher_->discard(warp);
      }
    skipped_ctas_ += last_ctas_;
    return instructions;
  }

  // Where each issuing warp's stream is, by SM and slot, with its CTA.
  struct Place {
    std::uint64_t cta;
    std::uint64_t position;
    Cycle launched_at;
  };
  std::vector<std::map<std::uint16_t, Place>> positions() const {
    std::vector<std::map<std::uint16_t, Place>> all(gpu_.units_->sms.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      const Sm& sm = *gpu_.units_->sms[i];
      for (const Sm::IssuingWarp& w : sm.issuing_warps()) all[i][w.slot] = {w.cta, sm.stream(w.slot).position(), w.launched_at};
    }
    return all;
  }

  // Where a stream's current instruction comes again after whole trips of
  // its loop: the first time it does at least `records` records on, or, with
  // `barriers` set, the first time after that many barriers. `ended` when the
  // warp's records end first (its instruction does not come again).
  struct Trips {
    trace::WarpStream stream;
    std::uint64_t records = 0, barriers = 0;
    bool ended = false;
  };
  static Trips trips_on(const trace::WarpStream& from, std::uint64_t records, std::uint64_t barriers,
                        const std::vector<trace::StaticInst>& program) {
    Trips t{from.clone()};
    const std::uint32_t head = from.index();
    const std::uint64_t start = from.position();
    for (;;) {
      if (!t.stream.advance()) {
        t.ended = true;
        return t;
      }
      t.barriers += program[t.stream.index()].op == trace::OpClass::Barrier;
      if (t.stream.index() != head) continue;
      t.records = t.stream.position() - start;
      if (barriers != kNoBarrierCount ? t.barriers >= barriers : t.records >= records) return t;
    }
  }
  static constexpr std::uint64_t kNoBarrierCount = UINT64_MAX;

  // By loops: each warp moves on by as many trips as it runs in a window at
  // its rate since it started, times one factor, the same number of trips for
  // every warp of a CTA with barriers, and none within a window's records of
  // its end.
  std::uint64_t skip_loop_trips(const Sampler::Progress& at) {
    last_ctas_ = 0;
    const auto now = positions();
    const double window = static_cast<double>(at.cycle - window_opened_);
    const auto& program = reader_.kernel(kernel_).program;
    struct Moving {
      std::uint16_t slot;
      std::uint64_t records;  // a window's at its rate, then the factor's worth: what it moves on by
    };
    std::map<std::pair<std::size_t, std::uint64_t>, std::vector<Moving>> by_cta;
    // Every warp moves on by the same time: the factor is the most that
    // leaves each warp a window's records before its end (a warp that would
    // end within the skip would free its place at another time than it does).
    double factor = sampler_.skip_windows();
    for (std::size_t i = 0; i < now.size(); ++i)
      for (const auto& [slot, place] : now[i]) {
        const std::uint64_t ran = at.cycle > place.launched_at
                                      ? static_cast<std::uint64_t>(static_cast<double>(place.position) * window /
                                                                   static_cast<double>(at.cycle - place.launched_at))
                                      : 0;
        const std::uint64_t left = gpu_.units_->sms[i]->stream(slot).records() - place.position;
        if (ran > 0) factor = std::min(factor, static_cast<double>(left) / static_cast<double>(ran) - 1);
        by_cta[{i, place.cta}].push_back({slot, ran});
      }
    if (factor < 1) return 0;
    for (auto& [key, warps] : by_cta)
      for (Moving& m : warps) m.records = static_cast<std::uint64_t>(factor * static_cast<double>(m.records));
    std::uint64_t skipped = 0;
    for (auto& [key, warps] : by_cta) {
      Sm& sm = *gpu_.units_->sms[key.first];
      // With barriers, the CTA's warps pass the same barriers: the fewest any
      // would pass in its records, each then going on to its instruction.
      std::uint64_t barriers = kNoBarrierCount;
      if (barriers_)
        for (const Moving& m : warps) {
          const Trips t = m.records ? trips_on(sm.stream(m.slot), m.records, kNoBarrierCount, program) : Trips{};
          barriers = std::min(barriers, t.ended ? 0 : t.barriers);
        }
      if (barriers == 0) continue;
      std::vector<std::pair<std::uint16_t, Trips>> moved;
      bool alike = true;
      for (const Moving& m : warps) {
        if (!barriers_ && m.records == 0) continue;
        Trips t = trips_on(sm.stream(m.slot), m.records, barriers, program);
        if (t.ended || t.records == 0) {
          alike &= !barriers_;
          continue;
        }
        alike &= !barriers_ || t.barriers == barriers;
        moved.emplace_back(m.slot, std::move(t));
      }
      // A CTA whose warps' trips pass different numbers of barriers stays.
      if (barriers_ && !alike) {
        sampler_.note_unaligned_cta();
        continue;
      }
      for (auto& [slot, t] : moved) {
        skipped += t.records;
        sm.move_stream_on(slot, std::move(t.stream));
      }
    }
    return skipped;
  }

  Gpu& gpu_;
  trace::TraceReader& reader_;
  const std::size_t kernel_;
  KernelRun& run_;
  const std::unique_ptr<trace::WarpPrefetcher>& prefetcher_;
  Sampler sampler_;
  const std::vector<const std::uint64_t*> issued_, awaiting_;
  bool barriers_ = false;
  Cycle stretch_ = 500;
  Sampler::Progress last_{};
  std::uint64_t skipped_ctas_ = 0, last_ctas_ = 0;
  std::vector<std::uint64_t> at_open_, instructions_at_open_;
  Cycle window_opened_ = 0;
  std::vector<double> window_stats_, window_instructions_, extra_stats_, extra_instructions_;
  std::vector<double> pending_stats_, pending_instructions_;  // the window before the last skip
};

// Runs the kernel's cycles until nothing is pending, folding the SMs'
// observations after each slice; a long run reports progress about once a
// second.
void Gpu::simulate_until_done(trace::TraceReader& reader, std::size_t kernel, const RunOptions& options, KernelRun& run,
                              Observations& observations, SampledRun* sampled) {
  Units& u = *units_;
  const trace::KernelInfo& info = reader.kernel(kernel);
  using clock = std::chrono::steady_clock;
  auto last_report = clock::now();
  // Short slices let a long run report progress about once a second, and
  // shorter ones let the sampler's windows open and close near where it asks.
  const sc_core::sc_time slice = sc_core::sc_time::from_value(10000 * kPicosecondsPerCycle);
  do {
    // SC_EXIT_ON_STARVATION leaves time where the last event was (the kernel's
    // end), but returns at once when the next event lies beyond the slice: a
    // slice always reaches the next pending event.
    const bool sampling = sampled && sampled->active();
    const sc_core::sc_time stretch =
        sampling ? sc_core::sc_time::from_value(sampled->stretch_cycles() * kPicosecondsPerCycle) : slice;
    sc_core::sc_start(std::max(stretch, sc_core::sc_time_to_pending_activity()),
                      sc_core::SC_EXIT_ON_STARVATION);
    observations.fold();
    if (sampling) sampled->after_stretch();
    for (auto& sm : u.sms)
      if (!sm->error().empty()) throw trace::TraceError(sm->error());
    auto t = clock::now();
    if (options.progress && t - created_ > std::chrono::seconds(2) && t - last_report > std::chrono::seconds(1)) {
      last_report = t;
      std::fprintf(stderr, "%s kernel %zu '%s': cycle %llu, %llu of %llu CTAs done\n", options.label.c_str(), kernel,
                   info.name.c_str(), static_cast<unsigned long long>(current_cycle() - run.start),
                   static_cast<unsigned long long>(u.dispatcher->finished()),
                   static_cast<unsigned long long>(u.dispatcher->total()));
    }
  } while (sc_core::sc_pending_activity() || release_oldest_awaiting_read(u.slices));
}

// Each instruction's producers that it may wait on at a barrier; only an
// instruction that ran can be what another waited for.
void Gpu::note_barrier_producers(const trace::KernelInfo& info, KernelRun& run) {
  auto ran = [&run](std::size_t i) {
    const auto& c = run.instructions[i].warp_cycles;
    return std::any_of(c.begin(), c.end(), [](std::uint64_t v) { return v > 0; });
  };
  for (std::size_t i = 0; i < info.program.size(); ++i)
    for (std::size_t producer : trace::barrier_producers(info.program, i, ran))
      run.instructions[i].waits_on.push_back(info.program[producer].pc);
}

KernelRun Gpu::run_kernel(trace::TraceReader& reader, std::size_t kernel, const RunOptions& options) {
  Units& u = *units_;
  const trace::KernelInfo& info = reader.kernel(kernel);
  KernelRun run;
  run.name = info.name;
  run.grid = info.grid;
  run.block = info.block;
  SmLimits limits{params_.sm.max_warps, params_.sm.max_ctas, params_.sm.registers,
                  params_.sm.register_allocation_unit, params_.sm.shared_memory_bytes};
  run.ctas_per_sm = ctas_per_sm(info, limits);
  if (run.ctas_per_sm == 0)
    throw ConfigError(fmt::format("{}: kernel {} ('{}') does not fit on one SM of {} ({} warps, {} registers/thread, {} B "
                                  "shared; keys 'sm.max_warps' = {}, 'sm.registers' = {}, 'sm.shared_memory_bytes' = {})",
                                  reader.path(), kernel, info.name, params_.origin, info.warps_per_cta(),
                                  info.registers_per_thread, info.shared_bytes, params_.sm.max_warps, params_.sm.registers,
                                  params_.sm.shared_memory_bytes));
  KernelContext ctx;
  ctx.info = &info;
  if (options.counters.empty()) {
    ctx.program = decode_program(info, params_.sm);
  } else {
    trace::KernelInfo costed = info;
    run.measured_costs = compare::apply_measured_costs(options.counters, costed);
    ctx.program = decode_program(costed, params_.sm);
  }
  // SMs open their warps' streams from the threads that evaluate them: the
  // reader's warp index is read here first, so that they only read it. Where
  // the simulation's threads leave a core free, a thread of its own reads
  // each warp's first segment before its CTA starts (set up below, once the
  // dispatcher knows the order the CTAs start in).
  std::unique_ptr<trace::WarpPrefetcher> prefetcher;
  ctx.open_warp = [&reader, &prefetcher, kernel](std::uint64_t warp) {
    return prefetcher ? prefetcher->open_warp(warp) : reader.open_warp(kernel, warp);
  };
  if (info.total_warps()) reader.open_warp(kernel, 0);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  // Unset: a thread per core but one, which the warp prefetcher takes (16
  // threads on the GPU machine's 16 cores ran slower than 15 in all but one
  // of 48 rounds, that one a tie: docs/notes/2026-11-27-threads-and-full-size-traces.md, "Listed threads first").
  const unsigned threads = options.threads ? options.threads : (cores > 2 ? cores - 1 : cores);
  set_evaluation_threads(threads);
  set_window_cycles(params_.lookahead_cycles);
  ctx.flush_atomics_at_barrier = params_.l1.atomic_buffer;
  if (options.profile_instructions) {
    run.instructions.resize(info.program.size());
    for (std::size_t i = 0; i < info.program.size(); ++i) {
      run.instructions[i].pc = info.program[i].pc;
      run.instructions[i].sass = info.program[i].mnemonic;
    }
  }
  if (params_.l2.start == model::L2Start::Footprint) warm_l2(reader, kernel);
  for (auto& slice : u.slices) slice->keep_atomic_values(options.check_atomics);
  run.start = current_cycle();
  Observations observations(*this, options, run);
  for (std::uint32_t i = 0; i < u.sms.size(); ++i) {
    u.sms[i]->begin_kernel(ctx);
    u.sms[i]->set_hooks(observations.hooks_for(i));
  }
  auto before = stats_.snapshot();
  set_host_profiling(options.host_profile);
  u.dispatcher->begin_kernel(info.grid.count(), run.ctas_per_sm, info.warps_per_cta(), info.cta_order);
  if (threads < cores && info.total_warps()) {
    std::vector<std::uint64_t> warps;
    warps.reserve(info.total_warps());
    for (std::uint64_t k = 0; k < info.grid.count(); ++k)
      for (std::uint64_t cta = u.dispatcher->cta_started(k), i = 0; i < info.warps_per_cta(); ++i)
        warps.push_back(cta * info.warps_per_cta() + i);
    prefetcher = std::make_unique<trace::WarpPrefetcher>(reader, kernel, std::move(warps), kPrefetchedWarps);
  }

  std::optional<SampledRun> sampled;
  if (params_.sample.mode != SampleMode::Off) sampled.emplace(*this, reader, kernel, run, prefetcher);
  simulate_until_done(reader, kernel, options, run, observations, sampled ? &*sampled : nullptr);
  if (!u.dispatcher->kernel_done()) {
    const std::string waiting = describe_waiting_messages();
    throw trace::TraceError(fmt::format("{}: kernel {} stalled at cycle {} before finishing (simulator deadlock){}{}",
                                        reader.path(), kernel, current_cycle(), waiting.empty() ? "" : ": ",
                                        waiting));
  }
  run.cycles = current_cycle() - run.start;
  std::vector<std::uint64_t> after = stats_.snapshot();
  if (sampled) sampled->finish(after);
  run.stats = stats_.summarize(before, after, run.cycles);
  if (options.host_profile) {
    run.host_profile = take_host_profile();
    set_host_profiling(false);
  }
  if (options.profile_instructions) note_barrier_producers(info, run);
  for (auto& sm : u.sms) sm->set_hooks({});  // they hold references into this call
  if (options.record_ctas) observations.collect_ctas(run);
  if (options.check_atomics) {
    run.check = check_atomics();
    run.checked = true;
  }
  return run;
}

}  // namespace atomsim
