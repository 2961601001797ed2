// The local backend: a pool of `atomsim sweep exec` processes, one point each,
// driven by Boost.Process and Asio (child exits and signals on one event loop,
// so the pool never polls).
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/filesystem/path.hpp>
#include <boost/process.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "tools/sweep/backends.hpp"

namespace atomsim::sweep {

namespace bp = boost::process;

int judge_sweep(const SweepPlan& plan, const ResultStore& store, std::ostream& out) {
  std::size_t failed = 0, pending = 0;
  for (const auto& p : plan.points) {
    const PointState state = store.finished_state(p.key);
    failed += state == PointState::Failed;
    pending += state == PointState::Pending;
  }
  if (failed)
    out << fmt::format("atomsim sweep: {} of {} points failed (`atomsim sweep status {}` lists them)\n", failed,
                       plan.points.size(), store.dir());
  if (pending) {
    // A worker killed from outside leaves its point pending, not failed.
    out << fmt::format("atomsim sweep: {} points left pending (their workers were killed); the same command "
                       "continues the sweep\n", pending);
    return kExitInterrupted;
  }
  return static_cast<int>(std::min<std::size_t>(failed, 101));
}

std::vector<std::string> pending_points(const SweepPlan& plan, const ResultStore& store, bool retry_failed) {
  std::vector<std::string> keys;
  for (const auto& p : plan.points) {
    PointState state = store.finished_state(p.key);
    if (state == PointState::Failed && retry_failed) {
      std::filesystem::remove(store.result_path(p.key));
      state = PointState::Pending;
    }
    if (state == PointState::Pending) keys.push_back(p.key);
  }
  return keys;
}

namespace {

// One line, redrawn in place on a terminal, appended at most once a second
// elsewhere (logs).
class ProgressLine {
 public:
  ProgressLine(std::ostream& out, std::size_t total, std::size_t already_done)
      : out_(out), total_(total), already_(already_done), interactive_(::isatty(STDERR_FILENO) != 0),
        start_(std::chrono::steady_clock::now()) {}

  void show(std::size_t done, std::size_t failed, std::size_t running, bool last) {
    const auto now = std::chrono::steady_clock::now();
    if (!last && !interactive_ && now - shown_ < std::chrono::seconds(1)) return;
    shown_ = now;
    const std::size_t finished = done + failed;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    std::string eta = "-";
    if (finished > 0 && finished < total_) {
      const double seconds = elapsed / static_cast<double>(finished) * static_cast<double>(total_ - finished);
      eta = seconds >= 3600 ? fmt::format("{}h{:02}m", static_cast<int>(seconds / 3600), static_cast<int>(seconds / 60) % 60)
                            : fmt::format("{}m{:02}s", static_cast<int>(seconds / 60), static_cast<int>(seconds) % 60);
    }
    const int width = 30;
    const int filled = total_ ? static_cast<int>(width * finished / total_) : width;
    std::string line = fmt::format("[{}{}] {}/{} points, {} failed, {} running, ETA {}{}",
                                   std::string(filled, '#'), std::string(width - filled, '.'), finished, total_, failed,
                                   running, eta, already_ ? fmt::format(" ({} finished before)", already_) : "");
    if (interactive_)
      out_ << "\r" << line << "\033[K" << (last ? "\n" : "") << std::flush;
    else
      out_ << "atomsim sweep: " << line << "\n" << std::flush;
  }

 private:
  std::ostream& out_;
  std::size_t total_, already_;
  bool interactive_;
  std::chrono::steady_clock::time_point start_, shown_{};
};

std::string last_line_of(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last;
}

}  // namespace

int run_local(const SweepPlan& plan, const ResultStore& store, const std::vector<std::string>& pending_keys,
              const LocalOptions& options, std::ostream& progress) {
  // Longest first, with a trace's size as the estimate of its points' time:
  // a long point started last would leave the other workers idle at the end.
  std::vector<std::string> keys = pending_keys;
  std::map<std::string, std::uintmax_t> trace_bytes;
  for (const auto& key : keys) trace_bytes[key] = std::filesystem::file_size(plan.traces[plan.find(key)->trace].path);
  std::stable_sort(keys.begin(), keys.end(), [&](const auto& a, const auto& b) { return trace_bytes[a] > trace_bytes[b]; });

  boost::asio::io_context events;
  boost::asio::signal_set stop_signals(events, SIGINT, SIGTERM);
  std::map<std::string, std::unique_ptr<bp::child>> running;
  std::size_t next = 0, done = 0, failed = 0;
  bool stopping = false;
  ProgressLine line(progress, keys.size(), plan.points.size() - keys.size());

  std::function<void()> launch_more;
  auto finished = [&](const std::string& key) {
    const int status = running.at(key)->native_exit_code();
    switch (store.finished_state(key)) {
      case PointState::Done: ++done; break;
      case PointState::Failed: ++failed; break;
      default: {
        // No result: interrupted (the point stays pending), or the worker
        // itself broke, which is the point's failure, with what it said.
        const bool interrupted = WIFSIGNALED(status) &&
                                 (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM || WTERMSIG(status) == SIGKILL);
        if (interrupted || stopping) break;
        std::string said = last_line_of(store.log_path(key));
        store.write_result(key, {{"schema", "atomsim.sweep-point/1"}, {"key", key}, {"status", "failed"},
                                 {"error", fmt::format("the worker {} without a result{}",
                                                       WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                                                           : fmt::format("exited with status {}", WEXITSTATUS(status)),
                                                       said.empty() ? "" : ": " + said)}});
        ++failed;
      }
    }
    store.clear_running(key);
    if (store.finished_state(key) == PointState::Done) std::filesystem::remove(store.log_path(key));
    // The child object is released after its exit handler has returned.
    boost::asio::post(events, [&, key] {
      running.erase(key);
      launch_more();
      line.show(done, failed, running.size(), running.empty() && (stopping || next == keys.size()));
      if (running.empty() && (stopping || next == keys.size())) stop_signals.cancel();
    });
  };
  launch_more = [&] {
    while (!stopping && running.size() < options.workers && next < keys.size()) {
      const std::string key = keys[next++];
      running[key] = std::make_unique<bp::child>(
          plan.executable, "sweep", "exec", store.dir(), key, bp::std_in<bp::null, bp::std_out> bp::null,
          bp::std_err > boost::filesystem::path(store.log_path(key)), events,
          bp::on_exit([&, key](int, const std::error_code&) { finished(key); }));
    }
  };
  stop_signals.async_wait([&](const boost::system::error_code& ec, int) {
    if (ec) return;
    stopping = true;
    for (auto& [key, child] : running) {
      std::error_code ignored;
      child->terminate(ignored);
    }
  });

  launch_more();
  line.show(done, failed, running.size(), keys.empty());
  if (keys.empty()) stop_signals.cancel();
  events.run();

  if (stopping) {
    progress << fmt::format("atomsim sweep: interrupted; {} points left pending; the same command continues the sweep\n",
                            keys.size() - done - failed);
    return kExitInterrupted;
  }
  return judge_sweep(plan, store, progress);
}

}  // namespace atomsim::sweep
