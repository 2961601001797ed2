// Timing pass: every kernel launch with its duration, from CUPTI's activity
// records (the GPU's own start and end timestamps); nothing is patched.
#include <cupti.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tools/capture/pass.hpp"

namespace atomsim::capture {
namespace {

struct KernelRecord {
  std::uint64_t start_ns = 0, end_ns = 0;
  std::uint32_t stream = 0;
  std::uint64_t graph_node_id = 0;
  std::string mangled;
  bool taken = false;  // matched to a launch
};

std::mutex g_records_mutex;
// By correlation id: one record for a kernel's own launch, one per kernel node for a graph's.
std::map<std::uint32_t, std::vector<KernelRecord>>* g_records = nullptr;

constexpr std::size_t kBufferBytes = 8 << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = kBufferBytes;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::lock_guard lock(g_records_mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    (*g_records)[k->correlationId].push_back({k->start, k->end, k->streamId, k->graphNodeId, k->name ? k->name : ""});
  }
  std::free(buffer);
}

// The record of a launch: its correlation id's only one, or for a kernel node
// of a graph the record of that node, else the first not yet taken of its
// function (the graph's kernels in the order they started).
KernelRecord* record_of(std::vector<KernelRecord>& records, const LaunchInfo& launch) {
  if (!launch.graph) return records.size() == 1 ? &records.front() : nullptr;
  for (KernelRecord& r : records)
    if (!r.taken && r.graph_node_id == launch.graph->node_id) return &r;
  KernelRecord* first = nullptr;
  for (KernelRecord& r : records)
    if (!r.taken && r.mangled == launch.mangled && (!first || r.start_ns < first->start_ns)) first = &r;
  return first;
}

class TimingPass final : public CapturePass {
 public:
  TimingPass() {
    g_records = &records_;
    ATOMSIM_CUPTI(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    ATOMSIM_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  }

  void on_launch_begin(const LaunchInfo& launch) override { launches_.push_back(launch); }

  bool uses_selection() const override { return false; }

  nlohmann::json finish() override {
    ATOMSIM_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    nlohmann::json kernels = nlohmann::json::array();
    std::lock_guard lock(g_records_mutex);
    for (const LaunchInfo& launch : launches_) {
      nlohmann::json k = launch.to_json();
      auto it = records_.find(launch.correlation_id);
      KernelRecord* r = it == records_.end() ? nullptr : record_of(it->second, launch);
      if (!r)
        throw CaptureError("no activity record for launch " + std::to_string(launch.ordinal) + " (" + launch.name +
                           "): the program exited before the kernel completed?");
      r->taken = true;
      k["stream"] = r->stream;
      k["start_ns"] = r->start_ns;
      k["end_ns"] = r->end_ns;
      k["duration_ns"] = r->end_ns - r->start_ns;
      kernels.push_back(std::move(k));
    }
    return {{"kernels", kernels}};
  }

 private:
  std::vector<LaunchInfo> launches_;
  std::map<std::uint32_t, std::vector<KernelRecord>> records_;
};

}  // namespace

std::unique_ptr<CapturePass> make_timing_pass(const Settings&) { return std::make_unique<TimingPass>(); }

}  // namespace atomsim::capture
