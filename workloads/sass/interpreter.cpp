#include "workloads/sass/interpreter.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

namespace atomsim::sass {

using trace::TraceError;

namespace {

enum class Op : std::uint8_t {
  Nop, Exit, Bra, BraDiv, Bssy, Bsync, Warpsync, Ldc, Uldc, S2r, S2ur, Mov, Umov, Iadd3, Uiadd3, Viadd, Imad, Lop3,
  Ulop3, Plop3, Shf, Ushf, Lea, Isetp, Uisetp, Sel, Fsel, I2f, I2fp, F2i, Mufu, Fadd, Fmul, Ffma, Hfma2, Vote, Voteu, Popc, Brev,
  Flo, Match, Redux, Shfl, Redg, Atomg, Ldg, Stg, Bar, Membar, Unsupported
};

const std::unordered_map<std::string_view, Op>& opcode_table() {
  static const std::unordered_map<std::string_view, Op> t = {
      {"NOP", Op::Nop}, {"EXIT", Op::Exit}, {"BRA", Op::Bra}, {"BSSY", Op::Bssy}, {"BSYNC", Op::Bsync},
      {"WARPSYNC", Op::Warpsync}, {"ENDCOLLECTIVE", Op::Nop}, {"LDC", Op::Ldc}, {"ULDC", Op::Uldc},
      {"S2R", Op::S2r}, {"CS2R", Op::S2r}, {"S2UR", Op::S2ur}, {"MOV", Op::Mov}, {"UMOV", Op::Umov},
      {"IADD3", Op::Iadd3}, {"UIADD3", Op::Uiadd3}, {"VIADD", Op::Viadd}, {"IMAD", Op::Imad}, {"LOP3", Op::Lop3},
      {"ULOP3", Op::Ulop3}, {"SHF", Op::Shf}, {"USHF", Op::Ushf}, {"LEA", Op::Lea}, {"PLOP3", Op::Plop3}, {"ISETP", Op::Isetp}, {"UISETP", Op::Uisetp},
      {"SEL", Op::Sel}, {"FSEL", Op::Fsel}, {"I2F", Op::I2f}, {"I2FP", Op::I2fp}, {"F2I", Op::F2i},
      {"MUFU", Op::Mufu}, {"FADD", Op::Fadd}, {"FMUL", Op::Fmul}, {"FFMA", Op::Ffma}, {"HFMA2", Op::Hfma2},
      {"VOTE", Op::Vote}, {"VOTEU", Op::Voteu}, {"POPC", Op::Popc}, {"BREV", Op::Brev}, {"FLO", Op::Flo},
      {"MATCH", Op::Match}, {"REDUX", Op::Redux}, {"SHFL", Op::Shfl}, {"REDG", Op::Redg}, {"ATOMG", Op::Atomg},
      {"LDG", Op::Ldg}, {"STG", Op::Stg}, {"BAR", Op::Bar}, {"MEMBAR", Op::Membar}};
  return t;
}

enum Mod : std::uint8_t { k64, kALL, kANY, kBFLY, kCOLLECTIVE, kDIV, kDOWN, kEQ, kGE, kGT, kHI, kIDX, kL, kLE, kLT, kNE, kOR, kRCP, kRP, kS32, kSH, kU32, kUP, kW, kWIDE, kX, kXOR, kModCount };
constexpr const char* kModNames[] = {"64", "ALL", "ANY", "BFLY", "COLLECTIVE", "DIV", "DOWN", "EQ", "GE", "GT", "HI", "IDX", "L", "LE", "LT", "NE", "OR", "RCP", "RP", "S32", "SH", "U32", "UP", "W", "WIDE", "X", "XOR"};

enum class Kind : std::uint8_t { None, Reg, UReg, Pred, UPred, Imm, Const, Mem, Special, Label };

struct Operand {
  Kind kind = Kind::None;
  std::uint8_t index = 0;  // register / predicate number; 255 = RZ/URZ, 7 = PT/UPT
  bool negate = false;     // -R / !P
  bool absolute = false;
  std::uint64_t bits = 0;  // immediate as integer bits (two's complement)
  double real = 0;         // immediate as a number
  bool is_real = false;
  std::uint32_t offset = 0;  // constant / memory offset
  Operand* offset_reg = nullptr;
  std::uint8_t mem_base = 255;  // memory base register
  bool mem_uniform_base = false;
};

std::string_view strip(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == ';')) s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, std::int64_t& out) {
  bool neg = false;
  if (!s.empty() && s.front() == '-') { neg = true; s.remove_prefix(1); }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) { base = 16; s.remove_prefix(2); }
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return false;
  out = neg ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

}  // namespace

struct Interpreter::Decoded {
  Op op = Op::Unsupported;
  std::string text;
  std::vector<std::string> mods;
  std::uint8_t guard = 7;  // PT
  bool guard_negated = false;
  bool guard_uniform = false;
  std::vector<Operand> operands;
  std::uint32_t target = 0;  // instruction index for branches and BSSY
  std::uint64_t modifier_bits = 0;
  bool uniform = false;  // writes only uniform registers: executes once per warp
  bool is(Mod m) const { return (modifier_bits >> m) & 1; }
};

