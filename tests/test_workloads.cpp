// The native workload runners, as far as a machine without a GPU can check
// them: option errors are one line with status 2, and a run either succeeds
// and checks itself (on a GPU machine) or fails in one line saying there is no
// usable device. The splatting trainer's maths, which runs on host and device,
// is checked here against finite differences.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim_helpers.hpp"
#include "workloads/splat3d/math.cuh"
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
  r = run("splat3d", "--ssim-weight 1.5");
  REQUIRE(r.code == 2);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("--ssim-weight") != std::string::npos);
  r = run("splat3d", "--mesh /nonexistent/index.js");
  REQUIRE(r.code == 1);
  REQUIRE(r.err_lines() == 1);
  REQUIRE(r.err.find("splat3d: /nonexistent/index.js: cannot open") != std::string::npos);
}

TEST_CASE("splatting maths: SH basis derivatives and SSIM partials agree with finite differences", "[workloads]") {
  using namespace atomsim::workload::splat;
  const float3 d = normalize(make_float3(0.3f, -0.5f, 0.8f));
  float3 g[kShCoeffs];
  sh_basis_gradient(d, 3, g);
  const float h = 1e-3f;
  for (int axis = 0; axis < 3; ++axis) {
    float3 lo = d, hi = d;
    (&lo.x)[axis] -= h;
    (&hi.x)[axis] += h;
    float b_lo[kShCoeffs], b_hi[kShCoeffs];
    sh_basis(lo, 3, b_lo);  // unnormalised on purpose: the derivative is of the polynomial
    sh_basis(hi, 3, b_hi);
    for (int k = 0; k < kShCoeffs; ++k) {
      INFO("coefficient " << k << ", axis " << axis);
      CHECK((&g[k].x)[axis] == Approx((b_hi[k] - b_lo[k]) / (2 * h)).margin(2e-3));
    }
  }
  float3 g0[kShCoeffs];
  sh_basis_gradient(d, 0, g0);
  CHECK(g0[0].x == 0.f);  // degree 0: colour does not depend on direction

  float window = 0.f;
  for (int o = -kSsimRadius; o <= kSsimRadius; ++o) window += ssim_window(o);
  CHECK(window == Approx(1.f).margin(1e-6));

  // Moments of a pixel channel: means 0.4 and 0.55, second moments consistent with some spread.
  const double mx = 0.4, my = 0.55, exx = 0.2, eyy = 0.33, exy = 0.24;
  auto ssim = [&](double a, double b, double c) { return double(ssim_terms(float(a), float(my), float(b), float(eyy), float(c)).ssim); };
  const SsimTerms t = ssim_terms(float(mx), float(my), float(exx), float(eyy), float(exy));
  const double e = 1e-3;
  CHECK(t.d_mx == Approx((ssim(mx + e, exx, exy) - ssim(mx - e, exx, exy)) / (2 * e)).epsilon(2e-2));
  CHECK(t.d_exx == Approx((ssim(mx, exx + e, exy) - ssim(mx, exx - e, exy)) / (2 * e)).epsilon(2e-2));
  CHECK(t.d_exy == Approx((ssim(mx, exx, exy + e) - ssim(mx, exx, exy - e)) / (2 * e)).epsilon(2e-2));
  CHECK(ssim_terms(0.3f, 0.3f, 0.1f, 0.1f, 0.1f).ssim == Approx(1.f));  // identical images
}
