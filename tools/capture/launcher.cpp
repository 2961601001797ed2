// atomsim-capture: runs an unmodified CUDA program once per requested pass with
// the matching injection library, and turns every way that can go wrong (no
// CUDA work, a filter that selects nothing, a crash, a timeout, a library error)
// into one line and a non-zero exit. Outputs are complete or absent.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tools/capture/counters_pass.hpp"
#include "tools/capture/outputs.hpp"
#include "tools/capture/settings.hpp"

namespace fs = std::filesystem;
using namespace atomsim::capture;

namespace {

struct Options {
  std::vector<std::string> passes{"timing", "stall", "count"};
  fs::path out = "capture";
  std::string kernel;
  std::optional<std::uint64_t> launch;
  std::string process;  // regular expression over the command lines of the program's processes
  unsigned sampling_period = 12;
  double timeout_s = 0;
  std::uint64_t trace_buffer_mib = Settings{}.trace_buffer_mib;
  fs::path sanitizer_library;
  bool keep_join_input = false;
  fs::path counts;  // trace pass: the count pass this invocation ran just before
  std::vector<std::string> program;
};

fs::path library_dir() {
  if (const char* d = std::getenv("ATOMSIM_CAPTURE_LIBDIR")) return d;
  return fs::canonical("/proc/self/exe").parent_path();
}

fs::path library_for(Pass pass) {
  if (pass == Pass::Trace) {
    fs::path lib = library_dir() / "libatomsim_capture_sanitizer.so";
    if (!fs::exists(lib))
      throw CaptureError("trace pass not available: " + lib.string() +
                         " was not built (the Compute Sanitizer headers were not found at build time)");
    return lib;
  }
  fs::path lib = library_dir() / "libatomsim_capture_cupti.so";
  if (!fs::exists(lib)) throw CaptureError("injection library not found: " + lib.string());
  return lib;
}

// The Compute Sanitizer's public library, from the toolkit that nvcc or
// compute-sanitizer on PATH belongs to, or CUDA_HOME, or /usr/local/cuda.
fs::path sanitizer_library() {
  std::vector<fs::path> roots;
  if (const char* home = std::getenv("CUDA_HOME")) roots.emplace_back(home);
  if (const char* path = std::getenv("PATH")) {
    std::string dirs = path;
    for (std::size_t start = 0, end; start <= dirs.size(); start = end + 1) {
      end = dirs.find(':', start);
      if (end == std::string::npos) end = dirs.size();
      fs::path dir = dirs.substr(start, end - start);
      if (fs::exists(dir / "compute-sanitizer")) roots.push_back(dir.parent_path());
    }
  }
  roots.emplace_back("/usr/local/cuda");
  for (const auto& root : roots)
    for (const char* sub : {"compute-sanitizer/libsanitizer-public.so", "lib64/libsanitizer-public.so"})
      if (fs::exists(root / sub)) return root / sub;
  throw CaptureError("trace pass: libsanitizer-public.so not found (looked under CUDA_HOME, the toolkit on PATH "
                     "and /usr/local/cuda)");
}

std::string read_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// Runs the program with the pass's environment; returns a wait status.
int run_program(const Options& o, Pass pass, const fs::path& lib) {
  pid_t pid = fork();
  if (pid < 0) throw CaptureError("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    setenv("CUDA_INJECTION64_PATH", lib.c_str(), 1);
    setenv(kEnvPass, pass_name(pass), 1);
    setenv(kEnvOut, fs::absolute(o.out).c_str(), 1);
    if (!o.kernel.empty()) setenv(kEnvKernel, o.kernel.c_str(), 1); else unsetenv(kEnvKernel);
    if (o.launch) setenv(kEnvLaunch, std::to_string(*o.launch).c_str(), 1); else unsetenv(kEnvLaunch);
    if (!o.process.empty()) setenv(kEnvProcess, o.process.c_str(), 1); else unsetenv(kEnvProcess);
    setenv(kEnvSamplingPeriod, std::to_string(o.sampling_period).c_str(), 1);
    if (pass == Pass::Trace) {
      if (o.counts.empty()) unsetenv(kEnvCounts); else setenv(kEnvCounts, fs::absolute(o.counts).c_str(), 1);
      setenv(kEnvSanitizerLibrary, o.sanitizer_library.c_str(), 1);
      setenv(kEnvPatches, (library_dir() / "atomsim_trace_patches.fatbin").c_str(), 1);
      setenv(kEnvTraceBufferMiB, std::to_string(o.trace_buffer_mib).c_str(), 1);
      if (o.keep_join_input) setenv(kEnvKeepJoinInput, "1", 1); else unsetenv(kEnvKeepJoinInput);
    }
    std::vector<char*> argv;
    for (const auto& a : o.program) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    std::fprintf(stderr, "atomsim-capture: cannot run %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, o.timeout_s > 0 ? WNOHANG : 0);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) throw CaptureError("waiting for the program failed");
    if (o.timeout_s > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > o.timeout_s) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw CaptureError("the program ran past --timeout " + std::to_string(o.timeout_s) + " s and was killed");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Each saved cubin's SASS, of the functions the pass counted in it alone: a
// PyTorch module's whole listing took cuobjdump 15 s (18.8 MB cubin, H200 host).
void disassemble_cubins(const fs::path& out, const nlohmann::json& doc) {
  std::map<std::uint64_t, std::set<std::string>> counted;  // by cubin CRC
  for (const auto& k : doc.at("kernels"))
    for (const auto& pc : k.at("pcs")) counted[pc.at("cubin_crc").get<std::uint64_t>()].insert(pc.at("function").get<std::string>());
  for (const auto& c : doc.at("cubins")) {
    const auto functions = counted.find(c.at("cubin_crc").get<std::uint64_t>());
    if (functions == counted.end()) continue;
    fs::path cubin = out / c.at("file").get<std::string>();
    fs::path sass = cubin;
    sass.replace_extension(".sass");
    fs::path partial = sass;
    partial += ".partial";
    std::string names;
    for (const auto& f : functions->second) names += (names.empty() ? "" : ",") + f;
    std::string cmd = "cuobjdump --dump-sass --function '" + names + "' '" + cubin.string() + "' > '" + partial.string() +
                      "' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) {
      fs::remove(partial);
      throw CaptureError("cuobjdump could not disassemble " + cubin.string());
    }
    fs::rename(partial, sass);
  }
}

// What one process of the program left in its folder (outputs.hpp, ProcessStage).
struct StagedProcess {
  fs::path dir;
  nlohmann::json process;   // pid, parent, command
  nlohmann::json launches;  // seen, matching, selected; null where it exited without its exit handlers
  bool selected = false;    // ran a launch the pass keeps
  std::string error;        // its one-line error, if any
};

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in, nullptr, false);
}

std::vector<StagedProcess> staged_processes(const fs::path& root, const char* pass) {
  std::vector<StagedProcess> all;
  if (!fs::exists(root)) return all;
  for (const auto& entry : fs::directory_iterator(root)) {
    StagedProcess p;
    p.dir = entry.path();
    p.process = read_json(p.dir / "process.json");
    if (p.process.is_discarded()) continue;  // killed while writing it: nothing ran
    if (fs::exists(p.dir / "launches.json")) p.launches = read_json(p.dir / "launches.json");
    p.selected = fs::exists(p.dir / "selected");
    if (fs::exists(error_path(p.dir, pass))) p.error = read_line(error_path(p.dir, pass));
    all.push_back(std::move(p));
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.process.value("pid", 0) < b.process.value("pid", 0);
  });
  return all;
}

