// The native workload runners, as far as a machine without a GPU can check
// them: option errors are one line with status 2, and a run either succeeds
// and checks itself (on a GPU machine) or fails in one line saying there is no
// usable device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim_helpers.hpp"
#include "workloads/splat3d/mesh.hpp"

namespace {

using Run = atomsim::testing::CommandResult;

Run run(const std::string& program, const std::string& args) {
  return atomsim::testing::run_command(std::string(ATOMSIM_WORKLOADS_DIR) + "/" + program + " " + args);
}

}  // namespace

TEST_CASE("workload runners refuse bad options in one line", "[workloads][errors]") {
  struct Case {
    const char* program;
    const char* args;
    const char* says;
  };
  for (const Case& c : {Case{"onesweep", "--bogus 1", "unknown option --bogus"}, Case{"onesweep", "--keys 0", "--keys must be"},
                        Case{"onesweep", "--distribution skewed", "--distribution must be one of uniform, narrow"},
                        Case{"sparse_grid", "--side 100", "--side must be a multiple of 32"},
                        Case{"sparse_grid", "--variant", "option --variant needs a value"},
                        Case{"mpm", "--dimensions 4", "--dimensions must be an integer in [2, 3]"},
                        Case{"mpm", "--variant fast", "--variant must be one of baseline, warp"}}) {
    INFO(c.program << " " << c.args);
    Run r = run(c.program, c.args);
    REQUIRE(r.code == 2);
    REQUIRE(r.err_lines() == 1);
    REQUIRE(r.err.find(std::string(c.program) + ": ") == 0);
    REQUIRE(r.err.find(c.says) != std::string::npos);
    REQUIRE(r.out.empty());
  }
}

TEST_CASE("workload runners check themselves on a GPU, or say in one line that there is none", "[workloads]") {
  for (const char* invocation : {"onesweep --keys 5000 --pairs 1 --warmup 0 --repeat 1",
                                 "sparse_grid --points 2000 --side 64 --warmup 0 --repeat 1",
                                 "mpm --dimensions 2 --grid 32 --warmup 0 --steps 2"}) {
    const std::string s = invocation;
    Run r = run(s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1));
    INFO(invocation << ": " << r.err);
    if (r.code == 0) {
      REQUIRE(r.out.find("\"correct\":true") != std::string::npos);
      REQUIRE(r.out.find("\"device\":{") != std::string::npos);
    } else {
      REQUIRE(r.code == 1);
      REQUIRE(r.err_lines() == 1);
      REQUIRE(r.err.find("CUDA device") != std::string::npos);
      REQUIRE(r.out.empty());
    }
  }
}

TEST_CASE("the bunny mesh loads from the npm package the setup installs, and damaged files are named", "[workloads]") {
  using atomsim::workload::load_bunny;
  using atomsim::workload::MeshError;
  const std::string path = std::string(ATOMSIM_SOURCE_DIR) + "/workloads/splat3d/data/node_modules/bunny/index.js";
  const auto mesh = load_bunny(path);
  REQUIRE(mesh.positions.size() == 1839);
  REQUIRE(mesh.triangles.size() == 3674);
  float top = -1e9f;
  for (const auto& p : mesh.positions) top = std::max(top, p[1]);
  REQUIRE(top == Approx(9.654748f));

  const std::string bad = atomsim::testing::temp_trace("bunny.js");
  std::ofstream(bad) << "exports.positions=[[0,0,0],[1,0,0],[0,1,0]];exports.cells=[[0,1,7]]";
  REQUIRE_THROWS_WITH(load_bunny(bad), Catch::Contains("triangle 0 names vertex 7 of 3"));
  std::ofstream(bad) << "exports.positions=[[0,0,0],[1,0 0]];exports.cells=[[0,1,2]]";
  REQUIRE_THROWS_WITH(load_bunny(bad), Catch::Contains(bad + ": byte 32: expected ','"));
  std::ofstream(bad) << "module.exports = {}";
  REQUIRE_THROWS_WITH(load_bunny(bad), Catch::Contains("no 'positions='"));
  std::remove(bad.c_str());
  REQUIRE_THROWS_WITH(load_bunny("/nonexistent/index.js"), Catch::Contains("/nonexistent/index.js: cannot open"));
}

TEST_CASE("the splatting trainer refuses bad options and a missing mesh in one line", "[workloads][errors]") {
  Run r = run("splat3d", "--variant fastest");
  REQUIRE(r.code == 2);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("--variant must be one of baseline, sws, swb, warp, auto") != std::string::npos);
  r = run("splat3d", "--threshold 40");
  REQUIRE(r.code == 2);
  REQUIRE(r.err.find("--threshold must be an integer in [1, 33]") != std::string::npos);
  r = run("splat3d", "--mesh /nonexistent/index.js");
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("splat3d: /nonexistent/index.js: cannot open") != std::string::npos);
}
