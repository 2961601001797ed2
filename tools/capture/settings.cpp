#include "tools/capture/settings.hpp"

#include <cxxabi.h>
#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <memory>

namespace atomsim::capture {

const char* pass_name(Pass pass) {
  switch (pass) {
    case Pass::Timing: return "timing";
    case Pass::Stall: return "stall";
    case Pass::Count: return "count";
    case Pass::Trace: return "trace";
    case Pass::Counters: return "counters";
  }
  return "?";
}

Pass pass_from_name(const std::string& name) {
  for (Pass p : {Pass::Timing, Pass::Stall, Pass::Count, Pass::Trace, Pass::Counters})
    if (name == pass_name(p)) return p;
  throw CaptureError("unknown pass '" + name + "' (timing, stall, count, trace or counters)");
}

namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::uint64_t env_number(const char* name, std::uint64_t fallback, std::uint64_t lo, std::uint64_t hi) {
  auto text = env(name);
  if (!text) return fallback;
  char* end = nullptr;
  unsigned long long v = std::strtoull(text->c_str(), &end, 10);
  if (*end != '\0' || v < lo || v > hi)
    throw CaptureError(std::string(name) + "='" + *text + "' is not a whole number in [" + std::to_string(lo) +
                       ", " + std::to_string(hi) + "]");
  return v;
}

}  // namespace

Settings Settings::from_environment() {
  Settings s;
  auto pass = env(kEnvPass);
  if (!pass) throw CaptureError(std::string(kEnvPass) + " is not set (run the program through atomsim-capture)");
  s.pass = pass_from_name(*pass);
  auto out = env(kEnvOut);
  if (!out) throw CaptureError(std::string(kEnvOut) + " is not set");
  s.out_dir = *out;
  s.final_out_dir = *out;
  auto expression = [](const char* name, const std::string& text) {
    try {
      return std::regex(text, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      throw CaptureError(std::string(name) + "='" + text + "' is not a valid regular expression");
    }
  };
  if (auto k = env(kEnvKernel)) {
    s.kernel_pattern = *k;
    s.kernel_regex_ = expression(kEnvKernel, *k);
  }
  if (auto p = env(kEnvProcess)) {
    s.process_pattern = *p;
    s.process_regex_ = expression(kEnvProcess, *p);
  }
  if (env(kEnvLaunch)) s.launch = env_number(kEnvLaunch, 0, 0, UINT32_MAX);
  s.sampling_period = static_cast<std::uint32_t>(env_number(kEnvSamplingPeriod, s.sampling_period, 5, 31));
  s.trace_buffer_mib = env_number(kEnvTraceBufferMiB, s.trace_buffer_mib, 16, 1 << 20);
  s.verbose = env_number(kEnvVerbose, 0, 0, 1) == 1;
  s.keep_join_input = env_number(kEnvKeepJoinInput, 0, 0, 1) == 1;
  if (auto c = env(kEnvCounts)) s.counts = *c;
  return s;
}

bool Settings::name_matches(const std::string& mangled, const std::string& demangled) const {
  if (!kernel_regex_) return true;
  return std::regex_search(mangled, *kernel_regex_) || std::regex_search(demangled, *kernel_regex_);
}

bool Settings::process_matches(const std::string& command_line) const {
  return !process_regex_ || std::regex_search(command_line, *process_regex_);
}

bool Settings::cubin_defines_selected(const char* cubin, std::size_t size) const {
  if (size < sizeof(Elf64_Ehdr) || std::memcmp(cubin, ELFMAG, SELFMAG) != 0 || cubin[EI_CLASS] != ELFCLASS64) return true;
  Elf64_Ehdr eh;
  std::memcpy(&eh, cubin, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > size || eh.e_shnum > (size - eh.e_shoff) / sizeof(Elf64_Shdr))
    return true;
  auto section = [&](std::size_t i) {
    Elf64_Shdr sh;
    std::memcpy(&sh, cubin + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof sh);
    return sh;
  };
  for (std::size_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr symtab = section(i);
    if (symtab.sh_type != SHT_SYMTAB || symtab.sh_link >= eh.e_shnum) continue;
    Elf64_Shdr strtab = section(symtab.sh_link);
    if (symtab.sh_offset > size || symtab.sh_size > size - symtab.sh_offset || strtab.sh_offset > size ||
        strtab.sh_size > size - strtab.sh_offset)
      return true;
    for (std::size_t at = 0; at + sizeof(Elf64_Sym) <= symtab.sh_size; at += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, cubin + symtab.sh_offset + at, sizeof sym);
      if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC || sym.st_name >= strtab.sh_size) continue;
      const char* name = cubin + strtab.sh_offset + sym.st_name;
      std::string mangled(name, strnlen(name, strtab.sh_size - sym.st_name));
      if (name_matches(mangled, demangle(mangled.c_str()))) return true;
    }
    return false;
  }
  return true;
}

bool LaunchSelector::select(const std::string& mangled, const std::string& demangled) {
  ++seen_;
  if (!settings_.name_matches(mangled, demangled)) return false;
  std::uint64_t index = matching_++;
  if (settings_.launch && *settings_.launch != index) return false;
  ++selected_;
  return true;
}

std::string LaunchSelector::nothing_selected_reason() const {
  return capture::nothing_selected_reason(settings_.kernel_pattern, settings_.launch, seen_, matching_, selected_);
}

std::string nothing_selected_reason(const std::string& kernel_pattern, std::optional<std::uint64_t> launch,
                                    std::uint64_t seen, std::uint64_t matching, std::uint64_t selected) {
  if (selected > 0) return {};
  if (seen == 0) return "the program launched no kernels";
  std::string filter = kernel_pattern.empty() ? "" : " matching '" + kernel_pattern + "'";
  if (matching == 0) return "no kernel" + filter + " among " + std::to_string(seen) + " launches";
  return "launch index " + std::to_string(launch.value_or(0)) + " asked for, but only " + std::to_string(matching) +
         " launches" + filter;
}

std::string demangle(const char* name) {
  if (!name) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(name);
}

}  // namespace atomsim::capture
