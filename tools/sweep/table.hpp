// A sweep's results as one tidy table: a row per (point, kernel), a column
// per axis and per measure. Rows and columns come in an order fixed by the
// plan, so the same results always give the same bytes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/sweep/store.hpp"

namespace atomsim::sweep {

struct Table {
  std::string sweep;
  std::vector<std::string> columns;
  std::vector<nlohmann::ordered_json> rows;  // column -> number, string or null

  // The text of a cell as the CSV writes it ("" for null).
  static std::string cell_text(const nlohmann::ordered_json& cell);
};

// The columns every table has: which simulation (before the settings and
// trace labels) and its headline results (after them).
inline const std::vector<std::string> kIdentityColumns{"point", "name", "trace", "group", "variant", "kernel_index", "kernel", "config"};
inline const std::vector<std::string> kResultColumns{"status", "error", "cycles", "time_us", "speedup", "warp_instructions", "ipc"};

// Columns: point, name, trace, group, variant, kernel_index, kernel, config,
// each setting key, each trace label, status, error, cycles, time_us, speedup (over the row's
// baseline variant, where the spec names one), warp_instructions, ipc,
// stall.STATE (fraction of warp-cycles), atomics.FIELD, util.UNIT.STAT (mean
// utilisation) and avg.UNIT.STAT (time-averaged occupancy). A failed or
// pending point is one row with its status (and error), measures empty.
Table collect_table(const ResultStore& store);

std::string table_csv(const Table& table);
nlohmann::ordered_json table_json(const Table& table);

}  // namespace atomsim::sweep
