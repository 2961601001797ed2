// Taichi-style sparse grid kernels (Hu et al., "Taichi: a language for
// high-performance computation on spatially sparse data structures", 2019): a
// 2D fine grid of 16x16-cell blocks under a bitmask, activated on write.
//  - sparse_write: every point adds its mass to its cell; writing to a block
//    activates it (atomicOr on the bitmask) and the activating write appends
//    the block to the active list (atomicAdd on the list length).
//  - sparse_restrict: over the active blocks, the multigrid restriction
//    y[i/2][j/2] += 0.25 * x[i][j] into the dense coarse grid.
// Variants: "baseline" (one atomic per point and per cell) and "warp"
// (warp-aggregated: lanes writing one block or cell are found with match_any
// and their leader does one atomic for them; the restriction sums the four
// cells of a coarse cell with two shuffles first).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "workloads/common/runner.cuh"

namespace {

using namespace atomsim::workload;

constexpr int kBlockSide = 16;
constexpr int kBlockCells = kBlockSide * kBlockSide;

struct Grid {
  std::uint32_t side = 0;         // fine cells per side
  std::uint32_t blocks_per_side = 0;
  float* fine = nullptr;          // side x side
  float* coarse = nullptr;        // side/2 x side/2
  std::uint32_t* bitmask = nullptr;
  std::uint32_t* active = nullptr;  // active block list
  std::uint32_t* active_count = nullptr;
};

__device__ __forceinline__ std::uint32_t lane_id() { return threadIdx.x & 31u; }

// Lanes of `peers` (which include this lane) sum v; the lowest gets the sum.
__device__ __forceinline__ float sum_over_peers(std::uint32_t peers, float v) {
  float sum = v;
  const std::uint32_t me = lane_id();
  for (std::uint32_t m = peers; m; m &= m - 1) {
    const std::uint32_t src = __ffs(m) - 1;
    const float other = __shfl_sync(peers, v, src);
    if (src != me) sum += other;
  }
  return sum;
}

template <bool kWarp>
__global__ void sparse_write(const float2* points, const float* mass, std::uint32_t n, Grid g) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const bool valid = i < n;
  const std::uint32_t lanes = __ballot_sync(0xffffffffu, valid);
  if (!valid) return;
  const float2 p = points[i];
  const std::uint32_t cx = min(static_cast<std::uint32_t>(p.x), g.side - 1), cy = min(static_cast<std::uint32_t>(p.y), g.side - 1);
  const std::uint32_t cell = cy * g.side + cx;
  const std::uint32_t block = (cy / kBlockSide) * g.blocks_per_side + cx / kBlockSide;
  const std::uint32_t bit = 1u << (block & 31);
  float m = mass[i];
  bool lead_block = true, lead_cell = true;
  if constexpr (kWarp) {
    const std::uint32_t block_peers = __match_any_sync(lanes, block);
    lead_block = __ffs(block_peers) - 1 == lane_id();
    const std::uint32_t cell_peers = __match_any_sync(lanes, cell);
    m = sum_over_peers(cell_peers, m);
    lead_cell = __ffs(cell_peers) - 1 == lane_id();
  }
  if (lead_block) {
    const std::uint32_t before = atomicOr(&g.bitmask[block / 32], bit);
    if (!(before & bit)) g.active[atomicAdd(g.active_count, 1u)] = block;
  }
  if (lead_cell) atomicAdd(&g.fine[cell], m);
}

// One CUDA block per active grid block; warp w covers rows 2w and 2w+1, so
// the four fine cells of a coarse cell are lanes l, l^1, l^16, l^17.
template <bool kWarp>
__global__ void __launch_bounds__(kBlockCells) sparse_restrict(Grid g) {
  const std::uint32_t block = g.active[blockIdx.x];
  const std::uint32_t lane = lane_id(), warp = threadIdx.x >> 5;
  const std::uint32_t x = (block % g.blocks_per_side) * kBlockSide + (lane & 15);
  const std::uint32_t y = (block / g.blocks_per_side) * kBlockSide + 2 * warp + (lane >> 4);
  float v = 0.25f * g.fine[y * g.side + x];
  const std::uint32_t coarse = (y / 2) * (g.side / 2) + x / 2;
  if constexpr (kWarp) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    v += __shfl_xor_sync(0xffffffffu, v, 16);
    if (lane < 16 && (lane & 1) == 0) atomicAdd(&g.coarse[coarse], v);
  } else {
    atomicAdd(&g.coarse[coarse], v);
  }
}

