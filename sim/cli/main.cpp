// atomsim's command line: each command is a class of its own (sim/cli/command.hpp).
#include <systemc>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <vector>

#include "sim/cli/command.hpp"
#include "sim/cli/huge_pages.hpp"

int sc_main(int argc, char** argv) {
  using namespace atomsim::cli;
  atomsim::restart_with_huge_page_heap(argv);
  // A run that fails stops the simulation early; its one-line error says why,
  // without SystemC's note that it was stopped.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  CLI::App app{"atomsim: cycle-level simulator of the GPU atomic path"};
  app.require_subcommand(1);
  std::vector<std::unique_ptr<Command>> commands;
  for (auto make : {make_run_command, make_compare_command, make_gen_command, make_trace_command, make_config_command,
                    make_sweep_command})
    commands.push_back(make(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::cerr << "atomsim: error: " << what.substr(0, what.find('\n')) << " (see --help)\n";
    return 2;
  }

  try {
    for (const auto& command : commands)
      if (command->chosen()) return command->run();
  } catch (const std::exception& e) {
    std::cerr << "atomsim: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

// SystemC's entry prints a banner to stderr unless told not to; it must be told
// before it starts.
int main(int argc, char** argv) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return sc_core::sc_elab_and_sim(argc, argv);
}
