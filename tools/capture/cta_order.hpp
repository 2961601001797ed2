// The order a captured kernel's CTAs started in, where the kernel itself
// numbers them by it: each CTA's first returning atomic on a counter shared by
// the whole grid (`atomicAdd(&next_tile, 1)` by one thread) draws a ticket, and
// the CTA works on the tile its ticket names. A replay must start the CTA that
// drew ticket k k-th, or CTAs that wait on earlier tiles (a decoupled
// look-back) wait on CTAs not yet started.
#pragma once

#include <cstdint>
#include <vector>

namespace atomsim::capture {

// One lane's returning atomic (ATOM) of the capture: the instruction, its CTA,
// the word and the value the word held before (the atomic's result).
struct TicketDraw {
  std::uint32_t instruction = 0;  // index into the kernel's program
  std::uint64_t cta = 0;
  std::uint64_t address = 0;
  std::uint64_t before = 0;
};

// The CTAs in the order of their tickets, from the earliest instruction at
// which every one of the `ctas` CTAs drew exactly one ticket from the same
// word, all tickets distinct; empty when no instruction is such a counter.
std::vector<std::uint64_t> ticket_order(const std::vector<TicketDraw>& draws, std::uint64_t ctas);

}  // namespace atomsim::capture
