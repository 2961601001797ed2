// Files a pass leaves in the output folder. Each is written beside its final
// name and renamed into place, so a reader sees it complete or not at all.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

namespace atomsim::capture {

void write_file_atomically(const std::filesystem::path& path, const std::string& contents);
void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& doc);

// <out>/<pass>.json, <out>/<pass>.error (one line), <out>/<pass>.loaded (the
// library was injected: the program did CUDA work).
std::filesystem::path result_path(const std::filesystem::path& out, const char* pass);
std::filesystem::path error_path(const std::filesystem::path& out, const char* pass);
std::filesystem::path loaded_marker_path(const std::filesystem::path& out, const char* pass);

}  // namespace atomsim::capture
