#include "sim/compare/measured.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>

#include "traces/capture_document.hpp"

namespace atomsim::compare {
namespace {

// Reads a field, turning a missing key or wrong type into an error naming both.
template <typename T>
T field(const nlohmann::json& j, const char* key, const std::filesystem::path& file) {
  if (!j.is_object() || !j.contains(key)) throw DatasetError(file.string() + ": missing key '" + key + "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw DatasetError(file.string() + ": key '" + key + "' has the wrong type");
  }
}

// The launches a capture document records (an array, perhaps empty).
const nlohmann::json& captured_launches(const nlohmann::json& doc, const std::filesystem::path& file) {
  if (!doc.contains("kernels")) throw DatasetError(file.string() + ": missing key 'kernels'");
  if (!doc["kernels"].is_array()) throw DatasetError(file.string() + ": key 'kernels' has the wrong type");
  return doc["kernels"];
}

const nlohmann::json& only_kernel(const nlohmann::json& doc, const std::filesystem::path& file) {
  const auto& kernels = captured_launches(doc, file);
  if (kernels.size() != 1) throw DatasetError(file.string() + ": expected exactly one captured launch");
  return kernels[0];
}

// A capture's compared launch: the last its trace pass captured. Launches
// captured before it (`--kernel` matching them too) are the ones that ran
// just before it on the GPU; simulated first, they leave the caches as it
// found them.
const nlohmann::json& compared_kernel(const nlohmann::json& doc, const std::filesystem::path& file) {
  const auto& kernels = captured_launches(doc, file);
  if (kernels.empty()) throw DatasetError(file.string() + ": no captured launch");
  return kernels.back();
}

// A kernel in an anonymous namespace is mangled with a hash of the file it was
// compiled from (_GLOBAL__N__<8 hex digits>_), which differs between builds of
// the same source in another folder; launches are matched with it left out.
std::string without_anonymous_namespace_hash(const std::string& mangled) {
  static const std::regex hash("_GLOBAL__N__[0-9a-f]{8}_");
  return std::regex_replace(mangled, hash, "_GLOBAL__N__");
}

// Spearman's rank correlation of values with their order (ties ranked in
// order of appearance; 0 for fewer than 3).
double rank_correlation_with_order(const std::vector<double>& values) {
  const std::size_t n = values.size();
  if (n < 3) return 0;
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return values[a] < values[b]; });
  double squared = 0;  // of the rank differences; the ranks are a permutation of the positions
  for (std::size_t rank = 0; rank < n; ++rank) {
    const double d = static_cast<double>(order[rank]) - static_cast<double>(rank);
    squared += d * d;
  }
  const double m = static_cast<double>(n);
  return 1 - 6 * squared / (m * (m * m - 1));
}

// The median of the timed launches' durations (given in launch order), in
// cycles at the SM clock the timing pass read.
void set_time(MeasuredKernel& k, std::vector<double> durations, const nlohmann::json& timing,
              const std::filesystem::path& file) {
  k.launch_trend = rank_correlation_with_order(durations);
  std::sort(durations.begin(), durations.end());
  k.time_ns = durations[durations.size() / 2];
  k.fastest_ns = durations.front();
  k.slowest_ns = durations.back();
  k.timed_launches = static_cast<std::uint32_t>(durations.size());
  auto clocks = field<nlohmann::json>(timing, "clocks", file);
  k.sm_clock_mhz = field<double>(clocks, "sm_mhz_at_exit", file);
  if (k.sm_clock_mhz <= 0) throw DatasetError(file.string() + ": no SM clock recorded (NVML unavailable when captured)");
  k.cycles = k.time_ns * k.sm_clock_mhz / 1000.0;
  k.device = field<std::string>(field<nlohmann::json>(timing, "device", file), "name", file);
}

void read_timing(MeasuredKernel& k, const std::filesystem::path& file, std::uint32_t warmup) {
  auto doc = read_json(file);
  std::vector<double> durations;
  auto launches = field<nlohmann::json>(doc, "kernels", file);
  for (const auto& launch : launches)
    if (field<std::uint64_t>(launch, "launch", file) >= warmup)
      durations.push_back(static_cast<double>(field<std::uint64_t>(launch, "duration_ns", file)));
  if (durations.empty()) throw DatasetError(file.string() + ": no launches after the " + std::to_string(warmup) + " warm-up launches");
  set_time(k, std::move(durations), doc, file);
}

