#include "tools/capture/warp_join.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <deque>
#include <nlohmann/json.hpp>

#include "traces/sass.hpp"

namespace atomsim::capture {

namespace {

// The last hexadecimal literal of an instruction: a branch's target address.
bool last_address(std::string_view text, std::uint64_t& pc) {
  std::size_t at = text.rfind("0x");
  if (at == std::string_view::npos) return false;
  std::size_t end = at + 2;
  while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
  auto [p, ec] = std::from_chars(text.data() + at + 2, text.data() + end, pc, 16);
  return ec == std::errc() && end > at + 2;
}

// "B3" in "BSSY B3, 0x120" or "BSYNC B3".
std::int8_t convergence_register(std::string_view text) {
  std::size_t at = text.find(" B");
  if (at == std::string_view::npos || at + 2 >= text.size() || !std::isdigit(static_cast<unsigned char>(text[at + 2])))
    return -1;
  int v = 0;
  std::from_chars(text.data() + at + 2, text.data() + text.size(), v);
  return v >= 0 && v < 16 ? static_cast<std::int8_t>(v) : -1;
}

// A predicate operand before the target ("BRA P4, 0x120") makes a branch conditional too.
bool has_predicate_operand(std::string_view text) {
  std::size_t sp = text.find(' ', text.front() == '@' ? text.find(' ') + 1 : 0);
  if (sp == std::string_view::npos) return false;
  std::string_view ops = text.substr(sp + 1);
  while (!ops.empty() && ops.front() == ' ') ops.remove_prefix(1);
  if (!ops.empty() && ops.front() == '!') ops.remove_prefix(1);
  return ops.size() > 1 && (ops[0] == 'P' || (ops[0] == 'U' && ops[1] == 'P')) && ops.substr(0, 2) != "PT";
}

}  // namespace

bool reports_itself(const trace::StaticInst& s) {
  std::string_view base = trace::opcode_base(s.mnemonic);
  return trace::is_global_memory(s.op) || s.op == trace::OpClass::Shared || base == "SHFL" || base == "BAR" ||
         base == "EXIT" || base == "CALL" || base == "RET";
}

WarpJoiner::WarpJoiner(const std::vector<trace::StaticInst>& program, const std::vector<std::string>& text,
                       std::vector<bool> observed)
    : program_(program), nodes_(program.size()), observed_(std::move(observed)), divergent_(program.size(), false) {
  if (text.size() != program.size() || observed_.size() != program.size())
    throw JoinError("warp join: program, text and observation sizes differ");
  std::unordered_map<std::uint64_t, std::uint32_t> by_pc;
  for (std::uint32_t i = 0; i < program.size(); ++i) by_pc[program[i].pc] = i;
  for (std::uint32_t i = 0; i < program.size(); ++i) {
    Node& n = nodes_[i];
    const std::string& mnemonic = program[i].mnemonic;
    std::string_view base = trace::opcode_base(mnemonic);
    n.guarded = !text[i].empty() && text[i].front() == '@';
    auto resolve_target = [&] {
      std::uint64_t pc = 0;
      if (!last_address(text[i], pc) || !by_pc.count(pc))
        throw JoinError(fmt::format("warp join: no branch target inside the function in '{}' (pc 0x{:x})", text[i], program[i].pc));
      n.target = by_pc[pc];
    };
    if (base == "BRA") {
      resolve_target();
      n.guard_counted = trace::has_modifier(mnemonic, "DIV") || has_predicate_operand(text[i]);
      n.flow = (n.guarded || n.guard_counted) ? Flow::Branch : Flow::Jump;
    } else if (base == "EXIT" || base == "KILL") {
      n.flow = n.guarded ? Flow::Next : Flow::Stop;
    } else if (base == "CALL") {
      n.flow = n.guarded ? Flow::Next : Flow::Call;
    } else if (base == "RET") {
      n.flow = n.guarded ? Flow::Next : Flow::Return;
    } else if (base == "BRX" || base == "JMX" || base == "JMP" || base == "JMXU" || base == "BRXU") {
      n.flow = Flow::Indirect;
    }
    n.reports = reports_itself(program[i]);
    if (base == "BSSY") {
      n.bssy = true;
      n.convergence = convergence_register(text[i]);
    } else if (base == "BSYNC") {
      n.bsync = true;
      n.convergence = convergence_register(text[i]);
    }
  }
}

void WarpJoiner::fail(const std::string& what) const { throw JoinError("warp join: " + what); }

const std::vector<std::uint32_t>& WarpJoiner::distances_to(std::uint32_t goal) {
  if (auto it = distances_.find(goal); it != distances_.end()) return it->second;
  if (predecessors_.empty()) {
    predecessors_.resize(nodes_.size());
    for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
      const Node& n = nodes_[i];
      if (n.flow == Flow::Next && i + 1 < nodes_.size()) predecessors_[i + 1].push_back(i);
      if (n.flow == Flow::Jump) predecessors_[n.target].push_back(i);
      if (n.flow == Flow::Branch) {
        predecessors_[n.target].push_back(i);
        if (i + 1 < nodes_.size() && n.target != i + 1) predecessors_[i + 1].push_back(i);
      }
    }
  }
  // Backwards breadth-first search; an instruction without a guard that is
  // patched, or seen reporting itself, would have reported itself, so no path
  // passes through one, even where this launch never ran it.
  std::vector<std::uint32_t> dist(nodes_.size(), kUnreachable);
  std::deque<std::uint32_t> queue{goal};
  dist[goal] = 0;
  while (!queue.empty()) {
    std::uint32_t i = queue.front();
    queue.pop_front();
    for (std::uint32_t p : predecessors_[i]) {
      if (dist[p] != kUnreachable || ((observed_[p] || nodes_[p].reports) && !nodes_[p].guarded)) continue;
      if (nodes_[p].flow == Flow::Indirect) continue;
      dist[p] = dist[i] + 1;
      queue.push_back(p);
    }
  }
  return distances_.emplace(goal, std::move(dist)).first->second;
}

