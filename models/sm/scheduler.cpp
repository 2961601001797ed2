#include "models/sm/scheduler.hpp"

#include <stdexcept>

namespace atomsim::model {

std::size_t GtoScheduler::pick(const std::vector<SchedulerCandidate>& eligible) {
  std::size_t best = 0;
  for (std::size_t i = 0; i < eligible.size(); ++i) {
    if (eligible[i].slot == last_) return i;
    if (eligible[i].age < eligible[best].age) best = i;
  }
  last_ = eligible[best].slot;
  return best;
}

std::size_t LrrScheduler::pick(const std::vector<SchedulerCandidate>& eligible) {
  std::size_t best = 0;
  bool found = false;
  for (std::size_t i = 0; i < eligible.size(); ++i) {
    if (static_cast<int>(eligible[i].slot) > last_ && (!found || eligible[i].slot < eligible[best].slot)) {
      best = i;
      found = true;
    }
  }
  if (!found)
    for (std::size_t i = 0; i < eligible.size(); ++i)
      if (eligible[i].slot < eligible[best].slot) best = i;
  last_ = eligible[best].slot;
  return best;
}

namespace {

template <class Policy>
std::unique_ptr<WarpScheduler> make() {
  return std::make_unique<Policy>();
}

// The policies `sm.scheduler` may name: a new one is a class and a line here.
struct RegisteredPolicy {
  const char* name;
  std::unique_ptr<WarpScheduler> (*make)();
};
constexpr RegisteredPolicy kPolicies[] = {{"gto", make<GtoScheduler>}, {"lrr", make<LrrScheduler>}};

}  // namespace

const std::vector<std::string>& scheduler_policies() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& p : kPolicies) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

std::unique_ptr<WarpScheduler> make_scheduler(const std::string& policy) {
  for (const auto& p : kPolicies)
    if (policy == p.name) return p.make();
  throw std::invalid_argument("unknown scheduler policy: " + policy);
}

}  // namespace atomsim::model
