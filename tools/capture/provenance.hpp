// Which device, driver and clocks produced an output: every capture file carries it.
#pragma once

#include <cuda.h>
#include <nlohmann/json.hpp>

namespace atomsim::capture {

// Reads the device's identity through the driver API and its clocks through
// NVML, which is opened at run time so that the tool builds without it.
nlohmann::json describe_device(CUdevice device);

// Current SM and memory clocks in MHz (0 when NVML is unavailable).
struct Clocks {
  unsigned sm_mhz = 0, memory_mhz = 0;
};
Clocks current_clocks(CUdevice device);

}  // namespace atomsim::capture
