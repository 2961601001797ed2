#include "tools/capture/warp_join.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>
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
    : program_(program), nodes_(program.size()), observed_(std::move(observed)), divergent_(program.size(), 0) {
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
    if (n.flow == Flow::Branch) {
      n.branch_slot = static_cast<std::int32_t>(arrivals_.size());
      arrivals_.emplace_back();
    }
    // The Sanitizer reports some local memory accesses and not others (none of
    // grid_sample backward's spills of its loop counter, H200): one that no
    // warp of the launch reported runs silently, like an ALU instruction.
    const bool local = base == "LDL" || base == "STL";
    n.reports = reports_itself(program[i]) && (!local || observed_[i]);
    if (base == "BSSY") {
      n.bssy = true;
      n.convergence = convergence_register(text[i]);
    } else if (base == "BSYNC") {
      n.bsync = true;
      n.convergence = convergence_register(text[i]);
    }
  }
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
  link_indirect_targets(text);
  distances_.resize(nodes_.size());
  distances_once_ = std::make_unique<std::once_flag[]>(nodes_.size());
}

void WarpJoiner::fail(const std::string& what) const { throw JoinError("warp join: " + what); }

// An indirect branch (BRX, JMX: a switch's jump table in a constant bank) names
// no target in the listing. The code it can reach is code nothing else leads
// to: an instruction with no predecessor that is neither the entry, a call's
// target nor the return point after a call. Every indirect branch of the
// function may go to any of them; the walk picks, per lane, the one nearest
// its next observation (Walk::indirect).
void WarpJoiner::link_indirect_targets(const std::vector<std::string>& text) {
  std::vector<std::uint32_t> indirect;
  std::vector<char> entered(nodes_.size(), 0);
  if (!entered.empty()) entered[0] = 1;
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].flow == Flow::Indirect) indirect.push_back(i);
    if (trace::opcode_base(program_[i].mnemonic) != "CALL") continue;
    if (i + 1 < nodes_.size()) entered[i + 1] = 1;
    std::uint64_t pc = 0;
    if (!last_address(text[i], pc)) continue;
    for (std::uint32_t t = 0; t < nodes_.size(); ++t)
      if (program_[t].pc == pc) entered[t] = 1;
  }
  if (indirect.empty()) return;
  for (std::uint32_t t = 0; t < nodes_.size(); ++t) {
    if (entered[t] || !predecessors_[t].empty()) continue;
    indirect_target_.push_back(t);
    for (std::uint32_t b : indirect) predecessors_[t].push_back(b);
  }
}

// A loop's back edge b jumps to its header h; the instruction before h, when
// it always runs on into h, runs once per entry into the loop, and b once per
// iteration: b's count over that instruction's is the loop's mean trip count.
// A forward branch's next instruction, when nothing else leads there, runs
// once for each time the branch was not taken.
void WarpJoiner::use_counts(const std::vector<std::uint64_t>& warp_executions) {
  if (warp_executions.size() != nodes_.size()) fail("the count pass's instructions do not match the program");
  executed_ = warp_executions;
  trips_per_entry_.assign(arrivals_.size(), 0.0);
  through_share_.assign(arrivals_.size(), -1.0);
  loops_entered_at_.assign(nodes_.size(), {});
  std::vector<std::uint32_t> jumped_to(nodes_.size(), 0);
  for (const Node& n : nodes_)
    if (n.flow == Flow::Jump || n.flow == Flow::Branch) ++jumped_to[n.target];
  for (std::uint32_t b = 0; b < nodes_.size(); ++b) {
    const Node& n = nodes_[b];
    if (n.branch_slot < 0) continue;
    if (n.target > b) {
      if (b + 1 < nodes_.size() && jumped_to[b + 1] == 0 && warp_executions[b] > 0)
        through_share_[n.branch_slot] = static_cast<double>(warp_executions[b + 1]) / static_cast<double>(warp_executions[b]);
      continue;
    }
    if (n.target == 0) continue;
    const std::uint32_t before = n.target - 1;
    const Node& pre = nodes_[before];
    if (pre.flow != Flow::Next || pre.bsync || warp_executions[before] == 0) continue;
    trips_per_entry_[n.branch_slot] = static_cast<double>(warp_executions[b]) / static_cast<double>(warp_executions[before]);
    loops_entered_at_[before].push_back(n.branch_slot);
  }
}

const std::vector<std::uint32_t>& WarpJoiner::distances_to(std::uint32_t goal) const {
  std::call_once(distances_once_[goal], [&] { distances_[goal] = breadth_first_distances(goal); });
  return distances_[goal];
}

std::vector<std::uint32_t> WarpJoiner::breadth_first_distances(std::uint32_t goal) const {
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
      // The count pass rules out an indirect branch's targets that never ran.
      if (nodes_[p].flow == Flow::Indirect && !executed_.empty() && executed_[i] == 0) continue;
      dist[p] = dist[i] + 1;
      queue.push_back(p);
    }
  }
  return dist;
}

