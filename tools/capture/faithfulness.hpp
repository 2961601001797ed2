// Is a captured trace faithful to the GPU? Sets one kernel of a trace beside
// the count pass of the same launch (tools/capture): warp instructions per
// class, and thread instructions (active-mask popcounts) per class, each
// compared with what the GPU counted for the same instructions. Masks of
// instructions whose guard is observed (global memory, shuffles, barriers,
// exits, branches) hold predicate-on lanes; those of the others hold executing
// lanes (docs/capture.md), and each is compared with the matching count.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "traces/trace.hpp"

namespace atomsim::compare {

struct ClassCounts {
  std::uint64_t trace_warp = 0, gpu_warp = 0;
  std::uint64_t trace_threads = 0, gpu_threads = 0;
};

struct FaithfulnessReport {
  std::string kernel;
  std::array<ClassCounts, trace::kOpClassCount> classes{};
  ClassCounts total;
  std::uint64_t pcs_differing = 0;     // instructions whose warp counts differ
  // Instructions (pc offsets) whose counts differ between the GPU's own count
  // passes of the launch: the kernel's instruction stream depends on timing there.
  std::vector<std::uint64_t> timing_dependent_pcs;
  std::vector<std::uint64_t> stable_pcs_differing;  // other instructions whose warp or thread counts differ from the trace
  nlohmann::json atomic_replay;        // from the trace pass's trace.json, when given
  bool passed = false;
  std::string verdict;                 // why it failed, or "faithful"

  nlohmann::json to_json() const;
};

// Exact for atomics, global loads and stores; within `tolerance` (relative) for
// all instructions, in warp and in thread counts; the atomic replay recorded by
// the trace pass must have passed when `capture_json` is given.
// For a kernel whose instruction stream depends on timing (a spin loop, a
// race), the trace and the count pass, two runs, cannot agree everywhere:
// `repeated_counts`, further count passes of the same launch, mark the
// instructions the GPU itself counts differently from run to run. The trace is
// then faithful outside them if every other instruction's warp and thread
// counts equal the count pass's and the atomic replay passed.
// Throws DatasetError naming the file on unreadable or mismatched inputs.
FaithfulnessReport check_faithfulness(const std::filesystem::path& trace_path, std::size_t kernel,
                                      const std::filesystem::path& count_json,
                                      const std::vector<std::filesystem::path>& repeated_counts,
                                      const std::filesystem::path& capture_json, double tolerance = 0.01);

void print_faithfulness(const FaithfulnessReport& r, std::ostream& out);

}  // namespace atomsim::compare
