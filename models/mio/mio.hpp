// The SM's MIO: a shared unit that takes shared-memory, shuffle/match,
// special-function and other variable-latency instructions from one input per
// sub-core (filled from the sub-core's MIO queue once their operands are read),
// dispatches them to their pipelines and returns their results after a fixed
// latency.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "models/messages.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/port.hpp"

namespace atomsim::model {

namespace mio_stat {
inline constexpr StatId kQueueOccupancy{"mio_queue", kOccupancyStat};  // each sub-core's MIO queue
}  // namespace mio_stat

struct MioParams {
  std::uint32_t queue_depth = 8;
  double dispatch_per_cycle = 1;
  double shuffles_per_cycle = 1;
  double shared_per_cycle = 1;
  double sfu_per_cycle = 0.5;
  Cycle shuffle_latency = 24;
  Cycle shared_latency = 30;
  double shared_wavefront_latency = 1;
  Cycle sfu_latency = 20;
  double bits_per_cycle = 0.5;
  Cycle bits_latency = 20;
  Cycle redux_latency = 40;
  Cycle match_latency = 24;
  double match_value_latency = 0;
  double matches_per_cycle = 0.5;
  double match_pipe_per_shuffle = 0.25;
  double subcore_shuffles_per_cycle = 1;
  double subcore_matches_per_cycle = 1;
  double subcore_bits_per_cycle = 1;
  std::uint32_t passing_a_match = 0;
  void declare(ParamBinder b) {
    b.integer("queue_depth", queue_depth, 1, 256, "per sub-core, instructions the MIO holds after their operands were read");
    b.integer("passing_a_match", passing_a_match, 0, 1024,
              "shuffles and BREV, FLO, POPC that go before a MATCH or REDUX at the head of a sub-core's input, from "
              "behind it (0: the input is in order)");
    b.real("dispatch_per_cycle", dispatch_per_cycle, 0.01, 16, "instructions the MIO takes from its queues per cycle (whole SM)");
    b.real("subcore_shuffles_per_cycle", subcore_shuffles_per_cycle, 0.01, 16, "warp shuffles the MIO takes from one sub-core per cycle");
    b.real("subcore_matches_per_cycle", subcore_matches_per_cycle, 0.01, 16,
           "MATCH and REDUX warp instructions the MIO takes from one sub-core per cycle");
    b.real("subcore_bits_per_cycle", subcore_bits_per_cycle, 0.01, 16,
           "BREV, FLO, POPC and the like the MIO takes from one sub-core per cycle");
    b.real("shuffles_per_cycle", shuffles_per_cycle, 0.01, 16, "warp shuffles completed per cycle (whole SM)");
    b.real("matches_per_cycle", matches_per_cycle, 0.01, 16,
           "MATCH and REDUX warp instructions per cycle (whole SM): the two share a pipe of their own");
    b.real("match_pipe_per_shuffle", match_pipe_per_shuffle, 0, 16,
           "matches' worth of the MATCH and REDUX pipe's time a shuffle takes as it passes (0: the pipes are apart)");
    b.real("shared_per_cycle", shared_per_cycle, 0.01, 16,
           "shared-memory wavefronts (128 bytes of register data: 32 lanes of 4 bytes) per cycle (whole SM)");
    b.real("sfu_per_cycle", sfu_per_cycle, 0.01, 16, "special-function warp instructions per cycle (whole SM)");
    b.integer("shuffle_latency", shuffle_latency, 1, 10000, "cycles from dispatch to a shuffle's result");
    b.integer("match_latency", match_latency, 1, 10000, "cycles from dispatch to a match's (MATCH.ANY, MATCH.ALL) result");
    b.real("match_value_latency", match_value_latency, 0, 1000,
           "cycles a MATCH.ANY's result takes for each distinct value among its lanes beyond the first (the pipe, too, "
           "takes a pass per value)");
    b.integer("shared_latency", shared_latency, 1, 10000, "cycles from dispatch to a shared load's result");
    b.real("shared_wavefront_latency", shared_wavefront_latency, 0, 100,
           "cycles a shared-memory instruction's result takes for each wavefront beyond the first (bank conflicts, wide accesses)");
    b.integer("sfu_latency", sfu_latency, 1, 10000, "cycles from dispatch to a special-function result");
    b.real("bits_per_cycle", bits_per_cycle, 0.01, 16,
           "BREV, FLO, POPC and other variable-latency instructions without a pipe of their own, per cycle (whole SM)");
    b.integer("bits_latency", bits_latency, 1, 10000, "cycles from dispatch to a BREV, FLO or POPC result (and S2R, LDC)");
    b.integer("redux_latency", redux_latency, 1, 10000, "cycles from dispatch to a REDUX (warp-wide reduction) result");
  }
};

class Mio : public Unit {
 public:
  Mio(const sc_core::sc_module_name& name, const MioParams& p, std::uint32_t subcores, StatRegistry& stats);
  InPort<MioOp>& queue(std::uint32_t subcore) { return *queues_[subcore]; }
  OutPort<Completion>& to_sm() { return to_sm_; }

 protected:
  void evaluate() override;

 private:
  RateServer& pipe_for(MioPipe pipe);
  Cycle result_latency(const MioOp& op) const;
  RateServer* subcore_limit(std::uint32_t subcore, MioPipe pipe);
  void let_pass_a_match(std::uint32_t subcore, Cycle now);
  const MioParams params_;
  std::vector<std::unique_ptr<InPort<MioOp>>> queues_;
  OutPort<Completion> to_sm_;
  // Per sub-core, what it may pass of each pipe that has a limit of its own: shuffles, matches, bits.
  std::vector<std::array<RateServer, 3>> subcore_limits_;
  // Per sub-core, how many have gone before the MATCH or REDUX at its head.
  std::vector<std::uint32_t> passed_match_;
  RateServer dispatch_, shuffle_, match_, shared_, sfu_, bits_;
  std::uint32_t round_robin_ = 0;
  std::uint64_t instructions_ = 0;
  std::uint64_t passes_ = 0;
};

}  // namespace atomsim::model
