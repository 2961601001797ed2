#include "tests/fuzz/targets.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "sim/config.hpp"
#include "tools/capture/warp_join.hpp"
#include "tools/sweep/spec.hpp"
#include "traces/accelsim.hpp"
#include "traces/reader.hpp"
#include "traces/validate.hpp"

namespace atomsim::fuzz {

namespace {

namespace fs = std::filesystem;

// One scratch folder per process: libFuzzer may run several workers at once.
const fs::path& scratch() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("atomsim-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

fs::path write_scratch(const std::string& name, Input input) {
  fs::path path = scratch() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(input.data()), static_cast<std::streamsize>(input.size()));
  return path;
}

std::string as_text(Input input) { return std::string(reinterpret_cast<const char*>(input.data()), input.size()); }

// Beyond this many warps a kernel's streams are not all read: a few bytes may
// claim a grid of billions, which the reader must open quickly, not read.
constexpr std::uint64_t kWarpsRead = 4096;

}  // namespace

void trace_file(Input input) {
  const std::string path = write_scratch("input.trace", input).string();
  try {
    trace::TraceReader reader(path);
    trace::WarpInst inst;
    for (std::size_t k = 0; k < reader.kernel_count(); ++k) {
      const std::uint64_t warps = std::min(reader.kernel(k).total_warps(), kWarpsRead);
      for (std::uint64_t w = 0; w < warps; ++w) {
        trace::WarpStream stream = reader.open_warp(k, w);
        while (stream.next(inst)) {
        }
      }
    }
  } catch (const trace::TraceError&) {
  }
  try {
    trace::validate_trace(path);
  } catch (const trace::TraceError&) {
  }
}

void gpu_config(Input input) {
  const std::string text = as_text(input);
  const std::size_t end = text.find('\0');
  std::vector<std::string> overrides;
  if (end != std::string::npos) {
    std::size_t start = end + 1;
    while (start <= text.size()) {
      std::size_t line_end = text.find('\n', start);
      if (line_end == std::string::npos) line_end = text.size();
      overrides.push_back(text.substr(start, line_end - start));
      start = line_end + 1;
    }
  }
  try {
    bind_gpu_params(ParamSource::from_text(text.substr(0, end), "fuzz.toml"), overrides);
  } catch (const ConfigError&) {
  }
}

void join_input(Input input) {
  try {
    capture::rejoin(capture::load_join_input(as_text(input)), 1, [](std::uint64_t, const trace::WarpInst&) {});
  } catch (const capture::JoinError&) {
  } catch (const trace::TraceError&) {  // SASS the decoder refuses
  }
}

void sweep_spec(Input input) {
  const fs::path spec = write_scratch("spec.toml", input);
  // The plan names the build by the simulator's hash; any small file serves.
  const fs::path executable = write_scratch("executable", {});
  try {
    sweep::plan_sweep(spec.string(), (scratch() / "out").string(), executable.string());
  } catch (const sweep::SpecError&) {
  }
}

// The bytes as the kernel file `name`, imported; the name's .xz, if any,
// sends them through the decoder, as Accel-Sim's own parser does.
void import_kernel_file(const char* name, Input input) {
  const auto path = write_scratch(name, input);
  try {
    trace::accelsim::import_traces(path, (path.parent_path() / "imported.trace").string());
  } catch (const trace::TraceError&) {
  }
}

void accelsim_trace(Input input) { import_kernel_file("kernel-1.traceg", input); }

void accelsim_xz(Input input) { import_kernel_file("kernel-1.traceg.xz", input); }

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"trace_file", trace_file}, {"gpu_config", gpu_config}, {"join_input", join_input}, {"sweep_spec", sweep_spec},
      {"accelsim_trace", accelsim_trace}, {"accelsim_xz", accelsim_xz}};
  return all;
}

}  // namespace atomsim::fuzz
