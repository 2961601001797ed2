// How the wake calendar (sim/engine/unit.cpp) groups units into domains and
// deals the domains out to its threads: pure functions of the units' links
// and costs, so that the same inputs always give the same plan.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/engine/unit.hpp"

namespace atomsim::detail {

// A sender's messages reach the receiver `latency` cycles after they are sent.
struct UnitLink {
  std::uint32_t sender, receiver;
  Cycle latency;
};

// Units joined by links shorter than a window form a domain, whose cycles of
// a window run together on one thread.
struct DomainPlan {
  struct Domain {
    std::uint32_t first = 0, count = 0;  // its units in members, in construction order
    std::uint32_t home = 0;              // the thread it starts on
  };
  std::vector<std::uint32_t> domain_of;  // by unit (UINT32_MAX where the unit is gone)
  std::vector<Domain> domains;           // named by their first unit, in construction order
  std::vector<std::uint32_t> members;    // units, each domain's side by side
};

// `present[u]`: whether unit u still exists. Domains are dealt to `threads`
// threads in turn.
DomainPlan plan_domains(const std::vector<bool>& present, const std::vector<UnitLink>& links, Cycle window,
                        unsigned threads);

// Longest processing time first: each domain, costliest first, to the thread
// with the least cost so far, thread 0 starting with the calendar's own
// `calendar_cost`. Domains of no cost keep their thread in `thread_of`.
std::vector<std::uint32_t> deal_by_cost(const std::vector<std::uint64_t>& cost, std::vector<std::uint32_t> thread_of,
                                        unsigned threads, std::uint64_t calendar_cost);

}  // namespace atomsim::detail