void read_stalls(MeasuredKernel& k, const std::filesystem::path& file) {
  auto doc = read_json(file);
  const auto& kernel = only_kernel(doc, file);
  k.stall_samples = field<std::uint64_t>(kernel, "samples", file);
  if (k.stall_samples == 0) throw DatasetError(file.string() + ": no PC samples");
  auto fractions = field<nlohmann::json>(kernel, "fractions", file);
  for (const auto& [reason, fraction] : fractions.items()) {
    if (!fraction.is_number()) throw DatasetError(file.string() + ": fraction of '" + reason + "' is not a number");
    k.stall_fractions[reason] = fraction.get<double>();
  }
  // Per instruction: each sample counts once under its reason (the
  // "_not_issued" entries repeat samples already counted).
  if (kernel.contains("pcs"))
    for (const auto& pc : field<nlohmann::json>(kernel, "pcs", file)) {
      auto& reasons = k.pc_samples[field<std::uint64_t>(pc, "pc_offset", file)];
      const auto recorded = field<nlohmann::json>(pc, "reasons", file);
      for (const auto& [reason, samples] : recorded.items())
        if (!reason.ends_with("_not_issued") && samples.is_number()) reasons[reason] += samples.get<double>();
    }
}

// The timing pass's launches of the kernel a capture traced: the same kernel
// (its mangled name, the anonymous namespace's hash left out) with the same
// grid and block.
std::vector<nlohmann::json> traced_kernel_launches(const nlohmann::json& timing, const std::filesystem::path& timing_path,
                                                   const nlohmann::json& traced, const std::filesystem::path& capture_path) {
  const auto mangled = without_anonymous_namespace_hash(field<std::string>(traced, "mangled", capture_path));
  const auto grid = field<nlohmann::json>(traced, "grid", capture_path);
  const auto block = field<nlohmann::json>(traced, "block", capture_path);
  std::vector<nlohmann::json> launches;
  for (const auto& launch : field<nlohmann::json>(timing, "kernels", timing_path))
    if (without_anonymous_namespace_hash(field<std::string>(launch, "mangled", timing_path)) == mangled &&
        launch.value("grid", nlohmann::json()) == grid && launch.value("block", nlohmann::json()) == block)
      launches.push_back(launch);
  return launches;
}

}  // namespace

nlohmann::json read_json(const std::filesystem::path& path) {
  std::string text;
  try {
    text = capture::read_document(path);
  } catch (const capture::DocumentError& e) {
    throw DatasetError(e.what());
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw DatasetError(capture::stored_document(path).string() + ": not valid JSON (byte " + std::to_string(e.byte) + ")");
  }
}

MeasuredDataset load_dataset(const std::filesystem::path& dir) {
  MeasuredDataset d;
  d.dir = dir;
  auto manifest_path = dir / "manifest.json";
  auto manifest = read_json(manifest_path);
  d.workload = field<std::string>(manifest, "workload", manifest_path);
  if (d.workload != "microbench")
    throw DatasetError(manifest_path.string() + ": workload '" + d.workload + "' has no built-in generator to simulate");
  auto shape = field<nlohmann::json>(manifest, "shape", manifest_path);
  auto configurations = field<nlohmann::json>(manifest, "configurations", manifest_path);
  for (const auto& c : configurations) {
    MeasuredKernel k;
    k.id = field<std::string>(c, "id", manifest_path);
    auto& p = k.params;
    try {
      p.variant = workloads::parse_variant(field<std::string>(c, "variant", manifest_path));
    } catch (const std::invalid_argument& e) {
      throw DatasetError(manifest_path.string() + ": " + k.id + ": " + e.what());
    }
    p.blocks = field<std::uint32_t>(shape, "blocks", manifest_path);
    p.warps_per_block = field<std::uint32_t>(shape, "warps_per_block", manifest_path);
    p.iterations = field<std::uint32_t>(shape, "iterations", manifest_path);
    p.params = field<std::uint32_t>(shape, "params", manifest_path);
    p.primitives = field<std::uint32_t>(shape, "primitives", manifest_path);
    p.lanes_per_primitive = field<std::uint32_t>(c, "lanes_per_primitive", manifest_path);
    p.active_fraction = field<double>(c, "active_fraction", manifest_path);
    p.threshold = field<std::uint32_t>(c, "threshold", manifest_path);
    try {
      p.validate();
    } catch (const std::invalid_argument& e) {
      throw DatasetError(manifest_path.string() + ": " + k.id + ": " + e.what());
    }
    auto folder = dir / k.id;
    read_timing(k, folder / "timing.json", field<std::uint32_t>(c, "warmup_launches", manifest_path));
    read_stalls(k, folder / "stall.json");
    auto count_path = folder / "count.json";
    k.warp_instructions = field<std::uint64_t>(only_kernel(read_json(count_path), count_path), "warp_instructions", count_path);
    d.kernels.push_back(std::move(k));
  }
  if (d.kernels.empty()) throw DatasetError(manifest_path.string() + ": no configurations");
  return d;
}

bool launches_drift(const MeasuredKernel& k) {
  if (k.timed_launches < 5 || k.time_ns <= 0) return false;
  return std::abs(k.launch_trend) > 1.96 / std::sqrt(static_cast<double>(k.timed_launches) - 1) &&
         (k.slowest_ns - k.fastest_ns) / k.time_ns >= 0.1;
}

void require_trace(const MeasuredKernel& k) {
  if (!std::filesystem::exists(k.trace)) throw DatasetError(k.trace.string() + ": no trace (capture --pass count,trace into DIR/trace)");
}