// The warp is walked instruction by instruction. Each lane heads for the next
// instruction it reported (its goal); at a conditional branch a lane goes the
// only way from which its goal is reachable. When both ways reach it:
//  - if an earlier observation of the same instruction, without this lane, has
//    not happened yet, the lane must not arrive before it: it takes the longer way;
//  - a branch no warp was seen splitting goes the way the launch's other warps
//    or the count pass say (uniform_way): trip counts are mostly kernel
//    arguments, and an iteration in which no lane reports anything is
//    otherwise invisible;
//  - the lanes whose observation is the group's next one go the shorter way;
//  - at a branch that has been seen splitting a warp (a per-lane condition)
//    every other lane goes the shorter way too; elsewhere they go with the
//    majority of the group's decided lanes (a lane idle for an iteration still
//    runs it with the warp).
// These are first guesses: when a guess leads to a state no observation order
// explains (lanes waiting on each other, a lane passing an instruction it
// would have reported), the walk goes back to the latest guess with another
// way left (all undecided lanes taken, or all through) and tries it.
// survey() walks a warp only to learn which branches split warps and how
// uniform branches went; running it over every warp of a launch before joining
// makes the joins independent of warp order.
// Groups are scheduled as the GPU does: after a divergent branch the lanes that
// took it run first, lowest PC first; lanes of different divergence
// histories run apart, even at one pc, until a convergence barrier joins them
// (BSYNC holds lanes until the lanes of its BSSY arrive); an observed
// instruction runs when all of its recorded lanes are there.
class WarpJoiner::Walk {
 public:
  // A survey walk when `learned` is given, which it adds to; a join's, which
  // appends the warp's records to `out`, otherwise.
  Walk(const WarpJoiner& joiner, const WarpObservation& warp, Learned* learned, std::vector<Record>* out);
  void run();
  std::uint64_t guessed() const { return guessed_; }
  std::uint64_t retried() const { return retried_; }

 private:
  // Guesses kept open for going back: older ones are final and their records emitted.
  static constexpr std::size_t kOpenGuesses = 64;
  static constexpr std::size_t kMaxBacktracks = 4096;

  struct State {
    std::array<std::uint32_t, 32> pc{}, next{}, priority{};
    std::array<std::vector<std::uint32_t>, 32> returns;
    std::array<std::uint32_t, 16> convergence{};
    std::uint32_t clock = 0, live = 0, waiting = 0;
    // Lanes that left the last step as one group, at one pc with one priority.
    std::uint32_t together = 0;
    std::uint64_t steps_since_event = 0;
    std::uint64_t emitted = 0;
    std::vector<std::uint32_t> visits;  // arrivals at each conditional branch
    std::vector<std::uint32_t> iterations;  // arrivals at each loop's back edge since the loop was entered
  };
  struct Guess {
    State before;
    std::uint32_t at = 0, group = 0;
    std::vector<std::uint32_t> ways;  // taken masks, the first one applied first
    std::size_t tried = 1;
  };

  std::uint32_t goal_event(int lane) const { return lane_events_[lane][s_.next[lane]]; }
  std::uint32_t goal(int lane) const { return warp_.events[goal_event(lane)].index; }
  bool fired(std::uint32_t event) const;
  bool must_wait_elsewhere(int lane) const;
  std::int32_t event_at_head(int lane) const;
  void step();
  bool pick_group(std::uint32_t runnable, std::uint32_t& at, std::uint32_t& group);
  void fire(std::uint32_t at, std::int32_t event, std::uint32_t group, std::uint32_t reporting);
  void branch(std::uint32_t at, std::uint32_t group);
  void indirect(std::uint32_t at, std::uint32_t group);
  std::optional<bool> uniform_way(std::uint32_t at) const;
  void go(std::uint32_t at, std::uint32_t group, std::uint32_t taken);
  void record(std::uint32_t index, std::uint32_t mask, std::int32_t operands);
  bool learning() const { return learned_ != nullptr; }
  bool divergent(std::uint32_t at) const { return j_.divergent_[at] || found_divergent_[at]; }
  void mark_divergent(std::uint32_t at);
  void back_off(const JoinError& failure);
  void emit_final();

  const WarpJoiner& j_;
  const WarpObservation& warp_;
  Learned* const learned_;
  std::vector<Record>* const out_;
  // Branches this walk saw splitting the warp, beyond what the survey knew.
  std::vector<char> found_divergent_;
  std::array<std::vector<std::uint32_t>, 32> lane_events_;  // events of each lane, in order
  std::vector<std::int32_t> previous_same_pc_;
  std::vector<std::uint32_t> first_lane_, position_;  // where each event sits in its first lane's list
  std::uint64_t step_limit_ = 0;
  State s_;
  std::deque<Guess> guesses_;
  std::vector<Record> pending_;  // records not yet final
  std::uint64_t final_ = 0;      // records emitted
  std::uint64_t guessed_ = 0, retried_ = 0;
  std::string first_failure_;
  std::size_t backtracks_ = 0;
};

