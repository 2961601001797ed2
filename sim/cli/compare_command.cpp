// `atomsim compare`: simulates kernels captured on a GPU and sets them beside
// their measurements.
#include <iostream>

#include "sim/cli/command.hpp"
#include "sim/compare/compare_job.hpp"

namespace atomsim::cli {
namespace {

class CompareCommand final : public Command {
 public:
  explicit CompareCommand(CLI::App& app) {
    command_ = app.add_subcommand("compare", "simulate kernels captured on a GPU and compare with their measurements");
    command_->add_option("--dataset,-d", options_.dataset,
                         "microbenchmark dataset: folder with manifest.json, e.g. traces/datasets/h100/microbench/grid");
    command_->add_option("captures", options_.captures, "capture folders of any kernels (timing.json, stall.json, trace/)")
        ->check(CLI::ExistingDirectory);
    command_->add_option("--manifest,-m", options_.manifest, "JSON grouping captures with their baselines")
        ->check(CLI::ExistingFile);
    options_.simulate.config.clear();
    command_->add_option("--config,-c", options_.simulate.config,
                         "configuration file or bundled name (default: the bundled one of the device the kernels were "
                         "captured on)");
    command_->add_option("--set", options_.simulate.overrides, "override a parameter");
    command_->add_option("--only", options_.only, "regular expression on configuration ids");
    command_->add_option("--json", options_.json_out, "write the comparison as JSON");
    command_->add_option("--plot", options_.plot_out, "write stacked stall bars, measured vs simulated (SVG)");
    command_->add_option("--jobs,-j", options_.jobs, "kernels simulated at once, each in its own process")
        ->check(CLI::Range(1u, 1024u));
    command_->add_option("--instructions", options_.instructions,
                         "per kernel, this many of the hottest instructions: PC-sample share against simulated "
                         "warp-cycles, and the top reason of each");
    command_->add_flag("--saved", options_.saved,
                       "take each capture's simulation from the compare.json an earlier compare of it alone wrote "
                       "(for captures whose traces are not kept); no per-instruction view");
    command_->add_option("--against", options_.against,
                         "captures: measured cycles from the median of the timed launches (median), or from the launch "
                         "each trace holds (traced: for kernels whose launches do different work, as a training step's)");
    command_->add_flag("--quiet,-q", quiet_, "no progress lines");
    command_->add_flag("--sample", sample_,
                       "simulate kernels of many CTA waves in measured windows and extrapolate the rest (sample.mode=waves; "
                       "docs/architecture.md, \"Sampled simulation\")");
    command_->add_option("--threads", options_.simulate.threads,
                         "threads evaluating each simulation's cycles (0: one per core but one); the results do not "
                         "depend on it")
        ->check(CLI::Range(0u, 1024u));
  }

  bool chosen() const override { return command_->parsed(); }

  int run() override {
    options_.simulate.progress = !quiet_;
    if (sample_) options_.simulate.overrides.push_back(kSampleOverride);
    options_.executable = this_executable();
    return compare_job(options_, std::cout);
  }

 private:
  CLI::App* command_;
  CompareOptions options_;
  bool quiet_ = false, sample_ = false;
};

}  // namespace

std::unique_ptr<Command> make_compare_command(CLI::App& app) { return std::make_unique<CompareCommand>(app); }

}  // namespace atomsim::cli
