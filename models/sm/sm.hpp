// One streaming multiprocessor: sub-cores, each with its warp scheduler,
// scoreboard and fixed-latency pipes, and an in-order MIO queue through which
// MIO and LG instructions leave for the MIO and the L1's LG queue.
// The SM runs only when a sub-core can issue, a timer it set expires, or a
// message (completion, queue credit, CTA launch) arrives. Warp states are
// accounted over the idle stretches in between, so idle cycles cost nothing.
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/messages.hpp"
#include "models/sm/constant_cache.hpp"
#include "models/sm/scheduler.hpp"
#include "models/sm/stall.hpp"
#include "models/sm/warp.hpp"
#include "models/sm/warp_reduction.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/port.hpp"
#include "sim/engine/stats.hpp"
#include "traces/reader.hpp"

namespace atomsim::model {

// The sub-cores' statistics that reports read back (models/sm/README.md lists all).
namespace smsp_stat {
inline constexpr StatId kWarpInstructions{"smsp", "warp_instructions"};
inline constexpr StatId kThreadInstructions{"smsp", "thread_instructions"};
inline constexpr StatId kAtomicLaneOps{"smsp", "atomic_lane_ops"};
inline constexpr StatId kAtomicWarpInstructions{"smsp", "atomic_warp_instructions"};
inline constexpr StatId kIssueCycles{"smsp", "issue_cycles"};
// The families: one counter per warp state and one per instruction class.
inline constexpr std::string_view kGroup = "smsp";
inline std::string stall_name(std::string_view state) { return "stall." + std::string(state); }
inline std::string issued_name(std::string_view op_class) { return "issued." + std::string(op_class); }
}  // namespace smsp_stat


struct PipeParams {
  double issue_interval = 1;
  Cycle latency = 4;
  void declare(ParamBinder b) {
    b.real("issue_interval", issue_interval, 0.01, 1024, "cycles between two warp instructions entering this pipe of one sub-core");
    b.integer("latency", latency, 1, 10000, "cycles until a dependent instruction may issue");
  }
};

// What a warp's instruction waits for (sm.dependences).
enum class Dependences : std::uint8_t { Registers, ControlBits };
inline constexpr std::array<std::pair<const char*, Dependences>, 2> kDependencesNames{
    {{"registers", Dependences::Registers}, {"control_bits", Dependences::ControlBits}}};

struct SmParams {
  std::uint32_t subcores = 4;
  std::uint32_t max_warps = 64;
  std::uint32_t max_ctas = 32;
  std::uint32_t registers = 65536;
  std::uint32_t register_allocation_unit = 256;
  std::uint64_t shared_memory_bytes = 228 << 10;
  std::string scheduler = "gto";
  Cycle min_reissue_interval = 1;
  Dependences dependences = Dependences::Registers;
  Cycle branch_resolve_latency = 4;
  Cycle warp_sync_latency = 4;
  Cycle warp_sync_pass_cycles = 0;
  std::uint32_t mio_queue_depth = 8;
  std::uint32_t lg_issue_limit = 16;
  std::uint32_t mio_pipe_limit = 64;
  PipeParams int_alu, fp_alu, fma, vote, branch, misc;
  WarpReductionParams warp_reduction;
  ConstantCacheParams constant_cache;

  void declare(ParamBinder b) {
    b.integer("subcores", subcores, 1, 16, "sub-cores (SMSPs), each with its own warp scheduler");
    b.integer("max_warps", max_warps, 1, 256, "resident warps per SM");
    b.integer("max_ctas", max_ctas, 1, 256, "resident CTAs per SM");
    b.integer("registers", registers, 1024, 1 << 20, "32-bit registers per SM");
    b.integer("register_allocation_unit", register_allocation_unit, 1, 4096, "registers are allocated per warp in multiples of this");
    b.integer("shared_memory_bytes", shared_memory_bytes, 0, 1 << 24, "shared memory available to CTAs per SM");
    b.choice("scheduler", scheduler, scheduler_policies(), "warp scheduling policy");
    b.integer("min_reissue_interval", min_reissue_interval, 1, 64,
              "cycles between two instructions of one warp (with control_bits dependences: where a program has no control bits)");
    b.choice("dependences", dependences, kDependencesNames,
             "what a warp's instruction waits for: registers, its registers' writes and reads still owed (a scoreboard, "
             "with the pipes' latencies); control_bits, the compiler's dependency barriers and stall counts, where the "
             "trace carries them for the whole program (registers otherwise)");
    b.integer("branch_resolve_latency", branch_resolve_latency, 1, 1000, "cycles a warp waits after a branch before it can issue (also after a join of divergent lanes, BSYNC, a collective WARPSYNC, a YIELD or an EXIT that leaves lanes running)");
    b.integer("warp_sync_latency", warp_sync_latency, 1, 1000,
              "cycles a warp waits after a WARPSYNC (not the collective form) whose lanes all name one mask before it can issue");
    b.integer("warp_sync_pass_cycles", warp_sync_pass_cycles, 0, 1000,
              "cycles more a WARPSYNC holds its warp for each further mask its lanes name (lanes syncing with groups of "
              "their own: a pass each; the trace's records carry how many)");
    b.integer("mio_queue_depth", mio_queue_depth, 1, 64,
              "per sub-core, in-order queue of MIO and LG instructions whose operands are still to be read");
    b.integer("lg_issue_limit", lg_issue_limit, 1, 256,
              "per sub-core, LG instructions between issue and the L1 taking them (beyond it: lg_throttle)");
    b.integer("mio_pipe_limit", mio_pipe_limit, 1, 256,
              "per sub-core, MIO-pipe instructions (shuffles, matches, shared memory, special functions) between issue and "
              "the MIO dispatching them, in the MIO queue and the MIO's input (beyond it: mio_throttle)");
    ParamBinder pipes = b.sub("pipes");
    int_alu.declare(pipes.sub("int_alu"));
    fp_alu.declare(pipes.sub("fp_alu"));
    fma.declare(pipes.sub("fma"));
    vote.declare(pipes.sub("vote"));
    branch.declare(pipes.sub("branch"));
    misc.declare(pipes.sub("misc"));
    warp_reduction.declare(b.sub("warp_reduction"));
    constant_cache.declare(b.sub("constant_cache"));
  }
};

// The SM's decoded view of a kernel's program (routes, pipes, densely
// renumbered registers). It is the same for every SM of one configuration, so
// it is decoded once per kernel and shared: a copy per SM would crowd the
// host's caches.
struct SmProgram;
std::shared_ptr<const SmProgram> decode_program(const trace::KernelInfo& kernel, const SmParams& params);

// What the SM needs to run a kernel: its program and launch shape.
struct KernelContext {
  const trace::KernelInfo* info = nullptr;
  std::shared_ptr<const SmProgram> program;  // from decode_program
  std::function<trace::WarpStream(std::uint64_t warp)> open_warp;
  bool flush_atomics_at_barrier = false;
};

// Observation points for checkers and tracers; they never alter timing.
struct SmHooks {
  using Lanes = std::array<std::uint64_t, 32>;
  // Every atomic a warp issues, with its active lanes' addresses and operands.
  std::function<void(const trace::StaticInst&, std::uint32_t active_mask, const Lanes& address, const Lanes& value)> on_atomic;
  // Warp-cycles a warp spent in one state at one instruction (index into the
  // kernel's program), reported as each stretch ends; unset, nothing is kept.
  std::function<void(std::uint32_t instruction, WarpState state, Cycle cycles)> on_warp_cycles;
  // A CTA took its place on the SM (`started`) or gave it back, its last warp retired.
  std::function<void(std::uint64_t cta, bool started, Cycle cycle)> on_cta;
};

class Sm : public Unit {
 public:
  // `placement_offset` is added to every global address the trace names (gpu.placement_offset).
  Sm(const sc_core::sc_module_name& name, const SmParams& p, std::uint64_t placement_offset, StatRegistry& stats);
  ~Sm() override;

