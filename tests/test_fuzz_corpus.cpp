#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tests/fuzz/targets.hpp"

using namespace atomsim;
namespace fs = std::filesystem;

// Every seed, every input the fuzzers kept (the minimised corpus) and every input that
// once broke a target (findings/) goes through the target again: each must
// end in success or the input kind's own error.
TEST_CASE("Every committed fuzz corpus input and past finding is handled", "[fuzz]") {
  const fs::path root = fs::path(ATOMSIM_SOURCE_DIR) / "tests" / "fuzz";
  for (const fuzz::Target& target : fuzz::targets()) {
    std::size_t inputs = 0;
    for (const char* kind : {"seeds", "corpus", "findings"}) {
      const fs::path dir = root / kind / target.name;
      if (!fs::exists(dir)) continue;
      for (const auto& entry : fs::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        INFO(entry.path().string());
        REQUIRE_NOTHROW(target.run(bytes));
        ++inputs;
      }
    }
    INFO(target.name);
    REQUIRE(inputs > 0);
  }
}
