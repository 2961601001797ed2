// Rebuilds a warp's complete instruction stream from what binary patching can
// observe. The Compute Sanitizer reports only some instructions (memory
// accesses, shuffles, barriers, calls, returns, exits), each with the lanes that
// ran it. The joiner walks the kernel's SASS as the warp would, scheduling
// divergent lanes the way the GPU does, and steers every lane at every branch
// towards the next instruction it reported: a lane can only have gone where
// that instruction is still reachable without passing an instruction it would
// have reported. Where both ways reach it, the recorded order of the warp's
// observations and the lanes whose way is forced decide (warp_join.cpp, Walk).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::capture {

enum class ObservedKind : std::uint8_t { Memory, Shuffle, Barrier, Syncwarp, Call, Return, Exit };

// One observed warp instruction: every lane in `mask` ran it together.
struct ObservedInst {
  std::uint32_t index = 0;        // into the kernel's program
  std::uint32_t mask = 0;
  ObservedKind kind = ObservedKind::Memory;
  std::uint32_t call_target = 0;  // program index (calls)
  std::int32_t operands = -1;     // into WarpObservation::operands (global memory; a WARPSYNC of several masks)
};

struct LaneOperands {
  std::array<std::uint64_t, 32> address{};
  std::array<std::uint64_t, 32> value{};
  std::uint32_t value_lanes = 0;  // trace::WarpInst::value_lanes
};

// What the device recorded for one warp, in execution order.
struct WarpObservation {
  std::uint32_t lanes = 0xFFFFFFFFu;  // lanes that exist (a partial last warp has fewer)
  std::vector<ObservedInst> events;
  std::vector<LaneOperands> operands;
};

// Whether the trace pass patches the instruction (memory accesses, shuffles,
// barriers, calls, returns, exits): it reports itself whenever its guard holds.
bool reports_itself(const trace::StaticInst& s);

struct JoinError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A launch's observations with the kernel's SASS, enough to run the join again
// without the GPU: the trace pass saves one when a join fails, and
// `atomsim trace rejoin` replays it. Operands are left out; they do not steer.
struct JoinInput {
  std::string kernel;
  std::vector<std::uint64_t> pcs;
  std::vector<std::string> text;
  std::vector<WarpObservation> warps;
  std::vector<std::uint64_t> counts;  // the count pass's warp instructions per instruction, where it ran first

  // The SASS as instructions, and which of them reported themselves in the launch.
  std::vector<trace::StaticInst> program() const;
  std::vector<bool> observed() const;
};
std::string save_join_input(const JoinInput& input);
// Throws JoinError naming the field when the document is not a saved join input.
JoinInput load_join_input(const std::string& document);

struct RejoinResult {
  std::uint64_t warp_instructions = 0;
  std::uint64_t guessed_branches = 0;
  std::uint64_t retried_guesses = 0;
};
// Runs the trace pass's join again on a saved input, as the pass does
// (WarpJoiner::join_launch on `threads` threads), `emit(warp, inst)` in order.
// Throws JoinError (prefixed "warp N: " where a warp fails) or
// trace::TraceError (SASS the decoder refuses).
RejoinResult rejoin(const JoinInput& input, unsigned threads,
                    const std::function<void(std::uint64_t, const trace::WarpInst&)>& emit);

class WarpJoiner {
 public:
  // `text` holds each instruction's SASS text (guard included); `observed[i]`
  // is true when instruction i reported itself at least once in the launch.
  WarpJoiner(const std::vector<trace::StaticInst>& program, const std::vector<std::string>& text,
             std::vector<bool> observed);

  // The count pass's executed warp instructions of the same launch, per
  // instruction of the program: loops whose iterations report nothing run,
  // per entry, as many times as the GPU counted on average, and a uniform
  // forward branch that no observation decides goes the way most of its
  // executions went (warp_join.cpp, Walk). Call before joining.
  void use_counts(const std::vector<std::uint64_t>& warp_executions);

