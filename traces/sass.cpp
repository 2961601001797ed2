#include "traces/sass.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>
#include <unordered_map>

namespace atomsim::trace {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && (std::isspace(static_cast<unsigned char>(s.back())) || s.back() == ';')) s.remove_suffix(1);
  return s;
}

// Register id of a bare token (R12, P3, UR5, UP1); -1 for RZ/PT/URZ/UPT/others.
int register_id(std::string_view token) {
  auto number = [](std::string_view digits) {
    int v = -1;
    if (digits.empty()) return -1;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    return (ec == std::errc() && p == digits.data() + digits.size()) ? v : -1;
  };
  if (token.size() >= 3 && token.substr(0, 2) == "UR") {
    int n = number(token.substr(2));
    return n >= 0 && n < 63 ? reg::kUniformBase + n : -1;
  }
  if (token.size() >= 3 && token.substr(0, 2) == "UP") {
    int n = number(token.substr(2));
    return n >= 0 && n < 7 ? reg::kUniformPredicateBase + n : -1;
  }
  if (token.size() >= 2 && token[0] == 'R') {
    int n = number(token.substr(1));
    return n >= 0 && n < 255 ? n : -1;
  }
  if (token.size() >= 2 && token[0] == 'P') {
    int n = number(token.substr(1));
    return n >= 0 && n < 7 ? reg::kPredicateBase + n : -1;
  }
  return -1;
}

bool is_predicate_token(std::string_view t) { return t == "PT" || (t.size() == 2 && t[0] == 'P' && std::isdigit(static_cast<unsigned char>(t[1]))); }

void add_unique(std::array<std::uint16_t, 6>& regs, std::uint8_t& count, int id) {
  if (id < 0) return;
  for (int i = 0; i < count; ++i) if (regs[i] == id) return;
  if (count < regs.size()) regs[count++] = static_cast<std::uint16_t>(id);
}

// Registers named anywhere in an operand, with 64-bit pairs (R10.64) expanded.
void collect_registers(std::string_view operand, std::array<std::uint16_t, 6>& regs, std::uint8_t& count) {
  std::size_t i = 0;
  while (i < operand.size()) {
    if (std::isalpha(static_cast<unsigned char>(operand[i]))) {
      std::size_t j = i;
      while (j < operand.size() && std::isalnum(static_cast<unsigned char>(operand[j]))) ++j;
      std::string_view token = operand.substr(i, j - i);
      int id = register_id(token);
      add_unique(regs, count, id);
      if (id >= 0 && id < 255 && operand.substr(j, 3) == ".64") add_unique(regs, count, id + 1);
      i = j;
    } else {
      ++i;
    }
  }
}

bool writes_nothing(OpClass op, std::string_view base) {
  switch (op) {
    case OpClass::StoreGlobal: case OpClass::Red: case OpClass::Branch: case OpClass::Barrier:
    case OpClass::Membar: case OpClass::Exit:
      return true;
    default:
      return base == "STS" || base == "NOP";
  }
}

// "0x..." as a whole, in 64 bits.
std::optional<std::uint64_t> hex_literal(std::string_view text) {
  if (!text.starts_with("0x") || text.size() < 3) return std::nullopt;
  std::uint64_t value = 0;
  auto [p, ec] = std::from_chars(text.data() + 2, text.data() + text.size(), value, 16);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return value;
}

// `c[0x0][0x210]`, perhaps negated or taken absolute (`-c[..]`, `|c[..]|`);
// not a bank or offset named by a register.
ConstantOperand constant_operand(std::string_view operand) {
  while (!operand.empty() && (operand.front() == '-' || operand.front() == '|' || operand.front() == '~' || operand.front() == '!'))
    operand.remove_prefix(1);
  if (!operand.starts_with("c[")) return {};
  const std::size_t bank_end = operand.find(']');
  if (bank_end == std::string_view::npos || operand.substr(bank_end + 1, 1) != "[") return {};
  const std::size_t offset_end = operand.find(']', bank_end + 2);
  if (offset_end == std::string_view::npos) return {};
  const auto bank = hex_literal(operand.substr(2, bank_end - 2));
  const auto offset = hex_literal(operand.substr(bank_end + 2, offset_end - bank_end - 2));
  if (!bank || !offset || *bank > ConstantOperand::kMaxBank || *offset > ConstantOperand::kMaxOffset) return {};
  return {static_cast<std::uint8_t>(*bank), static_cast<std::uint16_t>(*offset), true};
}

}  // namespace

std::string_view opcode_base(std::string_view mnemonic) { return mnemonic.substr(0, mnemonic.find('.')); }

