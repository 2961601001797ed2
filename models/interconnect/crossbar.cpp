#include "models/interconnect/crossbar.hpp"

#include <algorithm>

namespace atomsim::model {

Crossbar::Crossbar(const sc_core::sc_module_name& name, const CrossbarParams& p, std::uint32_t inputs,
                   std::uint32_t outputs, StatRegistry& stats)
    : Unit(name), params_(p), input_links_(inputs, RateServer(p.input_flits_per_cycle)),
      output_links_(outputs, RateServer(p.output_flits_per_cycle)), active_(inputs), busy_outputs_(outputs),
      output_queues_(outputs), output_queue_flits_(outputs, 0), head_waits_(inputs), waiters_(outputs, 0),
      last_granted_(outputs, inputs - 1) {
  StatGroup& g = stats.group(std::string(basename()), "");
  for (std::uint32_t i = 0; i < inputs; ++i) {
    inputs_.push_back(std::make_unique<InPort<MemPacket>>(*this, p.input_buffer_flits));
    inputs_.back()->report_activity_to(&active_, i);
    inputs_.back()->register_stats(stats.group(std::string(basename()) + "_input", std::to_string(i)));
  }
  for (std::uint32_t o = 0; o < outputs; ++o) outputs_.push_back(std::make_unique<OutPort<MemPacket>>(*this));
  g.add_counter("packets", &packets_, "packets switched");
  g.add_counter("flits", &flits_, "flits switched");
  g.add_busy("output_utilization", &output_busy_scaled_, "mean busy fraction of output links (sum over outputs / outputs)");
}

void Crossbar::evaluate() {
  const Cycle now = Unit::now();
  Cycle next = kNever;
  // Inputs to output queues. An output some input waits for is granted, as
  // its queue has room, to the ready input next after the one it last took
  // (round robin), so inputs crowding one output take turns whatever order
  // they are visited in; the others' heads go straight in.
  auto enter = [&](std::uint32_t i, std::uint32_t o, std::uint32_t flits) {
    InPort<MemPacket>& in = *inputs_[i];
    input_links_[i].occupy(now, flits);
    output_queue_flits_[o] += flits;
    output_queues_[o].push_back(in.front());
    busy_outputs_.mark(o);
    in.pop();
  };
  contenders_.clear();
  active_.visit([&](std::uint32_t i) {
    InPort<MemPacket>& in = *inputs_[i];
    // A waiting head stays as it is while its queue is full; checked here
    // without touching the input's buffer.
    if (const HeadWait& w = head_waits_[i]; w.flits && output_queue_flits_[w.output] + w.flits > params_.output_queue_flits)
      return true;
    while (!in.empty()) {
      if (!in.ready(now)) { next = std::min(next, in.next_ready()); break; }
      if (!input_links_[i].free(now)) { next = std::min(next, input_links_[i].free_at()); break; }
      const std::uint32_t o = in.front().destination;
      const std::uint32_t flits = in.front().flits();
      const bool room = output_queue_flits_[o] + flits <= params_.output_queue_flits;
      if (waiters_[o] == 0 && room) {
        enter(i, o, flits);
        continue;
      }
      if (!head_waits_[i].flits) {  // woken when the queue drains
        head_waits_[i] = HeadWait{o, flits};
        ++waiters_[o];
      }
      if (room) contenders_.push_back({o, i});
      break;
    }
    return !in.empty();
  });
  // Per output, grants in turn while its queue has room.
  std::sort(contenders_.begin(), contenders_.end(), [&](const Contender& a, const Contender& b) {
    if (a.output != b.output) return a.output < b.output;
    const std::uint32_t n = static_cast<std::uint32_t>(inputs_.size()), after = last_granted_[a.output] + 1;
    return (a.input + n - after) % n < (b.input + n - after) % n;
  });
  for (const Contender& c : contenders_) {
    const HeadWait w = head_waits_[c.input];
    if (output_queue_flits_[c.output] + w.flits > params_.output_queue_flits) continue;
    enter(c.input, c.output, w.flits);
    head_waits_[c.input].flits = 0;
    --waiters_[c.output];
    last_granted_[c.output] = c.input;
    // Its next head, if ready, is taken on the next evaluation.
    if (!inputs_[c.input]->empty()) next = std::min(next, now + 1);
  }
  // Output queues to destinations.
  bool drained = false;
  busy_outputs_.visit([&](std::uint32_t o) {
    std::deque<MemPacket>& queue = output_queues_[o];
    RateServer& link = output_links_[o];
    while (!queue.empty()) {
      if (!link.free(now)) { next = std::min(next, link.free_at()); break; }
      MemPacket& packet = queue.front();
      const std::uint32_t flits = packet.flits();
      if (!outputs_[o]->has_room(flits)) {
        outputs_[o]->watch_credits();  // woken when the destination frees space
        break;
      }
      std::uint64_t before = *link.busy_scaled();
      Cycle done = link.occupy(now, flits);
      output_busy_scaled_ += (*link.busy_scaled() - before) / outputs_.size();
      ++packets_;
      flits_ += flits;
      output_queue_flits_[o] -= flits;
      outputs_[o]->try_send(packet, done > now + 1 ? done - now - 1 : 0);
      queue.pop_front();
      drained = true;
    }
    return !queue.empty();
  });
  // Space freed in an output queue may unblock an input next cycle.
  if (drained && !active_.empty()) next = std::min(next, now + 1);
  if (next != kNever) wake_at(next);
}

}  // namespace atomsim::model