WarpJoiner::Walk::Walk(const WarpJoiner& joiner, const WarpObservation& warp, Learned* learned, std::vector<Record>* out)
    : j_(joiner), warp_(warp), learned_(learned), out_(out),
      found_divergent_(joiner.nodes_.size(), 0) {
  const std::size_t n_events = warp.events.size();
  previous_same_pc_.assign(n_events, -1);
  first_lane_.assign(n_events, 32);
  position_.assign(n_events, 0);
  std::unordered_map<std::uint32_t, std::int32_t> last_at;
  for (std::size_t e = 0; e < n_events; ++e) {
    const ObservedInst& ev = warp.events[e];
    if (ev.index >= j_.nodes_.size()) j_.fail(fmt::format("an observed instruction index {} is outside the program", ev.index));
    if (!j_.observed_[ev.index]) j_.fail(fmt::format("pc 0x{:x} was observed but not declared observed", j_.program_[ev.index].pc));
    for (std::uint32_t m = ev.mask & warp.lanes; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (first_lane_[e] == 32) {
        first_lane_[e] = static_cast<std::uint32_t>(lane);
        position_[e] = static_cast<std::uint32_t>(lane_events_[lane].size());
      }
      lane_events_[lane].push_back(static_cast<std::uint32_t>(e));
    }
    if (auto it = last_at.find(ev.index); it != last_at.end()) previous_same_pc_[e] = it->second;
    last_at[ev.index] = static_cast<std::int32_t>(e);
  }
  for (int lane = 0; lane < 32; ++lane) {
    if (!((warp.lanes >> lane) & 1)) continue;
    if (lane_events_[lane].empty() || warp.events[lane_events_[lane].back()].kind != ObservedKind::Exit)
      j_.fail(fmt::format("lane {} never reported its exit", lane));
    s_.live |= 1u << lane;
  }
  s_.visits.assign(j_.arrivals_.size(), 0);
  s_.iterations.assign(j_.arrivals_.size(), 0);
  // A walk that goes this long without an observation firing has lost its way.
  step_limit_ = 64 * j_.nodes_.size() + 4096;
}

bool WarpJoiner::Walk::fired(std::uint32_t event) const {
  std::uint32_t lane = first_lane_[event];
  return lane == 32 || s_.next[lane] > position_[event];
}

// True when the lane must not reach its goal yet: an earlier observation of
// the same instruction, which the lane is not part of, is still to happen.
bool WarpJoiner::Walk::must_wait_elsewhere(int lane) const {
  std::int32_t prev = previous_same_pc_[goal_event(lane)];
  return prev >= 0 && !fired(static_cast<std::uint32_t>(prev)) && !((warp_.events[prev].mask >> lane) & 1);
}

// The lane's pending observation, when it is at that instruction and due there.
std::int32_t WarpJoiner::Walk::event_at_head(int lane) const {
  if (s_.pc[lane] != goal(lane)) return -1;
  if (j_.nodes_[s_.pc[lane]].guarded && must_wait_elsewhere(lane)) return -1;  // passes with its guard off
  return static_cast<std::int32_t>(goal_event(lane));
}

void WarpJoiner::Walk::run() {
  while (s_.live) {
    try {
      step();
    } catch (const JoinError& failure) {
      back_off(failure);
    }
  }
  guesses_.clear();
  emit_final();
}

void WarpJoiner::Walk::back_off(const JoinError& failure) {
  if (first_failure_.empty()) first_failure_ = failure.what();
  while (!guesses_.empty() && guesses_.back().tried == guesses_.back().ways.size()) guesses_.pop_back();
  if (guesses_.empty() || ++backtracks_ > kMaxBacktracks) throw JoinError(first_failure_);
  if (!learning()) ++retried_;
  Guess& g = guesses_.back();
  s_ = g.before;
  if (out_) pending_.resize(s_.emitted - final_);
  go(g.at, g.group, g.ways[g.tried++]);
}

// Emits the records that no open guess can take back.
void WarpJoiner::Walk::emit_final() {
  std::uint64_t upto = guesses_.empty() ? s_.emitted : guesses_.front().before.emitted;
  if (out_) {
    const auto n = static_cast<std::ptrdiff_t>(upto - final_);
    out_->insert(out_->end(), pending_.begin(), pending_.begin() + n);
    pending_.erase(pending_.begin(), pending_.begin() + n);
  }
  final_ = upto;
}

