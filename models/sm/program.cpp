#include "models/sm/program.hpp"

#include <algorithm>

#include "traces/sass.hpp"

namespace atomsim::model {

namespace {
std::vector<InstTiming> decode_timing(const trace::KernelInfo& k, const SmParams& p) {
  std::vector<InstTiming> out;
  out.reserve(k.program.size());
  std::array<std::uint16_t, trace::reg::kSpace> dense;
  dense.fill(UINT16_MAX);
  std::uint16_t next_dense = 0;
  auto renumber = [&](std::uint16_t reg) {
    if (dense[reg] == UINT16_MAX) dense[reg] = next_dense++;
    return dense[reg];
  };
  const bool control_bits = p.dependences == Dependences::ControlBits && trace::control_bits_usable(k);
  for (const auto& s : k.program) {
    InstTiming t;
    t.op = s.op;
    if (control_bits) {
      t.control_bits = true;
      t.stall = s.control.stall();
      t.wait_mask = s.control.wait_mask();
      t.write_barrier = s.control.write_barrier();
      t.read_barrier = s.control.read_barrier();
    }
    t.num_src = s.num_src;
    t.num_dst = s.num_dst;
    for (int i = 0; i < s.num_src; ++i) t.src[i] = renumber(s.src[i]);
    for (int i = 0; i < s.num_dst; ++i) t.dst[i] = renumber(s.dst[i]);
    // A 64- or 128-bit load writes a pair or quad of consecutive registers;
    // the trace names the first (captures before this rule named only a pair for global loads).
    if ((s.op == OpClass::LoadGlobal || (s.op == OpClass::Shared && trace::opcode_base(s.mnemonic) == "LDS")) &&
        s.num_dst >= 1 && s.dst[0] < kGeneralRegisters) {
      const int registers = std::clamp(trace::access_width(s.mnemonic) / 4, 1, kMaxDestinations);
      for (int i = 1; i < registers; ++i)
        if (s.dst[0] + i < kGeneralRegisters) t.dst[i] = renumber(static_cast<std::uint16_t>(s.dst[0] + i));
      t.num_dst = static_cast<std::uint8_t>(std::max<int>(t.num_dst, registers));
    }
    if (s.op == OpClass::Shared) t.shared_bytes_per_lane = trace::access_width(s.mnemonic);
    t.coherent_load = trace::is_coherent_load(s);
    t.measured_mio_units = s.op == OpClass::Shared ? s.shared_wavefronts : s.match_values;
    if (p.constant_cache.enabled && s.constant.present) t.constant_line = constant_line(s.constant, p.constant_cache.line_bytes);
    for (int i = 0; i < s.num_src; ++i) t.src_set.add(t.src[i]), t.operands_in_sets &= t.src[i] < RegSet::kLimit;
    for (int i = 0; i < s.num_dst; ++i) t.dst_set.add(t.dst[i]), t.operands_in_sets &= t.dst[i] < RegSet::kLimit;
    auto pipe = [&](PipeIndex i, const PipeParams& pp) { t.route = Route::Pipe; t.pipe = i; t.latency = pp.latency; };
    switch (s.op) {
      case OpClass::IntAlu: pipe(kIntAlu, p.int_alu); break;
      case OpClass::FpAlu: pipe(kFpAlu, p.fp_alu); break;
      case OpClass::Fma: pipe(kFma, p.fma); break;
      case OpClass::Vote: pipe(kVote, p.vote); break;
      case OpClass::Misc: pipe(kMisc, p.misc); break;
      case OpClass::Branch: {
        pipe(kBranch, p.branch);
        // What may move the warp's pc or change its lanes holds its next
        // instruction until that is known: control transfers, a join of
        // divergent lanes (BSYNC: the convergence probe's divergent loop takes
        // 96 cycles a trip without that and 106 with it, 107.3 on the H100),
        // WARPSYNC and YIELD, after which the H100's PC samples show
        // branch_resolving too (the sparse write's warp variant, the sort's
        // look-back). A BSSY only records where the lanes will join.
        const std::string_view m = s.mnemonic;
        t.syncs_lanes = trace::is_warp_sync(m);
        t.resolves_branch = m.empty() || m.starts_with("BRA") || m.starts_with("BRX") || m.starts_with("JMP") ||
                            m.starts_with("CALL") || m.starts_with("RET") || m.starts_with("WARPSYNC") ||
                            m.starts_with("BSYNC") || m.starts_with("YIELD");
        if (t.resolves_branch) t.latency = static_cast<std::uint16_t>(t.syncs_lanes ? p.warp_sync_latency : p.branch_resolve_latency);
        break;
      }
      case OpClass::Sfu: case OpClass::Shared: case OpClass::Shuffle: t.route = Route::Mio; break;
      case OpClass::LoadGlobal: case OpClass::StoreGlobal: case OpClass::Atom: case OpClass::Red:
        t.route = p.warp_reduction.enabled && warp_reducible(s.op, s.atomic_op, s.atomic_type) ? Route::LsuReduced : Route::Lsu;
        break;
      case OpClass::Barrier: t.route = Route::Barrier; break;
      case OpClass::Membar: t.route = Route::Membar; break;
      case OpClass::Exit:
        // The lanes a predicated EXIT leaves go on once the warp's lanes are known
        // (PC samples of the sparse restrict's warp variant: branch_resolving after it).
        pipe(kBranch, p.branch);
        t.resolves_branch = true;
        t.latency = p.branch_resolve_latency;
        break;
    }
    // The compiler gives a result barrier only to instructions of variable
    // latency: on the GPU those leave through the MIO (S2R, LDC, BREV, FLO,
    // POPC, REDUX ...), whatever pipe their kind suggests.
    if (t.control_bits && t.route == Route::Pipe && t.write_barrier != trace::ControlBits::kNoBarrier &&
        s.op != OpClass::Branch && s.op != OpClass::Exit)
      t.route = Route::Mio;
    t.mio_pipe = s.op == OpClass::Shared ? MioPipe::Shared
               : s.op == OpClass::Sfu ? MioPipe::Sfu
               : s.op == OpClass::Shuffle ? (trace::opcode_base(s.mnemonic) == "MATCH" ? MioPipe::Match : MioPipe::Shuffle)
               : trace::opcode_base(s.mnemonic) == "REDUX" ? MioPipe::Redux : MioPipe::Bits;
    out.push_back(t);
  }
  return out;
}
}  // namespace

std::shared_ptr<const SmProgram> decode_program(const trace::KernelInfo& kernel, const SmParams& params) {
  return std::make_shared<const SmProgram>(SmProgram{decode_timing(kernel, params)});
}

}  // namespace atomsim::model
