// Crossbar between SMs and L2 slices (one instance per direction), output
// queued: packets move from bounded input buffers (at the input's flit rate)
// into a bounded queue per output, which drains at the output's flit rate into
// its destination. Packets are routed on their `destination` field. An input
// waits only when the queue its head packet goes to is full, so one congested
// destination does not stall traffic to the others until its queue fills.
#pragma once

#include <memory>
#include <vector>

#include "models/messages.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/port.hpp"

namespace atomsim::model {

// A crossbar's statistics are in the group its instance's name gives.
namespace crossbar_stat {
inline constexpr std::string_view kOutputUtilization = "output_utilization";
}  // namespace crossbar_stat

struct CrossbarParams {
  Cycle latency = 1;
  std::uint32_t input_buffer_flits = 16;
  std::uint32_t output_queue_flits = 64;
  double input_flits_per_cycle = 1;
  double output_flits_per_cycle = 1;
  std::uint32_t outputs_per_link = 1;
  void declare(ParamBinder b) {
    b.integer("latency", latency, 1, 10000, "cycles from entering the crossbar to arriving at the destination buffer");
    b.integer("input_buffer_flits", input_buffer_flits, 1, 4096, "flits each input buffers");
    b.integer("output_queue_flits", output_queue_flits, 1, 4096, "flits queued for each output (at least a line of sectors, the largest packet)");
    b.real("input_flits_per_cycle", input_flits_per_cycle, 0.001, 1024, "injection bandwidth of one input port");
    b.real("output_flits_per_cycle", output_flits_per_cycle, 0.001, 1024, "bandwidth of one output link");
    b.integer("outputs_per_link", outputs_per_link, 1, 64,
              "consecutive outputs that share one output link and its bandwidth (destinations behind one port)");
  }
};

class Crossbar : public Unit {
 public:
  Crossbar(const sc_core::sc_module_name& name, const CrossbarParams& p, std::uint32_t inputs, std::uint32_t outputs,
           StatRegistry& stats);
  InPort<MemPacket>& input(std::uint32_t i) { return *inputs_[i]; }
  OutPort<MemPacket>& output(std::uint32_t o) { return *outputs_[o]; }

 protected:
  void evaluate() override;

 private:
  const CrossbarParams params_;
  std::vector<std::unique_ptr<InPort<MemPacket>>> inputs_;
  std::vector<std::unique_ptr<OutPort<MemPacket>>> outputs_;
  std::vector<RateServer> input_links_;
  std::vector<RateServer> output_links_;  // one per outputs_per_link outputs
  ActiveInputs active_;
  ActiveInputs busy_outputs_;  // outputs whose queue holds packets
  std::vector<RingBuffer<MemPacket>> output_queues_;  // a packet is a flit or more: as many entries as flits
  std::vector<std::uint32_t> output_queue_flits_;
  std::vector<std::uint32_t> waiting_flits_;  // per input, the size of its head while it waits
  // The inputs whose head waits (a bit each), and per output those waiting for
  // it and whether any do, so that a crowded output costs an evaluation its
  // grants rather than a look at every input queued behind it.
  std::uint32_t input_words_ = 0;
  std::vector<std::uint64_t> waiting_;
  std::vector<std::uint64_t> waiting_for_;  // input_words_ words per output
  std::vector<std::uint64_t> waited_outputs_;
  // Per output, the sizes of the heads waiting for it (a bit per size in
  // flits, the last for all larger) and how many wait of each, so that the
  // smallest is known after a grant without looking at the others.
  static constexpr std::uint32_t kSizeClasses = 64;
  static std::uint32_t size_class(std::uint32_t flits) { return std::min(flits, kSizeClasses - 1); }
  std::vector<std::uint64_t> waiting_sizes_;
  std::vector<std::uint16_t> waiting_of_size_;  // kSizeClasses per output
  std::vector<std::uint32_t> last_granted_;  // per output, the input it last took a waiting head from
  std::uint64_t packets_ = 0;
  std::uint64_t flits_ = 0;
  std::uint64_t output_busy_scaled_ = 0;
};

}  // namespace atomsim::model
