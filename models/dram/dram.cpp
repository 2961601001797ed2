#include "models/dram/dram.hpp"

#include <algorithm>

#include "models/interconnect/address_map.hpp"

namespace atomsim::model {

Dram::Dram(const sc_core::sc_module_name& name, const DramParams& p, std::uint32_t ports, StatRegistry& stats)
    : Unit(name), params_(p), xor_hash_(p.hash == AddressHash::Xor), channels_(p.channels, Channel{RateServer(p.bytes_per_cycle_per_channel), {}, false}),
      scheduled_(ports) {
  StatGroup& g = stats.group("dram", "");
  for (std::uint32_t i = 0; i < ports; ++i) {
    requests_.push_back(std::make_unique<InPort<DramRequest>>(*this, p.queue_depth));
    replies_.push_back(std::make_unique<OutPort<DramRequest>>(*this));
  }
  g.add_counter("reads", &reads_, "reads (the sectors a slice lacks of one line)");
  g.add_counter("writes", &writes_, "writebacks (a line's dirty sectors)");
  g.add_counter("bytes", &bytes_, "bytes transferred");
  g.add_counter("bytes_written", &bytes_written_, "bytes of writebacks (the rest of bytes were read)");
  g.add_busy(dram_stat::kChannelUtilization, &busy_scaled_, "mean busy fraction of the channels");
}

Cycle Dram::after_refresh(std::size_t channel, Cycle cycle) const {
  if (!params_.refresh_interval || !params_.refresh_cycles) return cycle;
  const Cycle offset = channel * params_.refresh_interval / channels_.size();
  const Cycle phase = (cycle + params_.refresh_interval - offset) % params_.refresh_interval;
  return phase < params_.refresh_cycles ? cycle + params_.refresh_cycles - phase : cycle;
}

Dram::Occupied Dram::occupy(std::size_t c, Cycle now, double bytes) {
  RateServer& server = channels_[c].server;
  const std::uint64_t before = *server.busy_scaled();
  const Cycle start = after_refresh(c, std::max(now, server.free_at()));
  const Cycle done = server.occupy(start, 1, bytes);
  busy_scaled_ += (*server.busy_scaled() - before) / channels_.size();
  return {start, done};
}

void Dram::serve_writes(std::size_t c, Cycle now) {
  Channel& channel = channels_[c];
  double bytes = channel.read_since_writes ? params_.write_turnaround_cycles * params_.bytes_per_cycle_per_channel : 0;
  for (const HeldWrite& w : channel.held_writes) bytes += w.bytes;
  const Cycle start = occupy(c, now, bytes).start;
  for (const HeldWrite& w : channel.held_writes) scheduled_[w.port].push(start);
  channel.held_writes.clear();
  channel.read_since_writes = false;
}

void Dram::evaluate() {
  const Cycle now = Unit::now();
  Cycle next = kNever;
  // A channel with nothing left to serve takes the writes it held back.
  std::erase_if(channels_holding_, [&](std::uint32_t c) {
    if (!channels_[c].server.free(now)) return false;
    serve_writes(c, now);
    return true;
  });
  for (std::size_t p = 0; p < requests_.size(); ++p) {
    InPort<DramRequest>& port = *requests_[p];
    auto& scheduled = scheduled_[p];
    while (!scheduled.empty() && scheduled.top() <= now) scheduled.pop();
    bool blocked = false;
    while (port.ready(now)) {
      // Writes a channel holds back wait in its own queue of write_batch, not
      // among the port's scheduled requests.
      if (scheduled.size() >= params_.scheduled_per_port) {
        next = std::min(next, scheduled.top());  // when one of the port's requests starts
        blocked = true;
        break;
      }
      const DramRequest r = port.front();
      port.pop();
      const std::uint64_t chunk = r.line / params_.interleave_bytes;
      const std::size_t c = (xor_hash_ ? xor_fold(chunk) : chunk) % channels_.size();
      Channel& channel = channels_[c];
      const double held = std::max(static_cast<double>(r.bytes),
                                   (r.write ? params_.min_write_cycles : params_.min_read_cycles) * params_.bytes_per_cycle_per_channel);
      bytes_ += r.bytes;
      if (r.write) {
        ++writes_;
        bytes_written_ += r.bytes;
        if (channel.held_writes.empty()) channels_holding_.push_back(static_cast<std::uint32_t>(c));
        channel.held_writes.push_back(HeldWrite{static_cast<std::uint32_t>(p), held});
        if (channel.held_writes.size() >= params_.write_batch || channel.server.free(now)) {
          serve_writes(c, now);
          std::erase(channels_holding_, static_cast<std::uint32_t>(c));
        }
        continue;
      }
      ++reads_;
      const Occupied read = occupy(c, now, held);
      scheduled.push(read.start);
      channel.read_since_writes = true;
      in_flight_.push(Pending{read.done + params_.latency, sequence_++, r});
    }
    if (!blocked) next = std::min(next, port.next_ready());
  }
  for (const std::uint32_t c : channels_holding_) next = std::min(next, channels_[c].server.free_at());
  while (!in_flight_.empty() && in_flight_.top().ready <= now) {
    const DramRequest& r = in_flight_.top().request;
    if (!replies_[r.slice]->try_send(r)) break;  // the slice frees space and wakes us
    in_flight_.pop();
  }
  if (!in_flight_.empty() && in_flight_.top().ready > now) next = std::min(next, in_flight_.top().ready);
  if (next != kNever) wake_at(std::max(next, now + 1));
}

}  // namespace atomsim::model