// The warp is walked instruction by instruction. Each lane heads for the next
// instruction it reported (its goal); at a conditional branch a lane goes the
// only way from which its goal is reachable. When both ways reach it:
//  - if an earlier observation of the same instruction, without this lane, has
//    not happened yet, the lane must not arrive before it: it takes the longer way;
//  - the lanes whose observation is the group's next one go the shorter way;
//  - at a branch that has been seen splitting a warp (a per-lane condition)
//    every other lane goes the shorter way too; elsewhere they go with the
//    majority of the group's decided lanes (conditions such as loop bounds are
//    uniform, and a lane idle for an iteration still runs it with the warp).
// survey() walks a warp only to learn which branches split warps; running it
// over every warp of a launch before joining makes the joins independent of
// warp order.
// Groups are scheduled as the GPU does: after a divergent branch the lanes that
// took it run first, lowest PC first; lanes of different divergence
// histories run apart, even at one pc, until a convergence barrier joins them
// (BSYNC holds lanes until the lanes of its BSSY arrive); an observed
// instruction runs when all of its recorded lanes are there.
void WarpJoiner::survey(const WarpObservation& warp) {
  join(warp, [](const trace::WarpInst&) {});
}

void WarpJoiner::join(const WarpObservation& warp, const std::function<void(const trace::WarpInst&)>& emit) {
  const std::size_t n_events = warp.events.size();
  std::array<std::vector<std::uint32_t>, 32> lane_events;  // events of each lane, in order
  std::vector<std::int32_t> previous_same_pc(n_events, -1);
  {
    std::unordered_map<std::uint32_t, std::int32_t> last_at;
    for (std::size_t e = 0; e < n_events; ++e) {
      const ObservedInst& ev = warp.events[e];
      if (ev.index >= nodes_.size()) fail(fmt::format("an observed instruction index {} is outside the program", ev.index));
      if (!observed_[ev.index]) fail(fmt::format("pc 0x{:x} was observed but not declared observed", program_[ev.index].pc));
      for (std::uint32_t m = ev.mask & warp.lanes; m; m &= m - 1) lane_events[std::countr_zero(m)].push_back(static_cast<std::uint32_t>(e));
      if (auto it = last_at.find(ev.index); it != last_at.end()) previous_same_pc[e] = it->second;
      last_at[ev.index] = static_cast<std::int32_t>(e);
    }
  }
  std::vector<bool> fired(n_events, false);
  std::array<std::uint32_t, 32> pc{}, next{}, priority{};
  std::array<std::vector<std::uint32_t>, 32> returns;
  std::array<std::uint32_t, 16> convergence{};
  std::uint32_t clock = 0, live = 0, waiting = 0;
  for (int lane = 0; lane < 32; ++lane) {
    if (!((warp.lanes >> lane) & 1)) continue;
    if (lane_events[lane].empty() || warp.events[lane_events[lane].back()].kind != ObservedKind::Exit)
      fail(fmt::format("lane {} never reported its exit", lane));
    live |= 1u << lane;
  }
  auto goal_event = [&](int lane) { return lane_events[lane][next[lane]]; };
  auto goal = [&](int lane) { return warp.events[goal_event(lane)].index; };
  // True when the lane must not reach its goal yet: an earlier observation of
  // the same instruction, which the lane is not part of, is still to happen.
  auto must_wait_elsewhere = [&](int lane) {
    std::int32_t prev = previous_same_pc[goal_event(lane)];
    return prev >= 0 && !fired[prev] && !((warp.events[prev].mask >> lane) & 1);
  };
  // The lane's pending observation, when it is at that instruction and due there.
  auto event_at_head = [&](int lane) -> std::int32_t {
    if (pc[lane] != goal(lane)) return -1;
    if (nodes_[pc[lane]].guarded && must_wait_elsewhere(lane)) return -1;  // passes with its guard off
    return static_cast<std::int32_t>(goal_event(lane));
  };
  trace::WarpInst out;
  // A walk that goes this long without an observation firing has lost its way.
  const std::uint64_t step_limit = 64 * nodes_.size() + 4096;
  std::uint64_t steps_since_event = 0;

  while (live) {
    if (++steps_since_event > step_limit)
      fail(fmt::format("the walk ran {} instructions without meeting an observed one (a lane's way was chosen wrongly)",
                       step_limit));
    std::uint32_t runnable = live & ~waiting;
    if (!runnable) {
      // A convergence barrier waits for lanes that have exited: release the lowest-PC group.
      std::uint32_t lowest = UINT32_MAX;
      for (std::uint32_t m = waiting; m; m &= m - 1) lowest = std::min(lowest, pc[std::countr_zero(m)]);
      for (std::uint32_t m = waiting; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (pc[lane] == lowest) { waiting &= ~(1u << lane); ++pc[lane]; }
      }
      continue;
    }
    std::array<std::int32_t, 32> head{};
    std::uint32_t eligible = 0;
    for (std::uint32_t m = runnable; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      head[lane] = event_at_head(lane);
      if (head[lane] < 0) { eligible |= 1u << lane; continue; }
    }
    for (std::uint32_t m = runnable & ~eligible; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      std::uint32_t need = warp.events[head[lane]].mask & warp.lanes;
      bool ready = (need & ~runnable) == 0;
      for (std::uint32_t k = need; k && ready; k &= k - 1) ready = head[std::countr_zero(k)] == head[lane];
      if (ready) eligible |= 1u << lane;
    }
    if (!eligible) fail("the observed instructions of a warp cannot be ordered (lanes wait on each other)");
    std::uint32_t top = 0, at = UINT32_MAX;
    for (std::uint32_t m = eligible; m; m &= m - 1) top = std::max(top, priority[std::countr_zero(m)]);
    for (std::uint32_t m = eligible; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (priority[lane] == top) at = std::min(at, pc[lane]);
    }
    std::int32_t event = -1;
    for (std::uint32_t m = eligible; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (pc[lane] == at && head[lane] >= 0 && (event < 0 || head[lane] < event)) event = head[lane];
    }
    std::uint32_t group = 0;
    for (std::uint32_t m = eligible; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (pc[lane] != at) continue;
      // An observation runs the lanes it names together; elsewhere lanes of
      // different divergence histories stay apart until a convergence barrier joins them.
      if (event >= 0 ? head[lane] < 0 || head[lane] == event : priority[lane] == top) group |= 1u << lane;
    }

    const Node& node = nodes_[at];
    out.index = at;
    if (event >= 0) {
      const ObservedInst& ev = warp.events[event];
      fired[event] = true;
      steps_since_event = 0;
      out.active_mask = ev.mask;
      if (ev.operands >= 0) {
        out.address = warp.operands[ev.operands].address;
        out.value = warp.operands[ev.operands].value;
      }
      emit(out);
      for (std::uint32_t m = group; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (head[lane] != event) {  // guard off: falls through
          if (!node.guarded)
            fail(fmt::format("lane {} reached pc 0x{:x} ({}) without reporting it", lane, program_[at].pc, program_[at].mnemonic));
          ++pc[lane];
          continue;
        }
        ++next[lane];
        switch (ev.kind) {
          case ObservedKind::Call:
            returns[lane].push_back(at + 1);
            pc[lane] = ev.call_target;
            break;
          case ObservedKind::Return:
            if (returns[lane].empty()) fail(fmt::format("lane {} returned at pc 0x{:x} without a call", lane, program_[at].pc));
            pc[lane] = returns[lane].back();
            returns[lane].pop_back();
            break;
          case ObservedKind::Exit: live &= ~(1u << lane); break;
          default: pc[lane] = at + 1; break;
        }
        if (((live >> lane) & 1) && next[lane] == lane_events[lane].size())
          fail(fmt::format("lane {} went on after its last observed instruction", lane));
      }
      continue;
    }

    if (node.flow == Flow::Stop || node.flow == Flow::Call || node.flow == Flow::Return || node.flow == Flow::Indirect ||
        (observed_[at] && !node.guarded))
      fail(fmt::format("lanes {:08x} reached pc 0x{:x} ({}) without reporting it", group, program_[at].pc, program_[at].mnemonic));

    std::uint32_t taken = 0;
    if (node.flow == Flow::Jump) {
      taken = group;
    } else if (node.flow == Flow::Branch && node.target != at + 1) {
      std::uint32_t forced_taken = 0, forced_through = 0, open = 0;
      std::uint32_t earliest = UINT32_MAX;  // the group's next observation in recorded order
      std::array<std::uint32_t, 32> via_target{}, via_next{};
      for (std::uint32_t m = group; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        const auto& dist = distances_to(goal(lane));
        via_target[lane] = dist[node.target];
        via_next[lane] = at + 1 < nodes_.size() ? dist[at + 1] : kUnreachable;
        earliest = std::min(earliest, goal_event(lane));
        if (via_target[lane] == kUnreachable && via_next[lane] == kUnreachable)
          fail(fmt::format("lane {} at pc 0x{:x} cannot reach its next observed pc 0x{:x}", lane, program_[at].pc,
                           program_[goal(lane)].pc));
        if (via_next[lane] == kUnreachable) { forced_taken |= 1u << lane; continue; }
        if (via_target[lane] == kUnreachable) { forced_through |= 1u << lane; continue; }
        if (must_wait_elsewhere(lane) && via_target[lane] != via_next[lane]) {
          (via_target[lane] > via_next[lane] ? forced_taken : forced_through) |= 1u << lane;
          continue;
        }
        open |= 1u << lane;
      }
      if (!(forced_taken | forced_through) && open) ++guessed_;
      // Lanes due next go the shorter way to their observation; then, at a
      // branch known to split warps, so does every other lane.
      auto go_shorter = [&](bool due_only) {
        for (std::uint32_t m = open; m; m &= m - 1) {
          int lane = std::countr_zero(m);
          if (due_only && goal_event(lane) != earliest) continue;
          (via_target[lane] < via_next[lane] ? forced_taken : forced_through) |= 1u << lane;
          open &= ~(1u << lane);
        }
      };
      go_shorter(true);
      if (forced_taken && forced_through) divergent_[at] = true;
      if (divergent_[at]) go_shorter(false);
      taken = forced_taken;
      if (open && std::popcount(forced_taken) > std::popcount(forced_through)) taken |= open;
    } else if (node.flow == Flow::Branch) {
      taken = group;
    }
    // BRA.DIV and "@P BRA Q, target" count the lanes whose guard holds, whether
    // or not they branch; the guard is not observable, so their masks hold the
    // executing lanes.
    // An instruction that would have reported itself ran silently: its guard was off in every lane.
    if (node.reports) out.active_mask = 0;
    else out.active_mask = (node.flow == Flow::Jump || node.flow == Flow::Branch) && !node.guard_counted ? taken : group;
    emit(out);

    if (node.flow == Flow::Jump || node.flow == Flow::Branch) {
      if (taken && taken != group) {
        ++clock;
        for (std::uint32_t m = taken; m; m &= m - 1) priority[std::countr_zero(m)] = clock;
      }
      for (std::uint32_t m = group; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        pc[lane] = ((taken >> lane) & 1) ? node.target : at + 1;
      }
      continue;
    }
    if (node.bssy && node.convergence >= 0) convergence[node.convergence] = group;
    if (node.bsync && node.convergence >= 0) {
      waiting |= group;
      std::uint32_t arrived = 0;
      for (std::uint32_t m = waiting; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (pc[lane] == at) arrived |= 1u << lane;
      }
      if ((convergence[node.convergence] & live & ~arrived) == 0) {
        waiting &= ~arrived;
        std::uint32_t merged = 0;
        for (std::uint32_t m = arrived; m; m &= m - 1) merged = std::max(merged, priority[std::countr_zero(m)]);
        for (std::uint32_t m = arrived; m; m &= m - 1) {
          int lane = std::countr_zero(m);
          priority[lane] = merged;
          ++pc[lane];
        }
      }
      continue;
    }
    for (std::uint32_t m = group; m; m &= m - 1) ++pc[std::countr_zero(m)];
  }
}

