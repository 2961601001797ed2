// Files a pass leaves in the output folder. Each is written beside its final
// name and renamed into place, so a reader sees it complete or not at all.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "tools/capture/settings.hpp"

namespace atomsim::capture {

void write_file_atomically(const std::filesystem::path& path, const std::string& contents);
void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& doc);

// What the run was asked to select and what it saw, as every pass's output records it.
nlohmann::json selection_json(const Settings& settings, const LaunchSelector& selector);

// Every process of the program that loads an injection library writes into a
// folder of its own, <out>/.capture-<pass>/<pid>/, so that a program's child
// processes (compile workers, data loaders, a script's python) never write
// over each other. The launcher takes the results of the process that ran the
// selected launches into <out> when the program has ended.
//   process.json   pid, parent and command line, written when the library loads
//   launches.json  launches seen, matching and selected, written at exit
//   selected       written at the process's first selected launch, so that one
//                  that exits without its exit handlers is told from one that
//                  ran nothing
std::filesystem::path process_stage_root(const std::filesystem::path& out, const char* pass);

class ProcessStage {
 public:
  // Makes this process's folder and points settings.out_dir at it; false (the
  // library then stays idle) where the command line does not match --process.
  static bool enter(Settings& settings);
  // This process: pid, parent and command line.
  static nlohmann::json describe();
  static void mark_selected(const Settings& settings);
  static void record_launches(const Settings& settings, const LaunchSelector& selector);
};

std::filesystem::path result_path(const std::filesystem::path& out, const char* pass);
// <out>/<pass>.json, and <out>/<pass>.error (one line) in a process's folder.
std::filesystem::path error_path(const std::filesystem::path& out, const char* pass);

}  // namespace atomsim::capture
