// atomsim command line: run | compare | sweep | gen | trace | config.
#include <CLI/CLI.hpp>
#include <systemc>

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "sim/config.hpp"
#include "sim/compare_job.hpp"
#include "sim/report.hpp"
#include "sim/run.hpp"
#include "sim/sweep_cli.hpp"
#include "tools/compare/faithfulness.hpp"
#include "sim/trace_cli.hpp"
#include "sim/engine/params.hpp"
#include "sim/huge_pages.hpp"
#include "traces/trace.hpp"
#include "traces/writer.hpp"
#include "workloads/microbench/generator.hpp"

int sc_main(int argc, char** argv) {
  using namespace atomsim;
  restart_with_huge_page_heap(argv);
  CLI::App app{"atomsim: cycle-level simulator of the GPU atomic path"};
  app.require_subcommand(1);

  SimulateOptions sim;
  std::string trace_path;
  auto* run = app.add_subcommand("run", "simulate a trace (default: the built-in microbenchmark on the h100 config)");
  run->add_option("--config,-c", sim.config, "configuration file or bundled name (h100, a100, rtx4090, rtx3060)");
  run->add_option("--trace,-t", trace_path, "trace file (format v1)");
  run->add_option("--set", sim.overrides, "override a parameter, e.g. --set l2.rop_units_per_slice=2");
  run->add_option("--json", sim.json_out, "write results as JSON (docs/output-schema.md)");
  bool no_check = false, quiet = false;
  run->add_flag("--no-check", no_check, "skip the functional check of atomics");
  run->add_flag("--instructions", sim.profile_instructions,
                "per instruction, warp-cycles by state in the JSON (docs/output-schema.md)");
  run->add_option("--counters", sim.counters,
                  "a capture's counters.json (atomsim-capture --pass counters): measured costs of the last kernel's "
                  "shared-memory and MATCH instructions")
      ->check(CLI::ExistingFile);
  run->add_flag("--ctas", sim.record_ctas, "every CTA's SM, start and end cycle in the JSON (docs/output-schema.md)");
  run->add_flag("--host-profile", sim.host_profile,
                "print the host time each kind of unit took, and each thread (docs/performance.md); not in the JSON");
  run->add_flag("--quiet,-q", quiet, "no progress lines");
  run->add_option("--threads", sim.threads,
                  "threads evaluating the units of a cycle (0: one per core but one, left to the warp prefetcher); the results "
                  "do not depend on it")
      ->check(CLI::Range(0u, 1024u));

  CompareOptions cmp;
  auto* compare = app.add_subcommand("compare", "simulate kernels captured on a GPU and compare with their measurements");
  compare->add_option("--dataset,-d", cmp.dataset, "microbenchmark dataset: folder with manifest.json, e.g. traces/h100/microbench/grid");
  compare->add_option("captures", cmp.captures, "capture folders of any kernels (timing.json, stall.json, trace/)")
      ->check(CLI::ExistingDirectory);
  compare->add_option("--manifest,-m", cmp.manifest, "JSON grouping captures with their baselines")->check(CLI::ExistingFile);
  compare->add_option("--config,-c", cmp.simulate.config, "configuration file or bundled name");
  compare->add_option("--set", cmp.simulate.overrides, "override a parameter");
  compare->add_option("--only", cmp.only, "regular expression on configuration ids");
  compare->add_option("--json", cmp.json_out, "write the comparison as JSON");
  compare->add_option("--plot", cmp.plot_out, "write stacked stall bars, measured vs simulated (SVG)");
  compare->add_option("--jobs,-j", cmp.jobs, "kernels simulated at once, each in its own process")
      ->check(CLI::Range(1u, 1024u));
  compare->add_option("--instructions", cmp.instructions,
                      "per kernel, this many of the hottest instructions: PC-sample share against simulated "
                      "warp-cycles, and the top reason of each");
  compare->add_flag("--saved", cmp.saved,
                    "take each capture's simulation from the compare.json an earlier compare of it alone wrote "
                    "(for captures whose traces are not kept); no per-instruction view");
  compare->add_option("--against", cmp.against,
                      "captures: measured cycles from the median of the timed launches (median), or from the launch "
                      "each trace holds (traced: for kernels whose launches do different work, as a training step's)");
  bool compare_quiet = false;
  compare->add_flag("--quiet,-q", compare_quiet, "no progress lines");
  compare->add_option("--threads", cmp.simulate.threads,
                      "threads evaluating each simulation's cycles (0: one per core but one); the results do not depend on it")
      ->check(CLI::Range(0u, 1024u));

  auto* gen = app.add_subcommand("gen", "generate traces without a GPU");
  gen->require_subcommand(1);
  auto* micro = gen->add_subcommand("microbench", "atomics microbenchmark (runs the kernels' real sm_90 SASS)");
  workloads::MicrobenchParams mb;
  std::string out_path, variants = "all";
  micro->add_option("--out,-o", out_path, "trace file to write")->required();
  micro->add_option("--variant", variants, "baseline, swb, sws or all (one kernel each)");
  micro->add_option("--blocks", mb.blocks, "CTAs");
  micro->add_option("--warps-per-block", mb.warps_per_block, "warps per CTA");
  micro->add_option("--iterations", mb.iterations, "rounds of updates per warp");
  micro->add_option("--primitives", mb.primitives, "primitives (parameter groups) updated");
  micro->add_option("--params", mb.params, "parameters per primitive (1, 4 or 9)");
  micro->add_option("--active-fraction", mb.active_fraction, "fraction of lanes active per round");
  micro->add_option("--lanes-per-primitive", mb.lanes_per_primitive, "lanes sharing one primitive");
  micro->add_option("--threshold", mb.threshold, "DISTWAR balancing threshold (lanes)");
  micro->add_option("--seed", mb.seed, "seed of the kernel's hash");

  auto* tr = app.add_subcommand("trace", "inspect traces");
  tr->require_subcommand(1);
  std::string inspect_path;
  std::size_t dump_kernel = 0;
  std::uint64_t dump_warp = 0, dump_limit = 100;
  auto* info = tr->add_subcommand("info", "summary of a trace");
  info->add_option("trace", inspect_path, "trace file")->required();
  auto* validate = tr->add_subcommand("validate", "check every byte of a trace");
  validate->add_option("trace", inspect_path, "trace file")->required();
  auto* dump = tr->add_subcommand("dump", "print a warp's instruction records");
  dump->add_option("trace", inspect_path, "trace file")->required();
  dump->add_option("--kernel", dump_kernel, "kernel index");
  dump->add_option("--warp", dump_warp, "warp index within the kernel");
  dump->add_option("--limit", dump_limit, "records to print");

  auto* check = tr->add_subcommand("check", "set a captured trace beside the GPU's count pass (faithfulness check)");
  std::string check_count, check_capture, check_report;
  check->add_option("trace", inspect_path, "trace file")->required();
  check->add_option("--count", check_count, "count.json of the same launch (atomsim-capture --pass count)")->required();
  std::vector<std::string> check_count_again;
  check->add_option("--count-again", check_count_again,
                    "further count passes of the same launch: instructions they count differently are timing-dependent");
  check->add_option("--capture", check_capture, "trace.json of the trace pass (adds its atomic replay)");
  check->add_option("--kernel", dump_kernel, "kernel index");
  check->add_option("--report", check_report, "also write the report as JSON");

  auto* rejoin = tr->add_subcommand("rejoin", "run a failed trace-pass join again from its saved join-input.json");
  std::optional<std::uint64_t> rejoin_warp;
  rejoin->add_option("input", inspect_path, "join-input.json written by atomsim-capture --pass trace")->required();
  rejoin->add_option("--warp", rejoin_warp, "print this warp's joined instructions");
  unsigned rejoin_threads = std::max(1u, std::thread::hardware_concurrency());
  rejoin->add_option("--threads", rejoin_threads, "threads walking warps (the result does not depend on it)")
      ->check(CLI::Range(1u, 1024u))->capture_default_str();

  auto* config = app.add_subcommand("config", "configuration tools");
  config->require_subcommand(1);
  auto* describe = config->add_subcommand("describe", "list every parameter with its range and meaning");
  std::string describe_config = "h100";
  describe->add_option("--config,-c", describe_config, "configuration file or bundled name");

  SweepCommands sweep(app);

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
    if (sweep.chosen()) return sweep.run();
    if (*run) {
      sim.check_atomics = !no_check;
      sim.progress = !quiet;
      return run_job(trace_path, sim, std::cout);
    }
    if (*compare) {
      cmp.simulate.progress = !compare_quiet;
      cmp.executable = this_executable();
      return compare_job(cmp, std::cout);
    }
    if (*micro) {
      auto kernels = workloads::microbench_variants(mb, variants);
      for (const auto& k : kernels) k.validate();
      std::uint64_t n = write_microbench_trace(kernels, out_path);
      std::cout << fmt::format("{}: {} kernels, {} warp instructions\n", out_path, kernels.size(), n);
      return 0;
    }
    if (*info) { trace_info(inspect_path, std::cout); return 0; }
    if (*validate) { trace_validate(inspect_path, std::cout); return 0; }
    if (*dump) { trace_dump(inspect_path, dump_kernel, dump_warp, dump_limit, std::cout); return 0; }
    if (*rejoin) { trace_rejoin(inspect_path, rejoin_warp, rejoin_threads, std::cout); return 0; }
    if (*check) {
      auto report = compare::check_faithfulness(inspect_path, dump_kernel, check_count,
                                                {check_count_again.begin(), check_count_again.end()}, check_capture);
      compare::print_faithfulness(report, std::cout);
      if (!check_report.empty()) write_file_atomically(check_report, report.to_json().dump(1) + "\n");
      return report.passed ? 0 : 1;
    }
    if (*describe) {
      GpuParams p = load_gpu_params(describe_config, {});
      for (const auto& d : p.documentation)
        std::cout << fmt::format("{:<44} {:<8} {:<24} {}\n", d.key, d.type, d.range, d.description);
      return 0;
    }
  } catch (const ConfigError& e) {
    std::cerr << "atomsim: error: " << e.what() << "\n";
    return 1;
  } catch (const trace::TraceError& e) {
    std::cerr << "atomsim: error: " << e.what() << "\n";
    return 1;
  } catch (const std::invalid_argument& e) {
    std::cerr << "atomsim: error: " << e.what() << "\n";
    return 1;
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
