// Plots of a sweep's table as SVG: a measure against one axis as lines (one
// per value of a second column), or against two axes as a heatmap.
#pragma once

#include <string>
#include <vector>

#include "tools/sweep/table.hpp"

namespace atomsim::sweep {

struct PlotOptions {
  std::string x;                   // a column, usually an axis key
  std::string y;                   // cycles, speedup, a warp state (lg_throttle), or any numeric column
  std::string by;                  // lines per value of this column; the heatmap's second axis
  std::vector<std::string> where;  // COLUMN=VALUE filters
  bool heatmap = false;
};

// Throws std::invalid_argument (one line) for unknown columns, rows that the
// options leave ambiguous (another setting varies too), or nothing to draw.
std::string plot_svg(const Table& table, const PlotOptions& options);

}  // namespace atomsim::sweep
