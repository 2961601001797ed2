#include "tools/capture/provenance.hpp"

#include <dlfcn.h>

#include <fstream>
#include <string>

namespace atomsim::capture {
namespace {

// The few NVML entry points used; NVML's C ABI is stable across releases.
struct Nvml {
  using Device = void*;
  int (*init)() = nullptr;
  int (*handle_by_pci_bus_id)(const char*, Device*) = nullptr;
  int (*clock_info)(Device, int, unsigned*) = nullptr;
  int (*max_clock_info)(Device, int, unsigned*) = nullptr;
  int (*driver_version)(char*, unsigned) = nullptr;
  static constexpr int kClockSm = 1, kClockMem = 2;

  static const Nvml* get() {
    static const Nvml* instance = [] () -> const Nvml* {
      void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
      if (!lib) return nullptr;
      static Nvml n;
      n.init = reinterpret_cast<int (*)()>(dlsym(lib, "nvmlInit_v2"));
      n.handle_by_pci_bus_id = reinterpret_cast<int (*)(const char*, Device*)>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
      n.clock_info = reinterpret_cast<int (*)(Device, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetClockInfo"));
      n.max_clock_info = reinterpret_cast<int (*)(Device, int, unsigned*)>(dlsym(lib, "nvmlDeviceGetMaxClockInfo"));
      n.driver_version = reinterpret_cast<int (*)(char*, unsigned)>(dlsym(lib, "nvmlSystemGetDriverVersion"));
      if (!n.init || !n.handle_by_pci_bus_id || !n.clock_info || !n.max_clock_info || !n.driver_version) return nullptr;
      if (n.init() != 0) return nullptr;
      return &n;
    }();
    return instance;
  }

  Device handle(CUdevice device) const {
    char bus[32] = {};
    if (cuDeviceGetPCIBusId(bus, sizeof bus, device) != CUDA_SUCCESS) return nullptr;
    Device d = nullptr;
    return handle_by_pci_bus_id(bus, &d) == 0 ? d : nullptr;
  }
};

int attribute(CUdevice device, CUdevice_attribute a) {
  int v = 0;
  cuDeviceGetAttribute(&v, a, device);
  return v;
}

}  // namespace

Clocks current_clocks(CUdevice device) {
  Clocks c;
  const Nvml* nvml = Nvml::get();
  if (!nvml) return c;
  if (Nvml::Device d = nvml->handle(device)) {
    nvml->clock_info(d, Nvml::kClockSm, &c.sm_mhz);
    nvml->clock_info(d, Nvml::kClockMem, &c.memory_mhz);
  }
  return c;
}

nlohmann::json describe_device(CUdevice device) {
  nlohmann::json j;
  char name[256] = {};
  cuDeviceGetName(name, sizeof name, device);
  j["name"] = name;
  j["compute_capability"] = std::to_string(attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)) + "." +
                            std::to_string(attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
  j["sms"] = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  int cuda_version = 0;
  cuDriverGetVersion(&cuda_version);
  j["cuda_driver_api"] = std::to_string(cuda_version / 1000) + "." + std::to_string(cuda_version % 1000 / 10);
  j["sm_clock_rated_mhz"] = attribute(device, CU_DEVICE_ATTRIBUTE_CLOCK_RATE) / 1000;
  if (const Nvml* nvml = Nvml::get()) {
    char version[96] = {};
    if (nvml->driver_version(version, sizeof version) == 0) j["driver"] = version;
    if (Nvml::Device d = nvml->handle(device)) {
      unsigned max_sm = 0, max_mem = 0;
      nvml->max_clock_info(d, Nvml::kClockSm, &max_sm);
      nvml->max_clock_info(d, Nvml::kClockMem, &max_mem);
      j["sm_clock_max_mhz"] = max_sm;
      j["memory_clock_max_mhz"] = max_mem;
    }
  } else {
    j["driver"] = "unknown (NVML not available)";
  }
  return j;
}

}  // namespace atomsim::capture