std::string describe(const StagedProcess& p) {
  return "process " + std::to_string(p.process.value("pid", 0)) + " (" + p.process.value("command", "") + ")";
}

// Why no process ran a launch the pass keeps, from all their launches.
std::string nothing_selected(const Options& o, const std::vector<StagedProcess>& processes, Pass pass) {
  std::uint64_t seen = 0, matching = 0;
  for (const auto& p : processes) {
    if (!p.launches.is_object()) continue;
    seen += p.launches.value("seen", std::uint64_t{0});
    matching += p.launches.value("matching", std::uint64_t{0});
  }
  if (pass == Pass::Timing || seen == 0) return "the program launched no kernels";
  return nothing_selected_reason(o.kernel, o.launch, seen, matching, 0);
}

// The timing passes of several processes in one document: every launch with
// the process it came from, processes in the order of their first kernel.
nlohmann::json merged_timing(const std::vector<const StagedProcess*>& ran, const char* pass) {
  std::vector<std::pair<nlohmann::json, const StagedProcess*>> docs;
  for (const StagedProcess* p : ran) docs.emplace_back(read_json(result_path(p->dir, pass)), p);
  for (auto& [doc, p] : docs)
    if (doc.is_discarded()) throw CaptureError("timing pass: " + describe(*p) + " wrote an unreadable timing.json");
  auto first_start = [](const nlohmann::json& doc) {
    std::uint64_t first = UINT64_MAX;
    for (const auto& k : doc.at("kernels")) first = std::min(first, k.value("start_ns", UINT64_MAX));
    return first;
  };
  std::stable_sort(docs.begin(), docs.end(), [&](const auto& a, const auto& b) { return first_start(a.first) < first_start(b.first); });
  nlohmann::json merged = docs.front().first;
  merged["kernels"] = nlohmann::json::array();
  merged["processes"] = nlohmann::json::array();
  std::uint64_t seen = 0, selected = 0;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    merged["processes"].push_back(docs[i].second->process);
    seen += docs[i].first.at("selection").value("launches_seen", std::uint64_t{0});
    selected += docs[i].first.at("selection").value("launches_selected", std::uint64_t{0});
    for (auto k : docs[i].first.at("kernels")) {
      k["process"] = i;
      merged["kernels"].push_back(std::move(k));
    }
  }
  merged["selection"]["launches_seen"] = seen;
  merged["selection"]["launches_selected"] = selected;
  if (docs.size() > 1)
    std::stable_sort(merged["kernels"].begin(), merged["kernels"].end(),
                     [](const auto& a, const auto& b) { return a.value("start_ns", 0) < b.value("start_ns", 0); });
  return merged;
}

