// The trace pass: a Compute Sanitizer tool library, injected through
// CUDA_INJECTION64_PATH like the CUPTI one. It patches every loaded module so
// that memory accesses, shuffles, barriers, calls, returns and exits report
// themselves (tools/capture/trace/patches.cu), hands the record buffers to the
// selected launches, and after each one rebuilds every warp's full instruction
// stream from the records and the kernel's SASS (tools/capture/warp_join.hpp)
// into one atomsim trace. The Sanitizer library is opened at run time from the
// path the launcher found, so this builds wherever the Sanitizer headers are.
#include <dlfcn.h>
#include <sanitizer.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "tools/capture/awaited_values.hpp"
#include "tools/capture/cta_order.hpp"
#include "tools/capture/outputs.hpp"
#include "tools/capture/provenance.hpp"
#include "tools/capture/settings.hpp"
#include "tools/capture/stream_capture.hpp"
#include "tools/capture/trace/records.hpp"
#include "tools/capture/warp_join.hpp"
#include "traces/capture_document.hpp"
#include "traces/sass.hpp"
#include "traces/writer.hpp"

namespace atomsim::capture {
namespace {

namespace dev = device;

// The Sanitizer API, resolved from the library at run time.
struct SanitizerApi {
#define ATOMSIM_SANITIZER_FUNCTIONS(X)                                                                          \
  X(sanitizerSubscribe) X(sanitizerEnableDomain) X(sanitizerAddPatchesFromFile) X(sanitizerPatchInstructions) \
  X(sanitizerPatchModule) X(sanitizerSetCallbackData) X(sanitizerSetLaunchCallbackData) X(sanitizerAlloc) X(sanitizerMemcpyHostToDeviceAsync)   \
  X(sanitizerMemset)                                                                                          \
  X(sanitizerMemcpyDeviceToHost) X(sanitizerStreamSynchronize) X(sanitizerGetFunctionPcAndSize)               \
  X(sanitizerGetResultString)
#define ATOMSIM_DECLARE(name) decltype(&::name) name = nullptr;
  ATOMSIM_SANITIZER_FUNCTIONS(ATOMSIM_DECLARE)
#undef ATOMSIM_DECLARE

