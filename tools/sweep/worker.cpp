#include "tools/sweep/worker.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/config.hpp"
#include "sim/report.hpp"
#include "sim/run.hpp"

namespace atomsim::sweep {

namespace {

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

nlohmann::json simulate_point(const SweepPlan& plan, const PlannedPoint& point) {
  const PlannedTrace& trace = plan.traces[point.trace];
  nlohmann::json doc;
  doc["schema"] = "atomsim.sweep-point/1";
  doc["key"] = point.key;
  const auto start = std::chrono::steady_clock::now();
  try {
    // The key promises this trace's content; a file changed since planning
    // would give a result under a key that does not describe it.
    if (hash_file(trace.path) != trace.hash)
      throw std::runtime_error(fmt::format("{}: the trace changed since the sweep was planned; run `sweep run` again",
                                           trace.path));
    GpuParams params = load_gpu_params(point.config_file, point.overrides());
    SimulateOptions options;
    options.progress = false;
    options.check_atomics = true;
    auto runs = simulate_trace(params, trace.path, options);
    for (const auto& r : runs)
      if (r.checked && !r.check.passed())
        throw std::runtime_error(fmt::format("kernel {}: the simulated atomic memory image does not match the trace", r.name));
    doc["status"] = "done";
    doc["run"] = run_json(runs, params, point.overrides(), trace.path);
  } catch (const std::exception& e) {
    doc["status"] = "failed";
    doc["error"] = first_line(e.what());
  }
  doc["wall_seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return doc;
}

}  // namespace

std::size_t execute_points(const ResultStore& store, const std::vector<std::string>& keys, const WorkerIdentity& self) {
  const SweepPlan plan = store.load_plan();
  if (hash_file(self.executable) != plan.build)
    throw std::runtime_error(fmt::format("{}: this atomsim is not the build the sweep in {} was planned with; "
                                         "run `sweep run` again to plan it for this build",
                                         self.executable, store.dir()));
  std::vector<const PlannedPoint*> points;
  for (const auto& key : keys) {
    const PlannedPoint* p = plan.find(key);
    if (!p) throw std::runtime_error(fmt::format("{}: point {} is not in the plan", store.path("plan.json"), key));
    points.push_back(p);
  }
  std::size_t failed = 0;
  const std::string host = this_host();
  for (const PlannedPoint* p : points) {
    if (store.finished_state(p->key) != PointState::Pending) continue;
    store.mark_running({p->key, host, static_cast<long>(::getpid()), self.slurm_job});
    auto doc = simulate_point(plan, *p);
    failed += doc["status"] != "done";
    store.write_result(p->key, doc);
    store.clear_running(p->key);
  }
  return failed;
}

std::vector<std::string> task_keys(const std::string& keys_file, std::size_t task, std::size_t per_task) {
  std::ifstream in(keys_file);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", keys_file));
  std::vector<std::string> all;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) all.push_back(line);
  if (per_task == 0 || task * per_task >= all.size())
    throw std::runtime_error(fmt::format("{}: task {} of {} keys per task is past its {} keys", keys_file, task,
                                         per_task, all.size()));
  auto begin = all.begin() + static_cast<std::ptrdiff_t>(task * per_task);
  auto end = all.begin() + static_cast<std::ptrdiff_t>(std::min(all.size(), (task + 1) * per_task));
  return {begin, end};
}

}  // namespace atomsim::sweep