  using Emit = std::function<void(std::uint64_t warp, const trace::WarpInst&)>;
  using EndWarp = std::function<void(std::uint64_t warp)>;
  // Joins a launch's warps. A survey walks every warp to learn which branches
  // split warps and which way uniform branches went, and walks them all again
  // until what it learns no longer grows, so that each warp's walk knows what
  // every other warp showed; then each warp is joined. `emit` gets every
  // warp's instructions in execution order, warps in order, and `end_warp`
  // follows each warp's last. Observed instructions keep their recorded masks
  // and operands; a branch's mask holds the lanes that take it (BRA.DIV and
  // "BRA P, target" excepted); any other instruction's mask holds the lanes
  // that executed it, since whether its guard held is not observable.
  // Warps are walked on `threads` threads and the result does not depend on
  // how many. Throws JoinError "warp N: ..." for the lowest warp that fails.
  void join_launch(const std::vector<WarpObservation>& warps, unsigned threads, const Emit& emit,
                   const EndWarp& end_warp = {});

  // Branches joined where no observation decided the way of any lane of the
  // group, so a way was chosen (see Walk).
  std::uint64_t guessed_branches() const { return guessed_; }
  // Guesses joined that led nowhere and were taken back for another way.
  std::uint64_t retried_guesses() const { return retried_; }

 private:
  enum class Flow : std::uint8_t { Next, Jump, Branch, Stop, Call, Return, Indirect };
  struct Node {
    Flow flow = Flow::Next;
    bool guarded = false;
    std::uint32_t target = 0;       // jumps and branches
    std::int8_t convergence = -1;   // BSSY/BSYNC barrier register
    bool bssy = false, bsync = false;
    bool reports = false;           // the Sanitizer patches it: silence means its guard was off
    bool guard_counted = false;     // BRA.DIV, BRA P, target: the GPU counts guard-true lanes
    std::int32_t branch_slot = -1;  // conditional branches: index into arrivals_
  };
  // A branch at a warp's n-th arrival there, over the warps surveyed: how
  // many arrived, and in how many the observations forced every lane one way.
  struct Arrivals {
    std::uint32_t warps = 0, taken = 0, through = 0;
  };
  static constexpr std::uint32_t kRememberedVisits = 1u << 16;
  // What one thread's survey walks learn, merged after every warp is walked.
  struct Learned {
    std::vector<std::vector<Arrivals>> arrivals;
    std::vector<char> divergent;
  };
  // A joined instruction before its operands are filled in.
  struct Record {
    std::uint32_t index = 0, mask = 0;
    std::int32_t operands = -1;
  };
  class Walk;
  static constexpr std::uint32_t kUnreachable = UINT32_MAX;
  // Instructions from each instruction to `goal`, passing nothing that would
  // report itself; computed once per goal, by whichever thread asks first.
  const std::vector<std::uint32_t>& distances_to(std::uint32_t goal) const;
  std::vector<std::uint32_t> breadth_first_distances(std::uint32_t goal) const;
  [[noreturn]] void fail(const std::string& what) const;
  void link_indirect_targets(const std::vector<std::string>& text);

  const std::vector<trace::StaticInst>& program_;
  std::vector<Node> nodes_;
  std::vector<bool> observed_;
  // Branches seen sending a group's lanes both ways; read, not written, while warps are walked.
  std::vector<char> divergent_;
  std::vector<std::vector<Arrivals>> arrivals_;  // per conditional branch, per arrival
  // Loops' back edges, from the count pass: iterations per entry, and the
  // instruction before the loop, whose execution marks an entry.
  std::vector<double> trips_per_entry_;                               // per conditional branch, 0: unknown
  std::vector<double> through_share_;  // forward branches: share of executions not taken, -1: unknown
  std::vector<std::vector<std::int32_t>> loops_entered_at_;  // per instruction: the loops it enters (branch slots)
  std::vector<std::vector<std::uint32_t>> predecessors_;
  // Where indirect branches may go (link_indirect_targets), and the count
  // pass's executions of each instruction, empty without one.
  std::vector<std::uint32_t> indirect_target_;
  std::vector<std::uint64_t> executed_;
  mutable std::vector<std::vector<std::uint32_t>> distances_;  // per goal
  std::unique_ptr<std::once_flag[]> distances_once_;
  std::uint64_t guessed_ = 0, retried_ = 0;
};

}  // namespace atomsim::capture