  void load(const std::string& path) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib) throw CaptureError("cannot open the Compute Sanitizer library " + path + ": " + dlerror());
#define ATOMSIM_RESOLVE(name)                                                       \
  name = reinterpret_cast<decltype(name)>(dlsym(lib, #name));                       \
  if (!name) throw CaptureError(path + " lacks " #name " (Compute Sanitizer too old?)");
    ATOMSIM_SANITIZER_FUNCTIONS(ATOMSIM_RESOLVE)
#undef ATOMSIM_RESOLVE
  }

  void check(SanitizerResult r, const char* call) const {
    if (r == SANITIZER_SUCCESS) return;
    const char* text = nullptr;
    if (sanitizerGetResultString) sanitizerGetResultString(r, &text);
    throw CaptureError(std::string(call) + " failed: " + (text ? text : "unknown Sanitizer error"));
  }
};
#define ATOMSIM_SAN(call) api.check(api.call, #call)

struct Module {
  std::string cubin;
  // By function, made on first use: `cuobjdump --dump-sass` and
  // `--dump-resource-usage` of that function alone (a PyTorch module's whole
  // listing took 15 s).
  std::map<std::string, std::pair<std::string, std::string>> listing_and_usage;
};

struct Buffers {
  // Host sources of the asynchronous copies made before a launch; they must outlive the copies.
  dev::Control control_host{};
  std::vector<dev::Pending> pending_host;
  void* control = nullptr;
  dev::Event* events = nullptr;
  dev::LaneData* lanes = nullptr;
  dev::Pending* pending = nullptr;
  std::uint32_t* locks = nullptr;
  std::uint64_t event_capacity = 0, lane_capacity = 0, pending_capacity = 0;
};

struct LaunchRecord {
  std::uint64_t ordinal = 0;
  std::string mangled, name;
  bool selected = false;
  bool graph_node = false;  // a kernel node of a CUDA graph's launch
  trace::KernelInfo kernel;
  std::uint64_t function_pc = 0;
  CUmodule module = nullptr;
};

struct TracePass {
  Settings settings;
  SanitizerApi api;
  std::string patches;
  std::unique_ptr<LaunchSelector> selector;
  std::recursive_mutex mutex;  // Sanitizer calls made inside a callback may call back
  std::string first_error;
  std::map<CUmodule, Module> modules;
  std::map<CUcontext, bool> patches_loaded;
  std::map<CUcontext, Buffers> buffers;
  // The selected launch in flight, between its begin and end callbacks.
  LaunchRecord current;
  Sanitizer_LaunchHandle current_handle = nullptr;
  bool current_open = false;
  // A selected graph node whose records are read once its graph's launch has
  // ended: the node's own end comes while the graph is still being issued.
  struct AwaitedGraph {
    CUgraphExec exec = nullptr;
    Sanitizer_LaunchData launch{};
  };
  std::optional<AwaitedGraph> awaited_graph;
  // Launches begun and not yet ended, with the domain that began them: a graph's
  // kernel may be announced by its node's callbacks and by the launch domain's.
  std::map<Sanitizer_LaunchHandle, Sanitizer_CallbackDomain> begun;
  CUdevice device_handle = 0;
  std::unique_ptr<trace::TraceWriter> writer;
  nlohmann::json launches = nlohmann::json::array();

  void fail(const std::string& m) {
    if (first_error.empty()) first_error = m;
  }
};
TracePass* g_pass = nullptr;

// Each line carries the seconds since the library was loaded, to show where a capture's time goes.
const auto g_loaded_at = std::chrono::steady_clock::now();

void progress(const TracePass& p, const std::string& what) {
  if (p.settings.verbose)
    std::fprintf(stderr, "atomsim-capture trace: %7.2f s %s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - g_loaded_at).count(), what.c_str());
}

// Runs cuobjdump with `options` on the cubin and returns what it prints.
std::string cuobjdump(const std::string& cubin, const char* options) {
  char path[] = "/tmp/atomsim-trace-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) throw CaptureError("cannot create a temporary file for the cubin");
  FILE* f = fdopen(fd, "wb");
  std::fwrite(cubin.data(), 1, cubin.size(), f);
  std::fclose(f);
  std::string command = std::string("cuobjdump ") + options + " '" + path + "' 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  std::string listing;
  if (pipe) {
    char chunk[65536];
    std::size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, pipe)) > 0) listing.append(chunk, n);
  }
  int status = pipe ? pclose(pipe) : -1;
  std::remove(path);
  if (status != 0 || listing.empty()) throw CaptureError("cuobjdump could not read the kernel's cubin (is it on PATH?)");
  return listing;
}

// "REG:32 STACK:0 SHARED:0 ..." under the function's line of `cuobjdump --dump-resource-usage`.
std::uint32_t resource(const std::string& usage, const std::string& function, const char* key) {
  std::size_t at = usage.find("Function " + function + ":");
  if (at == std::string::npos) return 0;
  std::size_t line = usage.find('\n', at);
  std::size_t end = usage.find('\n', line + 1);
  std::size_t k = usage.find(std::string(key) + ":", line);
  if (k == std::string::npos || k > end) return 0;
  return static_cast<std::uint32_t>(std::strtoul(usage.c_str() + k + std::strlen(key) + 1, nullptr, 10));
}

void on_module_loaded(TracePass& p, const Sanitizer_ResourceModuleData* m) {
  auto& api = p.api;
  // Patching is what makes captures of large programs slow (PyTorch loads
  // modules of thousands of kernels): only modules of selected kernels are patched.
  if (!p.settings.cubin_defines_selected(m->pCubin, m->cubinSize)) {
    progress(p, fmt::format("module loaded ({} bytes); no selected kernel in it, not patched", m->cubinSize));
    return;
  }
  progress(p, fmt::format("module loaded ({} bytes); patching", m->cubinSize));
  p.modules[m->module].cubin.assign(m->pCubin, m->cubinSize);
  if (!p.patches_loaded[m->context]) {
    ATOMSIM_SAN(sanitizerAddPatchesFromFile(p.patches.c_str(), m->context));
    p.patches_loaded[m->context] = true;
  }
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_GLOBAL_MEMORY_ACCESS, m->module, "atomsim_global_access"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_SHARED_MEMORY_ACCESS, m->module, "atomsim_other_access"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_LOCAL_MEMORY_ACCESS, m->module, "atomsim_other_access"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_SHFL, m->module, "atomsim_shuffle"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_BARRIER, m->module, "atomsim_barrier"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_SYNCWARP, m->module, "atomsim_syncwarp"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_CALL, m->module, "atomsim_call"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_RET, m->module, "atomsim_return"));
  ATOMSIM_SAN(sanitizerPatchInstructions(SANITIZER_INSTRUCTION_BLOCK_EXIT, m->module, "atomsim_exit"));
  ATOMSIM_SAN(sanitizerPatchModule(m->module));
  progress(p, "module patched");
}

// A million word locks (4 MiB): atomics on different words rarely share one.
constexpr std::uint32_t kLockBits = 20;

