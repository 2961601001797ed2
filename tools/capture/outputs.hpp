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

// <out>/<pass>.json, <out>/<pass>.error (one line), <out>/<pass>.loaded (the
// library was injected: the program did CUDA work).
// What the run was asked to select and what it saw, as every pass's output records it.
nlohmann::json selection_json(const Settings& settings, const LaunchSelector& selector);

std::filesystem::path result_path(const std::filesystem::path& out, const char* pass);
std::filesystem::path error_path(const std::filesystem::path& out, const char* pass);
std::filesystem::path loaded_marker_path(const std::filesystem::path& out, const char* pass);

}  // namespace atomsim::capture
