// `atomsim sweep run | status | collect | plot | exec`: configuration sweeps
// on a local process pool or a Slurm cluster (docs/sweeps.md).
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

namespace atomsim {

// The running atomsim, for the processes it starts (sweep points, compare jobs).
std::string this_executable();

class SweepCommands {
 public:
  // Adds the `sweep` command and its subcommands to `app`.
  explicit SweepCommands(CLI::App& app);
  ~SweepCommands();
  // True when the command line chose `sweep`.
  bool chosen() const;
  // Runs the chosen subcommand; returns the exit status (errors are one line
  // on standard error).
  int run();

 private:
  struct Options;
  std::unique_ptr<Options> options_;
};

}  // namespace atomsim