// Splits the record budget between events (32 B) and lane data (800 B) and
// prepares the control block for one launch.
Buffers& prepare_buffers(TracePass& p, const Sanitizer_LaunchData* ld, std::uint64_t warps) {
  auto& api = p.api;
  Buffers& b = p.buffers[ld->context];
  if (!b.control) {
    std::uint64_t bytes = p.settings.trace_buffer_mib << 20;
    b.event_capacity = bytes / 4 / sizeof(dev::Event);
    b.lane_capacity = bytes * 3 / 4 / sizeof(dev::LaneData);
    ATOMSIM_SAN(sanitizerAlloc(ld->context, &b.control, sizeof(dev::Control)));
    ATOMSIM_SAN(sanitizerAlloc(ld->context, reinterpret_cast<void**>(&b.events), b.event_capacity * sizeof(dev::Event)));
    ATOMSIM_SAN(sanitizerAlloc(ld->context, reinterpret_cast<void**>(&b.lanes), b.lane_capacity * sizeof(dev::LaneData)));
    ATOMSIM_SAN(sanitizerAlloc(ld->context, reinterpret_cast<void**>(&b.locks), sizeof(std::uint32_t) << kLockBits));
  }
  ATOMSIM_SAN(sanitizerMemset(b.locks, 0, sizeof(std::uint32_t) << kLockBits, ld->hStream));
  if (b.pending_capacity < warps) {
    ATOMSIM_SAN(sanitizerAlloc(ld->context, reinterpret_cast<void**>(&b.pending), warps * sizeof(dev::Pending)));
    b.pending_capacity = warps;
  }
  b.pending_host.assign(warps, dev::Pending{});
  ATOMSIM_SAN(sanitizerMemcpyHostToDeviceAsync(b.pending, b.pending_host.data(), warps * sizeof(dev::Pending), ld->hStream));
  dev::Control& c = b.control_host;
  c = dev::Control{};
  c.events = b.events;
  c.lanes = b.lanes;
  c.pending = b.pending;
  c.locks = b.locks;
  c.lock_bits = kLockBits;
  c.event_capacity = b.event_capacity;
  c.lane_capacity = b.lane_capacity;
  c.warps_per_cta = static_cast<std::uint32_t>(p.current.kernel.warps_per_cta());
  ATOMSIM_SAN(sanitizerMemcpyHostToDeviceAsync(b.control, &c, sizeof c, ld->hStream));
  return b;
}

// The loaded (and patched) module that defines a launched function. A graph's
// kernel node may name its module by another handle than the one it was
// loaded with; the function's name, NUL-bounded in the cubin's string table,
// finds it then.
CUmodule module_defining(const TracePass& p, CUmodule named, const std::string& mangled) {
  if (p.modules.count(named)) return named;
  std::string symbol(1, '\0');
  symbol += mangled;
  symbol += '\0';
  for (const auto& [handle, module] : p.modules)
    if (module.cubin.find(symbol) != std::string::npos) return handle;
  throw CaptureError(fmt::format("{}: no loaded module defines the launched function", demangle(mangled.c_str())));
}

void on_launch_begin(TracePass& p, const Sanitizer_LaunchData* ld, bool graph_node) {
  auto& api = p.api;
  if (!graph_node && stream_is_capturing(ld->stream)) return;
  LaunchRecord launch;
  launch.ordinal = p.selector->launches_seen();
  launch.mangled = ld->functionName ? ld->functionName : "";
  launch.name = demangle(ld->functionName);
  launch.selected = p.selector->select(launch.mangled, launch.name);
  launch.graph_node = graph_node;
  progress(p, fmt::format("launch {} ({}){}{}", launch.ordinal, launch.name, graph_node ? " of a graph" : "",
                          launch.selected ? " selected" : ""));
  p.device_handle = ld->device;
  if (!launch.selected) {
    if (p.modules.count(ld->module)) ATOMSIM_SAN(sanitizerSetCallbackData(ld->function, nullptr));
    return;
  }
  if (p.current_open || p.awaited_graph)
    throw CaptureError(fmt::format("launches {} and {} of {} run at once (kernels of one CUDA graph); trace one of "
                                   "them with --launch", p.current.ordinal, launch.ordinal, launch.name));
  ProcessStage::mark_selected(p.settings);
  p.current = std::move(launch);
  p.current_handle = ld->hLaunch;
  p.current_open = true;
  LaunchRecord& r = p.current;
  r.module = module_defining(p, ld->module, r.mangled);
  trace::KernelInfo& k = r.kernel;
  k.name = r.name;
  k.grid = {ld->gridDim_x, ld->gridDim_y, ld->gridDim_z};
  k.block = {ld->blockDim_x, ld->blockDim_y, ld->blockDim_z};
  std::uint64_t size = 0;
  ATOMSIM_SAN(sanitizerGetFunctionPcAndSize(r.module, r.mangled.c_str(), &r.function_pc, &size));
  Buffers& b = prepare_buffers(p, ld, k.total_warps());
  // A graph's kernel node may already be queued behind the copies that reset
  // the record buffers; they must have landed before it runs.
  if (graph_node) ATOMSIM_SAN(sanitizerStreamSynchronize(ld->hStream));
  ATOMSIM_SAN(sanitizerSetCallbackData(ld->function, b.control));
  // A graph's kernel may carry the callback data it was instantiated with; this launch's own overrides it.
  if (graph_node) ATOMSIM_SAN(sanitizerSetLaunchCallbackData(ld->hLaunch, ld->function, ld->hStream, b.control));
}

// The count pass's executed warp instructions of the kernel, per instruction
// of its program; empty where no count pass ran first.
std::vector<std::uint64_t> launch_counts(const std::filesystem::path& count_json, const std::string& mangled,
                                         const std::vector<trace::StaticInst>& program) {
  if (count_json.empty()) return {};
  std::string text;
  try {
    text = read_document(count_json);
  } catch (const DocumentError& e) {
    throw CaptureError(e.what());
  }
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) throw CaptureError(count_json.string() + ": not the count pass's JSON");
  std::unordered_map<std::uint64_t, std::size_t> index;
  for (std::size_t i = 0; i < program.size(); ++i) index[program[i].pc] = i;
  try {
    for (const auto& k : doc.value("kernels", nlohmann::json::array())) {
      if (k.value("mangled", "") != mangled) continue;
      std::vector<std::uint64_t> counts(program.size(), 0);
      for (const auto& pc : k.at("pcs")) {
        if (pc.value("function", "") != mangled) continue;
        auto it = index.find(pc.at("pc_offset").get<std::uint64_t>());
        if (it != index.end()) counts[it->second] += pc.at("warp_instructions").get<std::uint64_t>();
      }
      return counts;
    }
  } catch (const nlohmann::json::exception& e) {
    throw CaptureError(count_json.string() + ": not the count pass's JSON (" + e.what() + ")");
  }
  return {};
}

