// What runs a sweep's points wherever they run: a local pool's worker process
// or a Slurm array task (`atomsim sweep exec`).
#pragma once

#include <string>
#include <vector>

#include "tools/sweep/store.hpp"

namespace atomsim::sweep {

struct WorkerIdentity {
  std::string executable;  // this atomsim; must be the build the plan was made with
  std::string slurm_job;   // "JOB_TASK" under Slurm, else empty
};

// Simulates each pending point of `keys` and writes its result. A point that
// cannot be simulated (damaged trace, model error, functional mismatch) is a
// failed result with its one-line error; the others go on. Throws
// std::runtime_error, running nothing, when this worker cannot run the plan
// at all (another build, unknown key). Returns how many points failed.
std::size_t execute_points(const ResultStore& store, const std::vector<std::string>& keys, const WorkerIdentity& self);

// The keys of array task `task` when each task takes `per_task` of the keys
// listed one per line in `keys_file`.
std::vector<std::string> task_keys(const std::string& keys_file, std::size_t task, std::size_t per_task);

}  // namespace atomsim::sweep
