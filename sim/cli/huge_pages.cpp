#include "sim/cli/huge_pages.hpp"

#include <cstdlib>
#include <fstream>
#include <string>

#include <unistd.h>

namespace atomsim {

namespace {
constexpr const char* kTunable = "glibc.malloc.hugetlb=1";

bool huge_pages_on_request() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return std::getline(mode, line) && line.find("[madvise]") != std::string::npos;
}
}  // namespace

void restart_with_huge_page_heap(char** argv) {
#if defined(__linux__) && defined(__GLIBC__)
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::string(tunables).find("glibc.malloc.hugetlb") != std::string::npos) return;
  // Valgrind's tools would lose the restarted process.
  if (const char* preload = std::getenv("LD_PRELOAD"); preload && std::string(preload).find("vgpreload") != std::string::npos)
    return;
  if (!huge_pages_on_request()) return;
  const std::string value = tunables && *tunables ? std::string(tunables) + ":" + kTunable : std::string(kTunable);
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not restarted: the tunable stays set for any child, which is harmless.
#else
  (void)argv;
#endif
}

}  // namespace atomsim
