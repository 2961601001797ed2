// A sweep's plan: every point it runs, each keyed by what determines its
// result. The plan is what `sweep run` writes into the results folder and what
// every worker (a local process or a Slurm task) reads back, so that a point
// means the same thing wherever it runs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace atomsim::sweep {

// A `--set` assignment: the key, its value as TOML text (for the override),
// and as a person reads it (for tables and plots: strings without quotes).
struct Setting {
  std::string key;
  std::string toml;
  std::string display;
};

struct PlannedTrace {
  std::string name;      // unique within the sweep
  std::string path;      // absolute
  std::string hash;      // XXH3-128 of the file's bytes, hex
  std::string group;     // traces of one group share a baseline
  std::string variant;   // empty: the trace's kernels are the variants, named by kernel
  // The spec's `labels`: what the trace is beyond its configuration (a kernel
  // parameter such as a threshold), one table column each, in spec order.
  std::vector<std::pair<std::string, nlohmann::json>> labels;
};

struct PlannedPoint {
  std::string key;     // hex hash of (trace content, resolved configuration, simulator build)
  std::string name;    // the spec's named point, or empty for points of the axes
  std::size_t trace = 0;  // index into SweepPlan::traces
  std::string config;       // as the spec names it: a bundled name or a file
  std::string config_file;  // that configuration's file, absolute
  std::vector<Setting> settings;
  std::vector<std::string> overrides() const;
};

struct SweepPlan {
  std::string name;
  std::string spec;        // the spec file it was made from
  std::string executable;  // the atomsim that runs the points
  std::string build;       // hash of that executable: results of another build never mix in
  std::string baseline;    // regular expression on variants; empty: no speedups
  std::vector<std::string> setting_keys;  // every key any point sets, axes first, in spec order
  std::vector<PlannedTrace> traces;
  std::vector<PlannedPoint> points;

  nlohmann::json to_json() const;
  // Throws std::runtime_error naming `origin` for a malformed document.
  static SweepPlan from_json(const nlohmann::json& j, const std::string& origin);
  const PlannedPoint* find(const std::string& key) const;
};

// XXH3-128 of a file's bytes, streamed (traces may be larger than memory), as
// 32 hex digits; throws std::runtime_error naming the file.
std::string hash_file(const std::string& path);
std::string hash_text(const std::string& text);

// The key of a point: equal keys mean the same simulation, bit for bit.
std::string point_key(const std::string& trace_hash, const std::string& canonical_config, const std::string& build);

}  // namespace atomsim::sweep
