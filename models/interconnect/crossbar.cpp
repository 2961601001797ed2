#include "models/interconnect/crossbar.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace atomsim::model {

Crossbar::Crossbar(const sc_core::sc_module_name& name, const CrossbarParams& p, std::uint32_t inputs,
                   std::uint32_t outputs, StatRegistry& stats)
    : Unit(name), params_(p), input_links_(inputs, RateServer(p.input_flits_per_cycle)),
      output_links_((outputs + p.outputs_per_link - 1) / p.outputs_per_link, RateServer(p.output_flits_per_cycle)),
      active_(inputs), busy_outputs_(outputs),
      output_queues_(outputs, RingBuffer<MemPacket>(p.output_queue_flits)), output_queue_flits_(outputs, 0), waiting_flits_(inputs, 0), input_words_((inputs + 63) / 64),
      waiting_(input_words_, 0), waiting_for_(std::size_t(outputs) * input_words_, 0),
      waited_outputs_((outputs + 63) / 64, 0), waiting_sizes_(outputs, 0),
      waiting_of_size_(std::size_t(outputs) * kSizeClasses, 0), last_granted_(outputs, inputs - 1) {
  if (inputs > UINT16_MAX) throw std::invalid_argument("crossbar: more inputs than its waiting counts hold");
  StatGroup& g = stats.group(std::string(basename()), "");
  for (std::uint32_t i = 0; i < inputs; ++i) {
    inputs_.push_back(std::make_unique<InPort<MemPacket>>(*this, p.input_buffer_flits));
    inputs_.back()->report_activity_to(&active_, i);
    inputs_.back()->register_stats(stats.group(std::string(basename()) + "_input", std::to_string(i)));
  }
  for (std::uint32_t o = 0; o < outputs; ++o) outputs_.push_back(std::make_unique<OutPort<MemPacket>>(*this));
  g.add_counter("packets", &packets_, "packets switched");
  g.add_counter("flits", &flits_, "flits switched");
  g.add_busy(std::string(crossbar_stat::kOutputUtilization), &output_busy_scaled_, "mean busy fraction of output links (sum over links / links)");
}

void Crossbar::evaluate() {
  const Cycle now = Unit::now();
  Cycle next = kNever;
  const std::uint32_t n = static_cast<std::uint32_t>(inputs_.size());
  auto enter = [&](std::uint32_t i, std::uint32_t o, std::uint32_t flits) {
    InPort<MemPacket>& in = *inputs_[i];
    input_links_[i].occupy(now, in.front().sender_port_flits());
    output_queue_flits_[o] += flits;
    output_queues_[o].push_back(in.front());
    busy_outputs_.mark(o);
    in.pop();
  };
  auto flip = [](std::uint64_t* words, std::uint32_t id) { words[id >> 6] ^= std::uint64_t(1) << (id & 63); };
  // Inputs to output queues. A head goes straight into its queue while the
  // queue has room and no other head waits for it; otherwise it waits (the
  // queue's draining wakes this unit), and waiting inputs are not visited.
  next = std::min(next, active_.visit(now, [&](std::uint32_t i) {
    InPort<MemPacket>& in = *inputs_[i];
    while (!in.empty()) {
      if (!in.ready(now)) { active_.wait_until(i, in.next_ready()); break; }
      if (!input_links_[i].free(now)) { active_.wait_until(i, input_links_[i].free_at()); break; }
      const std::uint32_t o = in.front().destination;
      const std::uint32_t flits = in.front().flits();
      if (output_queue_flits_[o] + flits <= params_.output_queue_flits && waiting_sizes_[o] == 0) {
        enter(i, o, flits);
        continue;
      }
      if (waiting_sizes_[o] == 0) flip(waited_outputs_.data(), o);
      ++waiting_of_size_[std::size_t(o) * kSizeClasses + size_class(flits)];
      waiting_sizes_[o] |= std::uint64_t(1) << size_class(flits);
      waiting_flits_[i] = flits;
      flip(waiting_.data(), i);
      flip(&waiting_for_[std::size_t(o) * input_words_], i);
      break;
    }
    return !in.empty();
  }, waiting_.data()));
  // An output with room takes the waiting heads in turn, from the input after
  // the one it last took (round robin), so that inputs crowding one output
  // take turns whatever order they are visited in.
  for_each_set_bit(waited_outputs_.data(), 0, static_cast<std::uint32_t>(outputs_.size()), [&](std::uint32_t o) {
    // A queue without room for the smallest waiting head, a crowded output's
    // usual state, grants nothing (more): its waiters are not looked at.
    auto room_for_smallest = [&] {
      return output_queue_flits_[o] + static_cast<std::uint32_t>(std::countr_zero(waiting_sizes_[o])) <= params_.output_queue_flits;
    };
    if (!room_for_smallest()) return true;
    std::uint64_t* waiters = &waiting_for_[std::size_t(o) * input_words_];
    std::uint16_t* of_size = &waiting_of_size_[std::size_t(o) * kSizeClasses];
    auto grant = [&](std::uint32_t i) {
      if (!room_for_smallest()) return false;
      const std::uint32_t flits = waiting_flits_[i];
      if (output_queue_flits_[o] + flits > params_.output_queue_flits) return true;
      enter(i, o, flits);
      flip(waiting_.data(), i);
      flip(waiters, i);
      if (--of_size[size_class(flits)] == 0) waiting_sizes_[o] &= ~(std::uint64_t(1) << size_class(flits));
      last_granted_[o] = i;
      // Its next head, if ready, is taken on the next evaluation.
      if (!inputs_[i]->empty()) next = std::min(next, now + 1);
      return waiting_sizes_[o] != 0;
    };
    const std::uint32_t after = last_granted_[o] + 1 == n ? 0 : last_granted_[o] + 1;
    if (for_each_set_bit(waiters, after, n, grant)) for_each_set_bit(waiters, 0, after, grant);
    if (waiting_sizes_[o] == 0) flip(waited_outputs_.data(), o);
    return true;
  });
  // Output queues to destinations.
  bool drained = false;
  const Cycle outputs_due = busy_outputs_.visit(now, [&](std::uint32_t o) {
    RingBuffer<MemPacket>& queue = output_queues_[o];
    RateServer& link = output_links_[o / params_.outputs_per_link];
    while (!queue.empty()) {
      if (!link.free(now)) { busy_outputs_.wait_until(o, link.free_at()); break; }
      MemPacket& packet = queue.front();
      const std::uint32_t flits = packet.flits();
      if (!outputs_[o]->has_room(flits)) {
        // Passed over until the destination frees space, which wakes this unit.
        busy_outputs_.wait_until(o, kNever);
        outputs_[o]->watch_credits(busy_outputs_, o);
        break;
      }
      std::uint64_t before = *link.busy_scaled();
      Cycle done = link.occupy(now, flits);
      output_busy_scaled_ += (*link.busy_scaled() - before) / output_links_.size();
      ++packets_;
      flits_ += flits;
      output_queue_flits_[o] -= flits;
      outputs_[o]->send(packet, flits, done > now + 1 ? done - now - 1 : 0);
      queue.pop_front();
      drained = true;
    }
    return !queue.empty();
  });
  next = std::min(next, outputs_due);
  // Space freed in an output queue may unblock an input next cycle.
  if (drained && !active_.empty()) next = std::min(next, now + 1);
  if (next != kNever) wake_at(next);
}

}  // namespace atomsim::model
