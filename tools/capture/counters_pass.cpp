#include "tools/capture/counters_pass.hpp"

#include <boost/process.hpp>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tools/capture/counters_document.hpp"
#include "tools/capture/outputs.hpp"
#include "tools/capture/settings.hpp"
#include "traces/capture_document.hpp"

namespace fs = std::filesystem;
namespace bp = boost::process;

namespace atomsim::capture {

namespace {

// Nsight Compute from CUDA_HOME, PATH, or the toolkit beside nvcc's usual place.
fs::path find_ncu() {
  if (const char* home = std::getenv("CUDA_HOME"))
    if (fs::exists(fs::path(home) / "bin" / "ncu")) return fs::path(home) / "bin" / "ncu";
  auto found = bp::search_path("ncu");
  if (!found.empty()) return found.string();
  if (fs::exists("/usr/local/cuda/bin/ncu")) return "/usr/local/cuda/bin/ncu";
  throw CaptureError("counters pass: Nsight Compute (ncu) not found (looked under CUDA_HOME, PATH and /usr/local/cuda)");
}

// Runs ncu with `args`, its output to `stdout_file`; throws with ncu's last error line on failure.
void run_ncu(const fs::path& ncu, const std::vector<std::string>& args, const fs::path& stdout_file,
             const fs::path& stderr_file, double timeout_s) {
  bp::child child(ncu.string(), bp::args = args, bp::std_in < bp::null, bp::std_out > stdout_file.string(),
                  bp::std_err > stderr_file.string());
  if (timeout_s > 0) {
    if (!child.wait_for(std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)))) {
      child.terminate();
      throw CaptureError("counters pass: the program ran past --timeout " + std::to_string(timeout_s) +
                         " s under Nsight Compute and was killed");
    }
  } else {
    child.wait();
  }
  if (child.exit_code() != 0) {
    std::string last, line;
    for (std::istringstream in(read_document(stderr_file) + read_document(stdout_file)); std::getline(in, line);)
      if (line.find("ERROR") != std::string::npos) last = line;
    throw CaptureError("counters pass: Nsight Compute failed (exit status " + std::to_string(child.exit_code()) +
                       ")" + (last.empty() ? "" : ": " + last));
  }
}

struct CountedLaunch {
  std::uint64_t ordinal = 0;
  std::string mangled;
  nlohmann::json launches_in_other_processes;  // null: unknown (--process)
};

CountedLaunch counted_launch(const fs::path& out) {
  const fs::path count = result_path(out, "count");
  if (!fs::exists(stored_document(count)))
    throw CaptureError("counters pass: " + count.string() + " not found (run the count pass of the launch first: --pass count,counters)");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_document(count));
  } catch (const std::exception& e) {
    throw CaptureError("counters pass: " + count.string() + ": " + e.what());
  }
  const auto kernels = doc.value("kernels", nlohmann::json::array());
  if (kernels.size() != 1 || !kernels[0].contains("launch") || !kernels[0].contains("mangled"))
    throw CaptureError("counters pass: " + count.string() + " counted " + std::to_string(kernels.size()) +
                       " launches; the counters pass takes one (--launch)");
  return {kernels[0].at("launch").get<std::uint64_t>(), kernels[0].at("mangled").get<std::string>(),
          doc.value("launches_in_other_processes", nlohmann::json(0))};
}

}  // namespace

