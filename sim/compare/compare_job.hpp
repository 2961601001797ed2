// `atomsim compare`: simulates every kernel of a dataset captured on a GPU (the
// microbenchmark grid, or captures of any program's kernels) and sets the
// results beside the measurements.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/run.hpp"

namespace atomsim {

struct CompareOptions {
  std::string dataset;     // folder with manifest.json (tools/capture/capture_microbench.sh), or
  std::vector<std::string> captures;  // capture folders of any kernels (compare::load_capture)
  std::string manifest;    // groups captures with their baselines; empty: the folders given
  std::string only;        // regular expression on configuration ids; empty: all
  std::string json_out;    // empty: none
  std::string plot_out;    // SVG of stacked stall bars; empty: none
  SimulateOptions simulate;
  unsigned jobs = 1;       // captured kernels simulated at once, each as a child `atomsim run`
  std::size_t instructions = 0;  // per kernel, the hottest instructions set side by side; 0: none
  std::string executable;  // the atomsim those children run (this one)
  bool saved = false;      // captures: take the simulation each capture's compare.json holds instead of simulating
  std::string against = "median";  // captures: measured cycles from the median of the timed launches, or the traced launch's ("traced")
};

int compare_job(const CompareOptions& options, std::ostream& out);

}  // namespace atomsim
