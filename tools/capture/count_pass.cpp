// Count pass: per launch and per PC, executed warp- and thread-instructions
// (CUPTI SASS metrics, which patch the code: never time in this pass), and every
// loaded cubin saved so that its SASS can be set beside the counts.
#include <cupti_pcsampling.h>
#include <cupti_profiler_target.h>
#include <cupti_sass_metrics.h>
#include <cupti_target.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <vector>

#include "tools/capture/counters_pass.hpp"
#include "tools/capture/outputs.hpp"
#include "tools/capture/pass.hpp"

namespace atomsim::capture {
namespace {

constexpr const char* kWarpMetric = "smsp__sass_inst_executed";
constexpr const char* kThreadMetric = "smsp__sass_thread_inst_executed";
// Threads whose predicate was on: what a trace's active masks count.
constexpr const char* kPredOnMetric = "smsp__sass_thread_inst_executed_pred_on";

struct PcCounts {
  std::string function;
  std::uint64_t warp = 0, thread = 0, thread_pred_on = 0;
};

struct PcKey {
  std::uint32_t cubin_crc, function_index, pc_offset;
  auto operator<=>(const PcKey&) const = default;
};

class CountPass final : public CapturePass {
 public:
  explicit CountPass(const Settings& s) : settings_(s) {}

  // One launch is counted per run: the first selected one. Once its counters
  // had been flushed, CUPTI counted nothing in later launches, even with
  // collection disabled and enabled again, so a second launch needs its own run
  // (--launch picks it). Patching is lazy: only functions that run while
  // collection is enabled are patched, the selected kernel alone. Patching
  // every loaded function failed in programs that load thousands of kernels
  // (PyTorch: CUPTI_ERROR_INVALID_PARAMETER) and is slow there.
  void on_launch_begin(const LaunchInfo& launch) override {
    if (!launch.selected || counted_ || enabled_) return;
    refuse_shared_graph_function(launch, "SASS counts");
    // H200, CUDA 13.0: enabling SASS metrics at the launch of a graph of two
    // kernel nodes lost the selected node's work in that launch (the program's
    // histogram held 3 of its 4 launches), whether patching was lazy or eager,
    // with modules loaded lazily or eagerly; a one-node graph counted right.
    // Such a node is counted afterwards under Nsight Compute, which profiles
    // graph nodes one by one (count_under_nsight_compute); this run keeps its cubins.
    if (launch.graph && launch.graph->kernels > 1) {
      nlohmann::json k = launch.to_json();
      k["counted_by"] = kCountedByNsightCompute;
      k["cubin_crc"] = cubin_defining(launch.mangled);
      kernels_.push_back(std::move(k));
      counted_ = true;
      deferred_ordinal_ = launch.ordinal;
      return;
    }
    configure(launch.context);
    CUpti_SassMetricsEnable_Params enable{CUpti_SassMetricsEnable_Params_STRUCT_SIZE};
    enable.ctx = context_;
    enable.enableLazyPatching = 1;
    ATOMSIM_CUPTI(cuptiSassMetricsEnable(&enable));
    enabled_ = true;
  }