void WarpJoiner::Walk::record(std::uint32_t index, std::uint32_t mask, std::int32_t operands) {
  ++s_.emitted;
  if (!j_.loops_entered_at_.empty())
    for (std::int32_t slot : j_.loops_entered_at_[index]) s_.iterations[slot] = 0;
  if (out_) pending_.push_back(Record{index, mask, operands});
}

void WarpJoiner::Walk::mark_divergent(std::uint32_t at) {
  if (divergent(at)) return;
  found_divergent_[at] = 1;
  if (learned_) learned_->divergent[at] = 1;
}

void WarpJoiner::Walk::step() {
  if (++s_.steps_since_event > step_limit_)
    j_.fail(fmt::format("the walk ran {} instructions without meeting an observed one (a lane's way was chosen wrongly)",
                        step_limit_));
  std::uint32_t runnable = s_.live & ~s_.waiting;
  if (!runnable) {
    // A convergence barrier waits for lanes that have exited: release the lowest-PC group.
    std::uint32_t lowest = UINT32_MAX;
    for (std::uint32_t m = s_.waiting; m; m &= m - 1) lowest = std::min(lowest, s_.pc[std::countr_zero(m)]);
    for (std::uint32_t m = s_.waiting; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (s_.pc[lane] == lowest) { s_.waiting &= ~(1u << lane); ++s_.pc[lane]; }
    }
    s_.together = 0;
    return;
  }
  std::uint32_t at = 0, group = 0;
  if (runnable == s_.together && !j_.observed_[s_.pc[std::countr_zero(runnable)]]) {
    // Most of a kernel: the warp runs as one group through instructions that
    // never report, and no lane can have its next observation here.
    at = s_.pc[std::countr_zero(runnable)];
    group = runnable;
  } else if (!pick_group(runnable, at, group)) {
    return;  // an observation ran
  }
  s_.together = 0;

  const Node& node = j_.nodes_[at];
  if (node.flow == Flow::Stop || node.flow == Flow::Call || node.flow == Flow::Return ||
      (j_.observed_[at] && !node.guarded))
    j_.fail(fmt::format("lanes {:08x} reached pc 0x{:x} ({}) without reporting it", group, j_.program_[at].pc,
                        j_.program_[at].mnemonic));
  if (node.flow == Flow::Jump || (node.flow == Flow::Branch && node.target == at + 1)) return go(at, group, group);
  if (node.flow == Flow::Branch) return branch(at, group);
  if (node.flow == Flow::Indirect) return indirect(at, group);
  // An instruction that would have reported itself ran silently: its guard was off in every lane.
  record(at, node.reports ? 0 : group, -1);
  if (node.bssy && node.convergence >= 0) s_.convergence[node.convergence] = group;
  if (node.bsync && node.convergence >= 0) {
    s_.waiting |= group;
    std::uint32_t arrived = 0;
    for (std::uint32_t m = s_.waiting; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (s_.pc[lane] == at) arrived |= 1u << lane;
    }
    if ((s_.convergence[node.convergence] & s_.live & ~arrived) == 0) {
      s_.waiting &= ~arrived;
      std::uint32_t merged = 0;
      for (std::uint32_t m = arrived; m; m &= m - 1) merged = std::max(merged, s_.priority[std::countr_zero(m)]);
      for (std::uint32_t m = arrived; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        s_.priority[lane] = merged;
        ++s_.pc[lane];
      }
    }
    return;
  }
  for (std::uint32_t m = group; m; m &= m - 1) ++s_.pc[std::countr_zero(m)];
  if (group == runnable) s_.together = group;
}

// The group that runs next and where, as the GPU schedules lanes; false when
// that is an observation, which has then run.
bool WarpJoiner::Walk::pick_group(std::uint32_t runnable, std::uint32_t& at, std::uint32_t& group) {
  std::array<std::int32_t, 32> head{};
  std::uint32_t eligible = 0;
  for (std::uint32_t m = runnable; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    head[lane] = event_at_head(lane);
    if (head[lane] < 0) eligible |= 1u << lane;
  }
  for (std::uint32_t m = runnable & ~eligible; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    std::uint32_t need = warp_.events[head[lane]].mask & warp_.lanes;
    bool ready = (need & ~runnable) == 0;
    for (std::uint32_t k = need; k && ready; k &= k - 1) ready = head[std::countr_zero(k)] == head[lane];
    if (ready) eligible |= 1u << lane;
  }
  if (!eligible) j_.fail("the observed instructions of a warp cannot be ordered (lanes wait on each other)");
  std::uint32_t top = 0;
  at = UINT32_MAX;
  for (std::uint32_t m = eligible; m; m &= m - 1) top = std::max(top, s_.priority[std::countr_zero(m)]);
  for (std::uint32_t m = eligible; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (s_.priority[lane] == top) at = std::min(at, s_.pc[lane]);
  }
  std::int32_t event = -1;
  for (std::uint32_t m = eligible; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (s_.pc[lane] == at && head[lane] >= 0 && (event < 0 || head[lane] < event)) event = head[lane];
  }
  group = 0;
  for (std::uint32_t m = eligible; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (s_.pc[lane] != at) continue;
    // An observation runs the lanes it names together; elsewhere lanes of
    // different divergence histories stay apart until a convergence barrier joins them.
    if (event >= 0 ? head[lane] < 0 || head[lane] == event : s_.priority[lane] == top) group |= 1u << lane;
  }
  if (event >= 0) {
    std::uint32_t reporting = 0;
    for (std::uint32_t m = group; m; m &= m - 1)
      if (head[std::countr_zero(m)] == event) reporting |= 1u << std::countr_zero(m);
    fire(at, event, group, reporting);
    return false;
  }
  return true;
}

