// `atomsim run`: simulates a trace, or the built-in microbenchmark.
#include <iostream>

#include "sim/cli/command.hpp"
#include "sim/run.hpp"

namespace atomsim::cli {
namespace {

class RunCommand final : public Command {
 public:
  explicit RunCommand(CLI::App& app) {
    command_ = app.add_subcommand("run", "simulate a trace (default: the built-in microbenchmark on the h100 config)");
    command_->add_option("--config,-c", options_.config, "configuration file or bundled name (h100, h200, a100, rtx4090, rtx3060)");
    command_->add_option("--trace,-t", trace_path_, "trace file (format v1)");
    command_->add_option("--set", options_.overrides, "override a parameter, e.g. --set l2.rop_units_per_slice=2");
    command_->add_option("--json", options_.json_out, "write results as JSON (docs/output-schema.md)");
    command_->add_flag("--no-check", no_check_, "skip the functional check of atomics");
    command_->add_flag("--instructions", options_.profile_instructions,
                       "per instruction, warp-cycles by state in the JSON (docs/output-schema.md)");
    command_->add_option("--counters", options_.counters,
                         "a capture's counters.json (atomsim-capture --pass counters): measured costs of the last "
                         "kernel's shared-memory and MATCH instructions")
        ->check(CLI::ExistingFile);
    command_->add_flag("--ctas", options_.record_ctas, "every CTA's SM, start and end cycle in the JSON (docs/output-schema.md)");
    command_->add_flag("--host-profile", options_.host_profile,
                       "print the host time each kind of unit took, and each thread (docs/performance.md); not in the JSON");
    command_->add_flag("--quiet,-q", quiet_, "no progress lines");
    command_->add_flag("--sample", sample_,
                       "simulate kernels of many CTA waves in measured windows and extrapolate the rest (sample.mode=waves; "
                       "docs/architecture.md, \"Sampled simulation\")");
    command_->add_option("--threads", options_.threads,
                         "threads evaluating the units of a cycle (0: one per core but one, left to the warp prefetcher); "
                         "the results do not depend on it")
        ->check(CLI::Range(0u, 1024u));
  }

  bool chosen() const override { return command_->parsed(); }

  int run() override {
    options_.check_atomics = !no_check_;
    options_.progress = !quiet_;
    if (sample_) options_.overrides.push_back(kSampleOverride);
    return run_job(trace_path_, options_, std::cout);
  }

 private:
  CLI::App* command_;
  SimulateOptions options_;
  std::string trace_path_;
  bool no_check_ = false, quiet_ = false, sample_ = false;
};

}  // namespace

std::unique_ptr<Command> make_run_command(CLI::App& app) { return std::make_unique<RunCommand>(app); }

}  // namespace atomsim::cli