namespace {

// The counted launch again, under Nsight Compute: its counters.json document
// (with "launch") and its source page.
struct ProfiledLaunch {
  nlohmann::json counters;
  std::string source_csv;
};

ProfiledLaunch profile_counted_launch(const CountersRequest& r, const CountedLaunch& launch) {
  // Nsight Compute's --launch-skip counts the launches of every process, the
  // count pass's ordinal those of its own.
  const auto& elsewhere = launch.launches_in_other_processes;
  if (elsewhere.is_null() || (elsewhere.is_number() && elsewhere.get<std::uint64_t>() > 0))
    throw CaptureError("counters pass: the counted launch " + std::to_string(launch.ordinal) + " ran in one of several "
                       "processes that launch kernels" + (elsewhere.is_null() ? std::string(" (--process)") : "") +
                       ", and Nsight Compute numbers launches across processes; run the counters pass where one "
                       "process launches the program's kernels");
  const fs::path ncu = find_ncu();
  fs::create_directories(r.out);
  const fs::path report = r.out / "counters.partial.ncu-rep", details = r.out / "counters.details.partial",
                 source = r.out / "counters.source.partial", log = r.out / "counters.log.partial";
  struct Cleanup {
    std::vector<fs::path> files;
    ~Cleanup() {
      for (const auto& f : files) fs::remove(f);
    }
  } cleanup{{report, details, source, log}};

  std::string metrics;
  for (const auto& m : counter_metrics()) metrics += (metrics.empty() ? "" : ",") + m;
  // Graph nodes are profiled one by one, each counted as a launch of its own.
  std::vector<std::string> profile = {"--export", report.string(), "--force-overwrite", "--section", "SourceCounters",
                                      "--metrics", metrics, "--graph-profiling", "node", "--target-processes", "all",
                                      "--launch-count", "1", "--launch-skip", std::to_string(launch.ordinal)};
  profile.insert(profile.end(), r.program.begin(), r.program.end());
  run_ncu(ncu, profile, log, log.string() + ".err", r.timeout_s);
  fs::remove(log.string() + ".err");
  if (!fs::exists(report))
    throw CaptureError("counters pass: Nsight Compute profiled no launch at the counted place " + std::to_string(launch.ordinal));
  run_ncu(ncu, {"--import", report.string(), "--csv", "--page", "details", "--print-kernel-base", "mangled"}, details, log, 0);
  run_ncu(ncu, {"--import", report.string(), "--csv", "--page", "source", "--print-source", "sass"}, source, log, 0);
  ProfiledLaunch out{{}, read_document(source)};
  out.counters = counters_document(read_document(details), out.source_csv);
  if (out.counters.value("kernel", "") != launch.mangled)
    throw CaptureError("counters pass: launch " + std::to_string(launch.ordinal) + " under Nsight Compute is " +
                       out.counters.value("kernel", "?") + ", not the counted " + launch.mangled);
  out.counters["launch"] = launch.ordinal;
  return out;
}

}  // namespace

void capture_counters(const CountersRequest& r) {
  const CountedLaunch launch = counted_launch(r.out);
  fs::remove(result_path(r.out, "counters"));
  write_json_atomically(result_path(r.out, "counters"), profile_counted_launch(r, launch).counters);
}

bool count_left_to_nsight_compute(const std::filesystem::path& out) {
  const nlohmann::json doc = nlohmann::json::parse(read_document(result_path(out, "count")), nullptr, false);
  if (doc.is_discarded()) return false;
  for (const auto& k : doc.value("kernels", nlohmann::json::array()))
    if (k.value("counted_by", "") == kCountedByNsightCompute && !k.contains("pcs")) return true;
  return false;
}

void count_under_nsight_compute(const CountersRequest& r) {
  const fs::path count = result_path(r.out, "count");
  nlohmann::json doc = nlohmann::json::parse(read_document(count));
  const CountedLaunch launch = counted_launch(r.out);
  nlohmann::json counts;
  try {
    counts = source_counts_document(profile_counted_launch(r, launch).source_csv);
  } catch (const CaptureError& e) {
    std::string why = e.what();
    if (why.rfind("counters pass: ", 0) == 0) why.erase(0, 15);
    throw CaptureError("count pass: launch " + std::to_string(launch.ordinal) + " under Nsight Compute: " + why);
  }
  nlohmann::json& k = doc["kernels"][0];
  for (auto& pc : counts["pcs"]) {
    pc["cubin_crc"] = k.at("cubin_crc");
    pc["function"] = launch.mangled;
  }
  for (const auto& [key, value] : counts.items()) k[key] = value;
  write_json_atomically(count, doc);
}

}  // namespace atomsim::capture
