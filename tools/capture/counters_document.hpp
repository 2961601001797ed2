// counters.json from Nsight Compute's CSV pages of one profiled launch: kept
// apart from running ncu so that it is tested without a GPU.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace atomsim::capture {

// Kernel-level metrics the counters pass asks for.
const std::vector<std::string>& counter_metrics();

// One CSV record (RFC 4180 quoting) split into fields.
std::vector<std::string> split_csv_record(const std::string& line);

// {"kernel", "metrics": {name: value}, "pcs": [{"pc_offset", "sass", "warp_instructions",
// "shared_wavefronts", "shared_wavefronts_ideal"}]} from `ncu --csv --page details`
// and `--page source --print-source sass` of one launch; pcs never executed are
// left out, and a kernel without shared memory (whose page has no wavefront
// columns) has none. Throws CaptureError naming what is missing.
nlohmann::json counters_document(const std::string& details_csv, const std::string& source_csv);

// A launch's per-pc counts from its source page, as the count pass writes them:
// {"warp_instructions", "thread_instructions", "thread_instructions_pred_on",
// "pcs": [{"pc_offset", the same three}]}, for the graph nodes whose SASS
// metrics CUPTI loses (count_pass.cpp). Throws CaptureError naming what is missing.
nlohmann::json source_counts_document(const std::string& source_csv);

}  // namespace atomsim::capture
