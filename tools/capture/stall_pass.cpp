// Stall pass: per launch and per PC, how many PC samples found the warp in each
// stall reason (CUPTI PC sampling, kernel-serialized so every sample carries its
// launch). Reasons are mapped by name to the simulator's vocabulary, Nsight's.
#include <cupti_pcsampling.h>

#include <map>
#include <tuple>
#include <vector>

#include "tools/capture/pass.hpp"

namespace atomsim::capture {
namespace {

constexpr const char* kReasonPrefix = "smsp__pcsamp_warps_issue_stalled_";
constexpr std::size_t kPcsPerFetch = 4096;

struct PcKey {
  std::uint64_t cubin_crc, pc_offset;
  std::uint32_t function_index;
  auto operator<=>(const PcKey&) const = default;
};

struct SampleBuffer {
  CUpti_PCSamplingData data{};
  std::vector<CUpti_PCSamplingPCData> pcs;
  std::vector<std::vector<CUpti_PCSamplingStallReason>> reasons;

  void allocate(std::size_t reason_count) {
    pcs.assign(kPcsPerFetch, CUpti_PCSamplingPCData{});
    reasons.assign(kPcsPerFetch, std::vector<CUpti_PCSamplingStallReason>(reason_count));
    for (std::size_t i = 0; i < kPcsPerFetch; ++i) {
      pcs[i].size = sizeof(CUpti_PCSamplingPCData);
      pcs[i].stallReason = reasons[i].data();
    }
    data = CUpti_PCSamplingData{};
    data.size = sizeof(CUpti_PCSamplingData);
    data.collectNumPcs = kPcsPerFetch;
    data.pPcData = pcs.data();
  }
};

struct LaunchSamples {
  LaunchInfo launch;
  std::map<std::string, std::uint64_t> reasons;  // by reason name, issued and not
  std::map<PcKey, std::pair<std::string, std::map<std::string, std::uint64_t>>> pcs;
  std::uint64_t total = 0;
};

class StallPass final : public CapturePass {
 public:
  explicit StallPass(const Settings& s) : settings_(s) {}

  void on_context_created(CUcontext ctx) override {
    if (context_) throw CaptureError("the stall pass samples one CUDA context; the program created a second");
    context_ = ctx;
    CUpti_PCSamplingEnableParams enable{CUpti_PCSamplingEnableParamsSize};
    enable.ctx = ctx;
    ATOMSIM_CUPTI(cuptiPCSamplingEnable(&enable));
    read_reason_names(ctx);
    configure(ctx);
  }

  void on_launch_begin(const LaunchInfo& launch) override {
    if (!launch.selected) return;
    refuse_shared_graph_function(launch, "PC samples");
    pending_[launch.correlation_id].push_back(LaunchSamples{launch});
  }

  void on_launch_end(const LaunchInfo& launch) override {
    cuCtxSynchronize();
    drain();
  }

  void on_context_destroying(CUcontext ctx) override {
    if (ctx != context_) return;
    drain();
    CUpti_PCSamplingDisableParams disable{CUpti_PCSamplingDisableParamsSize};
    disable.ctx = ctx;
    ATOMSIM_CUPTI(cuptiPCSamplingDisable(&disable));
    take(configured_.data);  // records CUPTI flushed while disabling
    context_ = nullptr;
  }

  nlohmann::json finish() override {
    if (context_) {
      cuCtxSynchronize();
      drain();
    }
    if (buffer_full_)
      throw CaptureError("the PC-sampling hardware buffer filled and samples were lost; raise "
                         "--sampling-period (fewer samples)");
    nlohmann::json kernels = nlohmann::json::array();
    for (auto& [id, launches] : pending_)
      for (const LaunchSamples& s : launches) {
        if (s.total == 0)
          throw CaptureError("no PC samples of launch " + std::to_string(s.launch.ordinal) + " (" + s.launch.name +
                             "): shorter than one sampling period? (lower --sampling-period)");
        kernels.push_back(launch_json(s));
      }
    return {{"sampling_period_log2_cycles", settings_.sampling_period}, {"dropped_samples", dropped_},
            {"samples_reported", samples_reported_}, {"pc_records_of_other_launches", pcs_of_other_launches_},
            {"kernels", kernels}};
  }

 private:
  void read_reason_names(CUcontext ctx) {
    size_t count = 0;
    CUpti_PCSamplingGetNumStallReasonsParams num{CUpti_PCSamplingGetNumStallReasonsParamsSize};
    num.ctx = ctx;
    num.numStallReasons = &count;
    ATOMSIM_CUPTI(cuptiPCSamplingGetNumStallReasons(&num));
    std::vector<std::vector<char>> storage(count, std::vector<char>(CUPTI_STALL_REASON_STRING_SIZE));
    std::vector<char*> names(count);
    for (size_t i = 0; i < count; ++i) names[i] = storage[i].data();
    reason_index_.resize(count);
    CUpti_PCSamplingGetStallReasonsParams get{CUpti_PCSamplingGetStallReasonsParamsSize};
    get.ctx = ctx;
    get.numStallReasons = count;
    get.stallReasonIndex = reason_index_.data();
    get.stallReasons = names.data();
    ATOMSIM_CUPTI(cuptiPCSamplingGetStallReasons(&get));
    for (size_t i = 0; i < count; ++i) {
      std::string name = names[i];
      if (name.rfind(kReasonPrefix, 0) == 0) name = name.substr(std::string(kReasonPrefix).size());
      reason_name_[reason_index_[i]] = name;
    }
  }

