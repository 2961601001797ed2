#include "tools/capture/outputs.hpp"

#include <unistd.h>

#include <cstdio>
#include <stdexcept>

#include "tools/capture/settings.hpp"

namespace atomsim::capture {

void write_file_atomically(const std::filesystem::path& path, const std::string& contents) {
  auto partial = path;
  partial += ".partial." + std::to_string(::getpid());
  std::FILE* f = std::fopen(partial.c_str(), "wb");
  if (!f) throw CaptureError("cannot write " + partial.string());
  bool ok = std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  ok = (std::fclose(f) == 0) && ok;
  if (!ok) {
    std::filesystem::remove(partial);
    throw CaptureError("cannot write " + partial.string() + " (disk full?)");
  }
  std::filesystem::rename(partial, path);
}

void write_json_atomically(const std::filesystem::path& path, const nlohmann::json& doc) {
  write_file_atomically(path, doc.dump(1) + "\n");
}

nlohmann::json selection_json(const Settings& settings, const LaunchSelector& selector) {
  return {{"kernel", settings.kernel_pattern},
          {"launch", settings.launch ? nlohmann::json(*settings.launch) : nlohmann::json()},
          {"launches_seen", selector.launches_seen()},
          {"launches_selected", selector.launches_selected()}};
}

std::filesystem::path result_path(const std::filesystem::path& out, const char* pass) {
  return out / (std::string(pass) + ".json");
}
std::filesystem::path error_path(const std::filesystem::path& out, const char* pass) {
  return out / (std::string(pass) + ".error");
}
std::filesystem::path loaded_marker_path(const std::filesystem::path& out, const char* pass) {
  return out / (std::string(pass) + ".loaded");
}

}  // namespace atomsim::capture
