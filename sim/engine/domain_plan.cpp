#include "sim/engine/domain_plan.hpp"

#include <algorithm>

namespace atomsim::detail {

DomainPlan plan_domains(const std::vector<bool>& present, const std::vector<UnitLink>& links, Cycle window,
                        unsigned threads) {
  const auto units = static_cast<std::uint32_t>(present.size());
  std::vector<std::uint32_t> root(units);
  for (std::uint32_t i = 0; i < units; ++i) root[i] = i;
  auto find = [&root](std::uint32_t i) {
    while (root[i] != i) i = root[i] = root[root[i]];
    return i;
  };
  for (const UnitLink& l : links) {
    if (l.latency >= window || !present[l.sender] || !present[l.receiver]) continue;
    const std::uint32_t a = find(l.sender), b = find(l.receiver);
    if (a != b) root[std::max(a, b)] = std::min(a, b);  // the first unit built names the domain
  }
  DomainPlan plan;
  plan.domain_of.assign(units, UINT32_MAX);
  std::vector<std::uint32_t> index(units, UINT32_MAX);
  std::uint32_t placed_units = 0;
  for (std::uint32_t u = 0; u < units; ++u) {
    if (!present[u]) continue;
    std::uint32_t& domain = index[find(u)];
    if (domain == UINT32_MAX) {
      domain = static_cast<std::uint32_t>(plan.domains.size());
      plan.domains.emplace_back();
      plan.domains.back().home = domain % threads;
    }
    plan.domain_of[u] = domain;
    ++plan.domains[domain].count;
    ++placed_units;
  }
  for (std::uint32_t d = 0, at = 0; d < plan.domains.size(); at += plan.domains[d++].count) plan.domains[d].first = at;
  plan.members.assign(placed_units, 0);
  std::vector<std::uint32_t> placed(plan.domains.size(), 0);
  for (std::uint32_t u = 0; u < units; ++u)
    if (present[u]) plan.members[plan.domains[plan.domain_of[u]].first + placed[plan.domain_of[u]]++] = u;
  return plan;
}

std::vector<std::uint32_t> deal_by_cost(const std::vector<std::uint64_t>& cost, std::vector<std::uint32_t> thread_of,
                                        unsigned threads, std::uint64_t calendar_cost) {
  const auto domains = static_cast<std::uint32_t>(cost.size());
  std::vector<std::uint32_t> by_cost(domains);
  for (std::uint32_t d = 0; d < domains; ++d) by_cost[d] = d;
  std::stable_sort(by_cost.begin(), by_cost.end(), [&cost](std::uint32_t a, std::uint32_t b) { return cost[a] > cost[b]; });
  std::vector<std::uint64_t> load(threads, 0);
  load[0] = calendar_cost;
  for (std::uint32_t d : by_cost) {
    if (cost[d] == 0) break;
    const auto least = std::min_element(load.begin(), load.end());
    thread_of[d] = static_cast<std::uint32_t>(least - load.begin());
    *least += cost[d];
  }
  return thread_of;
}

}  // namespace atomsim::detail