void WarpJoiner::Walk::fire(std::uint32_t at, std::int32_t event, std::uint32_t group, std::uint32_t reporting) {
  const Node& node = j_.nodes_[at];
  const ObservedInst& ev = warp_.events[event];
  s_.steps_since_event = 0;
  s_.together = 0;
  record(at, ev.mask, ev.operands);
  for (std::uint32_t m = group; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (!((reporting >> lane) & 1)) {  // guard off: falls through
      if (!node.guarded)
        j_.fail(fmt::format("lane {} reached pc 0x{:x} ({}) without reporting it", lane, j_.program_[at].pc, j_.program_[at].mnemonic));
      ++s_.pc[lane];
      continue;
    }
    ++s_.next[lane];
    switch (ev.kind) {
      case ObservedKind::Call:
        s_.returns[lane].push_back(at + 1);
        s_.pc[lane] = ev.call_target;
        break;
      case ObservedKind::Return:
        if (s_.returns[lane].empty()) j_.fail(fmt::format("lane {} returned at pc 0x{:x} without a call", lane, j_.program_[at].pc));
        s_.pc[lane] = s_.returns[lane].back();
        s_.returns[lane].pop_back();
        break;
      case ObservedKind::Exit: s_.live &= ~(1u << lane); break;
      default: s_.pc[lane] = at + 1; break;
    }
    if (((s_.live >> lane) & 1) && s_.next[lane] == lane_events_[lane].size())
      j_.fail(fmt::format("lane {} went on after its last observed instruction", lane));
  }
  if (guesses_.empty()) emit_final();
}

// A conditional branch: each lane goes a way from which its goal is reachable.
void WarpJoiner::Walk::branch(std::uint32_t at, std::uint32_t group) {
  const Node& node = j_.nodes_[at];
  std::uint32_t forced_taken = 0, forced_through = 0, open = 0;
  std::uint32_t earliest = UINT32_MAX;  // the group's next observation in recorded order
  std::array<std::uint32_t, 32> via_target{}, via_next{};
  for (std::uint32_t m = group; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    const auto& dist = j_.distances_to(goal(lane));
    via_target[lane] = dist[node.target];
    via_next[lane] = at + 1 < j_.nodes_.size() ? dist[at + 1] : kUnreachable;
    earliest = std::min(earliest, goal_event(lane));
    if (via_target[lane] == kUnreachable && via_next[lane] == kUnreachable)
      j_.fail(fmt::format("lane {} at pc 0x{:x} cannot reach its next observed pc 0x{:x}", lane, j_.program_[at].pc,
                          j_.program_[goal(lane)].pc));
    if (via_next[lane] == kUnreachable) { forced_taken |= 1u << lane; continue; }
    if (via_target[lane] == kUnreachable) { forced_through |= 1u << lane; continue; }
    if (must_wait_elsewhere(lane) && via_target[lane] != via_next[lane]) {
      (via_target[lane] > via_next[lane] ? forced_taken : forced_through) |= 1u << lane;
      continue;
    }
    open |= 1u << lane;
  }
  if (learning() && s_.visits[node.branch_slot] < kRememberedVisits) {
    std::vector<Arrivals>& arrivals = learned_->arrivals[node.branch_slot];
    const std::uint32_t visit = s_.visits[node.branch_slot];
    if (arrivals.size() <= visit) arrivals.resize(visit + 1);
    ++arrivals[visit].warps;
    if (forced_taken && !forced_through) ++arrivals[visit].taken;
    if (forced_through && !forced_taken) ++arrivals[visit].through;
  }
  if (!open) {
    if (forced_taken && forced_through) mark_divergent(at);
    return go(at, group, forced_taken);
  }
  if (!learning() && !(forced_taken | forced_through)) ++guessed_;

  std::uint32_t taken = forced_taken;
  const std::optional<bool> uniform_taken = forced_taken | forced_through ? std::nullopt : uniform_way(at);
  if (uniform_taken) {
    if (*uniform_taken) taken |= open;
  } else {
    // Lanes due next go the shorter way to their observation; then, at a
    // branch known to split warps, so does every other lane.
    std::uint32_t undecided = open;
    auto go_shorter = [&](bool due_only) {
      for (std::uint32_t m = undecided; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (due_only && goal_event(lane) != earliest) continue;
        if (via_target[lane] < via_next[lane]) taken |= 1u << lane;
        undecided &= ~(1u << lane);
      }
    };
    go_shorter(true);
    std::uint32_t through = group & ~taken & ~undecided;
    if (taken && through) mark_divergent(at);
    if (divergent(at)) go_shorter(false);
    through = group & ~taken & ~undecided;
    if (undecided && std::popcount(taken) > std::popcount(through)) taken |= undecided;
  }
  Guess guess{s_, at, group, {taken}};
  for (std::uint32_t other : {forced_taken | open, forced_taken})
    if (std::find(guess.ways.begin(), guess.ways.end(), other) == guess.ways.end()) guess.ways.push_back(other);
  guesses_.push_back(std::move(guess));
  if (guesses_.size() > kOpenGuesses) {
    guesses_.pop_front();
    emit_final();
  }
  go(at, group, taken);
}

