#include "sim/config.hpp"

#include <algorithm>
#include <cctype>
#include <bit>
#include <filesystem>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "models/cache/tag_array.hpp"

namespace atomsim {

std::vector<std::string> bundled_configs() { return {"h100", "h200", "a100", "rtx4090", "rtx3060"}; }

std::string config_for_device(const std::string& device) {
  // A bundled name is the device's model as NVIDIA names it, in one word or
  // two ("NVIDIA H200" -> h200, "NVIDIA GeForce RTX 4090" -> rtx4090).
  std::vector<std::string> words(1);
  for (char c : device) {
    if (c == ' ' || c == '-' || c == '_') {
      if (!words.back().empty()) words.emplace_back();
    } else {
      words.back() += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  for (const auto& name : bundled_configs())
    for (std::size_t w = 0; w < words.size(); ++w)
      if (words[w] == name || (w + 1 < words.size() && words[w] + words[w + 1] == name)) return name;
  return "";
}

std::string bundled_config_dir() {
  // A copy of the simulator unpacked with its configs/ beside it (the capture
  // bundle) uses those; a build uses the source tree's.
  namespace fs = std::filesystem;
  static const std::string dir = [] {
    std::error_code ec;
    const fs::path beside = fs::canonical("/proc/self/exe", ec).parent_path() / "configs";
    if (!ec && fs::exists(beside / (bundled_configs().front() + ".toml"), ec)) return beside.string();
    return std::string(ATOMSIM_CONFIG_DIR);
  }();
  return dir;
}

std::string resolve_config_path(const std::string& config) {
  namespace fs = std::filesystem;
  if (fs::exists(config)) return config;
  for (const auto& name : bundled_configs())
    if (config == name) return bundled_config_dir() + "/" + name + ".toml";
  throw ConfigError(fmt::format("{}: no such configuration file or bundled configuration", config));
}

GpuParams load_gpu_params(const std::string& config, const std::vector<std::string>& overrides) {
  return bind_gpu_params(ParamSource::from_file(resolve_config_path(config)), overrides);
}

GpuParams bind_gpu_params(ParamSource source, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides) source.apply_override(o);
  GpuParams p;
  p.origin = source.origin();
  ParamBinder gpu(source, "gpu");
  gpu.choice("name", p.name, {"h100", "h200", "a100", "rtx4090", "rtx3060", "custom"}, "which GPU this describes");
  gpu.integer("sms", p.sms, 1, 1024, "streaming multiprocessors");
  gpu.real("sm_clock_mhz", p.sm_clock_mhz, 1, 10000, "SM clock: one simulated cycle");
  gpu.integer("placement_offset", p.placement_offset, 0, std::int64_t(1) << 40,
              "bytes added to every global address a trace names, as if the allocator had placed the kernel's buffers "
              "that much further on: where lines fall among slices and channels depends on it");
  gpu.integer("lookahead_cycles", p.lookahead_cycles, 1, 64,
              "cycles the simulation's clusters (an SM with its L1 and MIO, a slice, a crossbar, the DRAM, the "
              "dispatcher) run apart between looks at each other: every link between clusters takes at least this "
              "long, taken from the latency after it, and buffer space freed across one is seen up to this many "
              "cycles minus one late");
  p.sm.declare(ParamBinder(source, "sm"));
  p.mio.declare(ParamBinder(source, "mio"));
  p.l1.declare(ParamBinder(source, "l1"));
  p.request_network.declare(ParamBinder(source, "interconnect.request"));
  p.reply_network.declare(ParamBinder(source, "interconnect.reply"));
  p.partition_network.declare(ParamBinder(source, "interconnect.partition"));
  p.l2.declare(ParamBinder(source, "l2"));
  p.dram.declare(ParamBinder(source, "dram"));
  p.dispatch.declare(ParamBinder(source, "dispatch"));
  p.sample.declare(ParamBinder(source, "sample"));
  source.check_all_claimed();
  if (p.l2.slices % p.l2.partitions != 0)
    throw ConfigError(fmt::format("{}: key 'l2.slices' = {} must be a multiple of 'l2.partitions' = {}", p.origin,
                                  p.l2.slices, p.l2.partitions));
  if (p.sm.max_warps > 64 * p.sm.subcores)
    throw ConfigError(fmt::format("{}: key 'sm.max_warps' = {} exceeds 64 warps per sub-core ({} sub-cores)", p.origin,
                                  p.sm.max_warps, p.sm.subcores));
  if (!std::has_single_bit(p.l2.interleave_bytes) || p.l2.interleave_bytes < p.l2.line_bytes)
    throw ConfigError(fmt::format("{}: key 'l2.interleave_bytes' = {} must be a power of two of at least 'l2.line_bytes' = {}",
                                  p.origin, p.l2.interleave_bytes, p.l2.line_bytes));
  if (!std::has_single_bit(p.l2.fetch_bytes) || p.l2.fetch_bytes < p.l2.sector_bytes || p.l2.fetch_bytes > p.l2.line_bytes)
    throw ConfigError(fmt::format("{}: key 'l2.fetch_bytes' = {} must be a power of two from 'l2.sector_bytes' = {} to 'l2.line_bytes' = {}",
                                  p.origin, p.l2.fetch_bytes, p.l2.sector_bytes, p.l2.line_bytes));
  if (p.placement_offset % p.l2.line_bytes != 0)
    throw ConfigError(fmt::format("{}: key 'gpu.placement_offset' = {} must be a multiple of 'l2.line_bytes' = {}", p.origin,
                                  p.placement_offset, p.l2.line_bytes));
  // The links into the crossbars, the DRAM and the SMs' CTA ports grow to the
  // lookahead, and the latency after each link shrinks by as much (the Gpu
  // constructor binds them so): each must keep at least a lookahead.
  const std::uint64_t stretch = p.lookahead_cycles - 1;
  for (const auto& [key, latency, taken, least] :
       {std::tuple<const char*, std::uint64_t, std::uint64_t, std::uint64_t>{"interconnect.request.latency", p.request_network.latency, stretch, p.lookahead_cycles},
        {"interconnect.reply.latency", p.reply_network.latency, stretch, p.lookahead_cycles},
        {"interconnect.partition.latency", p.partition_network.latency, stretch, p.lookahead_cycles},
        {"dram.latency", p.dram.latency, 2 * stretch, 1},
        {"dispatch.cta_done_latency", p.dispatch.cta_done_latency, stretch, p.lookahead_cycles},
        {"dispatch.launch_latency", p.dispatch.launch_latency, stretch, 0}})
    if (latency < taken + least)
      throw ConfigError(fmt::format("{}: key '{}' = {} is too short for 'gpu.lookahead_cycles' = {} (at least {})", p.origin,
                                    key, latency, p.lookahead_cycles, taken + least));
  if (p.l1.line_bytes != p.l2.line_bytes)
    throw ConfigError(fmt::format("{}: key 'l1.line_bytes' must equal 'l2.line_bytes'", p.origin));
  // A buffer that can never hold the largest packet sent to it stalls its
  // link for ever: toward the slices, a line of sectors written or an atomic
  // request updating a whole line (its operands and header); back, a line of
  // sectors read or returned by atomics.
  const std::uint32_t line_sectors = std::max<std::uint32_t>(1, p.l1.line_bytes / p.l1.sector_bytes);
  const std::uint32_t largest_request = std::max({p.l1.atomic_request_flits(p.l1.line_bytes, line_sectors, false),
                                                  p.l1.atomic_request_flits(p.l1.line_bytes, line_sectors, true), line_sectors + 1});
  const std::string request =
      fmt::format("a line of {} sectors each written in part, or an atomic request updating a whole line", line_sectors);
  const std::string reply = fmt::format("a line of {} sectors", line_sectors);
  for (const auto& [key, flits, largest, packet] :
       {std::tuple<const char*, std::uint32_t, std::uint32_t, const std::string&>{"l2.input_buffer_flits", p.l2.input_buffer_flits, largest_request, request},
        {"interconnect.request.input_buffer_flits", p.request_network.input_buffer_flits, largest_request, request},
        {"interconnect.request.output_queue_flits", p.request_network.output_queue_flits, largest_request, request},
        {"interconnect.partition.input_buffer_flits", p.partition_network.input_buffer_flits, largest_request, request},
        {"interconnect.partition.output_queue_flits", p.partition_network.output_queue_flits, largest_request, request},
        {"interconnect.reply.input_buffer_flits", p.reply_network.input_buffer_flits, line_sectors, reply},
        {"interconnect.reply.output_queue_flits", p.reply_network.output_queue_flits, line_sectors, reply}})
    if (flits < largest)
      throw ConfigError(fmt::format("{}: key '{}' = {} cannot hold the largest packet sent to it ({} flits: {})", p.origin,
                                    key, flits, largest, packet));
  if (p.dram.refresh_interval && p.dram.refresh_cycles >= p.dram.refresh_interval)
    throw ConfigError(fmt::format("{}: key 'dram.refresh_cycles' = {} must be shorter than 'dram.refresh_interval' = {}",
                                  p.origin, p.dram.refresh_cycles, p.dram.refresh_interval));
  if (p.l1.line_bytes % p.l1.sector_bytes != 0 || p.l1.line_bytes / p.l1.sector_bytes > model::kMaxSectorsPerLine)
    throw ConfigError(fmt::format("{}: key 'l1.sector_bytes' = {} must divide 'l1.line_bytes' = {} into at most {} sectors",
                                  p.origin, p.l1.sector_bytes, p.l1.line_bytes, model::kMaxSectorsPerLine));
  if (p.l2.sector_bytes != p.l1.sector_bytes)
    throw ConfigError(fmt::format("{}: key 'l2.sector_bytes' = {} must equal 'l1.sector_bytes' = {}", p.origin,
                                  p.l2.sector_bytes, p.l1.sector_bytes));
  for (const auto& [key, capacity, ways, line] :
       {std::tuple<const char*, std::uint64_t, std::uint32_t, std::uint32_t>{"l1.capacity_bytes", p.l1.capacity_bytes, p.l1.ways, p.l1.line_bytes},
        {"l2.slice_bytes", p.l2.slice_bytes, p.l2.ways, p.l2.line_bytes}})
    if (capacity < std::uint64_t(ways) * line)
      throw ConfigError(fmt::format("{}: key '{}' = {} is smaller than one set ({} ways of {} bytes)", p.origin, key,
                                    capacity, ways, line));
  // The model keeps every line's tag (16 bytes) in host memory.
  if (std::uint64_t(p.l2.slices) * p.l2.slice_bytes > (1ull << 31) || std::uint64_t(p.sms) * p.l1.capacity_bytes > (1ull << 31))
    throw ConfigError(fmt::format("{}: keys 'l2.slices' x 'l2.slice_bytes' and 'gpu.sms' x 'l1.capacity_bytes' may not "
                                  "exceed 2 GiB of cache each (every line's tag is modelled)", p.origin));
  if (p.sms > 65535 || p.l2.slices > 65535) throw ConfigError(fmt::format("{}: too many SMs or slices", p.origin));
  p.documentation = source.declared();
  p.canonical = source.canonical_text();
  return p;
}

}  // namespace atomsim
