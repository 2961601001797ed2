#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <systemc>

#include <cstdlib>

// Tests run under SystemC's entry point, like the simulator.
int sc_main(int argc, char** argv) { return Catch::Session().run(argc, argv); }

int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