// The type of one 8-byte word a record's slot holds: a 16-byte F32x4 atomic's
// two words are each a pair of floats.
trace::DataType word_type(trace::DataType t) { return t == trace::DataType::F32x4 ? trace::DataType::F32x2 : t; }

bool is_real(trace::DataType t) {
  return t == trace::DataType::F32 || t == trace::DataType::F64 || t == trace::DataType::F32x2;
}

// A word's raw bits as a number of the atomic's type, and back. A float sum or
// difference computed in double and rounded to float equals the float operation.
double real_of(trace::DataType t, std::uint64_t bits) {
  if (t == trace::DataType::F64) return std::bit_cast<double>(bits);
  return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
}
std::uint64_t bits_of(trace::DataType t, double v) {
  if (t == trace::DataType::F64) return std::bit_cast<std::uint64_t>(v);
  return std::bit_cast<std::uint32_t>(static_cast<float>(v));
}
bool is_wide(trace::DataType t) { return trace::value_bytes(t) == 8; }
// The floats a word holds: one, or two for F32x2.
std::vector<double> reals_of(trace::DataType t, std::uint64_t bits) {
  if (t != trace::DataType::F32x2) return {real_of(t, bits)};
  return {real_of(trace::DataType::F32, bits & 0xFFFFFFFFu), real_of(trace::DataType::F32, bits >> 32)};
}

// a + sign * b in the atomic's type, as raw bits.
std::uint64_t add_bits(trace::DataType t, std::uint64_t a, std::uint64_t b, int sign) {
  if (t == trace::DataType::F32x2) {  // each half a float of its own
    std::uint64_t sum = 0;
    for (int i = 0; i < 2; ++i) {
      const std::uint64_t half = add_bits(trace::DataType::F32, a >> (32 * i) & 0xFFFFFFFFu, b >> (32 * i) & 0xFFFFFFFFu, sign);
      sum |= half << (32 * i);
    }
    return sum;
  }
  if (is_real(t)) return bits_of(t, real_of(t, a) + sign * real_of(t, b));
  std::uint64_t sum = sign > 0 ? a + b : a - b;
  return is_wide(t) ? sum : static_cast<std::uint32_t>(sum);
}

// What an add took a word from `before` to `after` with.
std::uint64_t added(trace::DataType type, std::uint64_t before, std::uint64_t after) {
  return add_bits(type, after, before, -1);
}

// Replays the captured atomic adds, in the order the kernel performed them,
// from each word's first before-value, and compares with the words as the
// kernel left them.
struct SlotUse {
  std::int32_t index = -1;  // program index of the instruction that filled the slot
  std::uint32_t mask = 0;
};

