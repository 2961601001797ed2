// What the wake calendar costs a host per simulated cycle before any unit's
// work: UNITS units, each woken every cycle, whose evaluation only spins
// WORK_TICKS time-stamp counter ticks (standing for a unit's work), simulated
// for a fixed number of cycles on THREADS threads. A cycle is two steps across
// the threads (evaluate, then apply) and the calendar's bookkeeping.
// Usage: atomsim-step-cost THREADS [UNITS] [WORK_TICKS]
#include <systemc>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "sim/engine/simulation_control.hpp"
#include "sim/engine/unit.hpp"

namespace {

std::uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

constexpr atomsim::Cycle kCycles = 200000;

class Busy : public atomsim::Unit {
 public:
  Busy(const sc_core::sc_module_name& name, std::uint64_t work) : Unit(name), work_(work) { wake_at(0); }

 protected:
  void evaluate() override {
    for (const std::uint64_t begun = ticks(); ticks() - begun < work_;) {
    }
    if (now() + 1 < kCycles) wake_at(now() + 1);
  }

 private:
  std::uint64_t work_;
};

}  // namespace

int sc_main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: atomsim-step-cost THREADS [UNITS] [WORK_TICKS]\n");
    return 2;
  }
  const unsigned threads = static_cast<unsigned>(std::strtoul(argv[1], nullptr, 10));
  const unsigned units = argc > 2 ? static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10)) : 64;
  const std::uint64_t work = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  if (threads < 1 || units < 1) {
    std::fprintf(stderr, "atomsim-step-cost: THREADS and UNITS must be at least 1\n");
    return 2;
  }
  atomsim::set_evaluation_threads(threads);
  std::vector<std::unique_ptr<Busy>> busy;
  for (unsigned u = 0; u < units; ++u) busy.push_back(std::make_unique<Busy>(("unit_" + std::to_string(u)).c_str(), work));
  const auto begun = std::chrono::steady_clock::now();
  sc_core::sc_start();
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begun).count() / kCycles;
  std::printf("%u threads, %u units of %llu ticks each: %.0f ns a cycle\n", threads, units,
              static_cast<unsigned long long>(work), ns);
  return 0;
}

// SystemC's entry prints a banner unless told not to before it starts.
int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
