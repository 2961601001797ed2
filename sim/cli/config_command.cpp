// `atomsim config describe`: every parameter with its type, range and meaning.
#include <iostream>

#include <fmt/format.h>

#include "sim/cli/command.hpp"
#include "sim/config.hpp"

namespace atomsim::cli {
namespace {

class ConfigCommand final : public Command {
 public:
  explicit ConfigCommand(CLI::App& app) {
    auto* config = app.add_subcommand("config", "configuration tools");
    config->require_subcommand(1);
    describe_ = config->add_subcommand("describe", "list every parameter with its range and meaning");
    describe_->add_option("--config,-c", config_, "configuration file or bundled name");
  }

  bool chosen() const override { return describe_->parsed(); }

  int run() override {
    GpuParams p = load_gpu_params(config_, {});
    for (const auto& d : p.documentation)
      std::cout << fmt::format("{:<44} {:<8} {:<24} {}\n", d.key, d.type, d.range, d.description);
    return 0;
  }

 private:
  CLI::App* describe_;
  std::string config_ = "h100";
};

}  // namespace

std::unique_ptr<Command> make_config_command(CLI::App& app) { return std::make_unique<ConfigCommand>(app); }

}  // namespace atomsim::cli