MeasuredKernel load_capture(const std::filesystem::path& dir, const std::string& id) {
  MeasuredKernel k;
  k.id = id;
  k.trace = dir / "trace" / "trace.atr";
  // A capture may hold its trace as Accel-Sim's tracer wrote it instead.
  if (!std::filesystem::exists(k.trace) && std::filesystem::exists(dir / "trace" / "kernelslist.g"))
    k.trace = dir / "trace" / "kernelslist.g";
  // Without the trace pass's record there is no capture to read, kept trace or not.
  if (!std::filesystem::exists(dir / "trace" / "trace.json")) require_trace(k);
  if (std::filesystem::exists(dir / "trace" / "counters.json")) k.counters = dir / "trace" / "counters.json";
  const auto capture_path = dir / "trace" / "trace.json";
  const auto capture_doc = read_json(capture_path);
  const auto& traced = compared_kernel(capture_doc, capture_path);
  const auto timing_path = dir / "timing.json";
  auto timing = read_json(timing_path);
  std::vector<double> durations;
  for (const auto& launch : traced_kernel_launches(timing, timing_path, traced, capture_path))
    durations.push_back(static_cast<double>(field<std::uint64_t>(launch, "duration_ns", timing_path)));
  if (durations.size() < 2)
    throw DatasetError(timing_path.string() + ": " + std::to_string(durations.size()) +
                       " launches of the traced kernel with its grid and block; at least 2 are needed (one warms up)");
  durations.erase(durations.begin());
  set_time(k, std::move(durations), timing, timing_path);

  read_stalls(k, dir / "stall.json");
  const auto count_path = dir / "trace" / "count.json";
  k.warp_instructions = field<std::uint64_t>(compared_kernel(read_json(count_path), count_path), "warp_instructions", count_path);
  return k;
}

void measure_traced_launch(MeasuredKernel& k) {
  const auto dir = k.trace.parent_path().parent_path();
  const auto capture_path = dir / "trace" / "trace.json";
  const auto capture_doc = read_json(capture_path);
  const auto& traced = compared_kernel(capture_doc, capture_path);
  const auto index = field<std::uint64_t>(traced, "launch", capture_path);
  const auto timing_path = dir / "timing.json";
  const auto launches = traced_kernel_launches(read_json(timing_path), timing_path, traced, capture_path);
  // The first launch warms up, and a capture traces a later one.
  for (std::size_t i = 1; i < launches.size(); ++i)
    if (field<std::uint64_t>(launches[i], "launch", timing_path) == index) {
      k.time_ns = static_cast<double>(field<std::uint64_t>(launches[i], "duration_ns", timing_path));
      k.cycles = k.time_ns * k.sm_clock_mhz / 1000.0;
      k.traced_launch = index;
      return;
    }
  throw DatasetError(timing_path.string() + ": no timed launch " + std::to_string(index) +
                     " of the kernel " + capture_path.string() + " traced (the timing pass ran another sequence of launches)");
}

MeasuredDataset load_captures(const std::vector<std::filesystem::path>& dirs, const std::filesystem::path& manifest) {
  MeasuredDataset d;
  d.workload = "captured";
  if (!manifest.empty() && !dirs.empty())
    throw DatasetError("give capture folders or a manifest that lists them, not both");
  if (manifest.empty()) {
    for (const auto& dir : dirs) d.kernels.push_back(load_capture(dir, dir.lexically_normal().string()));
  } else {
    auto doc = read_json(manifest);
    d.dir = manifest.parent_path();
    std::set<std::string> ids;
    for (const auto& entry : field<nlohmann::json>(doc, "kernels", manifest)) {
      auto id = field<std::string>(entry, "id", manifest);
      if (!ids.insert(id).second) throw DatasetError(manifest.string() + ": kernel id '" + id + "' appears twice");
      MeasuredKernel k = load_capture(d.dir / field<std::string>(entry, "capture", manifest), id);
      if (entry.contains("baseline")) k.baseline = field<std::string>(entry, "baseline", manifest);
      d.kernels.push_back(std::move(k));
    }
    for (const auto& k : d.kernels)
      if (!k.baseline.empty() && !ids.count(k.baseline))
        throw DatasetError(manifest.string() + ": kernel '" + k.id + "': baseline '" + k.baseline + "' is not a kernel of the manifest");
  }
  if (d.kernels.empty()) throw DatasetError("no captures given");
  return d;
}

double stall_distance(const std::map<std::string, double>& a, const std::map<std::string, double>& b) {
  std::set<std::string> names;
  for (const auto& [n, v] : a) names.insert(n);
  for (const auto& [n, v] : b) names.insert(n);
  double sum = 0;
  for (const auto& n : names) {
    auto ia = a.find(n), ib = b.find(n);
    sum += std::abs((ia == a.end() ? 0.0 : ia->second) - (ib == b.end() ? 0.0 : ib->second));
  }
  return 0.5 * sum;
}

}  // namespace atomsim::compare