nlohmann::json replay_atomics(TracePass& p, const Sanitizer_LaunchData* ld, const std::vector<dev::LaneData>& lanes,
                              const std::vector<SlotUse>& slots, const trace::KernelInfo& k) {
  auto& api = p.api;
  struct Word {
    std::uint32_t bytes = 0;
    trace::DataType type = trace::DataType::None;
    std::uint64_t value = 0;
    double largest = 0;  // the largest magnitude the word held (floats)
    bool replayable = true;
  };
  std::map<std::uint64_t, Word> words;
  std::uint64_t updates = 0;
  for (std::size_t s = 0; s < lanes.size(); ++s) {
    const dev::LaneData& d = lanes[s];
    if (!d.atomic || slots[s].index < 0) continue;
    const trace::StaticInst& inst = k.program[slots[s].index];
    const std::uint32_t mask = slots[s].mask;
    std::map<std::uint64_t, bool> seen;
    for (int l = 0; l < 32; ++l) {
      if (!((mask >> l) & 1) || seen[d.address[l]]) continue;
      seen[d.address[l]] = true;
      auto [it, fresh] = words.try_emplace(d.address[l]);
      Word& w = it->second;
      if (fresh) {
        w.bytes = d.bytes == 16 ? 8 : d.bytes;
        w.type = word_type(inst.atomic_type);
        w.value = d.before[l];
      }
      if (inst.atomic_op != trace::AtomicOp::Add) { w.replayable = false; continue; }
      ++updates;
      w.value = add_bits(w.type, w.value, added(w.type, d.before[l], d.after[l]), +1);
      if (is_real(w.type))
        for (std::uint64_t bits : {d.before[l], d.after[l]})
          for (double v : reals_of(w.type, bits)) w.largest = std::max(w.largest, std::fabs(v));
    }
  }
  // The words as the kernel left them, copied in spans of nearby words: a copy
  // per word took minutes for the millions of words of a minified grid_sample
  // backward. A span that crosses unmapped memory (words of two allocations)
  // is copied word by word.
  std::unordered_map<std::uint64_t, std::uint64_t> final_values;
  {
    constexpr std::uint64_t kGapBytes = 256, kSpanBytes = 64ull << 20;
    std::vector<unsigned char> span;
    for (auto it = words.begin(); it != words.end();) {
      const std::uint64_t begin = it->first;
      std::uint64_t end = begin + it->second.bytes;
      auto last = std::next(it);
      while (last != words.end() && last->first <= end + kGapBytes && last->first + last->second.bytes - begin <= kSpanBytes)
        end = std::max(end, last->first + last->second.bytes), ++last;
      span.resize(end - begin);
      const bool whole = api.sanitizerMemcpyDeviceToHost(span.data(), reinterpret_cast<void*>(begin), span.size(),
                                                         ld->hStream) == SANITIZER_SUCCESS;
      for (; it != last; ++it) {
        std::uint64_t bits = 0;
        if (whole)
          std::memcpy(&bits, span.data() + (it->first - begin), it->second.bytes);
        else
          ATOMSIM_SAN(sanitizerMemcpyDeviceToHost(&bits, reinterpret_cast<void*>(it->first), it->second.bytes, ld->hStream));
        final_values[it->first] = bits;
      }
    }
  }
  std::uint64_t compared = 0, exact = 0, within = 0, skipped = 0;
  double worst = 0;
  std::map<std::uint64_t, nlohmann::json> mismatched;  // a few words that did not replay, for diagnosis
  for (auto& [address, w] : words) {
    if (!w.replayable) { ++skipped; continue; }
    const std::uint64_t final_bits = final_values.at(address);
    ++compared;
    if (final_bits == w.value) { ++exact; ++within; continue; }
    if (mismatched.size() < 4) mismatched[address] = {{"final", final_bits}, {"replayed", w.value}, {"updates", nlohmann::json::array()}};
    if (!is_real(w.type)) {  // integers replay exactly or not at all
      worst = std::max(worst, 1.0);
      continue;
    }
    // Several lanes of one instruction adding to one word are several roundings
    // that a single before/after pair cannot replay bit for bit; the error is
    // therefore measured against the largest magnitude the word held, which
    // stays meaningful where the adds cancel.
    const std::vector<double> replayed = reals_of(w.type, w.value), measured = reals_of(w.type, final_bits);
    double error = 0;
    for (std::size_t i = 0; i < replayed.size(); ++i)
      error = std::max(error, std::fabs(replayed[i] - measured[i]) / std::max(1e-30, w.largest));
    worst = std::max(worst, error);
    if (error <= 1e-5) ++within;
  }
  // Each mismatched word's updates in replay order: record slot, lanes on the word, and per lane the before and after read.
  for (std::size_t s = 0; s < lanes.size() && !mismatched.empty(); ++s) {
    const dev::LaneData& d = lanes[s];
    if (!d.atomic || slots[s].index < 0) continue;
    for (auto& [address, diag] : mismatched) {
      nlohmann::json reads = nlohmann::json::array();
      for (int l = 0; l < 32; ++l)
        if (((slots[s].mask >> l) & 1) && d.address[l] == address) reads.push_back({l, d.before[l], d.after[l]});
      if (!reads.empty() && diag["updates"].size() < 64)
        diag["updates"].push_back({{"slot", s}, {"pc_index", slots[s].index}, {"mask", slots[s].mask}, {"lanes", reads}});
    }
  }
  nlohmann::json mismatches = nlohmann::json::array();
  for (auto& [address, diag] : mismatched) {
    diag["address"] = address;
    mismatches.push_back(diag);
  }
  return {{"word_updates", updates}, {"words", compared}, {"words_exact", exact},
          {"words_within_1e-5", within}, {"words_not_add", skipped}, {"worst_relative_error", worst},
          {"mismatched_words", mismatches}, {"passed", within == compared}};
}

