// A capture pass: what one run of the program through atomsim-capture collects.
// The injection library decodes CUPTI's callbacks into these events; a pass never
// subscribes to CUPTI itself, so passes stay small and can't disturb each other.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "tools/capture/settings.hpp"

namespace atomsim::capture {

// A kernel launched as a node of a CUDA graph: CUPTI's ids of the graph and
// the node, and the node's place among the kernels of one launch of the graph.
struct GraphNodeInfo {
  std::uint32_t graph_id = 0;
  std::uint64_t node_id = 0;
  std::uint32_t kernel_index = 0, kernels = 0;
  // Nodes of the graph that run the same function: their PC samples and SASS
  // counts, which name only the graph's launch and the function, cannot be told apart.
  std::uint32_t same_function = 1;
};

struct LaunchInfo {
  std::uint64_t ordinal = 0;           // launch order in the process, from 0
  std::uint32_t correlation_id = 0;    // CUPTI's id, joins activity and sampling records (a graph's launch shares one)
  std::string mangled, name;
  std::array<unsigned, 3> grid{}, block{};
  std::array<unsigned, 3> cluster{};   // thread-block cluster, 0 where none was asked for
  bool cooperative = false;
  std::string api;                     // the driver call that launched it (cuLaunchKernel, cuGraphLaunch, ...)
  std::optional<GraphNodeInfo> graph;
  unsigned dynamic_shared_bytes = 0;
  int registers = 0, static_shared_bytes = 0;
  CUcontext context = nullptr;
  CUfunction function = nullptr;
  bool selected = false;               // matched --kernel/--launch

  nlohmann::json to_json() const;
};

class CapturePass {
 public:
  virtual ~CapturePass() = default;
  virtual void on_context_created(CUcontext) {}
  virtual void on_context_destroying(CUcontext) {}
  virtual void on_module_loaded(CUcontext, const void* cubin, std::size_t size) {}
  virtual void on_launch_begin(const LaunchInfo&) {}
  virtual void on_launch_end(const LaunchInfo&) {}
  // At process exit: the pass's part of the output document.
  virtual nlohmann::json finish() = 0;
  // True when the pass's output is about selected launches only (so a filter
  // that selects nothing is an error); the timing pass records every launch.
  virtual bool uses_selection() const { return true; }
};

std::unique_ptr<CapturePass> make_timing_pass(const Settings&);
std::unique_ptr<CapturePass> make_stall_pass(const Settings&);
std::unique_ptr<CapturePass> make_count_pass(const Settings&);

// Throws CaptureError for a selected kernel of a graph that runs its function
// in more than one node: `what` (PC samples, SASS counts) of one launch of a
// graph name only the launch and the function, so the nodes cannot be told apart.
void refuse_shared_graph_function(const LaunchInfo& launch, const char* what);

// Throws CaptureError naming the call when a CUPTI call fails.
void check_cupti(CUptiResult result, const char* call);
#define ATOMSIM_CUPTI(call) ::atomsim::capture::check_cupti((call), #call)

}  // namespace atomsim::capture