namespace {
constexpr const char* kJoinInputSchema = "atomsim-join-input-1";
}

std::vector<trace::StaticInst> JoinInput::program() const {
  std::vector<trace::StaticInst> out;
  for (std::size_t i = 0; i < pcs.size(); ++i) out.push_back(trace::parse_sass_instruction(text[i], pcs[i]));
  return out;
}

std::vector<bool> JoinInput::observed() const {
  std::vector<bool> out(pcs.size(), false);
  for (const auto& w : warps)
    for (const auto& e : w.events) out[e.index] = true;
  return out;
}

std::string save_join_input(const JoinInput& input) {
  nlohmann::json sass = nlohmann::json::array();
  for (std::size_t i = 0; i < input.pcs.size(); ++i) sass.push_back({input.pcs[i], input.text[i]});
  nlohmann::json warps = nlohmann::json::array();
  for (const WarpObservation& w : input.warps) {
    nlohmann::json events = nlohmann::json::array();
    for (const ObservedInst& e : w.events)
      events.push_back({e.index, e.mask, static_cast<int>(e.kind), e.call_target});
    warps.push_back({{"lanes", w.lanes}, {"events", std::move(events)}});
  }
  nlohmann::json doc = {{"schema", kJoinInputSchema}, {"kernel", input.kernel}, {"sass", std::move(sass)},
                        {"warps", std::move(warps)}};
  return doc.dump() + "\n";
}

