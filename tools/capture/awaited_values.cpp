#include "tools/capture/awaited_values.hpp"

#include <algorithm>
#include <bit>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "traces/sass.hpp"

namespace atomsim::capture {
namespace {

bool carries_value(const trace::StaticInst& s) { return s.access_bytes == 4 || s.access_bytes == 8; }

// Calls f(static instruction, operands, warp) for every global memory
// instruction of the kernel that recorded its lanes' operands.
template <class F>
void for_each_access(const std::vector<trace::StaticInst>& program, std::vector<WarpObservation>& warps, F f) {
  for (std::uint64_t w = 0; w < warps.size(); ++w)
    for (const ObservedInst& e : warps[w].events)
      if (e.operands >= 0) f(program[e.index], e.mask, warps[w].operands[e.operands], w);
}

}  // namespace

AwaitedValues mark_awaited_values(const std::vector<trace::StaticInst>& program, std::vector<WarpObservation>& warps) {
  AwaitedValues result;
  // Most kernels poll nothing: the words coherent loads read bound the work.
  std::unordered_set<std::uint64_t> polled;
  for_each_access(program, warps, [&](const trace::StaticInst& s, std::uint32_t mask, LaneOperands& ops, std::uint64_t) {
    if (trace::is_coherent_load(s) && carries_value(s))
      for (std::uint32_t m = mask; m; m &= m - 1) polled.insert(ops.address[std::countr_zero(m)]);
  });
  if (polled.empty()) return result;

  // The values stores wrote to those words, each with the first warp that wrote it.
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint64_t>>> written;
  for_each_access(program, warps, [&](const trace::StaticInst& s, std::uint32_t mask, LaneOperands& ops, std::uint64_t w) {
    if (s.op != trace::OpClass::StoreGlobal || !carries_value(s)) return;
    for (std::uint32_t m = mask; m; m &= m - 1) {
      const int lane = std::countr_zero(m);
      if (!polled.count(ops.address[lane])) continue;
      auto& values = written[ops.address[lane]];
      if (std::none_of(values.begin(), values.end(), [&](const auto& v) { return v.first == ops.value[lane]; }))
        values.emplace_back(ops.value[lane], w);
    }
  });

  std::unordered_set<std::uint64_t> awaited;
  for_each_access(program, warps, [&](const trace::StaticInst& s, std::uint32_t mask, LaneOperands& ops, std::uint64_t w) {
    if (!trace::is_coherent_load(s) || !carries_value(s)) return;
    for (std::uint32_t m = mask; m; m &= m - 1) {
      const int lane = std::countr_zero(m);
      auto it = written.find(ops.address[lane]);
      if (it == written.end()) continue;
      // A warp's own earlier store needs no waiting for: program order has it.
      const bool by_another = std::any_of(it->second.begin(), it->second.end(), [&](const auto& v) {
        return v.first == ops.value[lane] && v.second != w;
      });
      if (!by_another) continue;
      ops.value_lanes |= 1u << lane;
      awaited.insert(ops.address[lane]);
    }
    if (ops.value_lanes) ++result.awaiting_loads;
  });
  result.awaited_words = awaited.size();
  if (awaited.empty()) return result;

  for_each_access(program, warps, [&](const trace::StaticInst& s, std::uint32_t mask, LaneOperands& ops, std::uint64_t) {
    if (s.op != trace::OpClass::StoreGlobal || !carries_value(s)) return;
    for (std::uint32_t m = mask; m; m &= m - 1)
      if (awaited.count(ops.address[std::countr_zero(m)])) {
        ops.value_lanes = mask;
        ++result.storing_instructions;
        return;
      }
  });
  return result;
}

}  // namespace atomsim::capture
