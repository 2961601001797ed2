// The CUPTI injection library: the driver loads it through CUDA_INJECTION64_PATH
// into an unmodified program and calls InitializeInjection. It decodes launches
// and resource events for the pass that the launcher asked for, and at exit
// writes that pass's JSON (or a one-line error) into the output folder.
#include <cupti.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "tools/capture/launches.hpp"
#include "tools/capture/outputs.hpp"
#include "tools/capture/pass.hpp"
#include "tools/capture/provenance.hpp"

namespace atomsim::capture {

void check_cupti(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::string message = std::string(call) + " failed: " + (text ? text : "unknown CUPTI error");
  if (result == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
    message += " (profiling needs root or the driver option NVreg_RestrictProfilingToAdminUsers=0)";
  throw CaptureError(message);
}

nlohmann::json LaunchInfo::to_json() const {
  nlohmann::json j = {{"launch", ordinal}, {"name", name}, {"mangled", mangled}, {"grid", grid}, {"block", block},
                      {"registers", registers}, {"static_shared_bytes", static_shared_bytes},
                      {"dynamic_shared_bytes", dynamic_shared_bytes}, {"correlation_id", correlation_id},
                      {"api", api}};
  if (cluster[0]) j["cluster"] = cluster;
  if (cooperative) j["cooperative"] = true;
  if (graph)
    j["graph"] = {{"graph_id", graph->graph_id}, {"node_id", graph->node_id}, {"kernel_index", graph->kernel_index},
                  {"kernels", graph->kernels}, {"kernels_of_this_function", graph->same_function}};
  return j;
}

namespace {

// Where a pass spends a program's time, for ATOMSIM_CAPTURE_VERBOSE: the
// seconds inside each kind of callback, against the process's whole run.
class CallbackProfile {
 public:
  enum Kind { kLaunchBegin, kLaunchEnd, kModuleLoaded, kOther, kKinds };
  using Clock = std::chrono::steady_clock;

  void add(Kind kind, Clock::time_point since) {
    seconds_[kind] += std::chrono::duration<double>(Clock::now() - since).count();
    ++calls_[kind];
  }
  void print(const char* pass, double finish_seconds) const {
    static constexpr std::array<const char*, kKinds> kNames{"launch begin", "launch end", "module loaded", "other"};
    std::fprintf(stderr, "atomsim-capture: %s pass: %.2f s since injection;", pass,
                 std::chrono::duration<double>(Clock::now() - start_).count());
    for (int k = 0; k < kKinds; ++k)
      std::fprintf(stderr, " %s %.2f s (%llu calls);", kNames[k], seconds_[k], static_cast<unsigned long long>(calls_[k]));
    std::fprintf(stderr, " finish %.2f s\n", finish_seconds);
  }

 private:
  Clock::time_point start_ = Clock::now();
  std::array<double, kKinds> seconds_{};
  std::array<std::uint64_t, kKinds> calls_{};
};

struct Injection {
  Settings settings;
  CallbackProfile profile;
  std::unique_ptr<CapturePass> pass;
  std::unique_ptr<LaunchSelector> selector;
  CUpti_SubscriberHandle subscriber = nullptr;
  std::mutex mutex;
  std::string first_error;
  nlohmann::json device;
  Clocks clocks_at_start;
  GraphKernels graphs;

  void fail(const std::string& message) {
    if (first_error.empty()) first_error = message;
  }
};

Injection* g_injection = nullptr;
// The kernels of the launch call this thread is in, between its enter and exit callbacks.
thread_local std::vector<LaunchInfo> t_launches;

void on_driver_call(Injection& inj, CUpti_CallbackId cbid, const CUpti_CallbackData* cb) {
  if (cb->callbackSite == CUPTI_API_ENTER) {
    t_launches = decode_launches(cbid, cb, inj.graphs);
    for (LaunchInfo& launch : t_launches) {
      launch.ordinal = inj.selector->launches_seen();
      launch.selected = inj.selector->select(launch.mangled, launch.name);
      if (launch.selected || !inj.pass->uses_selection()) ProcessStage::mark_selected(inj.settings);
      if (inj.device.is_null()) {
        CUdevice dev = 0;
        cuCtxGetDevice(&dev);
        inj.device = describe_device(dev);
        inj.clocks_at_start = current_clocks(dev);
      }
      inj.pass->on_launch_begin(launch);
    }
  } else {
    for (const LaunchInfo& launch : t_launches) inj.pass->on_launch_end(launch);
    t_launches.clear();
  }
}

void on_resource(Injection& inj, CUpti_CallbackId cbid, const CUpti_ResourceData* rd) {
  switch (cbid) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED: inj.pass->on_context_created(rd->context); break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING: inj.pass->on_context_destroying(rd->context); break;
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED: {
      auto* g = static_cast<const CUpti_GraphData*>(rd->resourceDescriptor);
      inj.graphs.instantiated(g->graph, g->graphExec);
      break;
    }
    case CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING:
      inj.graphs.destroyed(static_cast<const CUpti_GraphData*>(rd->resourceDescriptor)->graphExec);
      break;
    case CUPTI_CBID_RESOURCE_MODULE_LOADED: {
      auto* module = static_cast<const CUpti_ModuleResourceData*>(rd->resourceDescriptor);
      if (module && module->pCubin) inj.pass->on_module_loaded(rd->context, module->pCubin, module->cubinSize);
      break;
    }
    default: break;
  }
}

void CUPTIAPI dispatch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Injection& inj = *g_injection;
  std::lock_guard lock(inj.mutex);
  const auto start = inj.settings.verbose ? CallbackProfile::Clock::now() : CallbackProfile::Clock::time_point{};
  auto kind = CallbackProfile::kOther;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
    kind = static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER ? CallbackProfile::kLaunchBegin
                                                                                        : CallbackProfile::kLaunchEnd;
  else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED)
    kind = CallbackProfile::kModuleLoaded;
  try {
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API)
      on_driver_call(inj, cbid, static_cast<const CUpti_CallbackData*>(data));
    else if (domain == CUPTI_CB_DOMAIN_RESOURCE)
      on_resource(inj, cbid, static_cast<const CUpti_ResourceData*>(data));
  } catch (const std::exception& e) {
    inj.fail(e.what());
  }
  if (inj.settings.verbose) inj.profile.add(kind, start);
}