std::uint8_t access_width(std::string_view m) {
  if (has_modifier(m, "128")) return 16;
  if (has_modifier(m, "64") || has_modifier(m, "F64") || has_modifier(m, "U64") || has_modifier(m, "S64")) return 8;
  if (has_modifier(m, "U16") || has_modifier(m, "S16")) return 2;
  if (has_modifier(m, "U8") || has_modifier(m, "S8")) return 1;
  return 4;
}

bool has_modifier(std::string_view mnemonic, std::string_view mod) {
  std::size_t pos = 0;
  while ((pos = mnemonic.find('.', pos)) != std::string_view::npos) {
    ++pos;
    std::size_t end = mnemonic.find('.', pos);
    if (mnemonic.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos) == mod) return true;
  }
  return false;
}

bool is_coherent_load(const StaticInst& s) {
  return s.op == OpClass::LoadGlobal && has_modifier(s.mnemonic, "STRONG") &&
         (has_modifier(s.mnemonic, "GPU") || has_modifier(s.mnemonic, "SYS"));
}

OpClass classify_opcode(std::string_view mnemonic) {
  static const std::unordered_map<std::string_view, OpClass> table = {
      {"IADD3", OpClass::IntAlu}, {"IADD", OpClass::IntAlu}, {"VIADD", OpClass::IntAlu}, {"LOP3", OpClass::IntAlu},
      {"LOP", OpClass::IntAlu}, {"SHF", OpClass::IntAlu}, {"SHL", OpClass::IntAlu}, {"SHR", OpClass::IntAlu},
      {"ISETP", OpClass::IntAlu}, {"IMNMX", OpClass::IntAlu}, {"VIMNMX", OpClass::IntAlu}, {"SEL", OpClass::IntAlu},
      {"PRMT", OpClass::IntAlu}, {"LEA", OpClass::IntAlu}, {"IABS", OpClass::IntAlu}, {"MOV", OpClass::IntAlu},
      {"PLOP3", OpClass::IntAlu}, {"P2R", OpClass::IntAlu}, {"R2P", OpClass::IntAlu}, {"BMSK", OpClass::IntAlu},
      {"SGXT", OpClass::IntAlu}, {"FADD", OpClass::FpAlu}, {"FMUL", OpClass::FpAlu}, {"FSEL", OpClass::FpAlu},
      {"FSETP", OpClass::FpAlu}, {"FMNMX", OpClass::FpAlu}, {"FSET", OpClass::FpAlu}, {"FCHK", OpClass::FpAlu},
      {"I2FP", OpClass::FpAlu}, {"F2FP", OpClass::FpAlu}, {"HADD2", OpClass::FpAlu}, {"HMUL2", OpClass::FpAlu},
      {"HSETP2", OpClass::FpAlu}, {"FFMA", OpClass::Fma}, {"IMAD", OpClass::Fma}, {"HFMA2", OpClass::Fma},
      {"DFMA", OpClass::Fma}, {"DADD", OpClass::Fma}, {"DMUL", OpClass::Fma}, {"MUFU", OpClass::Sfu},
      {"I2F", OpClass::Sfu}, {"F2I", OpClass::Sfu}, {"F2F", OpClass::Sfu}, {"FRND", OpClass::Sfu},
      {"BRA", OpClass::Branch}, {"BRX", OpClass::Branch}, {"JMP", OpClass::Branch}, {"CALL", OpClass::Branch},
      {"RET", OpClass::Branch}, {"BSSY", OpClass::Branch}, {"BSYNC", OpClass::Branch}, {"WARPSYNC", OpClass::Branch},
      {"BREAK", OpClass::Branch}, {"YIELD", OpClass::Branch}, {"LDS", OpClass::Shared}, {"STS", OpClass::Shared},
      {"ATOMS", OpClass::Shared}, {"LDSM", OpClass::Shared}, {"SHFL", OpClass::Shuffle}, {"MATCH", OpClass::Shuffle},
      {"VOTE", OpClass::Vote}, {"POPC", OpClass::Vote}, {"FLO", OpClass::Vote}, {"BREV", OpClass::Vote},
      {"LDG", OpClass::LoadGlobal}, {"LD", OpClass::LoadGlobal}, {"LDL", OpClass::LoadGlobal},
      {"STG", OpClass::StoreGlobal}, {"ST", OpClass::StoreGlobal}, {"STL", OpClass::StoreGlobal},
      {"ATOMG", OpClass::Atom}, {"ATOM", OpClass::Atom}, {"REDG", OpClass::Red}, {"RED", OpClass::Red},
      {"BAR", OpClass::Barrier}, {"MEMBAR", OpClass::Membar}, {"FENCE", OpClass::Membar},
      {"ERRBAR", OpClass::Membar}, {"EXIT", OpClass::Exit},
  };
  auto it = table.find(opcode_base(mnemonic));
  return it == table.end() ? OpClass::Misc : it->second;
}

