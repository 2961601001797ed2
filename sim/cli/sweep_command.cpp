// `atomsim sweep run | status | collect | plot | exec`: configuration sweeps
// on a local process pool or a Slurm cluster (docs/sweeps.md).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "sim/cli/command.hpp"
#include "sim/report.hpp"
#include "tools/sweep/backends.hpp"
#include "tools/sweep/plot.hpp"
#include "tools/sweep/spec.hpp"
#include "tools/sweep/table.hpp"
#include "tools/sweep/worker.hpp"

namespace atomsim::cli {

std::string this_executable() { return std::filesystem::read_symlink("/proc/self/exe").string(); }

namespace {

struct SweepOptions {
  CLI::App* sweep = nullptr;
  CLI::App *run = nullptr, *status = nullptr, *collect = nullptr, *plot = nullptr, *exec = nullptr;
  std::string spec, dir, backend = "local";
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency());
  bool retry_failed = false, dry_run = false;
  sweep::SlurmOptions slurm;
  std::string csv_out, json_out, plot_out;
  sweep::PlotOptions plot_options;
  std::vector<std::string> exec_keys;
  std::string keys_file, slurm_job;
  std::size_t task = 0, per_task = 1;
};

class SweepCommand final : public Command {
 public:
  explicit SweepCommand(CLI::App& app);
  bool chosen() const override { return options_.sweep->parsed(); }
  int run() override;