// Reads the selected launch's records once it has run, joins its warps and
// appends it to the trace.
void collect(TracePass& p, const Sanitizer_LaunchData* ld) {
  auto& api = p.api;
  LaunchRecord& r = p.current;
  progress(p, fmt::format("launch {} ({}) issued; waiting for it", r.ordinal, r.name));
  // Where the pass's time goes, kept with the launch: the instrumented kernel,
  // the copy of its records, sorting them into warps' observations, the
  // join (its survey and writing included), the atomic replay.
  using Clock = std::chrono::steady_clock;
  auto lap = [last = Clock::now()]() mutable {
    const auto now = Clock::now();
    const double seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    return seconds;
  };
  ATOMSIM_SAN(sanitizerStreamSynchronize(ld->hStream));
  const double kernel_seconds = lap();
  Buffers& b = p.buffers[ld->context];
  dev::Control c{};
  ATOMSIM_SAN(sanitizerMemcpyDeviceToHost(&c, b.control, sizeof c, ld->hStream));
  if (c.overflow)
    throw CaptureError(fmt::format("launch {} of {}: the trace buffer filled up ({} records); raise --trace-buffer-mib",
                                   r.ordinal, r.name, c.event_count));
  // One sanitizerMemcpyDeviceToHost of several GiB fails with "an unknown
  // internal error" (a 3DGS backward's lane data, H100, CUDA 13): copy in pieces.
  auto copy_to_host = [&](auto* host, auto* device, std::size_t count) {
    constexpr std::size_t kPieceBytes = std::size_t{1} << 30;
    const std::size_t per_piece = std::max<std::size_t>(1, kPieceBytes / sizeof(*host));
    for (std::size_t at = 0; at < count; at += per_piece)
      ATOMSIM_SAN(sanitizerMemcpyDeviceToHost(host + at, device + at, std::min(per_piece, count - at) * sizeof(*host), ld->hStream));
  };
  std::vector<dev::Event> events(c.event_count);
  std::vector<dev::LaneData> lanes(c.lane_count);
  copy_to_host(events.data(), b.events, events.size());
  copy_to_host(lanes.data(), b.lanes, lanes.size());

  const double copy_seconds = lap();
  progress(p, fmt::format("{} records, {} with lane data", events.size(), lanes.size()));
  Module& module = p.modules[r.module];
  auto [known, first_use] = module.listing_and_usage.try_emplace(r.mangled);
  if (first_use) {
    const std::string function = "--function '" + r.mangled + "'";
    known->second = {cuobjdump(module.cubin, ("--dump-sass " + function).c_str()),
                     cuobjdump(module.cubin, ("--dump-resource-usage " + function).c_str())};
  }
  const auto& [listing, usage] = known->second;
  if (first_use) progress(p, "kernel's SASS read");
  trace::KernelInfo& k = r.kernel;
  std::vector<std::string> text;
  k.program = trace::parse_sass_function(listing, r.mangled, &text);
  k.registers_per_thread = resource(usage, r.mangled, "REG");
  k.shared_bytes = resource(usage, r.mangled, "SHARED");
  std::unordered_map<std::uint64_t, std::uint32_t> by_offset;
  for (std::uint32_t i = 0; i < k.program.size(); ++i) by_offset[k.program[i].pc] = i;
  auto index_of = [&](std::uint64_t pc) {
    auto it = by_offset.find(pc - r.function_pc);
    if (pc < r.function_pc || it == by_offset.end())
      throw CaptureError(fmt::format("{}: a record's pc 0x{:x} is not an instruction of the kernel", r.name, pc));
    return it->second;
  };

  // Per-warp observations, in recorded order; atomics carry what each word gained.
  const std::uint64_t warps = k.total_warps();
  std::vector<WarpObservation> observed(warps);
  std::vector<bool> seen(k.program.size(), false);
  std::vector<SlotUse> slot_use(lanes.size());
  std::vector<TicketDraw> draws;
  const std::uint64_t threads = k.block.count();
  for (std::uint64_t w = 0; w < warps; ++w) {
    std::uint64_t first = (w % k.warps_per_cta()) * 32;
    observed[w].lanes = threads - first >= 32 ? 0xFFFFFFFFu : (1u << (threads - first)) - 1;
  }
  for (const dev::Event& e : events) {
    if (e.warp >= warps) throw CaptureError(fmt::format("{}: a record names warp {} of {}", r.name, e.warp, warps));
    ObservedInst inst;
    inst.index = index_of(e.pc);
    inst.mask = e.mask;
    inst.kind = static_cast<ObservedKind>(e.kind);
    if (e.kind == dev::kCall) inst.call_target = index_of(e.target);
    seen[inst.index] = true;
    WarpObservation& obs = observed[e.warp];
    const trace::StaticInst& s = k.program[inst.index];
    if (e.slot && trace::is_global_memory(s.op)) {
      const dev::LaneData& d = lanes[e.slot - 1];
      // The replay reads and adds words of the width the SASS names; an access
      // the Sanitizer reports wider would be read as something else.
      if (d.atomic && s.atomic_op == trace::AtomicOp::Add && d.bytes != trace::operand_bytes(s.atomic_type))
        throw CaptureError(fmt::format("{}: the atomic at pc 0x{:x} ({}) accesses {} bytes per lane; its decoded type "
                                       "has {}", r.name, s.pc, text[inst.index], d.bytes,
                                       trace::operand_bytes(s.atomic_type)));
      slot_use[e.slot - 1] = {static_cast<std::int32_t>(inst.index), e.mask};
      if (d.atomic && d.bytes == 16) slot_use.at(e.slot) = slot_use[e.slot - 1];  // its second word
      LaneOperands ops;
      std::map<std::uint64_t, bool> credited;
      for (std::uint32_t m = e.mask; m; m &= m - 1) {
        int lane = __builtin_ctz(m);
        ops.address[lane] = d.address[lane];
        // Lanes updating one word share its gain: the first carries it, the others add 0.
        if (!trace::is_atomic(s.op)) {
          ops.value[lane] = d.before[lane];  // what a store wrote or a load read (mark_awaited_values)
        } else if (s.atomic_op == trace::AtomicOp::Add && !credited[d.address[lane]]) {
          credited[d.address[lane]] = true;
          ops.value[lane] = added(word_type(s.atomic_type), d.before[lane], d.after[lane]);
        }
      }
      if (s.op == trace::OpClass::Atom)
        for (std::uint32_t m = e.mask; m; m &= m - 1) {
          const int lane = __builtin_ctz(m);
          draws.push_back({inst.index, e.warp / k.warps_per_cta(), d.address[lane], d.before[lane]});
        }
      inst.operands = static_cast<std::int32_t>(obs.operands.size());
      obs.operands.push_back(ops);
    } else if (e.kind == dev::kSyncwarp && e.target > 1 && e.mask) {
      // How many different masks its lanes named, where more than one (trace format 1.3).
      LaneOperands ops;
      ops.value_lanes = e.mask;
      for (std::uint32_t m = e.mask; m; m &= m - 1) ops.value[__builtin_ctz(m)] = e.target;
      inst.operands = static_cast<std::int32_t>(obs.operands.size());
      obs.operands.push_back(ops);
    }
    obs.events.push_back(inst);
  }

  const AwaitedValues awaited = mark_awaited_values(k.program, observed);
  k.cta_order = ticket_order(draws, k.grid.count());
  const std::vector<std::uint64_t> counts = launch_counts(p.settings.counts, r.mangled, k.program);
  // What the join is given, saved so that it can be rerun without the GPU:
  // always on a failure, and for every launch with --keep-join-input.
  auto save_input = [&](const std::filesystem::path& saved) {
    JoinInput input{r.name, {}, text, observed, counts};
    for (const auto& s : k.program) input.pcs.push_back(s.pc);
    write_file_atomically(saved, save_join_input(input));
  };
  auto join_failed = [&](const JoinError& e) {
    save_input(p.settings.out_dir / "join-input.json");
    const auto saved = p.settings.final_out_dir / "join-input.json";  // where the launcher puts it
    return CaptureError(fmt::format("{}: {} (the join's input is saved: atomsim trace rejoin {})", r.name, e.what(),
                                    saved.string()));
  };
  if (p.settings.keep_join_input) save_input(p.settings.out_dir / fmt::format("join-input-{}.json", r.ordinal));
  const double observations_seconds = lap();
  if (!p.writer) p.writer = std::make_unique<trace::TraceWriter>((p.settings.out_dir / "trace.atr").string());
  p.writer->begin_kernel(k);
  std::uint64_t records = 0;
  WarpJoiner joiner(k.program, text, seen);
  if (!counts.empty()) joiner.use_counts(counts);
  try {
    joiner.join_launch(
        observed, std::max(1u, std::thread::hardware_concurrency()),
        [&](std::uint64_t w, const trace::WarpInst& inst) {
          p.writer->append(w, inst);
          ++records;
        },
        [&](std::uint64_t w) { p.writer->end_warp(w); });
  } catch (const JoinError& e) {
    throw join_failed(e);
  }
  p.writer->end_kernel();
  const double join_seconds = lap();
  progress(p, fmt::format("joined {} warp instructions", records));
  nlohmann::json entry = {{"launch", r.ordinal}, {"name", r.name}, {"mangled", r.mangled}, {"graph_node", r.graph_node},
                          {"grid", {k.grid.x, k.grid.y, k.grid.z}}, {"block", {k.block.x, k.block.y, k.block.z}},
                          {"trace_kernel", p.launches.size()}, {"observed_records", events.size()},
                          {"warp_instructions", records}, {"guessed_branches", joiner.guessed_branches()},
                          {"retried_guesses", joiner.retried_guesses()},
                          {"cta_order", k.cta_order.empty() ? "grid" : "tickets"},
                          {"awaited_values", {{"awaiting_loads", awaited.awaiting_loads},
                                              {"awaited_words", awaited.awaited_words},
                                              {"storing_instructions", awaited.storing_instructions}}}};
  entry["atomic_replay"] = replay_atomics(p, ld, lanes, slot_use, k);
  entry["seconds"] = {{"kernel", kernel_seconds}, {"copy", copy_seconds}, {"observations", observations_seconds},
                      {"join", join_seconds}, {"replay", lap()}};
  p.launches.push_back(entry);
}

