// Warp scheduling policies, chosen by name from the configuration.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace atomsim::model {

struct SchedulerCandidate {
  std::uint16_t slot;
  std::uint64_t age;  // launch order: smaller is older
};

class WarpScheduler {
 public:
  virtual ~WarpScheduler() = default;
  // Picks one of the eligible warps (non-empty); returns its index in `eligible`.
  virtual std::size_t pick(const std::vector<SchedulerCandidate>& eligible) = 0;
};

// Greedy-then-oldest: keep issuing from the last warp while it is eligible,
// otherwise the oldest eligible warp.
class GtoScheduler final : public WarpScheduler {
 public:
  std::size_t pick(const std::vector<SchedulerCandidate>& eligible) override;

 private:
  int last_ = -1;
};

// Loose round robin: the first eligible warp after the last one issued, in slot order.
class LrrScheduler final : public WarpScheduler {
 public:
  std::size_t pick(const std::vector<SchedulerCandidate>& eligible) override;

 private:
  int last_ = -1;
};

std::unique_ptr<WarpScheduler> make_scheduler(const std::string& policy);
const std::vector<std::string>& scheduler_policies();

}  // namespace atomsim::model
