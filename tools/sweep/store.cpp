#include "tools/sweep/store.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/report.hpp"

namespace atomsim::sweep {

namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not valid JSON: {}", path, e.what()));
  }
}

}  // namespace

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

ResultStore::ResultStore(std::string dir) : dir_(fs::absolute(dir).lexically_normal().string()) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  std::error_code ec;
  for (const char* sub : {"points", "running", "logs", "traces", "slurm"}) {
    fs::create_directories(fs::path(dir_) / sub, ec);
    if (ec) throw std::runtime_error(fmt::format("{}: cannot create folder: {}", dir_ + "/" + sub, ec.message()));
  }
}

ResultStore ResultStore::open_existing(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / "plan.json"))
    throw std::runtime_error(fmt::format("{}: not a sweep results folder (no plan.json)", dir));
  return ResultStore(dir);
}

void ResultStore::save_plan(const SweepPlan& plan) const { write_file_atomically(path("plan.json"), plan.to_json().dump(1) + "\n"); }

SweepPlan ResultStore::load_plan() const { return SweepPlan::from_json(read_json(path("plan.json")), path("plan.json")); }

std::optional<nlohmann::json> ResultStore::result(const std::string& key) const {
  const std::string file = result_path(key);
  if (!fs::exists(file)) return std::nullopt;
  auto doc = read_json(file);
  if (!doc.is_object() || doc.value("schema", "") != "atomsim.sweep-point/1" || doc.value("key", "") != key ||
      !doc.contains("status"))
    throw std::runtime_error(fmt::format("{}: not the result of point {}", file, key));
  return doc;
}

void ResultStore::write_result(const std::string& key, const nlohmann::json& doc) const {
  write_file_atomically(result_path(key), doc.dump(1) + "\n");
}

PointState ResultStore::finished_state(const std::string& key) const {
  auto doc = result(key);
  if (!doc) return PointState::Pending;
  return (*doc)["status"] == "done" ? PointState::Done : PointState::Failed;
}

void ResultStore::mark_running(const RunningMarker& m) const {
  nlohmann::json j{{"host", m.host}, {"pid", m.pid}, {"slurm_job", m.slurm_job}};
  write_file_atomically(path("running/" + m.key), j.dump() + "\n");
}

void ResultStore::clear_running(const std::string& key) const {
  std::error_code ec;
  fs::remove(path("running/" + key), ec);
}

std::vector<RunningMarker> ResultStore::running() const {
  std::vector<RunningMarker> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(path("running"), ec)) {
    const std::string key = entry.path().filename().string();
    if (key.find(".partial") != std::string::npos) continue;
    try {
      auto j = read_json(entry.path().string());
      out.push_back({key, j.value("host", ""), j.value("pid", 0L), j.value("slurm_job", "")});
    } catch (const std::runtime_error&) {
      // A marker removed while being read: the point has just finished.
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.key < b.key; });
  return out;
}

void ResultStore::remove_stale(const std::string& host) const {
  for (const auto& m : running())
    if (m.slurm_job.empty() && m.host == host && !process_alive(m.pid)) clear_running(m.key);
  // Temporary files (FILE.partial-PID-N, from write_file_atomically) that a
  // killed writer left. Their PID may be another host's, so age decides: a
  // write takes milliseconds.
  std::error_code ec;
  const auto stale_before = fs::file_time_type::clock::now() - std::chrono::hours(1);
  for (const char* sub : {"points", "running", "."})
    for (const auto& entry : fs::directory_iterator(path(sub), ec)) {
      if (entry.path().filename().string().find(".partial-") == std::string::npos) continue;
      std::error_code time_ec;
      if (entry.last_write_time(time_ec) < stale_before && !time_ec) fs::remove(entry.path(), ec);
    }
}

}  // namespace atomsim::sweep
