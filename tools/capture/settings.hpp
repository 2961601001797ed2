// What one capture run was asked to do, read from the environment that the
// launcher (atomsim-capture) sets for the injected library.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string>

namespace atomsim::capture {

struct CaptureError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

enum class Pass { Timing, Stall, Count, Trace, Counters };

const char* pass_name(Pass pass);
Pass pass_from_name(const std::string& name);  // throws CaptureError

// Environment variables shared by the launcher and the injected libraries.
inline constexpr const char* kEnvPass = "ATOMSIM_CAPTURE_PASS";
inline constexpr const char* kEnvOut = "ATOMSIM_CAPTURE_OUT";
inline constexpr const char* kEnvKernel = "ATOMSIM_CAPTURE_KERNEL";
inline constexpr const char* kEnvLaunch = "ATOMSIM_CAPTURE_LAUNCH";
inline constexpr const char* kEnvSamplingPeriod = "ATOMSIM_CAPTURE_SAMPLING_PERIOD";
// Trace pass: the Compute Sanitizer library, the device patches and the record buffer size.
inline constexpr const char* kEnvSanitizerLibrary = "ATOMSIM_CAPTURE_SANITIZER_LIBRARY";
inline constexpr const char* kEnvPatches = "ATOMSIM_CAPTURE_PATCHES";
inline constexpr const char* kEnvTraceBufferMiB = "ATOMSIM_CAPTURE_TRACE_BUFFER_MIB";
inline constexpr const char* kEnvVerbose = "ATOMSIM_CAPTURE_VERBOSE";
// Trace pass: the count pass of the same launch, run just before (the join uses its counts).
inline constexpr const char* kEnvCounts = "ATOMSIM_CAPTURE_COUNTS";
// Trace pass: save every launch's join input, not only a failing one's.
inline constexpr const char* kEnvKeepJoinInput = "ATOMSIM_CAPTURE_KEEP_JOIN_INPUT";
// Only processes whose command line matches this expression are captured.
inline constexpr const char* kEnvProcess = "ATOMSIM_CAPTURE_PROCESS";

struct Settings {
  Pass pass = Pass::Timing;
  // Where this process writes: its own folder under the output folder
  // (process_stage), from which the launcher takes the results it keeps.
  std::filesystem::path out_dir;
  std::filesystem::path final_out_dir;   // the output folder itself, as the user named it
  std::string process_pattern;           // empty: every process
  std::string kernel_pattern;            // empty: every kernel
  std::optional<std::uint64_t> launch;   // index among the launches whose name matches
  std::uint32_t sampling_period = 12;    // PC sampling: one sample per 2^N cycles per SM
  std::uint64_t trace_buffer_mib = 4096; // trace pass: device memory for records
  bool verbose = false;                  // progress lines on stderr
  std::filesystem::path counts;          // trace pass: count.json of the same launch, or empty
  bool keep_join_input = false;          // trace pass: join-input-LAUNCH.json for every traced launch

  static Settings from_environment();    // throws CaptureError naming the variable

  bool name_matches(const std::string& mangled, const std::string& demangled) const;
  bool process_matches(const std::string& command_line) const;
  // Whether a cubin (an ELF file) defines a function that name_matches; true
  // where its symbol table cannot be read, so that nothing selected is missed.
  bool cubin_defines_selected(const char* cubin, std::size_t size) const;

 private:
  std::optional<std::regex> kernel_regex_, process_regex_;
};

// Why nothing was selected from launches a filter saw (empty when something was).
std::string nothing_selected_reason(const std::string& kernel_pattern, std::optional<std::uint64_t> launch,
                                    std::uint64_t seen, std::uint64_t matching, std::uint64_t selected);

// Chooses launches: counts launches whose name matches and selects the one asked for.
class LaunchSelector {
 public:
  explicit LaunchSelector(const Settings& settings) : settings_(settings) {}
  // Called once per launch, in launch order.
  bool select(const std::string& mangled, const std::string& demangled);
  std::uint64_t launches_seen() const { return seen_; }
  std::uint64_t launches_matching() const { return matching_; }
  std::uint64_t launches_selected() const { return selected_; }
  // Empty when something was selected; otherwise why nothing was.
  std::string nothing_selected_reason() const;

 private:
  const Settings& settings_;
  std::uint64_t seen_ = 0, matching_ = 0, selected_ = 0;
};

std::string demangle(const char* name);

}  // namespace atomsim::capture
