// Test units that drive and observe a model through its ports.
#pragma once

#include <deque>
#include <utility>
#include <vector>

#include "sim/engine/port.hpp"

namespace atomsim::testing {

// Sends each message at (or, when the link is full, after) its scheduled cycle.
template <class Msg>
class Source : public Unit {
 public:
  explicit Source(const sc_core::sc_module_name& name) : Unit(name), out(*this) {}
  void schedule(Cycle at, Msg msg) { plan_.emplace_back(at, std::move(msg)); }
  void start() { wake_at(plan_.empty() ? 0 : plan_.front().first); }
  OutPort<Msg> out;
  std::vector<Cycle> sent_at;

 protected:
  void evaluate() override {
    const Cycle now = Unit::now();
    while (!plan_.empty() && plan_.front().first <= now) {
      if (!out.try_send(plan_.front().second)) return;  // the receiver's credit wakes us
      sent_at.push_back(now);
      plan_.pop_front();
    }
    if (!plan_.empty()) wake_at(plan_.front().first);
  }

 private:
  std::deque<std::pair<Cycle, Msg>> plan_;
};

// Takes one message every `interval` cycles (1: as fast as they arrive).
template <class Msg>
class Sink : public Unit {
 public:
  Sink(const sc_core::sc_module_name& name, std::uint32_t capacity, Cycle interval = 1)
      : Unit(name), in(*this, capacity), interval_(interval) {}
  InPort<Msg> in;
  std::vector<std::pair<Cycle, Msg>> received;

 protected:
  void evaluate() override {
    const Cycle now = Unit::now();
    while (in.ready(now) && now >= next_allowed_) {
      received.emplace_back(now, in.front());
      in.pop();
      next_allowed_ = now + interval_;
    }
    if (!in.empty()) wake_at(std::max(in.next_ready(), next_allowed_));
  }

 private:
  Cycle interval_;
  Cycle next_allowed_ = 0;
};

struct Token {
  int id = 0;
  std::uint32_t size = 1;
  std::uint32_t flits() const { return size; }
};

}  // namespace atomsim::testing
