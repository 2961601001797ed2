#include "sim/compare/measured_costs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "sim/compare/measured.hpp"
#include "traces/sass.hpp"

namespace atomsim::compare {

namespace {

// Besides matches, the ADU takes indirect branches, constant loads and block
// barriers (Nsight Compute's Kernel Profiling Guide, "Pipelines": adu).
bool other_adu_instruction(std::string_view opcode) {
  return opcode == "BRX" || opcode == "JMX" || opcode == "LDC" || opcode == "BAR";
}

double number_at(const nlohmann::json& j, const char* key, const std::filesystem::path& path, const std::string& where) {
  if (!j.contains(key) || !j.at(key).is_number())
    throw DatasetError(fmt::format("{}: {} lacks the number '{}'", path.string(), where, key));
  return j.at(key).get<double>();
}

}  // namespace

MeasuredCosts apply_measured_costs(const std::filesystem::path& counters_json, trace::KernelInfo& kernel) {
  const nlohmann::json doc = read_json(counters_json);
  if (!doc.contains("pcs") || !doc.at("pcs").is_array() || !doc.contains("metrics") || !doc.at("metrics").is_object())
    throw DatasetError(counters_json.string() + ": not a counters pass's output (no 'pcs' or 'metrics')");
  std::map<std::uint64_t, std::size_t> by_pc;
  for (std::size_t i = 0; i < kernel.program.size(); ++i) by_pc[kernel.program[i].pc] = i;

  MeasuredCosts costs;
  double adu_others = 0;
  std::vector<std::size_t> matches;
  for (const auto& pc : doc.at("pcs")) {
    const auto offset = static_cast<std::uint64_t>(number_at(pc, "pc_offset", counters_json, "a pc"));
    const std::string where = fmt::format("pc 0x{:x}", offset);
    const std::string sass = pc.value("sass", "");
    const std::string mnemonic = sass.substr(0, sass.find(' '));
    auto it = by_pc.find(offset);
    if (it == by_pc.end())
      throw DatasetError(fmt::format("{}: {} is not an instruction of the trace's kernel '{}'", counters_json.string(), where,
                                     kernel.name));
    trace::StaticInst& s = kernel.program[it->second];
    const std::string_view opcode = trace::opcode_base(mnemonic);
    if (!s.mnemonic.empty() && opcode != trace::opcode_base(s.mnemonic))
      throw DatasetError(fmt::format("{}: {} is {} there but {} in the trace: another program", counters_json.string(), where,
                                     opcode, trace::opcode_base(s.mnemonic)));
    if (!s.constant.present && !sass.empty()) {
      s.constant = trace::parse_sass_instruction(sass, offset).constant;
      costs.constant_operands += s.constant.present;
    }
    const double executed = number_at(pc, "warp_instructions", counters_json, where);
    if (executed <= 0) continue;
    if (s.op == trace::OpClass::Shared) {
      const double wavefronts = number_at(pc, "shared_wavefronts", counters_json, where);
      if (wavefronts > 0) {
        s.shared_wavefronts = static_cast<float>(wavefronts / executed);
        ++costs.shared_instructions;
      }
    }
    if (opcode == "MATCH" && trace::has_modifier(mnemonic, "ANY")) {
      matches.push_back(it->second);
      costs.match_executions += static_cast<std::uint64_t>(executed);
    } else if (opcode == "MATCH" || other_adu_instruction(opcode)) {
      adu_others += executed;
    }
  }
  if (costs.match_executions > 0) {
    const double adu = number_at(doc.at("metrics"), "sm__inst_executed_pipe_adu.sum", counters_json, "'metrics'");
    costs.match_values = std::clamp((adu - adu_others) / static_cast<double>(costs.match_executions), 1.0, 32.0);
    for (std::size_t i : matches) kernel.program[i].match_values = static_cast<float>(costs.match_values);
  }
  return costs;
}

}  // namespace atomsim::compare