// An indirect branch: each lane goes to the target nearest its next
// observation (the lowest such target on a tie). Lanes bound for different
// targets diverge, the lowest target's running first.
void WarpJoiner::Walk::indirect(std::uint32_t at, std::uint32_t group) {
  std::array<std::uint32_t, 32> target{};
  for (std::uint32_t m = group; m; m &= m - 1) {
    const int lane = std::countr_zero(m);
    const auto& dist = j_.distances_to(goal(lane));
    std::uint32_t best = kUnreachable;
    for (std::uint32_t t : j_.indirect_target_)
      if (dist[t] != kUnreachable && (best == kUnreachable || dist[t] < dist[best])) best = t;
    if (best == kUnreachable)
      j_.fail(fmt::format("lane {} at pc 0x{:x} cannot reach its next observed pc 0x{:x}", lane, j_.program_[at].pc,
                          j_.program_[goal(lane)].pc));
    target[lane] = best;
  }
  record(at, group, -1);
  std::uint32_t lowest = kUnreachable;
  for (std::uint32_t m = group; m; m &= m - 1) lowest = std::min(lowest, target[std::countr_zero(m)]);
  bool split = false;
  for (std::uint32_t m = group; m; m &= m - 1) {
    const int lane = std::countr_zero(m);
    s_.pc[lane] = target[lane];
    split |= target[lane] != lowest;
  }
  if (split) {
    mark_divergent(at);
    ++s_.clock;
    for (std::uint32_t m = group; m; m &= m - 1)
      if (target[std::countr_zero(m)] == lowest) s_.priority[std::countr_zero(m)] = s_.clock;
  }
  s_.together = !split && group == (s_.live & ~s_.waiting) ? group : 0;
}

// Whether a branch that is the same for every lane of the launch is taken at
// this arrival, where nothing observed decides it; empty when nothing says.
//  - A loop's back edge that the observations forced taken at this arrival in
//    at least half of the warps that came here this often, and never forced
//    out, runs again. The survey learns from the observations alone.
//  - Else, where the count pass ran first, a loop goes round as many times per
//    entry as the GPU counted on average, and a forward branch goes the way
//    most of its executions went.
std::optional<bool> WarpJoiner::Walk::uniform_way(std::uint32_t at) const {
  const Node& node = j_.nodes_[at];
  if (learning() || divergent(at)) return std::nullopt;
  const std::int32_t slot = node.branch_slot;
  const bool back_edge = node.target <= at;
  const std::vector<Arrivals>& arrivals = j_.arrivals_[slot];
  const std::uint32_t visit = s_.visits[slot];
  if (back_edge && visit < arrivals.size() && arrivals[visit].through == 0 && 2 * arrivals[visit].taken >= arrivals[visit].warps)
    return true;
  if (j_.trips_per_entry_.empty()) return std::nullopt;
  if (back_edge && j_.trips_per_entry_[slot] > 0) return s_.iterations[slot] + 1 < std::llround(j_.trips_per_entry_[slot]);
  if (!back_edge && j_.through_share_[slot] >= 0) return j_.through_share_[slot] < 0.5;
  return std::nullopt;
}

// The group leaves a jump or branch: `taken` lanes to its target, the others to the next instruction.
void WarpJoiner::Walk::go(std::uint32_t at, std::uint32_t group, std::uint32_t taken) {
  const Node& node = j_.nodes_[at];
  // BRA.DIV and "@P BRA Q, target" count the lanes whose guard holds, whether
  // or not they branch; the guard is not observable, so their masks hold the
  // executing lanes.
  record(at, node.reports ? 0 : node.guard_counted ? group : taken, -1);
  if (node.branch_slot >= 0) {
    ++s_.visits[node.branch_slot];
    ++s_.iterations[node.branch_slot];
  }
  if (taken && taken != group) {
    ++s_.clock;
    for (std::uint32_t m = taken; m; m &= m - 1) s_.priority[std::countr_zero(m)] = s_.clock;
  }
  for (std::uint32_t m = group; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    s_.pc[lane] = ((taken >> lane) & 1) ? node.target : at + 1;
  }
  const bool one_way = taken == 0 || taken == group;
  s_.together = one_way && group == (s_.live & ~s_.waiting) ? group : 0;
}