namespace {

Operand parse_operand(std::string_view s, std::string_view where) {
  Operand o;
  s = strip(s);
  if (s.empty()) return o;
  if (s.front() == '!') { o.negate = true; s.remove_prefix(1); }
  if (s.front() == '-' && s.size() > 1 && !std::isdigit(static_cast<unsigned char>(s[1]))) { o.negate = true; s.remove_prefix(1); }
  if (s.front() == '|' && s.back() == '|') { o.absolute = true; s = s.substr(1, s.size() - 2); }
  auto reg_number = [](std::string_view t, std::size_t skip) -> int {
    int v = -1;
    auto [p, ec] = std::from_chars(t.data() + skip, t.data() + t.size(), v);
    return (ec == std::errc()) ? v : -1;
  };
  std::string_view token = s.substr(0, s.find('.'));
  if (s.starts_with("c[")) {
    o.kind = Kind::Const;
    auto second = s.find("][");
    std::string_view off = s.substr(second + 2, s.size() - second - 3);
    std::int64_t v;
    if (parse_int(off, v)) o.offset = static_cast<std::uint32_t>(v);
    else if (off == "RZ") o.offset = 0;
    else throw TraceError(fmt::format("SASS interpreter: unsupported constant operand '{}' in '{}'", s, where));
    return o;
  }
  if (s.starts_with("desc[") || s.starts_with("[")) {
    o.kind = Kind::Mem;
    std::size_t open = s.rfind('[');
    std::string_view inner = s.substr(open + 1, s.size() - open - 2);
    std::size_t plus = inner.find('+');
    std::string_view base = inner.substr(0, plus);
    if (plus != std::string_view::npos) {
      std::int64_t v;
      if (!parse_int(inner.substr(plus + 1), v)) throw TraceError(fmt::format("SASS interpreter: bad address offset in '{}'", where));
      o.offset = static_cast<std::uint32_t>(v);
    }
    std::string_view b = base.substr(0, base.find('.'));
    if (b == "RZ") o.mem_base = 255;
    else if (b.starts_with("R")) o.mem_base = static_cast<std::uint8_t>(reg_number(b, 1));
    else throw TraceError(fmt::format("SASS interpreter: unsupported address '{}' in '{}'", s, where));
    return o;
  }
  if (token == "RZ") { o.kind = Kind::Reg; o.index = 255; return o; }
  if (token == "URZ") { o.kind = Kind::UReg; o.index = 255; return o; }
  if (token == "PT") { o.kind = Kind::Pred; o.index = 7; return o; }
  if (token == "UPT") { o.kind = Kind::UPred; o.index = 7; return o; }
  if (token.starts_with("SR_")) { o.kind = Kind::Special; o.bits = token == "SR_TID" ? 0 : token == "SR_CTAID" ? 1 : token == "SR_LANEID" ? 2 : 3;
    if (s.ends_with(".Y")) o.offset = 1; else if (s.ends_with(".Z")) o.offset = 2; return o; }
  if (token.size() > 2 && token.starts_with("UR") && std::isdigit(static_cast<unsigned char>(token[2]))) { o.kind = Kind::UReg; o.index = static_cast<std::uint8_t>(reg_number(token, 2)); return o; }
  if (token.size() > 2 && token.starts_with("UP") && std::isdigit(static_cast<unsigned char>(token[2]))) { o.kind = Kind::UPred; o.index = static_cast<std::uint8_t>(reg_number(token, 2)); return o; }
  if (token.size() > 1 && token[0] == 'R' && std::isdigit(static_cast<unsigned char>(token[1]))) { o.kind = Kind::Reg; o.index = static_cast<std::uint8_t>(reg_number(token, 1)); return o; }
  if (token.size() > 1 && token[0] == 'P' && std::isdigit(static_cast<unsigned char>(token[1]))) { o.kind = Kind::Pred; o.index = static_cast<std::uint8_t>(reg_number(token, 1)); return o; }
  if (token.size() > 1 && token[0] == 'B' && std::isdigit(static_cast<unsigned char>(token[1]))) { o.kind = Kind::Label; o.index = static_cast<std::uint8_t>(reg_number(token, 1)); return o; }
  // Immediate: integer (hex or decimal) or floating point.
  std::string text(o.negate ? "-" : "");
  text += s;
  o.negate = false;
  std::int64_t iv;
  o.kind = Kind::Imm;
  if (parse_int(text, iv)) {
    o.bits = static_cast<std::uint64_t>(iv);
    o.real = static_cast<double>(iv);
    return o;
  }
  char* end = nullptr;
  o.real = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end) throw TraceError(fmt::format("SASS interpreter: cannot read operand '{}' in '{}'", s, where));
  o.is_real = true;
  return o;
}

std::uint16_t float_to_half(float f) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  std::uint32_t sign = (x >> 16) & 0x8000;
  int exp = static_cast<int>((x >> 23) & 0xFF) - 127 + 15;
  std::uint32_t mant = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0) return static_cast<std::uint16_t>(sign);
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7C00);
  if (exp <= 0) {
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000;
    std::uint32_t shift = static_cast<std::uint32_t>(14 - exp);
    std::uint32_t half = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return static_cast<std::uint16_t>(sign | half);
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1FFF;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
  return static_cast<std::uint16_t>(half);
}

float as_float(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t as_bits(float f) { return std::bit_cast<std::uint32_t>(f); }

std::uint32_t lop3(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t lut) {
  std::uint32_t r = 0;
  for (int i = 0; i < 8; ++i) {
    if (!((lut >> i) & 1)) continue;
    std::uint32_t term = ((i & 4) ? a : ~a) & ((i & 2) ? b : ~b) & ((i & 1) ? c : ~c);
    r |= term;
  }
  return r;
}

}  // namespace

