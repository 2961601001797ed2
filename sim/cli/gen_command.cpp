// `atomsim gen microbench`: writes the atomics microbenchmark's trace without a GPU.
#include <iostream>

#include <fmt/format.h>

#include "sim/cli/command.hpp"
#include "sim/run.hpp"
#include "workloads/microbench/generator.hpp"

namespace atomsim::cli {
namespace {

class GenCommand final : public Command {
 public:
  explicit GenCommand(CLI::App& app) {
    auto* gen = app.add_subcommand("gen", "generate traces without a GPU");
    gen->require_subcommand(1);
    microbench_ = gen->add_subcommand("microbench", "atomics microbenchmark (runs the kernels' real sm_90 SASS)");
    microbench_->add_option("--out,-o", out_path_, "trace file to write")->required();
    microbench_->add_option("--variant", variants_, "baseline, swb, sws or all (one kernel each)");
    microbench_->add_option("--blocks", params_.blocks, "CTAs");
    microbench_->add_option("--warps-per-block", params_.warps_per_block, "warps per CTA");
    microbench_->add_option("--iterations", params_.iterations, "rounds of updates per warp");
    microbench_->add_option("--primitives", params_.primitives, "primitives (parameter groups) updated");
    microbench_->add_option("--params", params_.params, "parameters per primitive (1, 4 or 9)");
    microbench_->add_option("--active-fraction", params_.active_fraction, "fraction of lanes active per round");
    microbench_->add_option("--lanes-per-primitive", params_.lanes_per_primitive, "lanes sharing one primitive");
    microbench_->add_option("--threshold", params_.threshold, "DISTWAR balancing threshold (lanes)");
    microbench_->add_option("--seed", params_.seed, "seed of the kernel's hash");
  }

  bool chosen() const override { return microbench_->parsed(); }

  int run() override {
    auto kernels = workloads::microbench_variants(params_, variants_);
    for (const auto& k : kernels) k.validate();
    std::uint64_t instructions = write_microbench_trace(kernels, out_path_);
    std::cout << fmt::format("{}: {} kernels, {} warp instructions\n", out_path_, kernels.size(), instructions);
    return 0;
  }

 private:
  CLI::App* microbench_;
  workloads::MicrobenchParams params_;
  std::string out_path_, variants_ = "all";
};

}  // namespace

std::unique_ptr<Command> make_gen_command(CLI::App& app) { return std::make_unique<GenCommand>(app); }

}  // namespace atomsim::cli