void on_launch_end(TracePass& p, const Sanitizer_LaunchData* ld, CUgraphExec graph) {
  if (!p.current_open || ld->hLaunch != p.current_handle) return;
  p.current_open = false;
  if (graph) {
    p.awaited_graph = TracePass::AwaitedGraph{graph, *ld};
    return;
  }
  collect(p, ld);
}

// The graph's launch has been issued: its work, the selected node's included,
// is complete once the stream it was launched on is.
void on_graph_launch_end(TracePass& p, const Sanitizer_GraphLaunchData* g) {
  if (!p.awaited_graph || p.awaited_graph->exec != g->graphExec || g->isGraphUpload) return;
  Sanitizer_LaunchData ld = p.awaited_graph->launch;
  p.awaited_graph.reset();
  ld.hStream = g->hStream;
  ld.stream = g->stream;
  collect(p, &ld);
}

void SANITIZERAPI dispatch(void*, Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* data) {
  TracePass& p = *g_pass;
  std::lock_guard lock(p.mutex);
  if (!p.first_error.empty()) return;
  // A kernel's launch, announced by the launch domain or, for a graph's
  // kernel node, by the graphs domain (or both: the first one counts).
  auto begin = [&](const Sanitizer_LaunchData* ld, bool graph_node) {
    if (!p.begun.emplace(ld->hLaunch, domain).second) return;
    on_launch_begin(p, ld, graph_node);
  };
  auto end = [&](const Sanitizer_LaunchData* ld, CUgraphExec graph) {
    auto it = p.begun.find(ld->hLaunch);
    if (it == p.begun.end() || it->second != domain) return;
    p.begun.erase(it);
    on_launch_end(p, ld, graph);
  };
  try {
    if (domain == SANITIZER_CB_DOMAIN_RESOURCE && cbid == SANITIZER_CBID_RESOURCE_MODULE_LOADED) {
      on_module_loaded(p, static_cast<const Sanitizer_ResourceModuleData*>(data));
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_BEGIN) {
      begin(static_cast<const Sanitizer_LaunchData*>(data), false);
    } else if (domain == SANITIZER_CB_DOMAIN_LAUNCH && cbid == SANITIZER_CBID_LAUNCH_END) {
      end(static_cast<const Sanitizer_LaunchData*>(data), nullptr);
    } else if (domain == SANITIZER_CB_DOMAIN_GRAPHS &&
               (cbid == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN || cbid == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_END)) {
      auto* node = static_cast<const Sanitizer_GraphNodeLaunchData*>(data);
      if (node->nodeType != CU_GRAPH_NODE_TYPE_KERNEL || node->isGraphUpload) return;
      if (cbid == SANITIZER_CBID_GRAPHS_NODE_LAUNCH_BEGIN) begin(&node->launchData, true);
      else end(&node->launchData, node->graphExec);
    } else if (domain == SANITIZER_CB_DOMAIN_GRAPHS && cbid == SANITIZER_CBID_GRAPHS_LAUNCH_END) {
      on_graph_launch_end(p, static_cast<const Sanitizer_GraphLaunchData*>(data));
    }
  } catch (const std::exception& e) {
    p.fail(e.what());
  }
}