Interpreter::Interpreter(std::vector<trace::StaticInst> program, const std::vector<std::string>& text)
    : program_(std::move(program)) {
  if (text.size() != program_.size()) throw TraceError("SASS interpreter: program and text differ in length");
  std::unordered_map<std::uint64_t, std::uint32_t> by_pc;
  for (std::uint32_t i = 0; i < program_.size(); ++i) by_pc[program_[i].pc] = i;
  decoded_.resize(program_.size());
  for (std::uint32_t i = 0; i < program_.size(); ++i) {
    Decoded& d = decoded_[i];
    std::string_view t = strip(text[i]);
    d.text = std::string(t);
    if (t.starts_with("@")) {
      std::size_t sp = t.find(' ');
      std::string_view g = t.substr(1, sp - 1);
      if (g.starts_with("!")) { d.guard_negated = true; g.remove_prefix(1); }
      Operand go = parse_operand(g, d.text);
      d.guard = go.index;
      d.guard_uniform = go.kind == Kind::UPred;
      t = strip(t.substr(sp));
    }
    std::size_t sp = t.find(' ');
    std::string_view mnemonic = t.substr(0, sp);
    std::size_t dot = mnemonic.find('.');
    std::string_view base = mnemonic.substr(0, dot);
    while (dot != std::string_view::npos) {
      std::size_t next = mnemonic.find('.', dot + 1);
      d.mods.emplace_back(mnemonic.substr(dot + 1, next == std::string_view::npos ? std::string_view::npos : next - dot - 1));
      dot = next;
    }
    for (const auto& m : d.mods)
      for (int k = 0; k < kModCount; ++k)
        if (m == kModNames[k]) d.modifier_bits |= 1ull << k;
    auto it = opcode_table().find(base);
    d.op = it == opcode_table().end() ? Op::Unsupported : it->second;
    if (d.op == Op::Bra && d.is(kDIV)) d.op = Op::BraDiv;
    if (sp != std::string_view::npos) {
      std::string_view ops = strip(t.substr(sp));
      int depth = 0;
      std::size_t start = 0;
      for (std::size_t k = 0; k <= ops.size(); ++k) {
        if (k == ops.size() || (ops[k] == ',' && depth == 0)) {
          d.operands.push_back(parse_operand(ops.substr(start, k - start), d.text));
          start = k + 1;
        } else if (ops[k] == '[') {
          ++depth;
        } else if (ops[k] == ']') {
          --depth;
        }
      }
    }
    d.uniform = !d.operands.empty() && (d.operands[0].kind == Kind::UReg || d.operands[0].kind == Kind::UPred);
    if (d.op == Op::Bra || d.op == Op::BraDiv || d.op == Op::Bssy || (d.op == Op::Warpsync && d.is(kCOLLECTIVE))) {
      const Operand& label = d.operands.back();
      if (label.kind != Kind::Imm || !by_pc.count(label.bits))
        throw TraceError(fmt::format("SASS interpreter: branch target outside the function in '{}'", d.text));
      d.target = by_pc[label.bits];
    }
  }
}

Interpreter::~Interpreter() = default;
Interpreter::Interpreter(Interpreter&&) noexcept = default;

namespace {

struct WarpState {
  std::array<std::array<std::uint32_t, 256>, 32> r{};
  std::array<std::uint8_t, 32> p{};  // bit i = P i; bit 7 = PT always set
  std::array<std::uint32_t, 64> ur{};
  std::uint8_t up = 0x80;
  std::array<std::uint32_t, 32> pc{};
  std::uint32_t live = 0;      // lanes not exited
  std::uint32_t waiting = 0;   // lanes parked at a BSYNC
  std::array<std::uint32_t, 16> barrier{};
  // After a divergent branch the lanes that took it run first (their priority
  // rises), which reproduces the H100's executed-instruction counts.
  std::array<std::uint32_t, 32> priority{};
  std::uint32_t priority_clock = 0;
};

// One instruction of a warp, executing: the lanes at its PC (`mask`), those
// whose guard holds (`on`), and the record it reports (`out`).
struct WarpStep {
  WarpState& w;
  const LaunchConfig& launch;
  std::uint64_t cta, tid_base;
  const Interpreter::Decoded& d;
  const trace::StaticInst& s;
  const std::vector<Operand>& ops;
  std::uint32_t pc, mask, on;
  trace::WarpInst& out;
  bool parked = false;  // a BSYNC moved its lanes itself

  bool control();
  bool integer();
  bool floating();
  bool collective();
  bool memory();

