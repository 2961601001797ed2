// Point-to-point message ports. A unit owns its InPorts (bounded input
// buffers); an OutPort is bound to exactly one InPort with a link latency. The
// sender never learns who is on the other side: it sees only whether the link
// has credit. Capacity is counted in flits (a message says how many it is), so
// a 32-operation atomic packet fills a buffer as 32 single operations would.
#pragma once

#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/engine/active_inputs.hpp"
#include "sim/engine/rate_server.hpp"
#include "sim/engine/ring_buffer.hpp"
#include "sim/engine/stats.hpp"
#include "sim/engine/unit.hpp"

namespace atomsim {

// The statistic an input buffer registers for its time-averaged fill, in the
// group its owner names (register_stats).
inline constexpr std::string_view kOccupancyStat = "occupancy";

// Flow control of one link, kept with the sender so that it never reads the
// receiver's buffer: what the receiver has freed since the sender last took
// credits, and whether the sender asked to be woken when it frees more. Each
// message the receiver takes is credited here at the end of the cycle (or
// window) by the thread of the sender, which so touches no line of the
// receiver's.
struct LinkCredits final : CycleEndEffect {
  std::uint64_t messages = 0;
  std::uint64_t flits = 0;
  bool wake_sender = false;
  Unit* sender = nullptr;  // null for a port driven directly (tests, set-up code)
  ActiveInputs* resume_in = nullptr;  // with resume_id, the sender's entry waiting for this credit
  std::uint32_t resume_id = 0;
  void apply_at_cycle_end(std::uint64_t freed_flits, const std::uint64_t*) override {
    ++messages;
    flits += freed_flits;
    if (sender && wake_sender) {
      wake_sender = false;
      sender->wake_at(Unit::now() + 1);
      if (resume_in) std::exchange(resume_in, nullptr)->resume_at(resume_id, Unit::now() + 1);
    }
  }
};

// Anything sent through a port says how many flits of buffer it occupies.
template <class Msg>
std::uint32_t flits_of(const Msg& msg) { return msg.flits(); }

// A receiver frees buffer space as it takes messages; the sender learns of it
// (the credit) at the end of the cycle, whichever of the two ran first in it,
// or, when the two lie in different domains, at the end of the window.
template <class Msg>
class InPort final : public MessageBuffer, public CycleEndEffect {
 public:
  struct Entry {
    Cycle ready = 0;
    Msg msg{};
  };
  // A staged message is its arrival cycle and then its bytes (defer_with_payload).
  static_assert(offsetof(Entry, msg) == sizeof(Cycle) && sizeof(Entry) == sizeof(Cycle) + (sizeof(Msg) + 7) / 8 * 8);

  // capacity_flits bounds buffered plus in-flight flits; max_messages bounds entries.
  InPort(Unit& owner, std::uint32_t capacity_flits, std::uint32_t max_messages = 0)
      : owner_(owner), capacity_flits_(capacity_flits), max_messages_(max_messages ? max_messages : capacity_flits),
        buffer_(max_messages_) {
    if (capacity_flits == 0) throw std::invalid_argument("port capacity must be positive");
    owner.add_input(*this);
  }
  InPort(const InPort&) = delete;  // the owner keeps its address
  InPort& operator=(const InPort&) = delete;

  std::uint32_t capacity_flits() const override { return capacity_flits_; }
  std::size_t waiting_messages() const override { return buffer_.size(); }
  Cycle oldest_arrival() const override { return buffer_.empty() ? kNever : buffer_.front().ready; }
  std::uint32_t occupied_flits() const override { return occupied_flits_; }
  std::uint32_t max_messages() const { return max_messages_; }
  const Unit& owner() const { return owner_; }
  bool ready(Cycle now) const { return head_ready_ <= now; }
  Cycle next_ready() const { return head_ready_; }
  bool empty() const { return buffer_.empty(); }
  Msg& front() { return buffer_.front().msg; }

