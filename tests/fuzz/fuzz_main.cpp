// libFuzzer entry for one target of targets.hpp, chosen at build time.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

#include "tests/fuzz/targets.hpp"

// libFuzzer owns main(); SystemC's library still needs its entry point.
extern "C" int sc_main(int, char**) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    atomsim::fuzz::ATOMSIM_FUZZ_TARGET({data, size});
  } catch (const std::exception& e) {
    // Not the input kind's own error: a finding.
    std::fprintf(stderr, "atomsim fuzz: escaped %s: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
