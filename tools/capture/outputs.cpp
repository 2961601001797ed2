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
std::filesystem::path process_stage_root(const std::filesystem::path& out, const char* pass) {
  return out / (std::string(".capture-") + pass);
}

nlohmann::json ProcessStage::describe() {
  std::string command;
  if (std::FILE* f = std::fopen("/proc/self/cmdline", "rb")) {
    char chunk[4096];
    std::size_t n;
    while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) command.append(chunk, n);
    std::fclose(f);
  }
  while (!command.empty() && command.back() == '\0') command.pop_back();
  for (char& c : command)
    if (c == '\0') c = ' ';
  return {{"pid", ::getpid()}, {"parent", ::getppid()}, {"command", command}};
}

bool ProcessStage::enter(Settings& settings) {
  const nlohmann::json process = describe();
  if (!settings.process_matches(process.at("command").get<std::string>())) return false;
  settings.out_dir =
      process_stage_root(settings.final_out_dir, pass_name(settings.pass)) / std::to_string(::getpid());
  std::filesystem::create_directories(settings.out_dir);
  write_json_atomically(settings.out_dir / "process.json", process);
  return true;
}

void ProcessStage::mark_selected(const Settings& settings) {
  const auto marker = settings.out_dir / "selected";
  if (!std::filesystem::exists(marker)) write_file_atomically(marker, "selected\n");
}

void ProcessStage::record_launches(const Settings& settings, const LaunchSelector& selector) {
  write_json_atomically(settings.out_dir / "launches.json",
                        {{"seen", selector.launches_seen()}, {"matching", selector.launches_matching()},
                         {"selected", selector.launches_selected()}});
}

}  // namespace atomsim::capture