  std::uint32_t constant(std::uint32_t offset) const {
  const trace::Dim3& b = launch.block;
  const trace::Dim3& g = launch.grid;
  switch (offset) {
    case 0x0: return b.x;
    case 0x4: return b.y;
    case 0x8: return b.z;
    case 0xc: return g.x;
    case 0x10: return g.y;
    case 0x14: return g.z;
    case 0x28: return 0xFFFC00;  // initial stack pointer; never dereferenced by these kernels
    default: break;
  }
  if (offset >= 0x208 && offset < 0x210) return 0;  // global memory descriptor: addresses come from registers
  if (offset >= 0x210 && offset + 4 <= 0x210 + launch.parameters.size()) {
    std::uint32_t v;
    std::memcpy(&v, launch.parameters.data() + (offset - 0x210), 4);
    return v;
  }
  throw TraceError(fmt::format("SASS interpreter: read of unknown constant c[0x0][0x{:x}]", offset));

  }
  std::uint32_t reg(int lane, const Operand& o) const {
    switch (o.kind) {
      case Kind::Reg: return o.index == 255 ? 0 : w.r[lane][o.index];
      case Kind::UReg: return o.index == 255 ? 0 : w.ur[o.index];
      case Kind::Imm: return static_cast<std::uint32_t>(o.bits);
      case Kind::Const: return constant(o.offset);
      default: throw TraceError(fmt::format("SASS interpreter: operand not a value in '{}'", d.text));
    }
  }
  std::uint32_t ival(int lane, const Operand& o) const {
    std::uint32_t v = reg(lane, o);
    return o.negate ? 0u - v : v;
  }
  float fval(int lane, const Operand& o) const {
    float f = o.kind == Kind::Imm ? static_cast<float>(o.real) : as_float(reg(lane, o));
    if (o.absolute) f = std::fabs(f);
    return o.negate ? -f : f;
  }
  bool pred(int lane, const Operand& o) const {
    bool v = o.kind == Kind::UPred ? ((w.up >> o.index) & 1) : ((w.p[lane] >> o.index) & 1);
    if (o.index == 7) v = true;
    return v != o.negate;
  }
  void set_reg(int lane, const Operand& o, std::uint32_t v) {
    if (o.kind == Kind::Reg && o.index != 255) w.r[lane][o.index] = v;
    else if (o.kind == Kind::UReg && o.index != 255) w.ur[o.index] = v;
  }
  void set_pred(int lane, const Operand& o, bool v) {
    if (o.index == 7) return;
    if (o.kind == Kind::UPred) w.up = static_cast<std::uint8_t>(v ? (w.up | (1u << o.index)) : (w.up & ~(1u << o.index)));
    else if (o.kind == Kind::Pred) w.p[lane] = static_cast<std::uint8_t>(v ? (w.p[lane] | (1u << o.index)) : (w.p[lane] & ~(1u << o.index)));
  }
  // Calls f(lane) for each lane whose guard holds; once for a uniform instruction.
  template <class F>
  void lanes_on(F&& f) const {
    if (d.uniform) {
      if (on) f(std::countr_zero(on));
      return;
    }
    for (std::uint32_t m = on; m; m &= m - 1) f(std::countr_zero(m));
  }
  int uniform_lane() const { return std::countr_zero(mask); }
  bool compare(std::int64_t a, std::int64_t b, bool is_unsigned) const {
    if (is_unsigned) { a = static_cast<std::uint32_t>(a); b = static_cast<std::uint32_t>(b); }
    else { a = static_cast<std::int32_t>(a); b = static_cast<std::int32_t>(b); }
    if (d.is(kEQ)) return a == b;
    if (d.is(kNE)) return a != b;
    if (d.is(kLT)) return a < b;
    if (d.is(kLE)) return a <= b;
    if (d.is(kGT)) return a > b;
    if (d.is(kGE)) return a >= b;
    throw TraceError(fmt::format("SASS interpreter: unknown comparison in '{}'", d.text));
  }
  bool combine(bool a, bool b) const { return d.is(kOR) ? (a || b) : d.is(kXOR) ? (a != b) : (a && b); }
};

// Control flow: branches, convergence barriers, warp syncs and exits.
bool WarpStep::control() {
  switch (d.op) {
    case Op::Nop: case Op::Bar: case Op::Membar: break;
    case Op::Warpsync: {
      // How many different masks its lanes name, where more than one, as the trace pass records it.
      if (!trace::is_warp_sync(s.mnemonic) || ops.empty() || ops[0].kind != Kind::Reg) break;
      std::vector<std::uint32_t> named;
      lanes_on([&](int lane) {
        if (std::find(named.begin(), named.end(), reg(lane, ops[0])) == named.end()) named.push_back(reg(lane, ops[0]));
      });
      if (named.size() < 2) break;
      out.value_lanes = on;
      lanes_on([&](int lane) { out.value[lane] = named.size(); });
      break;
    }
    case Op::Exit: w.live &= ~on; break;
    case Op::Bssy: w.barrier[ops[0].index] = mask; break;
    case Op::Bsync: {
      std::uint32_t expected = w.barrier[ops[0].index] & w.live;
      w.waiting |= mask;
      std::uint32_t arrived = 0;
      for (std::uint32_t m = w.waiting; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (w.pc[lane] == pc) arrived |= 1u << lane;
      }
      if ((expected & ~arrived) == 0) {
        w.waiting &= ~arrived;
        std::uint32_t merged = 0;
        for (std::uint32_t m = arrived; m; m &= m - 1) merged = std::max(merged, w.priority[std::countr_zero(m)]);
        for (std::uint32_t m = arrived; m; m &= m - 1) {
          int lane = std::countr_zero(m);
          w.pc[lane] = pc + 1;
          w.priority[lane] = merged;
        }
      }
      parked = true;
      break;
    }
    case Op::Bra:
      // "@P3 BRA P4, target" branches where both predicates hold.
      if (ops.size() == 2 && (ops[0].kind == Kind::Pred || ops[0].kind == Kind::UPred)) {
        std::uint32_t both = 0;
        for (std::uint32_t m = on; m; m &= m - 1) {
          int lane = std::countr_zero(m);
          if (pred(lane, ops[0])) both |= 1u << lane;
        }
        on = both;
      }
      break;
    case Op::BraDiv: {
      // Taken when the lanes named by the operand are not all executing together.
      std::uint32_t named = reg(uniform_lane(), ops[0]) & w.live;
      if ((named & ~mask) == 0) on = 0;
      break;
    }
    default: return false;
  }
  return true;
}


// Integer, logic and address arithmetic, moves, constants and special registers.
bool WarpStep::integer() {
  switch (d.op) {
    case Op::Ldc: case Op::Uldc:
      lanes_on([&](int lane) {
        std::uint32_t off = ops[1].offset;
        set_reg(lane, ops[0], constant(off));
        if (d.is(k64)) {
          Operand hi = ops[0];
          hi.index = static_cast<std::uint8_t>(hi.index + 1);
          set_reg(lane, hi, constant(off + 4));
        }
      });
      break;
    case Op::S2r: case Op::S2ur:
      lanes_on([&](int lane) {
        const Operand& sr = ops[1];
        std::uint32_t v = 0;
        std::uint64_t tid = tid_base + lane;
        if (sr.bits == 0) v = static_cast<std::uint32_t>(sr.offset == 0 ? tid % launch.block.x : sr.offset == 1 ? (tid / launch.block.x) % launch.block.y : tid / (std::uint64_t(launch.block.x) * launch.block.y));
        else if (sr.bits == 1) v = static_cast<std::uint32_t>(sr.offset == 0 ? cta % launch.grid.x : sr.offset == 1 ? (cta / launch.grid.x) % launch.grid.y : cta / (std::uint64_t(launch.grid.x) * launch.grid.y));
        else if (sr.bits == 2) v = static_cast<std::uint32_t>(lane);
        else throw TraceError(fmt::format("SASS interpreter: unsupported special register in '{}'", d.text));
        set_reg(lane, ops[0], v);
      });
      break;
    case Op::Mov: case Op::Umov: lanes_on([&](int lane) { set_reg(lane, ops[0], reg(lane, ops[1])); }); break;
    case Op::Iadd3: case Op::Uiadd3:
      lanes_on([&](int lane) {
        std::size_t i = 1;
        const Operand* carry_out = nullptr;
        while (i < ops.size() && (ops[i].kind == Kind::Pred || ops[i].kind == Kind::UPred) && !ops[i].negate && ops.size() - i > 3) {
          if (!carry_out) carry_out = &ops[i];
          ++i;
        }
        std::uint64_t sum = 0;
        for (int k = 0; k < 3; ++k, ++i) {
          // A negated operand adds its one's complement plus one, as the adder does.
          std::uint32_t v = reg(lane, ops[i]);
          sum += ops[i].negate ? std::uint64_t(~v) + 1 : std::uint64_t(v);
        }
        if (d.is(kX))
          for (; i < ops.size(); ++i) if (pred(lane, ops[i])) sum += 1;
        set_reg(lane, ops[0], static_cast<std::uint32_t>(sum));
        if (carry_out) set_pred(lane, *carry_out, (sum >> 32) != 0);
      });
      break;
    case Op::Viadd: lanes_on([&](int lane) { set_reg(lane, ops[0], ival(lane, ops[1]) + ival(lane, ops[2])); }); break;
    case Op::Imad:
      lanes_on([&](int lane) {
        std::uint32_t a = ival(lane, ops[1]), b = ival(lane, ops[2]);
        if (d.is(kWIDE)) {
          std::uint64_t c = reg(lane, ops[3]);
          if (ops[3].kind == Kind::Reg && ops[3].index != 255) c |= std::uint64_t(w.r[lane][ops[3].index + 1]) << 32;
          std::uint64_t product = d.is(kU32) ? std::uint64_t(a) * b : static_cast<std::uint64_t>(std::int64_t(std::int32_t(a)) * std::int32_t(b));
          std::uint64_t v = product + c;
          set_reg(lane, ops[0], static_cast<std::uint32_t>(v));
          Operand hi = ops[0];
          hi.index = static_cast<std::uint8_t>(hi.index + 1);
          set_reg(lane, hi, static_cast<std::uint32_t>(v >> 32));
        } else if (d.is(kHI)) {
          std::uint64_t c = 0;
          if (ops[3].kind == Kind::Reg && ops[3].index != 255)
            c = w.r[lane][ops[3].index] | (std::uint64_t(w.r[lane][ops[3].index + 1]) << 32);
          else
            c = reg(lane, ops[3]);
          std::uint64_t v = std::uint64_t(a) * b + c;
          set_reg(lane, ops[0], static_cast<std::uint32_t>(v >> 32));
        } else {
          set_reg(lane, ops[0], a * b + ival(lane, ops[3]));
        }
      });
      break;
    case Op::Lop3: case Op::Ulop3:
      lanes_on([&](int lane) {
        std::size_t i = 1;
        const Operand* pdst = nullptr;
        if (ops[0].kind == Kind::Pred || ops[0].kind == Kind::UPred) { pdst = &ops[0]; i = 1; }
        const Operand& dst = pdst ? ops[1] : ops[0];
        if (pdst) i = 2;
        std::uint32_t r = lop3(reg(lane, ops[i]), reg(lane, ops[i + 1]), reg(lane, ops[i + 2]), static_cast<std::uint32_t>(ops[i + 3].bits));
        set_reg(lane, dst, r);
        if (pdst) set_pred(lane, *pdst, r != 0);
      });
      break;
    case Op::Shf: case Op::Ushf:
      lanes_on([&](int lane) {
        std::uint64_t lo = reg(lane, ops[1]), hi = reg(lane, ops[3]);
        std::uint32_t shift = reg(lane, ops[2]);
        shift = d.is(kW) ? (shift & 31) : std::min<std::uint32_t>(shift, 32);
        std::uint64_t v = (hi << 32) | lo;
        std::uint64_t r;
        if (d.is(kL)) r = v << shift;
        else r = d.is(kS32) ? static_cast<std::uint64_t>(static_cast<std::int64_t>(v) >> shift) : v >> shift;
        set_reg(lane, ops[0], static_cast<std::uint32_t>(d.is(kHI) ? r >> 32 : r));
      });
      break;
    case Op::Plop3:
      // "PLOP3.LUT Pd, Pq, Pa, Pb, Pc, lut, lut2": each destination is its
      // table's entry for the three sources (a the high bit, as in LOP3).
      lanes_on([&](int lane) {
        const unsigned entry = (unsigned(pred(lane, ops[2])) << 2) | (unsigned(pred(lane, ops[3])) << 1) |
                               unsigned(pred(lane, ops[4]));
        set_pred(lane, ops[0], (reg(lane, ops[5]) >> entry) & 1);
        set_pred(lane, ops[1], (reg(lane, ops[6]) >> entry) & 1);
      });
      break;
    case Op::Lea:
      // Address arithmetic in two halves: "LEA Rd, Pcarry, Ra, Rb, s" is
      // Rd = (Ra << s) + Rb with the carry out; "LEA.HI.X Rd, Ra, Rb, Rc, s, Pcarry"
      // adds the high word of {Rc:Ra} << s and the carry to Rb.
      lanes_on([&](int lane) {
        std::size_t i = 1;
        const Operand* carry_out = nullptr;
        if (!d.is(kHI) && ops[i].kind == Kind::Pred) carry_out = &ops[i++];
        const std::uint64_t a = reg(lane, ops[i]), b = reg(lane, ops[i + 1]);
        if (d.is(kHI)) {
          const std::uint64_t wide = (std::uint64_t(reg(lane, ops[i + 2])) << 32) | a;
          const std::uint32_t shift = reg(lane, ops[i + 3]) & 31;
          std::uint64_t sum = b + static_cast<std::uint32_t>((wide << shift) >> 32);
          if (d.is(kX) && i + 4 < ops.size() && pred(lane, ops[i + 4])) sum += 1;
          set_reg(lane, ops[0], static_cast<std::uint32_t>(sum));
        } else {
          const std::uint32_t shift = reg(lane, ops[i + 2]) & 31;
          const std::uint64_t sum = static_cast<std::uint32_t>(a << shift) + b;
          set_reg(lane, ops[0], static_cast<std::uint32_t>(sum));
          if (carry_out) set_pred(lane, *carry_out, (sum >> 32) != 0);
        }
      });
      break;
    case Op::Isetp: case Op::Uisetp:
      lanes_on([&](int lane) {
        bool r = compare(reg(lane, ops[2]), reg(lane, ops[3]), d.is(kU32));
        set_pred(lane, ops[0], combine(r, pred(lane, ops[4])));
        set_pred(lane, ops[1], combine(!r, pred(lane, ops[4])));
      });
      break;
    case Op::Sel: case Op::Fsel:
      lanes_on([&](int lane) { set_reg(lane, ops[0], pred(lane, ops[3]) ? reg(lane, ops[1]) : reg(lane, ops[2])); });
      break;
    case Op::Popc: lanes_on([&](int lane) { set_reg(lane, ops[0], static_cast<std::uint32_t>(std::popcount(reg(lane, ops[1])))); }); break;
    case Op::Brev:
      lanes_on([&](int lane) {
        std::uint32_t x = reg(lane, ops[1]), r = 0;
        for (int b = 0; b < 32; ++b) r |= ((x >> b) & 1u) << (31 - b);
        set_reg(lane, ops[0], r);
      });
      break;
    case Op::Flo:
      lanes_on([&](int lane) {
        std::uint32_t x = reg(lane, ops[1]);
        if (x == 0) { set_reg(lane, ops[0], 0xFFFFFFFFu); return; }
        std::uint32_t msb = 31 - static_cast<std::uint32_t>(std::countl_zero(x));
        set_reg(lane, ops[0], d.is(kSH) ? 31 - msb : msb);
      });
      break;
    default: return false;
  }
  return true;
}


// Floating-point arithmetic and conversions.
bool WarpStep::floating() {
  switch (d.op) {
    case Op::I2f:
      lanes_on([&](int lane) {
        std::uint32_t x = reg(lane, ops[1]);
        float f = static_cast<float>(x);
        if (d.is(kRP) && static_cast<double>(f) < static_cast<double>(x)) f = std::nextafter(f, INFINITY);
        set_reg(lane, ops[0], as_bits(f));
      });
      break;
    case Op::I2fp: lanes_on([&](int lane) { set_reg(lane, ops[0], as_bits(static_cast<float>(reg(lane, ops[1])))); }); break;
    case Op::F2i:
      lanes_on([&](int lane) {
        float f = fval(lane, ops[1]);
        double t = std::trunc(static_cast<double>(f));
        std::uint32_t v = t <= 0 ? 0 : t >= 4294967295.0 ? 0xFFFFFFFFu : static_cast<std::uint32_t>(t);
        set_reg(lane, ops[0], v);
      });
      break;
    case Op::Mufu:
      if (!d.is(kRCP)) throw TraceError(fmt::format("SASS interpreter: unsupported MUFU in '{}'", d.text));
      lanes_on([&](int lane) { set_reg(lane, ops[0], as_bits(1.0f / fval(lane, ops[1]))); });
      break;
    case Op::Fadd: lanes_on([&](int lane) { set_reg(lane, ops[0], as_bits(fval(lane, ops[1]) + fval(lane, ops[2]))); }); break;
    case Op::Fmul: lanes_on([&](int lane) { set_reg(lane, ops[0], as_bits(fval(lane, ops[1]) * fval(lane, ops[2]))); }); break;
    case Op::Ffma:
      lanes_on([&](int lane) { set_reg(lane, ops[0], as_bits(std::fma(fval(lane, ops[1]), fval(lane, ops[2]), fval(lane, ops[3])))); });
      break;
    case Op::Hfma2:
      // Used by nvcc to materialize constants: -RZ * RZ + (hi, lo) halves.
      if (ops.size() != 5 || ops[1].kind != Kind::Reg || ops[1].index != 255)
        throw TraceError(fmt::format("SASS interpreter: unsupported HFMA2 form '{}'", d.text));
      lanes_on([&](int lane) {
        std::uint32_t hi = float_to_half(static_cast<float>(ops[3].real)), lo = float_to_half(static_cast<float>(ops[4].real));
        set_reg(lane, ops[0], (hi << 16) | lo);
      });
      break;
    default: return false;
  }
  return true;
}


// Instructions over the warp's lanes together: votes, matches, reductions, shuffles.
bool WarpStep::collective() {
  switch (d.op) {
    case Op::Vote: case Op::Voteu: {
      std::uint32_t ballot = 0;
      for (std::uint32_t m = on; m; m &= m - 1) {
        int lane = std::countr_zero(m);
        if (pred(lane, ops[2])) ballot |= 1u << lane;
      }
      bool any = ballot != 0, all = ballot == on;
      lanes_on([&](int lane) {
        set_reg(lane, ops[0], ballot);
        set_pred(lane, ops[1], d.is(kALL) ? all : any);
      });
      break;
    }
    case Op::Match: {
      if (d.is(kANY)) {
        lanes_on([&](int lane) {
          std::uint32_t v = reg(lane, ops[1]), group = 0;
          for (std::uint32_t m = on; m; m &= m - 1) {
            int other = std::countr_zero(m);
            if (reg(other, ops[1]) == v) group |= 1u << other;
          }
          set_reg(lane, ops[0], group);
        });
      } else {
        bool same = true;
        std::uint32_t first = on ? reg(std::countr_zero(on), ops[2]) : 0;
        for (std::uint32_t m = on; m; m &= m - 1) same &= reg(std::countr_zero(m), ops[2]) == first;
        lanes_on([&](int lane) {
          set_pred(lane, ops[0], same);
          set_reg(lane, ops[1], same ? on : 0);
        });
      }
      break;
    }
    case Op::Redux: {
      if (!d.is(kOR)) throw TraceError(fmt::format("SASS interpreter: unsupported REDUX in '{}'", d.text));
      std::uint32_t r = 0;
      for (std::uint32_t m = on; m; m &= m - 1) r |= reg(std::countr_zero(m), ops[1]);
      if (on) set_reg(uniform_lane(), ops[0], r);
      break;
    }
    case Op::Shfl: {
      std::array<std::uint32_t, 32> source{};
      for (int lane = 0; lane < 32; ++lane) source[lane] = ops[2].kind == Kind::Reg && ops[2].index != 255 ? w.r[lane][ops[2].index] : 0;
      lanes_on([&](int lane) {
        std::uint32_t b = reg(lane, ops[3]);
        std::uint32_t c = reg(lane, ops[4]);
        std::uint32_t clamp = c & 0x1F;
        int src = lane;
        bool valid = true;
        if (d.is(kIDX)) src = static_cast<int>(b & 0x1F);
        else if (d.is(kDOWN)) { src = lane + static_cast<int>(b); valid = src <= static_cast<int>(clamp); }
        else if (d.is(kUP)) { src = lane - static_cast<int>(b); valid = src >= 0; }
        else if (d.is(kBFLY)) src = lane ^ static_cast<int>(b);
        if (!valid || src < 0 || src > 31 || !((on >> src) & 1)) src = lane;
        set_reg(lane, ops[1], source[src]);
        set_pred(lane, ops[0], valid);
      });
      break;
    }
    default: return false;
  }
  return true;
}


// Global memory instructions: their addresses and the data they carry.
bool WarpStep::memory() {
  switch (d.op) {
    case Op::Redg: case Op::Atomg: case Op::Ldg: case Op::Stg: {
      const Operand* mem = nullptr;
      const Operand* data = nullptr;
      for (const auto& o : ops) {
        if (o.kind == Kind::Mem) mem = &o;
        else if (mem) { data = &o; break; }
      }
      if (!mem) throw TraceError(fmt::format("SASS interpreter: memory instruction without an address '{}'", d.text));
      lanes_on([&](int lane) {
        std::uint64_t base = 0;
        if (mem->mem_base != 255) base = w.r[lane][mem->mem_base] | (std::uint64_t(w.r[lane][mem->mem_base + 1]) << 32);
        out.address[lane] = base + mem->offset;
        out.value[lane] = data ? reg(lane, *data) : 0;
      });
      if (d.op == Op::Atomg || d.op == Op::Ldg)
        throw TraceError(fmt::format("SASS interpreter: loads and returning atomics need memory contents ('{}')", d.text));
      break;
    }
    default: return false;
  }
  return true;
}

// The PC the warp runs next and the lanes that run it: the highest-priority
// lanes, lowest PC first among them, and every runnable lane at that PC.
// Where every live lane is parked at a convergence barrier whose other lanes
// have exited, the lowest-PC group parked is released first (UINT32_MAX).
std::uint32_t next_group(WarpState& w, std::uint32_t& mask) {
  const std::uint32_t runnable = w.live & ~w.waiting;
  if (!runnable) {
    std::uint32_t lowest = UINT32_MAX;
    for (std::uint32_t m = w.waiting; m; m &= m - 1) lowest = std::min(lowest, w.pc[std::countr_zero(m)]);
    for (std::uint32_t m = w.waiting; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      if (w.pc[lane] == lowest) { w.pc[lane] = lowest + 1; w.waiting &= ~(1u << lane); }
    }
    return UINT32_MAX;
  }
  std::uint32_t top = 0;
  for (std::uint32_t m = runnable; m; m &= m - 1) top = std::max(top, w.priority[std::countr_zero(m)]);
  std::uint32_t pc = UINT32_MAX - 1;
  for (std::uint32_t m = runnable; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (w.priority[lane] == top) pc = std::min(pc, w.pc[lane]);
  }
  mask = 0;
  for (std::uint32_t m = runnable; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    if (w.pc[lane] == pc) mask |= 1u << lane;
  }
  return pc;
}

// The lanes of `mask` whose guard holds.
std::uint32_t guard_holds(const WarpState& w, const Interpreter::Decoded& d, std::uint32_t mask) {
  std::uint32_t on = 0;
  for (std::uint32_t m = mask; m; m &= m - 1) {
    int lane = std::countr_zero(m);
    bool g = d.guard_uniform ? ((w.up >> d.guard) & 1) : ((w.p[lane] >> d.guard) & 1);
    if (d.guard == 7) g = true;
    if (g != d.guard_negated) on |= 1u << lane;
  }
  return on;
}

// After an instruction: branches move the lanes whose guard held (the
// record's mask, as the GPU counts predicate-on threads); others fall through.
void advance(WarpState& w, const Interpreter::Decoded& d, std::uint32_t pc, std::uint32_t mask, std::uint32_t on) {
  if (d.op == Op::Bra || d.op == Op::BraDiv) {
    if (on && on != mask) {
      ++w.priority_clock;
      for (std::uint32_t m = on; m; m &= m - 1) w.priority[std::countr_zero(m)] = w.priority_clock;
    }
    for (std::uint32_t m = mask; m; m &= m - 1) {
      int lane = std::countr_zero(m);
      w.pc[lane] = ((on >> lane) & 1) ? d.target : pc + 1;
    }
  } else {
    for (std::uint32_t m = mask & w.live; m; m &= m - 1) w.pc[std::countr_zero(m)] = pc + 1;
  }
}

}  // namespace