namespace {

// Runs work(worker, item) for items 0..count-1 on `threads` threads, items
// taken in increasing order. When items fail, returns the lowest failing one
// with what it threw: every lower item was taken earlier and finishes, so the
// answer does not depend on the threads' timing.
template <class Work>
std::optional<std::pair<std::uint64_t, std::exception_ptr>> for_each_item(std::uint64_t count, unsigned threads,
                                                                         Work work) {
  std::atomic<std::uint64_t> next{0}, lowest_failure{UINT64_MAX};
  std::mutex failures_mutex;
  std::map<std::uint64_t, std::exception_ptr> failures;
  auto worker = [&](unsigned id) {
    for (std::uint64_t item; (item = next++) < count && item < lowest_failure;) {
      try {
        work(id, item);
      } catch (...) {
        std::lock_guard lock(failures_mutex);
        failures.emplace(item, std::current_exception());
        for (std::uint64_t seen = lowest_failure; item < seen && !lowest_failure.compare_exchange_weak(seen, item);) {}
      }
    }
  };
  std::vector<std::thread> pool;
  for (unsigned id = 1; id < threads; ++id) pool.emplace_back(worker, id);
  worker(0);
  for (auto& t : pool) t.join();
  if (failures.empty()) return std::nullopt;
  return *failures.begin();
}

[[noreturn]] void rethrow_for_warp(std::uint64_t warp, const std::exception_ptr& failure) {
  try {
    std::rethrow_exception(failure);
  } catch (const JoinError& e) {
    throw JoinError(fmt::format("warp {}: {}", warp, e.what()));
  }
}

}  // namespace

void WarpJoiner::join_launch(const std::vector<WarpObservation>& warps, unsigned threads, const Emit& emit,
                             const EndWarp& end_warp) {
  threads = static_cast<unsigned>(std::clamp<std::uint64_t>(warps.size(), 1, std::max(threads, 1u)));
  // The survey, until it learns no new divergent branch. Each thread adds up
  // what its walks learn; the sums and unions do not depend on which thread
  // walked which warp.
  for (;;) {
    std::vector<Learned> learned(threads, Learned{std::vector<std::vector<Arrivals>>(arrivals_.size()),
                                                  std::vector<char>(nodes_.size(), 0)});
    if (auto failed = for_each_item(warps.size(), threads, [&](unsigned id, std::uint64_t w) {
          Walk(*this, warps[w], &learned[id], nullptr).run();
        }))
      rethrow_for_warp(failed->first, failed->second);
    for (auto& per_branch : arrivals_) per_branch.clear();
    bool grew = false;
    for (const Learned& l : learned) {
      for (std::size_t b = 0; b < arrivals_.size(); ++b) {
        auto& sum = arrivals_[b];
        if (sum.size() < l.arrivals[b].size()) sum.resize(l.arrivals[b].size());
        for (std::size_t v = 0; v < l.arrivals[b].size(); ++v) {
          sum[v].warps += l.arrivals[b][v].warps;
          sum[v].taken += l.arrivals[b][v].taken;
          sum[v].through += l.arrivals[b][v].through;
        }
      }
      for (std::size_t i = 0; i < nodes_.size(); ++i)
        if (l.divergent[i] && !divergent_[i]) divergent_[i] = 1, grew = true;
    }
    if (!grew) break;
  }

  // The join: warps walked ahead on every thread, a window of them at a time,
  // and handed on in order from this one.
  struct Joined {
    std::vector<Record> records;
    std::uint64_t guessed = 0, retried = 0;
    std::exception_ptr failure;
    bool ready = false;
  };
  const std::uint64_t window = 4 * std::uint64_t{threads};
  std::vector<Joined> slots(window);
  std::mutex mutex;
  std::condition_variable changed;
  std::uint64_t next = 0, handed_on = 0;
  bool stop = false;
  auto worker = [&] {
    std::unique_lock lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stop || next >= warps.size() || next < handed_on + window; });
      if (stop || next >= warps.size()) return;
      const std::uint64_t w = next++;
      lock.unlock();
      Joined joined;
      try {
        Walk walk(*this, warps[w], nullptr, &joined.records);
        walk.run();
        joined.guessed = walk.guessed();
        joined.retried = walk.retried();
      } catch (...) {
        joined.failure = std::current_exception();
      }
      joined.ready = true;
      lock.lock();
      slots[w % window] = std::move(joined);
      changed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  auto stop_pool = [&] {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    changed.notify_all();
    for (auto& t : pool) t.join();
    pool.clear();
  };
  for (unsigned id = 0; id < threads; ++id) pool.emplace_back(worker);
  try {
    trace::WarpInst inst;
    for (std::uint64_t w = 0; w < warps.size(); ++w) {
      Joined joined;
      {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return slots[w % window].ready; });
        joined = std::move(slots[w % window]);
        slots[w % window].ready = false;
        handed_on = w + 1;
      }
      changed.notify_all();
      if (joined.failure) rethrow_for_warp(w, joined.failure);
      guessed_ += joined.guessed;
      retried_ += joined.retried;
      for (const Record& r : joined.records) {
        inst.index = r.index;
        inst.active_mask = r.mask;
        if (r.operands >= 0) {
          inst.address = warps[w].operands[r.operands].address;
          inst.value = warps[w].operands[r.operands].value;
          inst.value_lanes = warps[w].operands[r.operands].value_lanes;
        } else {
          inst.address.fill(0);
          inst.value.fill(0);
          inst.value_lanes = 0;
        }
        emit(w, inst);
      }
      if (end_warp) end_warp(w);
    }
  } catch (...) {
    stop_pool();
    throw;
  }
  stop_pool();
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
  if (!input.counts.empty()) doc["counts"] = input.counts;
  return doc.dump() + "\n";
}

