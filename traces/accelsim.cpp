#include "traces/accelsim.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <optional>
#include <bit>
#include <charconv>
#include <functional>
#include <map>
#include <sstream>
#include <vector>

#include "traces/reader.hpp"
#include "traces/sass.hpp"
#include "traces/writer.hpp"
#include "traces/xz_text.hpp"

namespace fs = std::filesystem;

namespace atomsim::trace::accelsim {

namespace {

// Address encodings after a memory instruction's width (the tracer's address_format).
enum AddressMode : int { kListAll = 0, kBaseStride = 1, kBaseDelta = 2 };
// What Accel-Sim's parser reads of a record's registers (its MAX_DST, MAX_SRC).
constexpr std::size_t kMostDestinations = 1, kMostSources = 4;
// Warps of a grid an import takes: some 2^27 threads, a text trace of gigabytes.
constexpr std::uint64_t kMostWarps = std::uint64_t(1) << 22;

// One file read line by line (decompressed when it is .xz), naming its place in every error.
class LineReader {
 public:
  explicit LineReader(const fs::path& path) : path_(path), lines_(path) {}
  bool next(std::string& line) {
    if (!lines_.next(line)) return false;
    ++number_;
    return true;
  }
  [[noreturn]] void fail(std::string_view field, std::string_view problem) const {
    throw TraceError(fmt::format("{}:{}: {}: {}", path_.string(), number_, field, problem));
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
  TextLines lines_;
  std::uint64_t number_ = 0;
};

std::vector<std::string_view> tokens(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

template <class T>
T number(const LineReader& in, std::string_view field, std::string_view text, int base = 10) {
  if (base == 16 && (text.starts_with("0x") || text.starts_with("0X"))) text.remove_prefix(2);
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    in.fail(field, fmt::format("'{}' is not a {} number", text, base == 16 ? "hexadecimal" : "decimal"));
  return value;
}

// "R12" -> its register; R255 (RZ) names none.
std::optional<std::uint16_t> general_register(const LineReader& in, std::string_view field, std::string_view text) {
  if (!text.starts_with("R")) in.fail(field, fmt::format("'{}' is not a general register (R<n>)", text));
  const auto n = number<unsigned>(in, field, text.substr(1));
  if (n > 255) in.fail(field, fmt::format("'{}' is beyond R255", text));
  if (n == 255) return std::nullopt;
  return static_cast<std::uint16_t>(n);
}

struct Header {
  std::string name;
  Dim3 grid, block;
  std::uint32_t registers = 0, shared_bytes = 0;
  unsigned version = 0;
  bool line_numbers = false;
};

// "(x,y,z)" or "x,y,z".
std::array<std::uint32_t, 3> three_numbers(const LineReader& in, std::string_view field, std::string_view text) {
  std::string s(text);
  std::erase(s, '(');
  std::erase(s, ')');
  std::erase(s, ' ');
  std::array<std::uint32_t, 3> v{};
  std::size_t at = 0;
  for (int i = 0; i < 3; ++i) {
    const std::size_t comma = i < 2 ? s.find(',', at) : s.size();
    if (comma == std::string::npos) in.fail(field, fmt::format("'{}' is not three numbers x,y,z", text));
    v[i] = number<std::uint32_t>(in, field, std::string_view(s).substr(at, comma - at));
    at = comma + 1;
  }
  return v;
}

Dim3 dims(const LineReader& in, std::string_view field, std::string_view text) {
  const auto v = three_numbers(in, field, text);
  if (!v[0] || !v[1] || !v[2]) in.fail(field, fmt::format("'{}' has a zero dimension", text));
  return {v[0], v[1], v[2]};
}

// The header's "-key = value" lines, up to the line that starts the records.
Header read_header(LineReader& in) {
  Header h;
  bool grid = false, block = false;
  for (std::string line; in.next(line);) {
    if (line.empty()) continue;
    if (line[0] == '#') break;
    if (line[0] != '-') in.fail("header", fmt::format("'{}' is not a '-key = value' line", line));
    const std::size_t equals = line.find('=');
    if (equals == std::string::npos) in.fail("header", fmt::format("'{}' has no '='", line));
    std::string key = line.substr(1, equals - 1);
    while (!key.empty() && key.back() == ' ') key.pop_back();
    std::string_view value = std::string_view(line).substr(equals + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (key == "kernel name") h.name = std::string(value);
    else if (key == "grid dim") h.grid = dims(in, key, value), grid = true;
    else if (key == "block dim") h.block = dims(in, key, value), block = true;
    else if (key == "shmem") h.shared_bytes = number<std::uint32_t>(in, key, value);
    else if (key == "nregs") h.registers = number<std::uint32_t>(in, key, value);
    else if (key == "accelsim tracer version") h.version = number<unsigned>(in, key, value);
    else if (key == "enable lineinfo") h.line_numbers = number<unsigned>(in, key, value) != 0;
    // kernel id, binary version, cuda stream id, shared and local bases, nvbit version: not needed.
  }
  if (!grid || !block) in.fail(grid ? "block dim" : "grid dim", "missing from the header");
  if (h.version != 0 && (h.version < 3 || h.version > 6))
    in.fail("accelsim tracer version", fmt::format("{} is not one of 3 to 6", h.version));
  if (h.block.count() > 1024) in.fail("block dim", fmt::format("{} threads is more than a CTA holds", h.block.count()));
  if (h.grid.x >= (1u << 31) || h.grid.y > 65535 || h.grid.z > 65535)
    in.fail("grid dim", fmt::format("({},{},{}) is larger than a launch's grid may be", h.grid.x, h.grid.y, h.grid.z));
  // The trace writer keeps a little state for every warp of the grid.
  const std::uint64_t warps = h.grid.count() * ((h.block.count() + 31) / 32);
  if (warps > kMostWarps)
    in.fail("grid dim", fmt::format("{} warps is more than an import takes ({})", warps, kMostWarps));
  return h;
}

// The value of a "key = value" line, without the spaces after '='.
std::string_view value_after_equals(const LineReader& in, std::string_view field, std::string_view line) {
  const std::size_t equals = line.find('=');
  if (equals == std::string_view::npos) in.fail(field, "no '='");
  std::string_view value = line.substr(equals + 1);
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  return value;
}

// One instruction record, as the tracer wrote it.
struct Record {
  std::uint64_t pc = 0;
  std::uint32_t mask = 0;
  std::string_view opcode;
  std::vector<std::uint16_t> dst, src;
  std::uint32_t width = 0;
  std::array<std::uint64_t, 32> address{};
};

Record parse_record(const LineReader& in, const Header& h, std::string_view line) {
  const std::vector<std::string_view> t = tokens(line);
  std::size_t i = 0;
  auto take = [&](std::string_view field) -> std::string_view {
    if (i >= t.size()) in.fail(field, "missing (the record ends early)");
    return t[i++];
  };
  Record r;
  if (h.line_numbers) number<std::uint64_t>(in, "line number", take("line number"));
  r.pc = number<std::uint64_t>(in, "pc", take("pc"), 16);
  r.mask = number<std::uint32_t>(in, "mask", take("mask"), 16);
  const auto dsts = number<unsigned>(in, "dest_num", take("dest_num"));
  if (dsts > 8) in.fail("dest_num", fmt::format("{} destinations is more than an instruction has", dsts));
  for (unsigned k = 0; k < dsts; ++k)
    if (auto reg = general_register(in, "reg_dests", take("reg_dests"))) r.dst.push_back(*reg);
  r.opcode = take("opcode");
  const auto srcs = number<unsigned>(in, "src_num", take("src_num"));
  if (srcs > 8) in.fail("src_num", fmt::format("{} sources is more than an instruction has", srcs));
  for (unsigned k = 0; k < srcs; ++k)
    if (auto reg = general_register(in, "reg_srcs", take("reg_srcs"))) r.src.push_back(*reg);
  r.width = number<std::uint32_t>(in, "mem_width", take("mem_width"));
  if (r.width > 0) {
    const auto mode = number<int>(in, "address mode", take("address mode"));
    const std::uint32_t mask = r.mask;
    if (mode == kListAll) {
      for (std::uint32_t m = mask; m; m &= m - 1)
        r.address[std::countr_zero(m)] = number<std::uint64_t>(in, "address", take("address"), 16);
    } else if (mode == kBaseStride) {
      std::uint64_t address = number<std::uint64_t>(in, "base address", take("base address"), 16);
      const auto stride = number<std::int64_t>(in, "stride", take("stride"));
      // The tracer uses it only for a contiguous run of active lanes.
      if (mask && std::popcount(mask >> std::countr_zero(mask)) != std::countr_one(mask >> std::countr_zero(mask)))
        in.fail("address mode", "base and stride for lanes that are not one contiguous run");
      for (std::uint32_t m = mask; m; m &= m - 1, address += static_cast<std::uint64_t>(stride))
        r.address[std::countr_zero(m)] = address;
    } else if (mode == kBaseDelta) {
      std::uint64_t address = number<std::uint64_t>(in, "base address", take("base address"), 16);
      bool first = true;
      for (std::uint32_t m = mask; m; m &= m - 1) {
        if (!first) address += static_cast<std::uint64_t>(number<std::int64_t>(in, "address delta", take("address delta")));
        first = false;
        r.address[std::countr_zero(m)] = address;
      }
    } else {
      in.fail("address mode", fmt::format("{} is not 0 (list), 1 (base and stride) or 2 (base and deltas)", mode));
    }
  }
  // What follows is the immediate (two from tracer version 6).
  if (t.size() - i > 2) in.fail("immediate", fmt::format("{} values after the addresses, where at most two immediates follow", t.size() - i));
  for (; i < t.size(); ++i) number<std::int64_t>(in, "immediate", t[i]);
  return r;
}

StaticInst static_instruction(const Record& r) {
  StaticInst s = parse_sass_instruction(r.opcode, r.pc);
  s.num_dst = static_cast<std::uint8_t>(std::min<std::size_t>(r.dst.size(), s.dst.size()));
  for (std::size_t k = 0; k < s.num_dst; ++k) s.dst[k] = r.dst[k];
  s.num_src = static_cast<std::uint8_t>(std::min<std::size_t>(r.src.size(), s.src.size()));
  for (std::size_t k = 0; k < s.num_src; ++k) s.src[k] = r.src[k];
  return s;
}

// Calls on_record(warp, record) for each instruction record of the kernel,
// after on_header(header); warps are numbered as atomsim numbers them.
void read_kernel(const fs::path& path, const std::function<void(const Header&)>& on_header,
                 const std::function<void(std::uint64_t, const Record&)>& on_record) {
  LineReader in(path);
  const Header h = read_header(in);
  on_header(h);
  const std::uint32_t warps_per_cta = static_cast<std::uint32_t>((h.block.count() + 31) / 32);
  bool in_block = false;
  constexpr std::uint64_t kNone = UINT64_MAX;
  std::uint64_t cta = kNone;  // the thread block being read, as atomsim numbers CTAs
  std::uint64_t warp = kNone;
  std::uint64_t left = 0;  // records the warp's "insts" line announced that are still to come
  for (std::string line; in.next(line);) {
    if (line.empty()) continue;
    if (line.starts_with("#BEGIN_TB")) {
      if (in_block) in.fail("#BEGIN_TB", "a thread block begins before the last one ended");
      in_block = true;
      cta = kNone;
      warp = kNone;
    } else if (line.starts_with("#END_TB")) {
      if (!in_block) in.fail("#END_TB", "no thread block to end");
      if (left) in.fail("insts", fmt::format("the warp ended {} records short", left));
      in_block = false;
    } else if (line[0] == '#') {
      continue;
    } else if (!in_block) {
      in.fail("record", "outside a thread block (#BEGIN_TB ... #END_TB)");
    } else if (line.starts_with("thread block")) {
      const auto b = three_numbers(in, "thread block", value_after_equals(in, "thread block", line));
      if (b[0] >= h.grid.x || b[1] >= h.grid.y || b[2] >= h.grid.z)
        in.fail("thread block", fmt::format("({},{},{}) is outside the grid", b[0], b[1], b[2]));
      cta = b[0] + std::uint64_t(h.grid.x) * (b[1] + std::uint64_t(h.grid.y) * b[2]);
    } else if (line.starts_with("warp")) {
      if (left) in.fail("insts", fmt::format("the warp before ended {} records short", left));
      const auto w = number<std::uint32_t>(in, "warp", value_after_equals(in, "warp", line));
      if (w >= warps_per_cta) in.fail("warp", fmt::format("{} is beyond the CTA's {} warps", w, warps_per_cta));
      if (cta == kNone) in.fail("warp", "before the thread block's 'thread block =' line");
      warp = cta * warps_per_cta + w;
    } else if (line.starts_with("insts")) {
      if (warp == kNone) in.fail("insts", "before a 'warp =' line");
      left = number<std::uint64_t>(in, "insts", value_after_equals(in, "insts", line));
    } else {
      if (warp == kNone) in.fail("record", "before a 'warp =' line");
      if (!left) in.fail("record", "more records than the warp's 'insts' line announced");
      --left;
      on_record(warp, parse_record(in, h, line));
    }
  }
  if (in_block) in.fail("#END_TB", "the file ends inside a thread block");
}

// The kernel files `path` names: a kernelslist.g's, in its order, or `path` itself.
std::vector<fs::path> kernel_files(const fs::path& path) {
  if (path.filename() != "kernelslist.g") return {path};
  std::vector<fs::path> kernels;
  LineReader list(path);
  for (std::string line; list.next(line);) {
    if (line.empty() || line.starts_with("MemcpyHtoD") || line.starts_with("MemcpyDtoH")) continue;
    if (!line.starts_with("kernel")) list.fail("command", fmt::format("'{}' is neither a memcpy nor a kernel", line));
    kernels.push_back(path.parent_path() / line);
  }
  if (kernels.empty()) list.fail("kernelslist", "names no kernel");
  return kernels;
}

}  // namespace

bool is_accelsim_path(const fs::path& path) {
  const std::string name = path.filename().string();
  return name == "kernelslist.g" || name.ends_with(".traceg") || name.ends_with(".traceg.xz");
}

ImportSummary import_traces(const fs::path& path, const std::string& out) {
  const std::vector<fs::path> kernels = kernel_files(path);
  ImportSummary summary;
  TraceWriter writer(out);
  for (const fs::path& kernel : kernels) {
    // First the program (every pc's instruction), then the records that refer to it.
    KernelInfo info;
    std::map<std::uint64_t, StaticInst> program;
    read_kernel(
        kernel,
        [&](const Header& h) {
          info.name = h.name.empty() ? kernel.stem().string() : h.name;
          info.grid = h.grid;
          info.block = h.block;
          info.registers_per_thread = h.registers;
          info.shared_bytes = h.shared_bytes;
        },
        [&](std::uint64_t, const Record& r) {
          auto it = program.find(r.pc);
          if (it == program.end()) program.emplace(r.pc, static_instruction(r));
          else if (it->second.mnemonic != r.opcode)
            throw TraceError(fmt::format("{}: pc 0x{:x} is both {} and {}", kernel.string(), r.pc, it->second.mnemonic, r.opcode));
        });
    std::map<std::uint64_t, std::uint32_t> index;
    for (const auto& [pc, s] : program) {
      index[pc] = static_cast<std::uint32_t>(info.program.size());
      info.program.push_back(s);
    }
    const std::uint64_t warps = info.total_warps();
    writer.begin_kernel(info);
    read_kernel(
        kernel, [](const Header&) {},
        [&](std::uint64_t warp, const Record& r) {
          if (warp >= warps) throw TraceError(fmt::format("{}: warp {} is beyond the grid's {}", kernel.string(), warp, warps));
          WarpInst inst;
          inst.index = index.at(r.pc);
          inst.active_mask = r.mask;
          if (r.width > 0) inst.address = r.address;
          writer.append(warp, inst);
          ++summary.warp_instructions;
        });
    writer.end_kernel();
    ++summary.kernels;
  }
  writer.finish();
  return summary;
}

std::string simulation_trace(const std::string& path) {
  if (!is_accelsim_path(path)) return path;
  // The import is named by what it was made from: each file's path, size and time.
  std::vector<fs::path> files{fs::absolute(path)};
  if (fs::path(path).filename() == "kernelslist.g")
    for (const fs::path& kernel : kernel_files(path)) files.push_back(fs::absolute(kernel));
  std::size_t key = 0;
  for (const fs::path& f : files) {
    std::error_code ec;
    const auto size = fs::file_size(f, ec);
    const auto time = fs::last_write_time(f, ec).time_since_epoch().count();
    if (ec) throw TraceError(fmt::format("{}: cannot open the file", f.string()));
    key = std::hash<std::string>{}(fmt::format("{:x}|{}|{}|{}", key, f.string(), size, time));
  }
  const fs::path imported = fs::temp_directory_path() / fmt::format("atomsim-accelsim-{:016x}.atr", key);
  if (!fs::exists(imported)) {
    // Runs of a sweep may import the same files at once: each writes a file
    // of its own and renames it into place.
    const fs::path mine = imported.string() + fmt::format(".{}", ::getpid());
    import_traces(path, mine.string());
    fs::rename(mine, imported);
  }
  return imported.string();
}

void export_traces(const std::string& trace, const fs::path& dir, unsigned binary_version, bool compress) {
  TraceReader reader(trace);
  fs::create_directories(dir);
  std::ostringstream list;
  for (std::size_t k = 0; k < reader.kernel_count(); ++k) {
    const KernelInfo& info = reader.kernel(k);
    const std::string file = fmt::format("kernel-{}.traceg{}", k + 1, compress ? ".xz" : "");
    TextFileWriter out(dir / file);
    out.write(fmt::format("-kernel name = {}\n-kernel id = {}\n-grid dim = ({},{},{})\n-block dim = ({},{},{})\n"
                       "-shmem = {}\n-nregs = {}\n-binary version = {}\n-cuda stream id = 0\n"
                       "-shmem base_addr = 0x0\n-local mem base_addr = 0x0\n-nvbit version = atomsim\n"
                       "-accelsim tracer version = 5\n-enable lineinfo = 0\n\n"
                       "#traces format = PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width "
                       "[adrrescompress?] [mem_addresses] immediate\n\n",
                       info.name, k + 1, info.grid.x, info.grid.y, info.grid.z, info.block.x, info.block.y,
                       info.block.z, info.shared_bytes, info.registers_per_thread, binary_version));
    // Accel-Sim names general registers only, and reads at most one
    // destination and four sources, as its tracer writes them.
    const auto registers = [](const auto& regs, std::uint8_t n, std::size_t most) {
      std::string names;
      std::size_t count = 0;
      for (std::uint8_t i = 0; i < n && count < most; ++i)
        if (regs[i] < 255) names += fmt::format(" R{}", regs[i]), ++count;
      return fmt::format("{}{}", count, names);
    };
    const std::uint32_t warps_per_cta = info.warps_per_cta();
    WarpInst inst;
    for (std::uint64_t cta = 0; cta < info.grid.count(); ++cta) {
      const std::uint64_t x = cta % info.grid.x, y = (cta / info.grid.x) % info.grid.y,
                          z = cta / (std::uint64_t(info.grid.x) * info.grid.y);
      out.write(fmt::format("#BEGIN_TB\n\nthread block = {},{},{}\n\n", x, y, z));
      for (std::uint32_t w = 0; w < warps_per_cta; ++w) {
        std::string records;
        std::uint64_t count = 0;
        WarpStream stream = reader.open_warp(k, cta * warps_per_cta + w);
        while (stream.next(inst)) {
          const StaticInst& s = info.program[inst.index];
          records += fmt::format("{:04x} {:08x} {} {} {}", s.pc, inst.active_mask, registers(s.dst, s.num_dst, kMostDestinations),
                                 s.mnemonic.empty() ? op_class_name(s.op) : s.mnemonic, registers(s.src, s.num_src, kMostSources));
          // Accel-Sim takes every memory instruction with a width, even one
          // whose lanes are all off (it then lists no address).
          if (is_global_memory(s.op)) {
            records += fmt::format(" {} {}", std::max<std::uint32_t>(s.access_bytes, 1), static_cast<int>(kListAll));
            for (std::uint32_t m = inst.active_mask; m; m &= m - 1)
              records += fmt::format(" 0x{:016x}", inst.address[std::countr_zero(m)]);
          } else if (s.op == OpClass::Shared) {
            // An atomsim trace holds no shared-memory addresses: each lane is
            // given a word of its own, in lane order (no bank conflict).
            const std::uint32_t width = access_width(s.mnemonic.empty() ? std::string_view("LDS") : std::string_view(s.mnemonic));
            records += fmt::format(" {} {}", width, static_cast<int>(kListAll));
            for (std::uint32_t m = inst.active_mask; m; m &= m - 1)
              records += fmt::format(" 0x{:016x}", std::uint64_t(std::countr_zero(m)) * width);
          } else {
            records += " 0";
          }
          records += " 0\n";
          ++count;
        }
        out.write(fmt::format("warp = {}\ninsts = {}\n", w, count));
        out.write(records);
        out.write("\n");
      }
      out.write("#END_TB\n\n");
    }
    out.commit();
    list << file << "\n";
  }
  TextFileWriter kernels_list(dir / "kernelslist.g");
  kernels_list.write(list.str());
  kernels_list.commit();
}

}  // namespace atomsim::trace::accelsim
