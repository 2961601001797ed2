// The results folder of a sweep, shared by every worker (on one machine or a
// cluster's shared file system):
//   plan.json            the points (SweepPlan)
//   points/KEY.json      one finished point, written whole or not at all
//   running/KEY          a point some worker has under way (host, pid, Slurm job)
//   logs/KEY.log         what a local worker printed on its standard error
//   traces/              traces the spec generates
//   slurm/               job scripts, key lists, task logs, submitted job ids
// A point is pending until its file exists; it never has two files, since
// the key is the name.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/sweep/plan.hpp"

namespace atomsim::sweep {

enum class PointState { Pending, Running, Done, Failed };

struct RunningMarker {
  std::string key;
  std::string host;
  long pid = 0;
  std::string slurm_job;  // "JOB_TASK" of an array task, empty for local workers
};

class ResultStore {
 public:
  // Creates the folder and its subfolders.
  explicit ResultStore(std::string dir);
  // For reading a folder some sweep made: throws std::runtime_error if it has no plan.
  static ResultStore open_existing(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::string path(const std::string& relative) const { return dir_ + "/" + relative; }
  std::string result_path(const std::string& key) const { return path("points/" + key + ".json"); }
  std::string log_path(const std::string& key) const { return path("logs/" + key + ".log"); }

  void save_plan(const SweepPlan& plan) const;
  SweepPlan load_plan() const;

  // The finished point's document, or nothing while it is pending; throws
  // std::runtime_error naming the file if it cannot be read as one.
  std::optional<nlohmann::json> result(const std::string& key) const;
  void write_result(const std::string& key, const nlohmann::json& doc) const;
  // Done or Failed from the point's file, Pending without one (running
  // markers are not consulted: see running()).
  PointState finished_state(const std::string& key) const;

  void mark_running(const RunningMarker& marker) const;
  void clear_running(const std::string& key) const;
  std::vector<RunningMarker> running() const;
  // Removes the markers and temporary files of local workers that no longer
  // exist (a sweep killed before it could tidy up).
  void remove_stale(const std::string& this_host) const;

 private:
  std::string dir_;
};

std::string this_host();
// Whether a process of this host exists (markers of local workers name one).
bool process_alive(long pid);

}  // namespace atomsim::sweep