// A process's files but its markers and result, moved into the output folder:
// the count pass's cubins, the trace and its join inputs (also on a failure,
// whose error names the saved join input there).
void take_files(const StagedProcess& p, const fs::path& out, const char* pass) {
  for (const auto& entry : fs::directory_iterator(p.dir)) {
    const std::string file = entry.path().filename().string();
    if (file == "process.json" || file == "launches.json" || file == "selected" ||
        entry.path() == result_path(p.dir, pass) || entry.path() == error_path(p.dir, pass) ||
        file.find(".partial") != std::string::npos)
      continue;
    fs::rename(entry.path(), out / file);
  }
}

// After the program has ended: the results of the process that ran the
// selected launches go into the output folder, with that process named in
// them (the timing pass merges every process's launches). An error names the
// process where the program has several.
void collect(const Options& o, Pass pass) {
  const char* name = pass_name(pass);
  const fs::path root = process_stage_root(o.out, name);
  const std::vector<StagedProcess> processes = staged_processes(root, name);
  if (processes.empty())
    throw CaptureError(std::string(name) + " pass: the program did no CUDA work (the injection library was never "
                       "loaded" + (o.process.empty() ? "" : " in a process matching --process '" + o.process + "'") + ")");
  auto named = [&](const StagedProcess& p) { return processes.size() > 1 ? describe(p) + ": " : std::string(); };
  std::vector<const StagedProcess*> ran;
  for (const auto& p : processes)
    if (p.selected) ran.push_back(&p);
  if (ran.empty()) {
    for (const auto& p : processes)
      if (!p.error.empty()) throw CaptureError(std::string(name) + " pass: " + named(p) + p.error);
    throw CaptureError(std::string(name) + " pass: " + nothing_selected(o, processes, pass));
  }
  // Several selecting processes are refused before any one's error: --process
  // is the remedy for both (PC sampling in two processes at once gave one of
  // them no samples, H200).
  if (pass != Pass::Timing && ran.size() > 1) {
    std::string list;
    for (const StagedProcess* p : ran) list += (list.empty() ? "" : ", ") + describe(*p);
    throw CaptureError(std::string(name) + " pass: " + std::to_string(ran.size()) +
                       " processes ran selected launches: " + list +
                       "; choose one with --process REGEX (matched against the command line)");
  }
  for (const StagedProcess* p : ran) {
    if (!p->error.empty()) {
      take_files(*p, o.out, name);
      throw CaptureError(std::string(name) + " pass: " + named(*p) + p->error);
    }
    if (!fs::exists(result_path(p->dir, name)))
      throw CaptureError(std::string(name) + " pass: " + (processes.size() > 1 ? describe(*p) : "the program") +
                         " ended without running its exit handlers (_exit, os._exit or abort?), so no results "
                         "were written");
  }
  nlohmann::json doc;
  const StagedProcess* kept = ran.front();
  if (pass == Pass::Timing) {
    doc = merged_timing(ran, name);
  } else {
    doc = read_json(result_path(kept->dir, name));
    if (doc.is_discarded()) throw CaptureError(std::string(name) + " pass: unreadable " + result_path(kept->dir, name).string());
    doc["process"] = kept->process;
    // Kernels the other processes launched (unknown where --process left them
    // alone): Nsight Compute numbers launches across every process.
    std::uint64_t elsewhere = 0;
    for (const auto& p : processes)
      if (&p != kept && p.launches.is_object()) elsewhere += p.launches.value("seen", std::uint64_t{0});
    doc["launches_in_other_processes"] = o.process.empty() ? nlohmann::json(elsewhere) : nlohmann::json();
  }
  take_files(*kept, o.out, name);
  write_json_atomically(result_path(o.out, name), doc);
}

