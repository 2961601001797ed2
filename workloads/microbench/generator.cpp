#include "workloads/microbench/generator.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "traces/sass.hpp"
#include "workloads/sass/interpreter.hpp"

extern const char kMicrobenchSass[];

namespace atomsim::workloads {

const char* variant_name(MicrobenchVariant v) {
  switch (v) {
    case MicrobenchVariant::Baseline: return "baseline";
    case MicrobenchVariant::SwB: return "swb";
    case MicrobenchVariant::SwS: return "sws";
  }
  return "?";
}

MicrobenchVariant parse_variant(const std::string& name) {
  if (name == "baseline") return MicrobenchVariant::Baseline;
  if (name == "swb") return MicrobenchVariant::SwB;
  if (name == "sws") return MicrobenchVariant::SwS;
  throw std::invalid_argument("variant must be baseline, swb or sws (got '" + name + "')");
}

std::vector<MicrobenchParams> microbench_variants(const MicrobenchParams& p, const std::string& variant) {
  std::vector<MicrobenchParams> kernels;
  if (variant == "all") {
    for (auto v : {MicrobenchVariant::Baseline, MicrobenchVariant::SwB, MicrobenchVariant::SwS}) {
      kernels.push_back(p);
      kernels.back().variant = v;
    }
  } else {
    kernels.push_back(p);
    kernels.back().variant = parse_variant(variant);
  }
  return kernels;
}

void MicrobenchParams::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument(what); };
  if (params != 1 && params != 4 && params != 9) bad(fmt::format("params must be 1, 4 or 9 (got {})", params));
  if (blocks == 0) bad("blocks must be positive");
  if (warps_per_block == 0 || warps_per_block > 32) bad(fmt::format("warps-per-block must be 1..32 (got {})", warps_per_block));
  if (iterations == 0) bad("iterations must be positive");
  if (primitives == 0) bad("primitives must be positive");
  if (!(active_fraction >= 0 && active_fraction <= 1)) bad(fmt::format("active-fraction must be in [0, 1] (got {})", active_fraction));
  if (lanes_per_primitive == 0 || lanes_per_primitive > 32) bad(fmt::format("lanes-per-primitive must be 1..32 (got {})", lanes_per_primitive));
  if (threshold > 32) bad(fmt::format("threshold must be 0..32 (got {})", threshold));
}

std::string microbench_function(const MicrobenchParams& p) {
  switch (p.variant) {
    case MicrobenchVariant::Baseline: return fmt::format("_Z19microbench_baselineILi{}EEv10KernelArgs", p.params);
    case MicrobenchVariant::SwB: return fmt::format("_Z14microbench_swbILi{}EEv10KernelArgs", p.params);
    case MicrobenchVariant::SwS: return fmt::format("_Z14microbench_swsILi{}EEv10KernelArgs", p.params);
  }
  return {};
}

std::uint64_t write_microbench_kernel(const MicrobenchParams& p, trace::TraceWriter& writer) {
  p.validate();
  std::vector<std::string> text;
  std::vector<trace::StaticInst> program = trace::parse_sass_function(kMicrobenchSass, microbench_function(p), &text);

  trace::KernelInfo kernel;
  kernel.name = fmt::format("microbench_{}<{}>", variant_name(p.variant), p.params);
  kernel.grid = {p.blocks, 1, 1};
  kernel.block = {p.warps_per_block * 32, 1, 1};
  std::uint16_t highest = 0;
  for (const auto& s : program) {
    for (int i = 0; i < s.num_dst; ++i) if (s.dst[i] < 255) highest = std::max(highest, s.dst[i]);
    for (int i = 0; i < s.num_src; ++i) if (s.src[i] < 255) highest = std::max(highest, s.src[i]);
  }
  kernel.registers_per_thread = highest + 1u;
  kernel.shared_bytes = 0;
  kernel.program = program;

  // The kernel's parameter block (struct KernelArgs in microbench.cu).
  sass::LaunchConfig launch;
  launch.grid = kernel.grid;
  launch.block = kernel.block;
  launch.parameters.resize(0x20);
  auto put32 = [&](std::size_t at, std::uint32_t v) { std::memcpy(launch.parameters.data() + at, &v, 4); };
  std::uint64_t grads = kMicrobenchGradientBase;
  std::memcpy(launch.parameters.data(), &grads, 8);
  put32(0x08, p.iterations);
  put32(0x0c, p.primitives);
  put32(0x10, p.lanes_per_primitive);
  put32(0x14, p.active_fraction >= 1.0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(p.active_fraction * 4294967296.0));
  put32(0x18, p.threshold);
  put32(0x1c, p.seed);

  sass::Interpreter interpreter(std::move(program), text);
  writer.begin_kernel(kernel);
  std::uint64_t written = 0;
  for (std::uint64_t cta = 0; cta < p.blocks; ++cta) {
    for (std::uint32_t w = 0; w < p.warps_per_block; ++w) {
      std::uint64_t warp_id = cta * p.warps_per_block + w;
      interpreter.run_warp(launch, cta, w, [&](const trace::WarpInst& inst) {
        writer.append(warp_id, inst);
        ++written;
      });
      writer.end_warp(warp_id);
    }
  }
  writer.end_kernel();
  return written;
}

}  // namespace atomsim::workloads