  void configure(CUcontext ctx) {
    configured_.allocate(reason_index_.size());
    fetched_.allocate(reason_index_.size());
    std::vector<CUpti_PCSamplingConfigurationInfo> attrs(5);
    attrs[0].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_COLLECTION_MODE;
    attrs[0].attributeData.collectionModeData.collectionMode = CUPTI_PC_SAMPLING_COLLECTION_MODE_KERNEL_SERIALIZED;
    attrs[1].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_PERIOD;
    attrs[1].attributeData.samplingPeriodData.samplingPeriod = settings_.sampling_period;
    attrs[2].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_STALL_REASON;
    attrs[2].attributeData.stallReasonData.stallReasonCount = reason_index_.size();
    attrs[2].attributeData.stallReasonData.pStallReasonIndex = reason_index_.data();
    attrs[3].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_SAMPLING_DATA_BUFFER;
    attrs[3].attributeData.samplingDataBufferData.samplingDataBuffer = &configured_.data;
    attrs[4].attributeType = CUPTI_PC_SAMPLING_CONFIGURATION_ATTR_TYPE_OUTPUT_DATA_FORMAT;
    attrs[4].attributeData.outputDataFormatData.outputDataFormat = CUPTI_PC_SAMPLING_OUTPUT_DATA_FORMAT_PARSED;
    CUpti_PCSamplingConfigurationInfoParams params{CUpti_PCSamplingConfigurationInfoParamsSize};
    params.ctx = ctx;
    params.numAttributes = attrs.size();
    params.pPCSamplingConfigurationInfo = attrs.data();
    ATOMSIM_CUPTI(cuptiPCSamplingSetConfigurationAttribute(&params));
  }

  // In kernel-serialized mode CUPTI parks each kernel's records in the buffer
  // given at configuration; they are fetched into a second buffer until both
  // report nothing left.
  void drain() {
    if (!context_) return;
    while (configured_.data.totalNumPcs > 0 || configured_.data.remainingNumPcs > 0) {
      if (!fetch()) break;
    }
  }

  bool fetch() {
    CUpti_PCSamplingGetDataParams get{CUpti_PCSamplingGetDataParamsSize};
    get.ctx = context_;
    get.pcSamplingData = &fetched_.data;
    CUptiResult r = cuptiPCSamplingGetData(&get);
    if (fetched_.data.hardwareBufferFull || r == CUPTI_ERROR_OUT_OF_MEMORY) {
      buffer_full_ = true;
      return false;
    }
    check_cupti(r, "cuptiPCSamplingGetData");
    take(fetched_.data);
    return fetched_.data.totalNumPcs > 0 || fetched_.data.remainingNumPcs > 0;
  }

  void take(const CUpti_PCSamplingData& d) {
    dropped_ += d.droppedSamples;
    samples_reported_ += d.totalSamples;
    for (size_t i = 0; i < d.totalNumPcs; ++i) add(d.pPcData[i]);
  }

  void add(const CUpti_PCSamplingPCData& pc) {
    LaunchSamples* launch = selected_launch(pc);
    if (!launch) {  // a launch that was not selected
      ++pcs_of_other_launches_;
      return;
    }
    LaunchSamples& s = *launch;
    auto& [function, counts] = s.pcs[PcKey{pc.cubinCrc, pc.pcOffset, pc.functionIndex}];
    if (pc.functionName) function = pc.functionName;
    for (size_t r = 0; r < pc.stallReasonCount; ++r) {
      const std::string& name = reason_name_[pc.stallReason[r].pcSamplingStallReasonIndex];
      std::uint64_t n = pc.stallReason[r].samples;
      counts[name] += n;
      s.reasons[name] += n;
      if (name.find("_not_issued") == std::string::npos) s.total += n;
    }
  }

  // The selected launch a PC record is of: its correlation id's, and for the
  // kernels of a graph's launch, which share one, the one of its function.
  LaunchSamples* selected_launch(const CUpti_PCSamplingPCData& pc) {
    auto it = pending_.find(pc.correlationId);
    if (it == pending_.end()) return nullptr;
    for (LaunchSamples& s : it->second)
      if (!s.launch.graph || (pc.functionName && s.launch.mangled == pc.functionName)) return &s;
    return nullptr;
  }

  static nlohmann::json launch_json(const LaunchSamples& s) {
    nlohmann::json k = s.launch.to_json();
    nlohmann::json issued = nlohmann::json::object(), not_issued = nlohmann::json::object(),
                   fractions = nlohmann::json::object();
    for (const auto& [name, n] : s.reasons) {
      auto cut = name.find("_not_issued");
      if (cut != std::string::npos) {
        not_issued[name.substr(0, cut)] = n;
      } else {
        issued[name] = n;
        fractions[name] = s.total ? double(n) / double(s.total) : 0.0;
      }
    }
    k["samples"] = s.total;
    k["reasons"] = issued;
    k["fractions"] = fractions;
    k["not_issued"] = not_issued;
    nlohmann::json pcs = nlohmann::json::array();
    for (const auto& [key, entry] : s.pcs)
      pcs.push_back({{"cubin_crc", key.cubin_crc}, {"function_index", key.function_index},
                     {"function", entry.first}, {"pc_offset", key.pc_offset}, {"reasons", entry.second}});
    k["pcs"] = pcs;
    return k;
  }

  const Settings& settings_;
  CUcontext context_ = nullptr;
  std::vector<uint32_t> reason_index_;
  std::map<uint32_t, std::string> reason_name_;
  SampleBuffer configured_, fetched_;
  std::map<std::uint32_t, std::vector<LaunchSamples>> pending_;  // by correlation id
  bool buffer_full_ = false;
  std::uint64_t dropped_ = 0, samples_reported_ = 0, pcs_of_other_launches_ = 0;
};

}  // namespace

std::unique_ptr<CapturePass> make_stall_pass(const Settings& s) { return std::make_unique<StallPass>(s); }

}  // namespace atomsim::capture