void write_outputs() {
  Injection& inj = *g_injection;
  std::lock_guard lock(inj.mutex);
  const char* pass = pass_name(inj.settings.pass);
  nlohmann::json body;
  const auto finish_start = CallbackProfile::Clock::now();
  try {
    body = inj.pass->finish();
  } catch (const std::exception& e) {
    inj.fail(e.what());
  }
  if (inj.settings.verbose)
    inj.profile.print(pass, std::chrono::duration<double>(CallbackProfile::Clock::now() - finish_start).count());
  try {
    ProcessStage::record_launches(inj.settings, *inj.selector);
    if (!inj.first_error.empty()) {
      write_file_atomically(error_path(inj.settings.out_dir, pass), inj.first_error + "\n");
      return;
    }
    // A process that ran nothing the pass keeps writes no result (the launcher
    // says why, from every process's launches, where none did).
    if ((inj.pass->uses_selection() ? inj.selector->launches_selected() : inj.selector->launches_seen()) == 0) return;
    nlohmann::json doc;
    doc["schema"] = std::string("atomsim.capture.") + pass + "/1";
    doc["pass"] = pass;
    doc["device"] = inj.device;
    CUdevice dev = 0;
    Clocks end{};
    if (cuCtxGetDevice(&dev) == CUDA_SUCCESS) end = current_clocks(dev);
    doc["clocks"] = {{"sm_mhz_at_first_launch", inj.clocks_at_start.sm_mhz},
                     {"memory_mhz_at_first_launch", inj.clocks_at_start.memory_mhz},
                     {"sm_mhz_at_exit", end.sm_mhz}, {"memory_mhz_at_exit", end.memory_mhz}};
    doc["selection"] = selection_json(inj.settings, *inj.selector);
    doc.update(body);
    write_json_atomically(result_path(inj.settings.out_dir, pass), doc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "atomsim-capture: %s\n", e.what());
  }
}

void enable_callbacks(Injection& inj) {
  ATOMSIM_CUPTI(cuptiSubscribe(&inj.subscriber, dispatch, nullptr));
  for (CUpti_CallbackId cbid : launch_callbacks())
    ATOMSIM_CUPTI(cuptiEnableCallback(1, inj.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
  for (CUpti_CallbackId cbid : {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
                                CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED,
                                CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING})
    ATOMSIM_CUPTI(cuptiEnableCallback(1, inj.subscriber, CUPTI_CB_DOMAIN_RESOURCE, cbid));
}

}  // namespace
}  // namespace atomsim::capture

extern "C" int InitializeInjection() {
  using namespace atomsim::capture;
  if (g_injection) return 1;
  g_injection = new Injection();
  Injection& inj = *g_injection;
  try {
    inj.settings = Settings::from_environment();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "atomsim-capture: %s\n", e.what());
    return 0;
  }
  const char* pass = pass_name(inj.settings.pass);
  try {
    if (!ProcessStage::enter(inj.settings)) return 1;  // another process than --process names: left alone
  } catch (const std::exception& e) {
    std::fprintf(stderr, "atomsim-capture: %s\n", e.what());
    return 0;
  }
  try {
    inj.selector = std::make_unique<LaunchSelector>(inj.settings);
    switch (inj.settings.pass) {
      case Pass::Timing: inj.pass = make_timing_pass(inj.settings); break;
      case Pass::Stall: inj.pass = make_stall_pass(inj.settings); break;
      case Pass::Count: inj.pass = make_count_pass(inj.settings); break;
      case Pass::Trace: throw CaptureError("the trace pass is served by libatomsim_capture_sanitizer.so");
    }
    enable_callbacks(inj);
  } catch (const std::exception& e) {
    inj.fail(e.what());
    write_file_atomically(error_path(inj.settings.out_dir, pass), inj.first_error + "\n");
    return 0;
  }
  std::atexit(write_outputs);
  return 1;
}
