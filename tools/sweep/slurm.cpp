// The Slurm backend: one job array per submission whose tasks run `atomsim
// sweep exec` on the shared results folder; and `sweep status`, which asks
// squeue and sacct about those jobs where they answer.
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "sim/report.hpp"
#include "tools/sweep/backends.hpp"

namespace atomsim::sweep {

namespace bp = boost::process;
namespace fs = std::filesystem;

namespace {

struct Captured {
  int status = 0;
  std::string out, err;
};

// Runs a program found on PATH; nothing when it is not there.
std::optional<Captured> capture(const std::string& program, const std::vector<std::string>& args) {
  const auto exe = bp::search_path(program);
  if (exe.empty()) return std::nullopt;
  boost::asio::io_context events;
  std::future<std::string> out, err;
  bp::child child(exe, args, bp::std_in<bp::null, bp::std_out> out, bp::std_err > err, events);
  events.run();
  child.wait();
  return Captured{child.exit_code(), out.get(), err.get()};
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  return line.empty() ? "(no message)" : line;
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

nlohmann::json load_jobs(const ResultStore& store) {
  const std::string path = store.path("slurm/jobs.json");
  if (!fs::exists(path)) return nlohmann::json::array();
  std::ifstream in(path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

// Array tasks by state, from squeue ("JOB_TASK STATE" per line with -r).
std::optional<std::map<std::string, std::string>> queued_tasks(const std::vector<std::string>& jobs) {
  std::string list;
  for (const auto& j : jobs) list += (list.empty() ? "" : ",") + j;
  auto r = capture("squeue", {"-h", "-r", "-j", list, "-o", "%i %T"});
  if (!r || r->status != 0) return std::nullopt;
  std::map<std::string, std::string> tasks;
  std::istringstream in(r->out);
  for (std::string id, state; in >> id >> state;) tasks[id] = state;
  return tasks;
}

}  // namespace

int submit_slurm(const SweepPlan& plan, const ResultStore& store, const std::vector<std::string>& keys,
                 const SlurmOptions& options, std::ostream& out) {
  if (keys.empty()) {
    out << fmt::format("atomsim sweep: all {} points are finished; nothing to submit\n", plan.points.size());
    return 0;
  }
  if (options.points_per_task == 0) throw std::invalid_argument("--points-per-task must be at least 1");
  nlohmann::json jobs = load_jobs(store);
  const std::size_t submission = jobs.size() + 1;
  const std::string stem = store.path(fmt::format("slurm/submit-{}", submission));
  std::string key_list;
  for (const auto& k : keys) key_list += k + "\n";
  write_file_atomically(stem + ".keys", key_list);
  const std::size_t tasks = (keys.size() + options.points_per_task - 1) / options.points_per_task;
  std::string script = "#!/bin/sh\n";
  script += fmt::format("#SBATCH --job-name=atomsim-{}\n", plan.name);
  script += fmt::format("#SBATCH --array=0-{}\n", tasks - 1);
  script += "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n";
  script += fmt::format("#SBATCH --output={}-%a.log\n", stem);
  if (!options.partition.empty()) script += fmt::format("#SBATCH --partition={}\n", options.partition);
  if (!options.time_limit.empty()) script += fmt::format("#SBATCH --time={}\n", options.time_limit);
  script += fmt::format("exec {} sweep exec {} --keys-file {} --task \"$SLURM_ARRAY_TASK_ID\" --per-task {} "
                        "--slurm-job \"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}\"\n",
                        shell_quote(plan.executable), shell_quote(store.dir()), shell_quote(stem + ".keys"),
                        options.points_per_task);
  write_file_atomically(stem + ".sbatch", script);

  std::vector<std::string> args = {"--parsable"};
  args.insert(args.end(), options.sbatch_args.begin(), options.sbatch_args.end());
  args.push_back(stem + ".sbatch");
  auto submitted = capture("sbatch", args);
  if (!submitted) throw std::runtime_error("sbatch not found: is this a Slurm login node? (or use --backend local)");
  if (submitted->status != 0) throw std::runtime_error("sbatch refused the job: " + first_line(submitted->err));
  std::string job = first_line(submitted->out);
  job = job.substr(0, job.find(';'));  // "JOBID;CLUSTER" on multi-cluster setups
  jobs.push_back({{"job", job}, {"submission", submission}, {"points", keys.size()}, {"tasks", tasks},
                  {"points_per_task", options.points_per_task}});
  write_file_atomically(store.path("slurm/jobs.json"), jobs.dump(1) + "\n");
  out << fmt::format("atomsim sweep: submitted Slurm job {}: {} points in {} array tasks; `atomsim sweep status {}`\n",
                     job, keys.size(), tasks, store.dir());
  if (!options.wait) return 0;

  // Waits for the array to leave the queue, then judges it as a local run would.
  while (true) {
    auto queued = queued_tasks({job});
    if (!queued) throw std::runtime_error(fmt::format("squeue does not answer about job {}", job));
    if (queued->empty()) break;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  out << fmt::format("atomsim sweep: job {} has left the queue\n", job);
  return judge_sweep(plan, store, out);
}

void print_status(const ResultStore& store, std::ostream& out) {
  const SweepPlan plan = store.load_plan();
  nlohmann::json jobs = load_jobs(store);
  std::vector<std::string> job_ids;
  for (const auto& j : jobs) job_ids.push_back(j["job"]);
  auto queued = job_ids.empty() ? std::optional<std::map<std::string, std::string>>{} : queued_tasks(job_ids);

  // A marker counts as running while its worker lives: a local process on
  // this host, or an array task squeue still lists as running.
  const std::string host = this_host();
  std::map<std::string, RunningMarker> live;
  std::size_t stale = 0;
  for (const auto& m : store.running()) {
    bool alive;
    if (!m.slurm_job.empty())
      alive = !queued || (queued->count(m.slurm_job) && queued->at(m.slurm_job) == "RUNNING");
    else
      alive = m.host != host || process_alive(m.pid);
    if (alive) live[m.key] = m;
    else ++stale;
  }

  std::size_t done = 0, failed = 0, running = 0, pending = 0;
  std::vector<std::string> failures;
  for (const auto& p : plan.points) {
    auto doc = store.result(p.key);
    if (doc && (*doc)["status"] == "done") {
      ++done;
    } else if (doc) {
      ++failed;
      std::string where = plan.traces[p.trace].name + " on " + p.config;
      for (const auto& s : p.settings) where += " " + s.key + "=" + s.display;
      failures.push_back(fmt::format("  {} {}: {}", p.key.substr(0, 12), where, doc->value("error", "")));
    } else if (live.count(p.key)) {
      ++running;
    } else {
      ++pending;
    }
  }
  out << fmt::format("sweep {}: {} points: {} done, {} running, {} failed, {} pending\n", plan.name, plan.points.size(),
                     done, running, failed, pending);
  if (stale) out << fmt::format("({} markers of workers that are gone: their points are pending)\n", stale);
  if (!failures.empty()) {
    out << "failed:\n";
    for (const auto& f : failures) out << f << "\n";
  }
  if (jobs.empty()) return;
  std::map<std::string, std::map<std::string, int>> by_job;  // job -> state -> tasks
  if (queued)
    for (const auto& [task, state] : *queued) by_job[task.substr(0, task.find('_'))][state]++;
  std::string list;
  for (const auto& j : job_ids) list += (list.empty() ? "" : ",") + j;
  auto accounted = capture("sacct", {"-n", "-X", "-P", "-j", list, "-o", "JobID,State"});
  std::map<std::string, std::map<std::string, int>> finished_by_job;
  bool sacct_answers = accounted && accounted->status == 0;
  if (sacct_answers) {
    std::istringstream in(accounted->out);
    for (std::string row; std::getline(in, row);) {
      auto bar = row.find('|');
      if (bar == std::string::npos) continue;
      std::string id = row.substr(0, row.find('_')), state = row.substr(bar + 1);
      state = state.substr(0, state.find(' '));  // "CANCELLED by 0"
      finished_by_job[id][state]++;
    }
  }
  for (const auto& j : jobs) {
    const std::string id = j["job"];
    std::string q, a;
    for (const auto& [state, n] : by_job[id]) q += fmt::format("{}{} {}", q.empty() ? "" : ", ", n, state);
    for (const auto& [state, n] : finished_by_job[id]) a += fmt::format("{}{} {}", a.empty() ? "" : ", ", n, state);
    out << fmt::format("slurm job {} (submission {}, {} points in {} tasks): squeue: {}; sacct: {}\n", id,
                       j["submission"].get<int>(), j["points"].get<int>(), j["tasks"].get<int>(),
                       !queued ? "not available" : q.empty() ? "no task queued" : q,
                       !sacct_answers ? (accounted ? first_line(accounted->err) : "not available") : a.empty() ? "no record" : a);
  }
}

}  // namespace atomsim::sweep
