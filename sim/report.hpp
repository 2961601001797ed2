// Turns kernel runs into the JSON document (docs/output-schema.md) and the
// terminal table. Only simulated quantities go into JSON, so identical inputs
// give byte-identical output.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "sim/gpu.hpp"

namespace atomsim {

nlohmann::json kernel_json(const KernelRun& run, const GpuParams& params);
nlohmann::json run_json(const std::vector<KernelRun>& runs, const GpuParams& params,
                        const std::vector<std::string>& overrides, const std::string& trace);
void print_kernel_table(std::ostream& out, const KernelRun& run, const GpuParams& params);
// The host time a simulation took, by kind of unit (units named alike but for
// their index, e.g. l1_0 ... l1_131) and by thread.
void print_host_profile(std::ostream& out, const HostProfile& profile);
// Writes via a temporary file of its own, flushed to disk and renamed into
// place, so a reader sees the old contents or the new whole, even after a
// crash or power loss; throws std::runtime_error naming the path.
void write_file_atomically(const std::string& path, const std::string& contents);

}  // namespace atomsim
