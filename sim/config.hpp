// The whole GPU's parameters: one typed struct per unit, bound from a TOML
// configuration plus command-line overrides.
#pragma once

#include <string>
#include <vector>

#include "models/dispatch/cta_dispatcher.hpp"
#include "models/dram/dram.hpp"
#include "models/interconnect/crossbar.hpp"
#include "models/l1/l1.hpp"
#include "models/l2/l2_slice.hpp"
#include "models/mio/mio.hpp"
#include "models/sm/sm.hpp"
#include "sim/sampling.hpp"

namespace atomsim {

struct GpuParams {
  std::string name;
  std::uint32_t sms = 1;
  double sm_clock_mhz = 1000;
  std::uint64_t placement_offset = 0;
  std::uint64_t lookahead_cycles = 1;
  model::SmParams sm;
  model::MioParams mio;
  model::L1Params l1;
  model::CrossbarParams request_network, reply_network, partition_network;
  model::L2Params l2;
  model::DramParams dram;
  model::DispatchParams dispatch;
  SampleParams sample;
  std::vector<ParamInfo> documentation;
  std::string origin;
  std::string canonical;  // every parameter's value (ParamSource::canonical_text)
};

// `config` is a path or the name of a bundled configuration (h100, h200, a100, rtx4090, rtx3060).
GpuParams load_gpu_params(const std::string& config, const std::vector<std::string>& overrides);
// The same from a configuration already read (errors name its origin).
GpuParams bind_gpu_params(ParamSource source, const std::vector<std::string>& overrides);
std::string resolve_config_path(const std::string& config);
std::vector<std::string> bundled_configs();
// The bundled configuration of the GPU a capture names (NVML's device name,
// e.g. "NVIDIA H100 80GB HBM3"); empty when none is bundled for it.
std::string config_for_device(const std::string& device);
// Where the bundled configurations are: configs/ beside the executable where
// there is one, else the source tree's.
std::string bundled_config_dir();

}  // namespace atomsim
