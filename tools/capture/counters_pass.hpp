// The counters pass: the launch the count pass counted (count.json in the same
// folder), again under Nsight Compute, for what neither CUPTI's SASS metrics nor
// the Compute Sanitizer can see: how many passes the ADU pipe made (a MATCH
// takes one per distinct value among its lanes) and each shared-memory
// instruction's wavefronts. Written as <out>/counters.json (docs/capture.md).
// The launch is found by its place among all the process's launches, as the
// count pass recorded it, and checked by its mangled name: Nsight Compute
// demangles names its own way, so a --kernel expression need not match there.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace atomsim::capture {

struct CountersRequest {
  std::filesystem::path out;  // folder with the count pass's count.json; counters.json goes here
  double timeout_s = 0;       // 0: none
  std::vector<std::string> program;
};

// Throws CaptureError with one line when there is no count pass of one launch,
// Nsight Compute is missing, the program fails, or the launch profiled is not
// the one counted; counters.json is then absent.
void capture_counters(const CountersRequest& request);

// A count pass's record of a launch whose counts CUPTI's SASS metrics would
// lose (a node of a graph of several kernels: count_pass.cpp) says so with
// "counted_by": kCountedByNsightCompute and no "pcs".
inline constexpr const char* kCountedByNsightCompute = "Nsight Compute";
bool count_left_to_nsight_compute(const std::filesystem::path& out);
// Profiles that launch under Nsight Compute and writes its per-pc counts into
// count.json. Throws CaptureError with one line, leaving count.json as it was.
void count_under_nsight_compute(const CountersRequest& request);

}  // namespace atomsim::capture
