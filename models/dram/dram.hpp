// DRAM: independent channels, each a bandwidth-limited server (a request
// holds its channel for its bytes, and at least min_read_cycles or
// min_write_cycles however few they are) followed by a fixed access latency,
// that serves nothing while it refreshes (a window of refresh_cycles every
// refresh_interval, the channels' windows spread evenly over the interval).
// Reads are served as they come; a channel holds writes back until it has
// write_batch of them or nothing else to do, and a batch that follows reads
// costs it write_turnaround_cycles more. Chunks of interleave_bytes map to
// channels by a hash chosen in the configuration.
#pragma once

#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "models/interconnect/address_map.hpp"
#include "models/messages.hpp"
#include "sim/engine/params.hpp"
#include "sim/engine/port.hpp"

namespace atomsim::model {

namespace dram_stat {
inline constexpr StatId kChannelUtilization{"dram", "channel_utilization"};
}  // namespace dram_stat

struct DramParams {
  std::uint32_t channels = 1;
  double bytes_per_cycle_per_channel = 32;
  Cycle latency = 100;
  std::uint32_t queue_depth = 64;
  std::uint32_t interleave_bytes = 256;
  AddressHash hash = AddressHash::Xor;
  Cycle refresh_interval = 0;
  Cycle refresh_cycles = 0;
  double min_read_cycles = 0;
  double min_write_cycles = 0;
  std::uint32_t write_batch = 1;
  double write_turnaround_cycles = 0;
  std::uint32_t scheduled_per_port = 64;
  void declare(ParamBinder b) {
    b.integer("channels", channels, 1, 1024, "independent DRAM channels");
    b.real("bytes_per_cycle_per_channel", bytes_per_cycle_per_channel, 0.01, 4096, "peak bytes one channel moves per SM cycle");
    b.real("min_read_cycles", min_read_cycles, 0, 1000,
           "SM cycles a read holds its channel at least, however few bytes it moves (a sector's access is not 32 bytes' "
           "share of the peak bandwidth)");
    b.real("min_write_cycles", min_write_cycles, 0, 1000, "SM cycles a write holds its channel at least, however few bytes it moves");
    b.integer("write_batch", write_batch, 1, 4096,
              "writes a channel holds back while it serves reads, then serves together (sooner when it has nothing else to do)");
    b.real("write_turnaround_cycles", write_turnaround_cycles, 0, 10000,
           "SM cycles a batch of writes holds its channel beyond the writes' own when the channel served a read since its "
           "last writes (the bus turning from reads to writes and back)");
    b.integer("latency", latency, 1, 100000, "cycles from a channel starting a read to the data leaving it");
    b.integer("queue_depth", queue_depth, 1, 4096, "requests buffered per slice port");
    b.integer("scheduled_per_port", scheduled_per_port, 1, 4096,
              "requests from one slice the channels hold scheduled but not started (writes included, which need no "
              "reply); more wait in the slice's port");
    b.integer("interleave_bytes", interleave_bytes, 32, 1 << 20, "consecutive bytes mapped to one channel");
    b.choice("hash", hash, kAddressHashNames, "chunk-to-channel hash (xor: upper address bits folded in, as the L2's slice hash)");
    b.integer("refresh_interval", refresh_interval, 0, 1 << 30, "cycles from one refresh of a channel to its next (0: no refresh)");
    b.integer("refresh_cycles", refresh_cycles, 0, 1 << 30, "cycles a refresh keeps its channel from serving requests");
  }
};

class Dram : public Unit {
 public:
  Dram(const sc_core::sc_module_name& name, const DramParams& p, std::uint32_t ports, StatRegistry& stats);
  InPort<DramRequest>& request(std::uint32_t port) { return *requests_[port]; }
  OutPort<DramRequest>& reply(std::uint32_t port) { return *replies_[port]; }

 protected:
  void evaluate() override;

 private:
  // The first cycle from `cycle` on at which `channel` is not refreshing.
  Cycle after_refresh(std::size_t channel, Cycle cycle) const;
  struct Pending {
    Cycle ready;
    std::uint64_t sequence;
    DramRequest request;
    bool operator>(const Pending& o) const { return ready != o.ready ? ready > o.ready : sequence > o.sequence; }
  };
  const DramParams params_;
  const bool xor_hash_;
  std::vector<std::unique_ptr<InPort<DramRequest>>> requests_;
  std::vector<std::unique_ptr<OutPort<DramRequest>>> replies_;
  struct HeldWrite {
    std::uint32_t port;
    double bytes;  // what it holds the channel for, in bytes at the channel's rate
  };
  struct Channel {
    RateServer server;
    std::vector<HeldWrite> held_writes;
    bool read_since_writes = false;
  };
  // Holds `channel` for `bytes` at its rate from `now` on (after a refresh),
  // counting its busy time: when that starts and ends.
  struct Occupied {
    Cycle start, done;
  };
  Occupied occupy(std::size_t channel, Cycle now, double bytes);
  // Serves `channel`'s held writes from `now` on, as one batch.
  void serve_writes(std::size_t channel, Cycle now);
  std::vector<Channel> channels_;
  std::vector<std::uint32_t> channels_holding_;  // channels with writes held back
  // Per port, the start cycles of its requests the channels hold, earliest first.
  std::vector<std::priority_queue<Cycle, std::vector<Cycle>, std::greater<>>> scheduled_;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<>> in_flight_;
  std::uint64_t sequence_ = 0;
  std::uint64_t reads_ = 0, writes_ = 0, bytes_ = 0, bytes_written_ = 0, busy_scaled_ = 0;
};

}  // namespace atomsim::model