void capture(const Options& o, Pass pass) {
  const char* name = pass_name(pass);
  if (pass == Pass::Counters) {
    const auto start = std::chrono::steady_clock::now();
    capture_counters({.out = o.out, .timeout_s = o.timeout_s, .program = o.program});
    std::cerr << "atomsim-capture: counters pass -> " << result_path(o.out, name).string() << " (" << std::fixed
              << std::setprecision(1) << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()
              << " s)\n";
    return;
  }
  fs::path lib = library_for(pass);
  Options run_options = o;
  if (pass == Pass::Trace) run_options.sanitizer_library = sanitizer_library();
  fs::create_directories(o.out);
  const fs::path root = process_stage_root(o.out, name);
  fs::remove(result_path(o.out, name));
  fs::remove_all(root);
  struct RemoveStage {
    fs::path root;
    ~RemoveStage() { std::error_code ec; fs::remove_all(root, ec); }
  } remove_stage{root};
  const auto start = std::chrono::steady_clock::now();
  int status = run_program(run_options, pass, lib);
  if (WIFSIGNALED(status))
    throw CaptureError(std::string(name) + " pass: the program crashed (" + strsignal(WTERMSIG(status)) +
                       "); nothing written");
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    // An error of the pass's own explains a failing program best.
    for (const auto& p : staged_processes(root, name))
      if (p.selected && !p.error.empty()) {
        take_files(p, o.out, name);
        throw CaptureError(std::string(name) + " pass: " + p.error);
      }
    throw CaptureError(std::string(name) + " pass: the program failed (exit status " + std::to_string(code) +
                       "); its outputs were discarded");
  }
  collect(o, pass);
  if (pass == Pass::Count) {
    if (count_left_to_nsight_compute(o.out))
      count_under_nsight_compute({.out = o.out, .timeout_s = o.timeout_s, .program = o.program});
    std::ifstream in(result_path(o.out, name));
    disassemble_cubins(o.out, nlohmann::json::parse(in));
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << "atomsim-capture: " << name << " pass -> " << result_path(o.out, name).string() << " ("
            << std::fixed << std::setprecision(1) << seconds << " s)\n";
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  int split = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      split = i;
      break;
    }
  for (int i = split + 1; i < argc; ++i) o.program.push_back(argv[i]);

  CLI::App app{"Capture launches, stall samples or instruction counts of an unmodified CUDA program.\n"
               "usage: atomsim-capture [options] -- ./app args..."};
  app.add_option("--pass", o.passes, "passes, each its own run of the program: timing, stall, count, trace, counters (under Nsight Compute)")
      ->delimiter(',');
  app.add_option("--out", o.out, "output folder")->capture_default_str();
  app.add_option("--kernel", o.kernel, "regular expression a kernel's name must match (stall, count, trace)");
  app.add_option("--launch", o.launch, "index among the launches that match --kernel (default: all)");
  app.add_option("--process", o.process,
                 "capture only processes whose command line matches this regular expression (default: every "
                 "process the program starts)");
  app.add_option("--sampling-period", o.sampling_period, "PC sampling: one sample per 2^N cycles")
      ->check(CLI::Range(5, 31))->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "kill the program after this many seconds (0: never)");
  app.add_option("--trace-buffer-mib", o.trace_buffer_mib, "trace pass: device memory for records, MiB")
      ->check(CLI::Range(16, 1 << 20))->capture_default_str();
  app.add_flag("--keep-join-input", o.keep_join_input,
               "trace pass: save each launch's join input (join-input-LAUNCH.json) for atomsim trace rejoin");
  try {
    app.parse(split, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (o.program.empty()) throw CaptureError("no program given: atomsim-capture [options] -- ./app args...");
    // The count pass runs before the trace and counters passes of the same
    // invocation: the trace's warp join uses its counts where observations
    // leave a loop's trip count open, and the counters pass finds the launch
    // the count pass counted.
    std::vector<Pass> passes;
    for (const auto& p : o.passes) passes.push_back(pass_from_name(p));
    std::stable_partition(passes.begin(), passes.end(), [](Pass p) { return p != Pass::Trace && p != Pass::Counters; });
    for (Pass p : passes) {
      Options run = o;
      if (p == Pass::Trace && std::find(passes.begin(), passes.end(), Pass::Count) != passes.end())
        run.counts = result_path(o.out, pass_name(Pass::Count));
      capture(run, p);
    }
  } catch (const std::exception& e) {
    std::cerr << "atomsim-capture: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