void Interpreter::run_warp(const LaunchConfig& launch, std::uint64_t cta, std::uint32_t warp_in_cta,
                           const std::function<void(const trace::WarpInst&)>& emit, std::uint64_t max_instructions) {
  auto state = std::make_unique<WarpState>();
  WarpState& w = *state;
  const std::uint64_t threads = launch.block.count();
  for (std::uint32_t lane = 0; lane < 32; ++lane) {
    std::uint64_t tid = std::uint64_t(warp_in_cta) * 32 + lane;
    if (tid < threads) w.live |= 1u << lane;
    w.p[lane] = 0x80;
  }
  const std::uint64_t tid_base = std::uint64_t(warp_in_cta) * 32;
  trace::WarpInst out;
  std::uint64_t executed = 0;
  while (w.live) {
    std::uint32_t mask = 0;
    const std::uint32_t pc = next_group(w, mask);
    if (pc == UINT32_MAX) continue;
    if (pc >= decoded_.size()) throw TraceError("SASS interpreter: a warp ran past the end of its function");
    if (++executed > max_instructions) throw TraceError("SASS interpreter: warp exceeded its instruction limit");
    const Decoded& d = decoded_[pc];
    WarpStep step{w, launch, cta, tid_base, d, program_[pc], d.operands, pc, mask, guard_holds(w, d, mask), out};
    out.index = pc;
    out.active_mask = step.on;
    out.value_lanes = 0;
    if (!(step.control() || step.integer() || step.floating() || step.collective() || step.memory()))
      throw TraceError(fmt::format("SASS interpreter: unsupported instruction '{}' (pc 0x{:x})", d.text, program_[pc].pc));
    if (!step.parked) advance(w, d, pc, mask, step.on);
    emit(out);
  }
}

}  // namespace atomsim::sass