// Points along rings, in angular order, so that neighbouring points (and
// warps' lanes) often share blocks and cells, as particles sorted by block do.
void make_points(std::uint32_t n, std::uint32_t side, std::uint32_t seed, std::vector<float2>& points, std::vector<float>& mass) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  const int rings = 4;
  points.resize(n);
  mass.resize(n);
  for (std::uint32_t i = 0; i < n; ++i) {
    const int r = static_cast<int>(std::uint64_t(i) * rings / n);
    const float t = (static_cast<float>(i) - static_cast<float>(std::uint64_t(r) * n / rings)) / (static_cast<float>(n) / rings);
    const float cx = side * (0.3f + 0.4f * (r % 2)), cy = side * (0.3f + 0.4f * (r / 2));
    const float radius = side * 0.12f + side * 0.01f * unit(rng);
    const float angle = 6.2831853f * t;
    points[i] = make_float2(std::fmin(std::fmax(cx + radius * std::cos(angle), 0.f), side - 1.f),
                            std::fmin(std::fmax(cy + radius * std::sin(angle), 0.f), side - 1.f));
    mass[i] = 0.5f + unit(rng);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o(argc, argv, {{"points", "4194304"}, {"side", "4096"}, {"variant", "baseline"}, {"seed", "1"}, {"warmup", "3"}, {"repeat", "21"}},
            "[--points N] [--side CELLS] [--variant baseline|warp] [--seed S] [--warmup W] [--repeat R]");
  const auto n = static_cast<std::uint32_t>(o.integer("points", 1, 1 << 28));
  const auto side = static_cast<std::uint32_t>(o.integer("side", 32, 16384));
  if (side % 32) fail(2, "--side must be a multiple of 32 (got %u)", side);
  const bool warp = o.choice("variant", {"baseline", "warp"}) == "warp";
  const auto seed = static_cast<std::uint32_t>(o.integer("seed", 0, 0xffffffffLL));
  const int warmup = static_cast<int>(o.integer("warmup", 0, 1000)), repeat = static_cast<int>(o.integer("repeat", 1, 10000));
  require_gpu();

  std::vector<float2> points;
  std::vector<float> mass;
  make_points(n, side, seed, points, mass);
  Grid g;
  g.side = side;
  g.blocks_per_side = side / kBlockSide;
  const std::uint32_t blocks = g.blocks_per_side * g.blocks_per_side;
  const std::size_t fine_bytes = std::size_t(side) * side * sizeof(float), coarse_bytes = fine_bytes / 4;
  float2* d_points = nullptr;
  float* d_mass = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&d_points, n * sizeof(float2)));
  WORKLOAD_CHECK(cudaMalloc(&d_mass, n * sizeof(float)));
  WORKLOAD_CHECK(cudaMemcpy(d_points, points.data(), n * sizeof(float2), cudaMemcpyHostToDevice));
  WORKLOAD_CHECK(cudaMemcpy(d_mass, mass.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  WORKLOAD_CHECK(cudaMalloc(&g.fine, fine_bytes));
  WORKLOAD_CHECK(cudaMalloc(&g.coarse, coarse_bytes));
  WORKLOAD_CHECK(cudaMalloc(&g.bitmask, (blocks + 31) / 32 * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&g.active, blocks * sizeof(std::uint32_t)));
  WORKLOAD_CHECK(cudaMalloc(&g.active_count, sizeof(std::uint32_t)));

  KernelTimes times;
  std::uint32_t active_blocks = 0;
  for (int r = 0; r < warmup + repeat; ++r) {
    const bool keep = r >= warmup;
    WORKLOAD_CHECK(cudaMemset(g.fine, 0, fine_bytes));
    WORKLOAD_CHECK(cudaMemset(g.coarse, 0, coarse_bytes));
    WORKLOAD_CHECK(cudaMemset(g.bitmask, 0, (blocks + 31) / 32 * sizeof(std::uint32_t)));
    WORKLOAD_CHECK(cudaMemset(g.active_count, 0, sizeof(std::uint32_t)));
    times.time("sparse_write", keep, [&] {
      if (warp) sparse_write<true><<<(n + 255) / 256, 256>>>(d_points, d_mass, n, g);
      else sparse_write<false><<<(n + 255) / 256, 256>>>(d_points, d_mass, n, g);
    });
    WORKLOAD_CHECK(cudaMemcpy(&active_blocks, g.active_count, sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    times.time("sparse_restrict", keep, [&] {
      if (warp) sparse_restrict<true><<<active_blocks, kBlockCells>>>(g);
      else sparse_restrict<false><<<active_blocks, kBlockCells>>>(g);
    });
  }

  // CPU reference in double: cell masses, active blocks, restriction.
  std::vector<double> fine(std::size_t(side) * side, 0.0), coarse(fine.size() / 4, 0.0);
  std::set<std::uint32_t> expected_blocks;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t cx = std::min(static_cast<std::uint32_t>(points[i].x), side - 1);
    const std::uint32_t cy = std::min(static_cast<std::uint32_t>(points[i].y), side - 1);
    fine[std::size_t(cy) * side + cx] += mass[i];
    expected_blocks.insert((cy / kBlockSide) * g.blocks_per_side + cx / kBlockSide);
  }
  for (std::uint32_t b : expected_blocks)
    for (int c = 0; c < kBlockCells; ++c) {
      const std::uint32_t x = (b % g.blocks_per_side) * kBlockSide + c % kBlockSide, y = (b / g.blocks_per_side) * kBlockSide + c / kBlockSide;
      coarse[std::size_t(y / 2) * (side / 2) + x / 2] += 0.25 * fine[std::size_t(y) * side + x];
    }
  std::vector<float> got_fine(fine.size()), got_coarse(coarse.size());
  std::vector<std::uint32_t> got_blocks(active_blocks);
  WORKLOAD_CHECK(cudaMemcpy(got_fine.data(), g.fine, fine_bytes, cudaMemcpyDeviceToHost));
  WORKLOAD_CHECK(cudaMemcpy(got_coarse.data(), g.coarse, coarse_bytes, cudaMemcpyDeviceToHost));
  WORKLOAD_CHECK(cudaMemcpy(got_blocks.data(), g.active, active_blocks * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  const bool blocks_ok = std::set<std::uint32_t>(got_blocks.begin(), got_blocks.end()) == expected_blocks && got_blocks.size() == expected_blocks.size();
  double worst = 0;
  auto compare = [&](const std::vector<float>& got, const std::vector<double>& want) {
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]) / std::max(1.0, std::fabs(want[i])));
  };
  compare(got_fine, fine);
  compare(got_coarse, coarse);
  const bool correct = blocks_ok && worst < 1e-4;
  std::printf("{\"workload\":\"sparse\",\"variant\":\"%s\",\"points\":%u,\"side\":%u,\"seed\":%u,\"blocks\":%u,\"active_blocks\":%u,"
              "\"warmup\":%d,\"repeat\":%d,%s,\"kernels\":%s,\"worst_relative_error\":%.3e,\"active_list_correct\":%s,\"correct\":%s}\n",
              warp ? "warp" : "baseline", n, side, seed, blocks, active_blocks, warmup, repeat, device_json().c_str(),
              times.json().c_str(), worst, blocks_ok ? "true" : "false", correct ? "true" : "false");
  if (!correct) fail(3, "result differs from the CPU reference (worst relative error %.3e, active list %s)", worst, blocks_ok ? "right" : "wrong");
  return 0;
}