StaticInst parse_sass_instruction(std::string_view text, std::uint64_t pc) {
  StaticInst s;
  s.pc = pc;
  std::string_view rest = trim(text);
  std::array<std::uint16_t, 6> src{};
  std::uint8_t nsrc = 0;
  if (!rest.empty() && rest.front() == '@') {
    std::size_t sp = rest.find(' ');
    std::string_view guard = rest.substr(1, sp - 1);
    if (!guard.empty() && guard.front() == '!') guard.remove_prefix(1);
    add_unique(src, nsrc, register_id(guard));
    rest = trim(rest.substr(sp == std::string_view::npos ? rest.size() : sp));
  }
  std::size_t sp = rest.find(' ');
  std::string_view mnemonic = rest.substr(0, sp);
  if (mnemonic.empty()) throw TraceError(fmt::format("SASS at pc 0x{:x}: empty instruction", pc));
  s.mnemonic = std::string(mnemonic);
  s.op = classify_opcode(mnemonic);
  std::string_view base = opcode_base(mnemonic);

  std::vector<std::string_view> operands;
  if (sp != std::string_view::npos) {
    std::string_view ops = trim(rest.substr(sp));
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= ops.size(); ++i) {
      if (i == ops.size() || (ops[i] == ',' && depth == 0)) {
        operands.push_back(trim(ops.substr(start, i - start)));
        start = i + 1;
      } else if (ops[i] == '[') {
        ++depth;
      } else if (ops[i] == ']') {
        --depth;
      }
    }
  }

  std::size_t num_dst = 0;
  if (!writes_nothing(s.op, base) && !operands.empty()) {
    num_dst = 1;
    bool pair_destinations = base == "ISETP" || base == "FSETP" || base == "DSETP" || base == "HSETP2" ||
                             base == "PSETP" || base == "SHFL" || base == "MATCH" || s.op == OpClass::Atom;
    if (pair_destinations || (operands.size() > 2 && is_predicate_token(operands[1]))) num_dst = 2;
    num_dst = std::min(num_dst, operands.size());
  }
  bool wide_dst = has_modifier(mnemonic, "WIDE") || (s.op == OpClass::LoadGlobal && access_width(mnemonic) >= 8) ||
                  (base == "LDC" && has_modifier(mnemonic, "64"));
  std::array<std::uint16_t, 6> dst6{};
  std::uint8_t ndst = 0;
  for (std::size_t i = 0; i < num_dst; ++i) {
    int id = register_id(operands[i]);
    add_unique(dst6, ndst, id);
    if (id >= 0 && id < 255 && wide_dst && i == num_dst - 1) add_unique(dst6, ndst, id + 1);
  }
  for (std::size_t i = num_dst; i < operands.size(); ++i) {
    collect_registers(operands[i], src, nsrc);
    if (base != "LDC" && !s.constant.present) s.constant = constant_operand(operands[i]);
  }
  s.num_dst = std::min<std::uint8_t>(ndst, 2);
  for (int i = 0; i < s.num_dst; ++i) s.dst[i] = dst6[i];
  s.num_src = nsrc;
  s.src = src;

  if (is_global_memory(s.op)) s.access_bytes = access_width(mnemonic);
  if (is_atomic(s.op)) {
    static const std::pair<const char*, AtomicOp> ops[] = {
        {"ADD", AtomicOp::Add}, {"MIN", AtomicOp::Min}, {"MAX", AtomicOp::Max}, {"INC", AtomicOp::Inc},
        {"DEC", AtomicOp::Dec}, {"AND", AtomicOp::And}, {"OR", AtomicOp::Or},   {"XOR", AtomicOp::Xor},
        {"EXCH", AtomicOp::Exch}, {"CAS", AtomicOp::Cas}};
    s.atomic_op = AtomicOp::Add;
    for (auto [name, op] : ops) if (has_modifier(mnemonic, name)) s.atomic_op = op;
    s.atomic_type = has_modifier(mnemonic, "F32x4") ? DataType::F32x4
                  : has_modifier(mnemonic, "F32x2") ? DataType::F32x2
                  : has_modifier(mnemonic, "F32") ? DataType::F32
                  : has_modifier(mnemonic, "F64") ? DataType::F64
                  : has_modifier(mnemonic, "F16x2") ? DataType::F16x2
                  : has_modifier(mnemonic, "BF16x2") ? DataType::BF16x2
                  : has_modifier(mnemonic, "S32") ? DataType::S32
                  : has_modifier(mnemonic, "S64") ? DataType::S64
                  : has_modifier(mnemonic, "64") ? DataType::U64 : DataType::U32;
    s.access_bytes = static_cast<std::uint8_t>(operand_bytes(s.atomic_type));
  }
  return s;
}