  // Moves the first message behind the head that has arrived by `now` and
  // for which `pick(msg)` holds to the head, the ones it passes keeping
  // their order; false if there is none.
  template <class Pick>
  bool bring_forward(Cycle now, Pick pick) {
    for (std::size_t i = 1; i < buffer_.size() && buffer_.at(i).ready <= now; ++i) {
      if (!pick(buffer_.at(i).msg)) continue;
      for (; i > 0; --i) std::swap(buffer_.at(i), buffer_.at(i - 1));
      head_ready_ = buffer_.front().ready;
      return true;
    }
    return false;
  }

  void pop() {
    Cycle now = Unit::now();
    track_level(now);
    const std::uint32_t flits = flits_of(buffer_.front().msg);
    occupied_flits_ -= flits;
    buffer_.pop_front();
    head_ready_ = buffer_.empty() ? kNever : buffer_.front().ready;
    defer_to_cycle_end(*credits_, flits, sender_ ? sender_ : &owner_);
  }

  // Link side: what an OutPort sent, as the staged effect's payload, copied
  // once, into its place in the buffer (a message can be hundreds of bytes).
  void apply_at_cycle_end(std::uint64_t at, const std::uint64_t* payloads) override {
    const Cycle now = Unit::now();
    track_level(now);
    std::memcpy(static_cast<void*>(&buffer_.append()), payloads + at, sizeof(Entry));
    arrived(now);
  }
  void deliver(Msg msg, Cycle ready) {
    const Cycle now = Unit::now();
    track_level(now);
    buffer_.append() = Entry{ready, std::move(msg)};
    arrived(now);
  }
  void attach_sender(Unit* sender, LinkCredits* credits) {
    sender_ = sender;
    credits_ = credits;
    credits_->sender = sender;
  }
  void report_activity_to(ActiveInputs* set, std::uint32_t id) {
    activity_ = set;
    activity_id_ = id;
  }

  // Time-weighted occupancy, reported by the owner through its stats group.
  // `prefix` may be empty when the group describes this buffer alone.
  void register_stats(StatGroup& group, const std::string& prefix = "") {
    std::string p = prefix.empty() ? "" : prefix + ".";
    group.add_integral(p + std::string(kOccupancyStat), &level_integral_, "time-averaged flits buffered");
    group.add_counter(p + "full_cycles", &full_cycles_, "cycles the buffer refused new flits");
    group.add_constant(p + "capacity", capacity_flits_, "buffer capacity in flits");
  }

 private:
  // The message just placed at the back has arrived.
  void arrived(Cycle now) {
    const Entry& last = buffer_.at(buffer_.size() - 1);
    const Cycle ready = last.ready;
    occupied_flits_ += flits_of(last.msg);
    // A sender may add pipeline delay per message; messages leave in ready order.
    buffer_.sift_back([](const Entry& a, const Entry& b) { return a.ready < b.ready; });
    head_ready_ = buffer_.front().ready;
    if (occupied_flits_ >= capacity_flits_ || buffer_.full()) full_since_ = now;
    if (activity_) activity_->mark(activity_id_, head_ready_);
    owner_.wake_at(ready);
  }
  void track_level(Cycle now) {
    level_integral_ += static_cast<std::uint64_t>(occupied_flits_) * (now - last_change_);
    if (full_since_ != kNever) {
      full_cycles_ += now - full_since_;
      full_since_ = (occupied_flits_ >= capacity_flits_ || buffer_.full()) ? now : kNever;
    }
    last_change_ = now;
  }