  void begin_kernel(const KernelContext& kernel);
  void set_hooks(SmHooks hooks) { hooks_ = std::move(hooks); }

  OutPort<LsuOp>& lg_queue(std::uint32_t subcore);
  OutPort<MioOp>& mio_queue(std::uint32_t subcore);
  InPort<Completion>& lsu_completions() { return lsu_completions_; }
  InPort<Completion>& mio_completions() { return mio_completions_; }
  InPort<CtaLaunch>& cta_launch() { return cta_launch_; }
  OutPort<CtaDone>& cta_done() { return cta_done_; }

  // Sampled simulation, between stretches of simulation only: the warps that
  // have an instruction to issue, each with its CTA and launch, and a way to
  // move one's stream on to a later record of the same instruction.
  struct IssuingWarp {
    std::uint64_t cta;
    std::uint16_t slot;
    Cycle launched_at;
  };
  std::vector<IssuingWarp> issuing_warps() const;
  const trace::WarpStream& stream(std::uint16_t slot) const { return warps_[slot].stream; }
  void move_stream_on(std::uint16_t slot, trace::WarpStream stream);

  // Set when a trace error stopped the simulation (reported by the top).
  const std::string& error() const { return error_; }

 protected:
  void evaluate() override;

 private:
  class Subcore;
  struct CtaSlot {
    bool active = false;
    std::uint64_t cta = 0;
    std::uint32_t live_warps = 0;      // not yet exited
    std::uint32_t resident_warps = 0;  // not yet retired (exited warps drain first)
    std::uint32_t at_barrier = 0;
    std::vector<std::uint16_t> warps;
  };
  void launch_cta(std::uint64_t cta, Cycle now);
  void handle_completion(const Completion& c, bool from_lsu, Cycle now);
  void warp_exited(Warp& w, Cycle now, Cycle resident_through);
  void warp_at_barrier(Warp& w, Cycle now);
  void maybe_retire(Warp& w, Cycle end);
  void check_barrier(CtaSlot& cta, Cycle now);
  Warp& warp(std::uint16_t slot) { return warps_[slot]; }
  Subcore& subcore_of(std::uint16_t slot);

  friend class Subcore;
  const SmParams params_;
  const std::uint64_t placement_offset_;
  KernelContext kernel_;
  SmHooks hooks_;
  ConstantFillPath constant_fills_;
  std::vector<Warp> warps_;
  std::vector<std::unique_ptr<Subcore>> subcores_;
  // Per sub-core, kept here so that an evaluation touches idle sub-cores not at all:
  std::vector<Cycle> subcore_due_;            // next cycle it must run (0: now)
  struct Credits {
    LinkCredits lg, mio;  // slots the L1's LG queue and the MIO's input freed
  };
  std::vector<Credits> credits_;
  std::vector<CtaSlot> ctas_;
  InPort<Completion> lsu_completions_;
  InPort<Completion> mio_completions_;
  InPort<CtaLaunch> cta_launch_;
  OutPort<CtaDone> cta_done_;
  std::deque<CtaDone> done_backlog_;
  std::uint64_t launch_sequence_ = 0;
  std::string error_;

  std::uint64_t residency_integral_ = 0;  // warp-cycles of residency of retired warps
  std::uint64_t ctas_completed_ = 0;
};

}  // namespace atomsim::model