namespace {
// The value of a line (or its rest) that holds only one encoding word, "/* 0x000fe20000000800 */".
std::optional<std::uint64_t> encoding_word(std::string_view line) {
  line = trim(line);
  if (!line.starts_with("/*") || !line.ends_with("*/")) return std::nullopt;
  std::string_view word = trim(line.substr(2, line.size() - 4));
  if (word.size() != 18) return std::nullopt;
  return hex_literal(word);
}
}  // namespace

bool control_bits_usable(const KernelInfo& kernel) {
  return std::all_of(kernel.program.begin(), kernel.program.end(), [](const StaticInst& s) {
    return s.control.present && opcode_base(s.mnemonic) != "DEPBAR";
  });
}

std::vector<std::size_t> barrier_producers(const std::vector<StaticInst>& program, std::size_t index,
                                           const std::function<bool(std::size_t)>& counts) {
  std::vector<std::size_t> producers;
  const ControlBits& c = program.at(index).control;
  if (!c.present) return producers;
  auto sets = [&](std::size_t i, std::uint8_t b) {
    return (program[i].control.write_barrier() == b || program[i].control.read_barrier() == b) && (!counts || counts(i));
  };
  auto add = [&](std::size_t i) {
    if (std::find(producers.begin(), producers.end(), i) == producers.end()) producers.push_back(i);
  };
  for (std::uint8_t b = 0; b < ControlBits::kNoBarrier - 1; ++b) {
    if (!((c.wait_mask() >> b) & 1)) continue;
    for (std::size_t i = index; i-- > 0;)
      if (sets(i, b)) { add(i); break; }
    for (std::size_t i = program.size(); i-- > index + 1;)
      if (sets(i, b)) { add(i); break; }
  }
  return producers;
}

std::vector<StaticInst> parse_sass_function(std::string_view listing, std::string_view function,
                                            std::vector<std::string>* text_out) {
  std::string header = fmt::format("Function : {}", function);
  std::size_t start = listing.find(header);
  if (start == std::string_view::npos) throw TraceError(fmt::format("SASS listing has no function {}", function));
  std::size_t end = listing.find("Function : ", start + header.size());
  std::string_view body = listing.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  std::vector<StaticInst> program;
  std::size_t pos = 0;
  while (pos < body.size()) {
    std::size_t eol = body.find('\n', pos);
    std::string_view line = body.substr(pos, eol == std::string_view::npos ? std::string_view::npos : eol - pos);
    pos = eol == std::string_view::npos ? body.size() : eol + 1;
    std::size_t open = line.find("/*");
    std::size_t close = line.find("*/", open);
    if (open == std::string_view::npos || close == std::string_view::npos || close - open < 6 || close - open > 10) continue;
    std::uint64_t pc = 0;
    auto [p, ec] = std::from_chars(line.data() + open + 2, line.data() + close, pc, 16);
    if (ec != std::errc() || p != line.data() + close) continue;
    std::string_view text = line.substr(close + 2);
    std::size_t semi = text.find(';');
    if (semi == std::string_view::npos) continue;
    program.push_back(parse_sass_instruction(text.substr(0, semi), pc));
    if (text_out) text_out->emplace_back(trim(text.substr(0, semi)));
    // A 128-bit encoding follows as two words, the second alone on the next
    // line; its high bits are the control bits.
    if (encoding_word(text.substr(semi + 1)) && pos < body.size()) {
      std::size_t next_eol = body.find('\n', pos);
      std::string_view next = body.substr(pos, next_eol == std::string_view::npos ? std::string_view::npos : next_eol - pos);
      if (auto high = encoding_word(next)) {
        program.back().control = ControlBits::from_encoding_high_word(*high);
        pos = next_eol == std::string_view::npos ? body.size() : next_eol + 1;
      }
    }
  }
  if (program.empty()) throw TraceError(fmt::format("SASS listing has no instructions for {}", function));
  return program;
}

}  // namespace atomsim::trace