  Unit& owner_;
  std::uint32_t capacity_flits_;
  std::uint32_t max_messages_;
  RingBuffer<Entry> buffer_;
  Cycle head_ready_ = kNever;  // the first message's, kept here so that polling an idle port stays off the buffer
  std::uint32_t occupied_flits_ = 0;
  Unit* sender_ = nullptr;  // as credits_->sender, kept here so that a pop reads no line of the sender's
  ActiveInputs* activity_ = nullptr;
  std::uint32_t activity_id_ = 0;
  LinkCredits unbound_credits_;
  LinkCredits* credits_ = &unbound_credits_;  // lives with the sender once bound
  Cycle last_change_ = 0;
  Cycle full_since_ = kNever;
  std::uint64_t level_integral_ = 0;
  std::uint64_t full_cycles_ = 0;
};

// What a sender sends in a cycle reaches the receiver's buffer at the end of
// that cycle, or of the window across domains (it can be taken no sooner than
// the link's latency anyway, and a link between domains is at least a window).
// The message travels as the payload of an effect on the receiver's port, so
// the receiver's thread never reads the sender's port.
template <class Msg>
class OutPort final {
 public:
  explicit OutPort(Unit& owner) : owner_(owner) {}

  void bind(InPort<Msg>& peer, Cycle latency) {
    if (latency == 0) throw std::invalid_argument("link latency must be at least one cycle");
    peer_ = &peer;
    receiver_ = &peer.owner();
    latency_ = latency;
    capacity_flits_ = peer.capacity_flits();
    max_messages_ = peer.max_messages();
    peer.attach_sender(&owner_, credits_);
    owner_.link_to(peer.owner(), latency);
  }

  // True when the message was accepted; otherwise the sender is woken once
  // the receiver frees space.
  // `extra_delay` adds to the link latency (e.g. serialization, pipeline depth).
  bool try_send(const Msg& msg, Cycle extra_delay = 0) {
    assert(peer_);
    const std::uint32_t flits = flits_of(msg);
    if (!has_room(flits)) {
      credits_->wake_sender = true;
      return false;
    }
    send(msg, flits, extra_delay);
    return true;
  }
  // Sends a message of `flits` flits that has_room(flits) said fits.
  void send(const Msg& msg, std::uint32_t flits, Cycle extra_delay = 0) {
    assert(peer_ && has_room(flits) && flits == flits_of(msg));
    ++sent_messages_;
    sent_flits_ += flits;
    defer_with_payload(*peer_, Unit::now() + latency_ + extra_delay, msg, receiver_);
  }
  // Whether the receiver's buffer (buffered plus in flight) has room, from
  // what was sent and what the receiver has credited back.
  bool has_room(std::uint32_t flits) const {
    return sent_messages_ - credits_->messages < max_messages_ &&
           sent_flits_ - credits_->flits + flits <= capacity_flits_;
  }
  // Messages sent that the receiver has not yet freed.
  std::uint64_t messages_in_flight() const { return sent_messages_ - credits_->messages; }
  // Asks to be woken when the receiver next frees a slot (used to learn of credit returns).
  void watch_credits() { credits_->wake_sender = true; }
  // The same, for a sender that keeps this port as entry `id` of `waiting`
  // and told it to wait until kNever: the credit lets that entry move again,
  // so that the sender does not look at the port until then.
  void watch_credits(ActiveInputs& waiting, std::uint32_t id) {
    watch_credits();
    credits_->resume_in = &waiting;
    credits_->resume_id = id;
  }
  // Messages the receiver has freed since the last call.
  std::uint64_t take_credits() {
    const std::uint64_t messages = std::exchange(credits_->messages, 0);
    sent_messages_ -= messages;
    sent_flits_ -= std::exchange(credits_->flits, 0);
    return messages;
  }
  // Keeps the link's credits in `credits` (call before bind), so a sender with
  // many ports can see at a glance which have credits.
  void count_credits_in(LinkCredits& credits) { credits_ = &credits; }

 private:
  Unit& owner_;
  InPort<Msg>* peer_ = nullptr;
  const Unit* receiver_ = nullptr;  // the peer's owner, kept here so that a send reads no line of the receiver's
  Cycle latency_ = 1;
  std::uint32_t capacity_flits_ = 0;
  std::uint32_t max_messages_ = 0;
  std::uint64_t sent_messages_ = 0;  // not yet credited back by take_credits
  std::uint64_t sent_flits_ = 0;
  LinkCredits own_credits_;
  LinkCredits* credits_ = &own_credits_;
  using Entry = typename InPort<Msg>::Entry;
};

}  // namespace atomsim
