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

}  // namespace atomsim::capture
