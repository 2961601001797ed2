#include "tools/capture/cta_order.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace atomsim::capture {

std::vector<std::uint64_t> ticket_order(const std::vector<TicketDraw>& draws, std::uint64_t ctas) {
  std::map<std::uint32_t, std::vector<const TicketDraw*>> by_instruction;
  for (const TicketDraw& d : draws) by_instruction[d.instruction].push_back(&d);
  for (const auto& [instruction, drawn] : by_instruction) {
    if (drawn.size() != ctas) continue;
    const std::uint64_t counter = drawn.front()->address;
    if (std::any_of(drawn.begin(), drawn.end(), [&](const TicketDraw* d) { return d->address != counter; })) continue;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> tickets;  // (ticket, CTA)
    for (const TicketDraw* d : drawn) tickets.emplace_back(d->before, d->cta);
    std::sort(tickets.begin(), tickets.end());
    bool one_each = true;
    std::vector<bool> seen(ctas, false);
    for (std::size_t i = 0; i < tickets.size() && one_each; ++i) {
      const std::uint64_t cta = tickets[i].second;
      one_each = cta < ctas && !seen[cta] && (i == 0 || tickets[i].first != tickets[i - 1].first);
      if (one_each) seen[cta] = true;
    }
    if (!one_each) continue;
    std::vector<std::uint64_t> order;
    order.reserve(ctas);
    for (const auto& t : tickets) order.push_back(t.second);
    return order;
  }
  return {};
}

}  // namespace atomsim::capture
