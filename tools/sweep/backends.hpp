// Where a sweep's points run: a pool of worker processes on this machine, or
// a Slurm job array. Both run `atomsim sweep exec` on the same results folder,
// so a point's result does not depend on where it ran.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "tools/sweep/store.hpp"

namespace atomsim::sweep {

// `sweep run`'s exit status, as GNU parallel's: 0 when every point is done,
// 1-100 the number of failed points, 101 more than 100, 130 interrupted
// (points left pending), 255 an error before anything ran.
inline constexpr int kExitInterrupted = 130;
inline constexpr int kExitNothingRan = 255;

// Once a backend's workers are done: says how many points failed or are still
// pending, and returns the exit status for that.
int judge_sweep(const SweepPlan& plan, const ResultStore& store, std::ostream& out);

// The plan's points that still need running: no result yet (and, with
// `retry_failed`, failed ones, whose results are then removed).
std::vector<std::string> pending_points(const SweepPlan& plan, const ResultStore& store, bool retry_failed);

struct LocalOptions {
  unsigned workers = 1;
};

// Runs `keys` with up to `workers` processes at once, showing progress on
// `progress`. SIGINT and SIGTERM stop the workers, leaving their points
// pending. Returns the process exit status.
int run_local(const SweepPlan& plan, const ResultStore& store, const std::vector<std::string>& keys,
              const LocalOptions& options, std::ostream& progress);

struct SlurmOptions {
  std::string partition;
  std::string time_limit;
  std::size_t points_per_task = 1;
  std::vector<std::string> sbatch_args;  // passed to sbatch as they are
  bool wait = false;                      // sbatch --wait: return when the array has finished
};

// Submits one job array whose tasks run `keys`; records its id under the
// results folder. Returns the process exit status (with `wait`, as run_local).
int submit_slurm(const SweepPlan& plan, const ResultStore& store, const std::vector<std::string>& keys,
                 const SlurmOptions& options, std::ostream& out);

// Done, running, failed and pending points, with the Slurm jobs' states where
// squeue and sacct answer.
void print_status(const ResultStore& store, std::ostream& out);

}  // namespace atomsim::sweep
