// What a driver call launches, decoded from CUPTI's callbacks: one kernel for
// cuLaunchKernel, cuLaunchKernelEx (with its cluster and cooperative
// attributes) and cuLaunchCooperativeKernel; every kernel node of the graph
// for cuGraphLaunch. A launch recorded into a graph by stream capture runs
// nothing then: its kernels are counted when the graph is launched.
#pragma once

#include <cuda.h>
#include <cupti.h>

#include <map>
#include <vector>

#include "tools/capture/pass.hpp"

namespace atomsim::capture {

// The driver calls that launch kernels, to subscribe to.
const std::vector<CUpti_CallbackId>& launch_callbacks();

// The kernels of every instantiated graph, read when it is instantiated (a
// graph's executable copy keeps the nodes it had then), in the graph's node
// order, child graphs' kernels in place of their nodes.
class GraphKernels {
 public:
  void instantiated(CUgraph graph, CUgraphExec exec);  // throws CaptureError
  void destroyed(CUgraphExec exec) { execs_.erase(exec); }
  // Empty for a graph instantiated before the capture began watching.
  const std::vector<LaunchInfo>& kernels_of(CUgraphExec exec) const;

 private:
  std::map<CUgraphExec, std::vector<LaunchInfo>> execs_;
};

// The kernels a launch call runs, with everything but their ordinal and
// selection filled in; empty for a launch that stream capture records.
std::vector<LaunchInfo> decode_launches(CUpti_CallbackId cbid, const CUpti_CallbackData* cb, const GraphKernels& graphs);

}  // namespace atomsim::capture
