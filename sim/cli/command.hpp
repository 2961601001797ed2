// A command of `atomsim` (run, compare, gen, trace, config, sweep): it declares
// its options on the application when made, and runs once the command line
// has chosen it.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace atomsim::cli {

class Command {
 public:
  virtual ~Command() = default;
  // True when the command line chose this command.
  virtual bool chosen() const = 0;
  // Runs it; returns the exit status. Errors may be thrown: main prints them
  // as one line.
  virtual int run() = 0;
};

std::unique_ptr<Command> make_run_command(CLI::App& app);
std::unique_ptr<Command> make_compare_command(CLI::App& app);
std::unique_ptr<Command> make_gen_command(CLI::App& app);
std::unique_ptr<Command> make_trace_command(CLI::App& app);
std::unique_ptr<Command> make_config_command(CLI::App& app);
std::unique_ptr<Command> make_sweep_command(CLI::App& app);

// The running atomsim, for the processes it starts (sweep points, compare jobs).
std::string this_executable();

}  // namespace atomsim::cli