namespace {
// nlohmann's get<T>() converts any number with a cast (undefined for a double
// out of T's range, a wrap for a negative one): a saved input's fields are
// whole numbers in range or an error naming the field.
template <class T>
T whole_number(const nlohmann::json& v, const char* field) {
  if (v.is_number_unsigned()) {
    const std::uint64_t x = v.get<std::uint64_t>();
    if (x <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(x);
  } else if (v.is_number_integer()) {
    const std::int64_t x = v.get<std::int64_t>();
    if (x >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
        (x < 0 || static_cast<std::uint64_t>(x) <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())))
      return static_cast<T>(x);
  }
  throw JoinError(fmt::format("key '{}': {} is not a whole number in [{}, {}]", field, v.dump(), std::numeric_limits<T>::min(),
                              std::numeric_limits<T>::max()));
}
}  // namespace

JoinInput load_join_input(const std::string& document) {
  nlohmann::json doc = nlohmann::json::parse(document, nullptr, false);
  if (doc.is_discarded()) throw JoinError("not JSON");
  if (!doc.is_object() || doc.value("schema", "") != kJoinInputSchema)
    throw JoinError(fmt::format("key 'schema': expected \"{}\"", kJoinInputSchema));
  JoinInput input;
  try {
    input.kernel = doc.at("kernel").get<std::string>();
    for (const auto& line : doc.at("sass")) {
      input.pcs.push_back(whole_number<std::uint64_t>(line.at(0), "sass"));
      input.text.push_back(line.at(1).get<std::string>());
    }
    for (const auto& w : doc.at("warps")) {
      WarpObservation obs;
      obs.lanes = whole_number<std::uint32_t>(w.at("lanes"), "lanes");
      for (const auto& e : w.at("events")) {
        ObservedInst inst;
        inst.index = whole_number<std::uint32_t>(e.at(0), "events");
        inst.mask = whole_number<std::uint32_t>(e.at(1), "events");
        const int kind = whole_number<int>(e.at(2), "events");
        if (kind < 0 || kind > static_cast<int>(ObservedKind::Exit)) throw JoinError(fmt::format("unknown event kind {}", kind));
        inst.kind = static_cast<ObservedKind>(kind);
        inst.call_target = whole_number<std::uint32_t>(e.at(3), "events");
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
    if (doc.contains("counts")) {
      for (const auto& count : doc.at("counts")) input.counts.push_back(whole_number<std::uint64_t>(count, "counts"));
      if (input.counts.size() != input.pcs.size())
        throw JoinError(fmt::format("key 'counts': {} counts for {} instructions", input.counts.size(), input.pcs.size()));
    }
  } catch (const nlohmann::json::exception& e) {
    throw JoinError(std::string("malformed join input: ") + e.what());
  }
  return input;
}

RejoinResult rejoin(const JoinInput& input, unsigned threads,
                    const std::function<void(std::uint64_t, const trace::WarpInst&)>& emit) {
  const std::vector<trace::StaticInst> program = input.program();
  RejoinResult result;
  WarpJoiner joiner(program, input.text, input.observed());
  if (!input.counts.empty()) joiner.use_counts(input.counts);
  joiner.join_launch(input.warps, threads, [&](std::uint64_t warp, const trace::WarpInst& inst) {
    ++result.warp_instructions;
    emit(warp, inst);
  });
  result.guessed_branches = joiner.guessed_branches();
  result.retried_guesses = joiner.retried_guesses();
  return result;
}

}  // namespace atomsim::capture