  void configure(CUcontext ctx) {
    context_ = ctx;
    // The profiler can't start inside InitializeInjection, which runs during cuInit.
    CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
    ATOMSIM_CUPTI(cuptiProfilerInitialize(&init));
    CUdevice dev = 0;
    cuCtxPushCurrent(ctx);
    cuCtxGetDevice(&dev);
    cuCtxPopCurrent(nullptr);
    device_index_ = static_cast<std::uint32_t>(dev);
    CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
    chip.deviceIndex = device_index_;
    ATOMSIM_CUPTI(cuptiDeviceGetChipName(&chip));
    std::vector<CUpti_SassMetrics_Config> configs;
    for (auto [metric, id] : {std::pair{kWarpMetric, &warp_metric_id_}, std::pair{kThreadMetric, &thread_metric_id_},
                              std::pair{kPredOnMetric, &pred_on_metric_id_}}) {
      CUpti_SassMetrics_GetProperties_Params props{CUpti_SassMetrics_GetProperties_Params_STRUCT_SIZE};
      props.pChipName = chip.pChipName;
      props.pMetricName = metric;
      ATOMSIM_CUPTI(cuptiSassMetricsGetProperties(&props));
      configs.push_back({props.metric.metricId, CUPTI_SASS_METRICS_OUTPUT_GRANULARITY_GPU});
      *id = props.metric.metricId;
    }
    CUpti_SassMetricsSetConfig_Params set{CUpti_SassMetricsSetConfig_Params_STRUCT_SIZE};
    set.pConfigs = configs.data();
    set.numOfMetricConfig = configs.size();
    set.deviceIndex = device_index_;
    ATOMSIM_CUPTI(cuptiSassMetricsSetConfig(&set));
  }

  // Only cubins of selected kernels are kept: a PyTorch program loads hundreds of megabytes of others.
  void on_module_loaded(CUcontext, const void* cubin, std::size_t size) override {
    if (!settings_.cubin_defines_selected(static_cast<const char*>(cubin), size)) return;
    CUpti_GetCubinCrcParams crc{CUpti_GetCubinCrcParamsSize};
    crc.cubinSize = size;
    crc.cubin = cubin;
    ATOMSIM_CUPTI(cuptiGetCubinCrc(&crc));
    char file[32];
    std::snprintf(file, sizeof file, "cubin-%08x.cubin", static_cast<unsigned>(crc.cubinCrc));
    if (cubins_.emplace(static_cast<std::uint32_t>(crc.cubinCrc), file).second)
      write_file_atomically(settings_.out_dir / file, std::string(static_cast<const char*>(cubin), size));
  }

  void on_launch_end(const LaunchInfo& launch) override {
    if (!launch.selected || launch.ordinal == deferred_ordinal_) return;
    if (!enabled_ || counted_) {
      ++selected_but_not_counted_;
      return;
    }
    cuCtxSynchronize();
    auto counts = flush();
    // A graph's launch runs its other kernels while counting too: only the
    // selected kernel's instructions are its own.
    if (launch.graph) std::erase_if(counts, [&](const auto& entry) { return entry.second.function != launch.mangled; });
    unset();
    counted_ = true;
    nlohmann::json k = launch.to_json();
    std::uint64_t warp = 0, thread = 0, pred_on = 0;
    nlohmann::json pcs = nlohmann::json::array();
    for (const auto& [key, c] : counts) {
      warp += c.warp;
      thread += c.thread;
      pred_on += c.thread_pred_on;
      pcs.push_back({{"cubin_crc", key.cubin_crc}, {"function_index", key.function_index}, {"function", c.function},
                     {"pc_offset", key.pc_offset}, {"warp_instructions", c.warp}, {"thread_instructions", c.thread},
                     {"thread_instructions_pred_on", c.thread_pred_on}});
    }
    k["warp_instructions"] = warp;
    k["thread_instructions"] = thread;
    k["thread_instructions_pred_on"] = pred_on;
    k["pcs"] = pcs;
    kernels_.push_back(std::move(k));
  }

  void on_context_destroying(CUcontext ctx) override {
    if (ctx != context_) return;
    unset();
  }

  nlohmann::json finish() override {
    unset();
    nlohmann::json cubins = nlohmann::json::array();
    for (const auto& [crc, file] : cubins_) cubins.push_back({{"cubin_crc", crc}, {"file", file}});
    return {{"metrics", {kWarpMetric, kThreadMetric, kPredOnMetric}}, {"cubins", cubins},
            {"selected_launches_not_counted", selected_but_not_counted_}, {"kernels", kernels_}};
  }