JoinInput load_join_input(const std::string& document) {
  nlohmann::json doc = nlohmann::json::parse(document, nullptr, false);
  if (doc.is_discarded()) throw JoinError("not JSON");
  if (!doc.is_object() || doc.value("schema", "") != kJoinInputSchema)
    throw JoinError(fmt::format("key 'schema': expected \"{}\"", kJoinInputSchema));
  JoinInput input;
  try {
    input.kernel = doc.at("kernel").get<std::string>();
    for (const auto& line : doc.at("sass")) {
      input.pcs.push_back(line.at(0).get<std::uint64_t>());
      input.text.push_back(line.at(1).get<std::string>());
    }
    for (const auto& w : doc.at("warps")) {
      WarpObservation obs;
      obs.lanes = w.at("lanes").get<std::uint32_t>();
      for (const auto& e : w.at("events")) {
        ObservedInst inst;
        inst.index = e.at(0).get<std::uint32_t>();
        inst.mask = e.at(1).get<std::uint32_t>();
        int kind = e.at(2).get<int>();
        if (kind < 0 || kind > static_cast<int>(ObservedKind::Exit)) throw JoinError(fmt::format("unknown event kind {}", kind));
        inst.kind = static_cast<ObservedKind>(kind);
        inst.call_target = e.at(3).get<std::uint32_t>();
        if (inst.index >= input.pcs.size() || inst.call_target >= input.pcs.size())
          throw JoinError(fmt::format("warp {}: an event names instruction {} of {}", input.warps.size(), inst.index, input.pcs.size()));
        if (inst.kind == ObservedKind::Memory) {
          inst.operands = static_cast<std::int32_t>(obs.operands.size());
          obs.operands.emplace_back();
        }
        obs.events.push_back(inst);
      }
      input.warps.push_back(std::move(obs));
    }
  } catch (const nlohmann::json::exception& e) {
    throw JoinError(std::string("malformed join input: ") + e.what());
  }
  return input;
}

}  // namespace atomsim::capture