 private:
  SweepOptions options_;
};

SweepCommand::SweepCommand(CLI::App& app) {
  SweepOptions& o = options_;
  o.sweep = app.add_subcommand("sweep", "run a configuration sweep locally or on Slurm, collect and plot its results");
  o.sweep->require_subcommand(1);

  o.run = o.sweep->add_subcommand("run", "run every point of a sweep spec that has no result yet");
  o.run->add_option("spec", o.spec, "sweep spec (TOML; docs/sweeps.md)")->required();
  o.run->add_option("--out,-o", o.dir, "results folder (created; shared by every worker)")->required();
  o.run->add_option("--backend", o.backend, "local (a pool of processes) or slurm (a job array)")
      ->check(CLI::IsMember({"local", "slurm"}));
  o.run->add_option("--jobs,-j", o.jobs, "local: worker processes at once (default: the machine's cores)")
      ->check(CLI::Range(1u, 4096u));
  o.run->add_flag("--retry-failed", o.retry_failed, "run failed points again");
  o.run->add_flag("--dry-run", o.dry_run, "validate the spec and list the points; run nothing");
  o.run->add_option("--partition", o.slurm.partition, "slurm: partition");
  o.run->add_option("--time", o.slurm.time_limit, "slurm: time limit per array task, e.g. 01:00:00");
  o.run->add_option("--points-per-task", o.slurm.points_per_task, "slurm: points each array task runs")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  o.run->add_option("--sbatch-arg", o.slurm.sbatch_args, "slurm: a further sbatch argument, e.g. --sbatch-arg=--account=A");
  o.run->add_flag("--wait", o.slurm.wait, "slurm: return when the job array has finished");

  o.status = o.sweep->add_subcommand("status", "points done, running, failed and pending; Slurm jobs' states");
  o.status->add_option("dir", o.dir, "results folder")->required();

  o.collect = o.sweep->add_subcommand("collect", "one tidy table of a sweep's results, CSV and JSON");
  o.collect->add_option("dir", o.dir, "results folder")->required();
  o.collect->add_option("--csv", o.csv_out, "CSV file (default DIR/results.csv)");
  o.collect->add_option("--json", o.json_out, "JSON file (default DIR/results.json)");

  o.plot = o.sweep->add_subcommand("plot", "draw a measure against one or two axes (SVG)");
  o.plot->add_option("dir", o.dir, "results folder")->required();
  o.plot->add_option("--x", o.plot_options.x, "column on the x axis, e.g. l2.rop_units_per_slice")->required();
  o.plot->add_option("--y", o.plot_options.y, "cycles, speedup, a warp state (lg_throttle) or a column")->required();
  o.plot->add_option("--by", o.plot_options.by, "a line per value of this column; with --heatmap, the second axis");
  o.plot->add_option("--where", o.plot_options.where, "keep rows whose COLUMN=VALUE (repeatable)");
  o.plot->add_flag("--heatmap", o.plot_options.heatmap, "a heatmap of --x against --by");
  o.plot->add_option("--out,-o", o.plot_out, "SVG file to write")->required();

  o.exec = o.sweep->add_subcommand("exec", "run points of a planned sweep in this process (what workers and Slurm tasks run)");
  o.exec->add_option("dir", o.dir, "results folder")->required();
  o.exec->add_option("keys", o.exec_keys, "point keys");
  o.exec->add_option("--keys-file", o.keys_file, "a file of keys, one per line (with --task)");
  o.exec->add_option("--task", o.task, "array task index into --keys-file");
  o.exec->add_option("--per-task", o.per_task, "keys per array task")->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  o.exec->add_option("--slurm-job", o.slurm_job, "JOB_TASK of the Slurm array task running it");
}

int SweepCommand::run() {
  SweepOptions& o = options_;
  if (o.run->parsed()) {
    sweep::SweepPlan plan;
    std::vector<std::string> keys;
    try {
      sweep::ResultStore store(o.dir);
      plan = sweep::plan_sweep(o.spec, o.dir, this_executable());
      store.remove_stale(sweep::this_host());
      keys = sweep::pending_points(plan, store, o.retry_failed && !o.dry_run);
      if (o.dry_run) {
        std::cout << fmt::format("sweep {}: {} points ({} traces), {} without a result\n", plan.name, plan.points.size(),
                                 plan.traces.size(), keys.size());
        for (const auto& p : plan.points) {
          std::string settings;
          for (const auto& s : p.settings) settings += " " + s.key + "=" + s.display;
          std::cout << fmt::format("  {} {} on {}{}{}\n", p.key.substr(0, 12), plan.traces[p.trace].name, p.config,
                                   p.name.empty() ? "" : " [" + p.name + "]", settings);
        }
        return 0;
      }
      store.save_plan(plan);
      if (o.backend == "slurm") return sweep::submit_slurm(plan, store, keys, o.slurm, std::cout);
      return sweep::run_local(plan, store, keys, {o.jobs}, std::cerr);
    } catch (const std::exception& e) {
      std::cerr << "atomsim: error: " << e.what() << "\n";
      return sweep::kExitNothingRan;
    }
  }
  if (o.status->parsed()) {
    sweep::print_status(sweep::ResultStore::open_existing(o.dir), std::cout);
    return 0;
  }
  if (o.collect->parsed()) {
    auto store = sweep::ResultStore::open_existing(o.dir);
    sweep::Table table = sweep::collect_table(store);
    const std::string csv = o.csv_out.empty() ? store.path("results.csv") : o.csv_out;
    const std::string json = o.json_out.empty() ? store.path("results.json") : o.json_out;
    write_file_atomically(csv, sweep::table_csv(table));
    write_file_atomically(json, sweep::table_json(table).dump(1) + "\n");
    std::size_t done = 0;
    for (const auto& row : table.rows) done += row["status"] == "done";
    std::cout << fmt::format("{}: {} rows, {} of them finished kernels, {} columns\n{}\n", csv, table.rows.size(), done,
                             table.columns.size(), json);
    return 0;
  }
  if (o.plot->parsed()) {
    sweep::Table table = sweep::collect_table(sweep::ResultStore::open_existing(o.dir));
    write_file_atomically(o.plot_out, sweep::plot_svg(table, o.plot_options));
    std::cout << o.plot_out << "\n";
    return 0;
  }
  // exec: what a worker runs. Its exit status is 0 once every point has a
  // result, failed or not; 1 only when it could not run the plan at all.
  sweep::ResultStore store = sweep::ResultStore::open_existing(o.dir);
  std::vector<std::string> keys = o.exec_keys;
  if (!o.keys_file.empty()) {
    auto more = sweep::task_keys(o.keys_file, o.task, o.per_task);
    keys.insert(keys.end(), more.begin(), more.end());
  }
  sweep::execute_points(store, keys, {this_executable(), o.slurm_job});
  return 0;
}

}  // namespace

std::unique_ptr<Command> make_sweep_command(CLI::App& app) { return std::make_unique<SweepCommand>(app); }

}  // namespace atomsim::cli
