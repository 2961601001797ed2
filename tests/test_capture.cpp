#include <catch2/catch.hpp>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim_helpers.hpp"
#include "tools/capture/settings.hpp"

using namespace atomsim;
using namespace atomsim::capture;
namespace fs = std::filesystem;

namespace {

testing::CommandResult run_capture(const std::string& args) {
  return testing::run_command(std::string(ATOMSIM_CAPTURE_BINARY) + " " + args);
}

}  // namespace

TEST_CASE("Capture: launches are selected by name and index among matches", "[capture]") {
  setenv(kEnvPass, "stall", 1);
  setenv(kEnvOut, "/tmp", 1);
  setenv(kEnvKernel, "atomics_", 1);
  setenv(kEnvLaunch, "1", 1);
  Settings s = Settings::from_environment();
  LaunchSelector sel(s);
  REQUIRE(!sel.select("_Z4initv", "init()"));
  REQUIRE(!sel.select("_Z8atomics_v", "atomics_()"));  // match 0
  REQUIRE(!sel.select("_Z4initv", "init()"));
  REQUIRE(sel.select("_Z8atomics_v", "atomics_()"));   // match 1
  REQUIRE(!sel.select("_Z8atomics_v", "atomics_()"));
  REQUIRE(sel.launches_seen() == 5);
  REQUIRE(sel.launches_matching() == 3);
  REQUIRE(sel.nothing_selected_reason().empty());

  LaunchSelector none(s);
  none.select("_Z4initv", "init()");
  REQUIRE(none.nothing_selected_reason() == "no kernel matching 'atomics_' among 1 launches");

  setenv(kEnvLaunch, "x1", 1);
  REQUIRE_THROWS_WITH(Settings::from_environment(), Catch::Contains("ATOMSIM_CAPTURE_LAUNCH='x1'"));
  setenv(kEnvKernel, "([", 1);
  unsetenv(kEnvLaunch);
  REQUIRE_THROWS_WITH(Settings::from_environment(), Catch::Contains("not a valid regular expression"));
  for (const char* v : {kEnvPass, kEnvOut, kEnvKernel}) unsetenv(v);
}

// Only modules that define a selected kernel are patched (trace pass) and
// kept (count pass): a PyTorch program loads thousands of kernels.
TEST_CASE("Capture: a cubin is known to hold a selected kernel from its symbol table", "[capture]") {
  std::ifstream in(std::string(ATOMSIM_SOURCE_DIR) + "/traces/datasets/h100/microbench/grid/cubin-f5ed83bc.cubin", std::ios::binary);
  const std::string cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE(cubin.size() > 1000);
  setenv(kEnvPass, "count", 1);
  setenv(kEnvOut, "/tmp", 1);
  auto defines = [&](const char* filter, const std::string& bytes) {
    setenv(kEnvKernel, filter, 1);
    return Settings::from_environment().cubin_defines_selected(bytes.data(), bytes.size());
  };
  REQUIRE(defines("microbench_sws", cubin));             // mangled _Z14microbench_swsILi9EEv10KernelArgs
  REQUIRE(defines("microbench_baseline<9>", cubin));     // demangled
  REQUIRE(!defines("scatter_gather", cubin));
  REQUIRE(defines("scatter_gather", "not an ELF file"));  // unreadable: patched, to be safe
  REQUIRE(defines("scatter_gather", cubin.substr(0, 200)));
  unsetenv(kEnvKernel);
  REQUIRE(Settings::from_environment().cubin_defines_selected(cubin.data(), cubin.size()));  // no filter: every kernel
  for (const char* v : {kEnvPass, kEnvOut}) unsetenv(v);
}

TEST_CASE("Capture: programs that do no CUDA work, crash or are missing fail with one line", "[capture][errors]") {
  fs::path out = testing::temp_trace("capture-out");
  auto no_cuda = run_capture("--pass timing --out " + out.string() + " -- /bin/true");
  REQUIRE(no_cuda.code == 1);
  REQUIRE(no_cuda.err == "atomsim-capture: timing pass: the program did no CUDA work (the injection library was never loaded)\n");
  auto crash = run_capture("--pass timing --out " + out.string() + " -- /bin/sh -c 'kill -SEGV $$'");
  REQUIRE(crash.code == 1);
  REQUIRE(crash.err.find("crashed (Segmentation fault); nothing written") != std::string::npos);
  auto missing = run_capture("--out " + out.string() + " -- /no/such/program");
  REQUIRE(missing.code == 1);
  REQUIRE(missing.err.find("cannot run /no/such/program") != std::string::npos);
  auto hang = run_capture("--pass timing --timeout 0.5 --out " + out.string() + " -- /bin/sleep 30");
  REQUIRE(hang.code == 1);
  REQUIRE(hang.err.find("ran past --timeout") != std::string::npos);
  REQUIRE(run_capture("--pass bogus -- /bin/true").err ==
          "atomsim-capture: unknown pass 'bogus' (timing, stall, count, trace or counters)\n");
  // The counters pass profiles the launch a count pass counted, so it needs one.
  auto counters = run_capture("--pass counters --out " + out.string() + " -- /bin/true");
  REQUIRE(counters.code == 1);
  REQUIRE(counters.err == "atomsim-capture: counters pass: " + (out / "count.json").string() +
                              " not found (run the count pass of the launch first: --pass count,counters)\n");
  // Without the Sanitizer (library not built, or its runtime not installed) the trace pass says so.
  auto trace = run_capture("--pass trace --out " + out.string() + " -- /bin/true");
  REQUIRE(trace.code == 1);
  REQUIRE((trace.err.find("trace pass not available") != std::string::npos ||
           trace.err.find("trace pass: libsanitizer-public.so not found") != std::string::npos ||
           trace.err.find("trace pass: the program did no CUDA work") != std::string::npos));
  REQUIRE(std::count(trace.err.begin(), trace.err.end(), '\n') == 1);
  REQUIRE(run_capture("--pass timing").code == 1);
  // Nothing half-written is left behind.
  for (const auto& e : fs::directory_iterator(out)) FAIL("left behind: " << e.path());
  fs::remove_all(out);
}