 private:
  // The saved cubin that defines `mangled` (its name is in the cubin's string table).
  std::uint32_t cubin_defining(const std::string& mangled) const {
    std::vector<std::uint32_t> found;
    for (const auto& [crc, file] : cubins_)
      if (std::ifstream in{settings_.out_dir / file, std::ios::binary};
          std::string(std::istreambuf_iterator<char>(in), {}).find(mangled) != std::string::npos)
        found.push_back(crc);
    if (found.size() != 1)
      throw CaptureError(mangled + ": " + std::to_string(found.size()) + " loaded cubins define it; its counts could not "
                         "be placed in one");
    return found.front();
  }

  std::map<PcKey, PcCounts> flush() {
    std::map<PcKey, PcCounts> out;
    CUpti_SassMetricsGetDataProperties_Params props{CUpti_SassMetricsGetDataProperties_Params_STRUCT_SIZE};
    props.ctx = context_;
    ATOMSIM_CUPTI(cuptiSassMetricsGetDataProperties(&props));
    if (props.numOfInstances == 0 || props.numOfPatchedInstructionRecords == 0) return out;
    std::vector<CUpti_SassMetrics_Data> records(props.numOfPatchedInstructionRecords);
    std::vector<std::vector<CUpti_SassMetrics_InstanceValue>> values(
        records.size(), std::vector<CUpti_SassMetrics_InstanceValue>(props.numOfInstances));
    for (size_t i = 0; i < records.size(); ++i) {
      records[i].structSize = sizeof(CUpti_SassMetrics_Data);
      records[i].pInstanceValues = values[i].data();
    }
    CUpti_SassMetricsFlushData_Params flush{CUpti_SassMetricsFlushData_Params_STRUCT_SIZE};
    flush.ctx = context_;
    flush.numOfPatchedInstructionRecords = records.size();
    flush.numOfInstances = props.numOfInstances;
    flush.pMetricsData = records.data();
    ATOMSIM_CUPTI(cuptiSassMetricsFlushData(&flush));
    for (size_t i = 0; i < records.size(); ++i) {
      const auto& r = records[i];
      PcCounts& c = out[PcKey{r.cubinCrc, r.functionIndex, r.pcOffset}];
      if (r.functionName) c.function = r.functionName;
      for (const auto& v : values[i]) {
        if (v.metricId == warp_metric_id_) c.warp += v.value;
        if (v.metricId == thread_metric_id_) c.thread += v.value;
        if (v.metricId == pred_on_metric_id_) c.thread_pred_on += v.value;
      }
      std::free(const_cast<char*>(r.functionName));
    }
    return out;
  }

  void disable() {
    if (!enabled_) return;
    CUpti_SassMetricsDisable_Params off{CUpti_SassMetricsDisable_Params_STRUCT_SIZE};
    off.ctx = context_;
    ATOMSIM_CUPTI(cuptiSassMetricsDisable(&off));
    enabled_ = false;
  }

  void unset() {
    if (!context_) return;
    disable();
    CUpti_SassMetricsUnsetConfig_Params unset{CUpti_SassMetricsUnsetConfig_Params_STRUCT_SIZE};
    unset.deviceIndex = device_index_;
    ATOMSIM_CUPTI(cuptiSassMetricsUnsetConfig(&unset));
    context_ = nullptr;
  }

  const Settings& settings_;
  CUcontext context_ = nullptr;
  bool enabled_ = false, counted_ = false;
  std::uint64_t deferred_ordinal_ = UINT64_MAX;       // the launch left to Nsight Compute
  std::uint64_t selected_but_not_counted_ = 0;
  std::uint32_t device_index_ = 0;
  std::uint64_t warp_metric_id_ = 0, thread_metric_id_ = 0, pred_on_metric_id_ = 0;
  std::map<std::uint32_t, std::string> cubins_;
  nlohmann::json kernels_ = nlohmann::json::array();
};

}  // namespace

std::unique_ptr<CapturePass> make_count_pass(const Settings& s) { return std::make_unique<CountPass>(s); }

}  // namespace atomsim::capture