void write_outputs() {
  TracePass& p = *g_pass;
  std::lock_guard lock(p.mutex);
  const char* pass = pass_name(Pass::Trace);
  try {
    ProcessStage::record_launches(p.settings, *p.selector);
    if (p.awaited_graph)
      p.fail(fmt::format("launch {} of {}: its graph's launch never reported its end", p.current.ordinal, p.current.name));
    if (!p.first_error.empty()) {
      p.writer.reset();  // removes the partial trace
      write_file_atomically(error_path(p.settings.out_dir, pass), p.first_error + "\n");
      return;
    }
    if (p.selector->launches_selected() == 0) return;  // the launcher says why, from every process's launches
    p.writer->finish();
    nlohmann::json doc;
    doc["schema"] = "atomsim.capture.trace/1";
    doc["pass"] = pass;
    // Driver calls inside Sanitizer callbacks can block the driver, so the device is described here.
    Clocks clocks = current_clocks(p.device_handle);
    doc["device"] = describe_device(p.device_handle);
    doc["clocks"] = {{"sm_mhz_at_exit", clocks.sm_mhz}, {"memory_mhz_at_exit", clocks.memory_mhz}};
    doc["selection"] = selection_json(p.settings, *p.selector);
    doc["trace"] = "trace.atr";
    doc["kernels"] = p.launches;
    write_json_atomically(result_path(p.settings.out_dir, pass), doc);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "atomsim-capture: %s\n", e.what());
  }
}

}  // namespace
}  // namespace atomsim::capture

extern "C" int InitializeInjection() {
  using namespace atomsim::capture;
  if (g_pass) return 1;
  g_pass = new TracePass();
  TracePass& p = *g_pass;
  try {
    p.settings = Settings::from_environment();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "atomsim-capture: %s\n", e.what());
    return 0;
  }
  const char* pass = pass_name(Pass::Trace);
  try {
    if (!ProcessStage::enter(p.settings)) return 1;  // another process than --process names: left alone
  } catch (const std::exception& e) {
    std::fprintf(stderr, "atomsim-capture: %s\n", e.what());
    return 0;
  }
  try {
    p.selector = std::make_unique<LaunchSelector>(p.settings);
    const char* lib = std::getenv(kEnvSanitizerLibrary);
    const char* patches = std::getenv(kEnvPatches);
    if (!lib || !patches) throw CaptureError("the trace pass needs atomsim-capture to set the Sanitizer library and patches");
    p.patches = patches;
    p.api.load(lib);
    Sanitizer_SubscriberHandle handle;
    p.api.check(p.api.sanitizerSubscribe(&handle, dispatch, nullptr), "sanitizerSubscribe");
    p.api.check(p.api.sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_RESOURCE), "sanitizerEnableDomain");
    p.api.check(p.api.sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_LAUNCH), "sanitizerEnableDomain");
    p.api.check(p.api.sanitizerEnableDomain(1, handle, SANITIZER_CB_DOMAIN_GRAPHS), "sanitizerEnableDomain");
  } catch (const std::exception& e) {
    p.fail(e.what());
    write_file_atomically(error_path(p.settings.out_dir, pass), p.first_error + "\n");
    return 0;
  }
  std::atexit(write_outputs);
  return 1;
}
