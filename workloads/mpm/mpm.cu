// MLS-MPM (Hu et al., "A Moving Least Squares Material Point Method with
// Displacement Discontinuity and Two-Way Rigid Body Coupling", 2018) in 2D and
// 3D with quadratic B-spline weights: a block of weakly compressible fluid
// falls under gravity into a box. Each step: particle-to-grid scatter
// (mpm_p2g), grid update (mpm_grid), grid-to-particle gather (mpm_g2p).
// The scatter, the atomic-heavy kernel, comes in two variants:
//  - "baseline": each particle adds to its 3^D nodes with one atomic per node
//    and component (velocity-momentum and mass);
//  - "warp": particles are first sorted by cell (mpm_sort: CUB radix sort and
//    a gather), so lanes of a warp that share a cell are neighbours; they sum
//    each node's contributions with a segmented shuffle reduction and the
//    segment's first lane does the atomics.
#include <cuda_runtime.h>

#include <cub/device/device_radix_sort.cuh>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "workloads/common/runner.cuh"

namespace {

using namespace atomsim::workload;

template <int D>
struct Vec {
  float c[D];
};

template <int D>
struct Particles {
  Vec<D>* x = nullptr;
  Vec<D>* v = nullptr;
  float* C = nullptr;  // D x D affine velocity field, row-major
  float* J = nullptr;
};

struct Params {
  int n_grid;
  float dx, inv_dx, dt, p_vol, p_mass, E, gravity;
};

__device__ __forceinline__ int node_index(const int* cell, int n, int D) {
  int idx = 0;
  for (int d = 0; d < D; ++d) idx = idx * n + cell[d];
  return idx;
}

template <int D>
__device__ __forceinline__ void weights(const Vec<D>& x, const Params& p, int* base, float (*w)[3], float* fx) {
  for (int d = 0; d < D; ++d) {
    const float g = x.c[d] * p.inv_dx;
    base[d] = static_cast<int>(g - 0.5f);
    fx[d] = g - base[d];
    w[d][0] = 0.5f * (1.5f - fx[d]) * (1.5f - fx[d]);
    w[d][1] = 0.75f - (fx[d] - 1.f) * (fx[d] - 1.f);
    w[d][2] = 0.5f * (fx[d] - 0.5f) * (fx[d] - 0.5f);
  }
}

template <int D>
__device__ __forceinline__ int cell_of(const Vec<D>& x, const Params& p) {
  int base[D];
  for (int d = 0; d < D; ++d) base[d] = static_cast<int>(x.c[d] * p.inv_dx - 0.5f);
  return node_index(base, p.n_grid, D);
}

// Sums v over the run of equal keys this lane belongs to (keys are sorted, so
// a run is contiguous lanes); the run's first lane gets the sum.
__device__ __forceinline__ float run_sum(float v, int lane, int run_last) {
#pragma unroll
  for (int offset = 1; offset < 32; offset *= 2) {
    const float other = __shfl_down_sync(0xffffffffu, v, offset);
    if (lane + offset <= run_last) v += other;
  }
  return v;
}

template <int D, bool kWarp>
__global__ void mpm_p2g(Particles<D> ps, int n, Params p, float* grid_v, float* grid_m) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  const int lane = threadIdx.x & 31;
  const bool valid = i < n;
  Vec<D> x{}, v{};
  float C[D * D] = {}, J = 1.f;
  if (valid) {
    x = ps.x[i];
    v = ps.v[i];
    for (int k = 0; k < D * D; ++k) C[k] = ps.C[std::size_t(i) * D * D + k];
    J = ps.J[i];
  }
  int base[D];
  float w[D][3], fx[D];
  weights<D>(x, p, base, w, fx);
  const float stress = -p.dt * 4.f * p.E * p.p_vol * (J - 1.f) * p.inv_dx * p.inv_dx;
  bool leader = valid;
  int run_last = lane;
  if constexpr (kWarp) {
    // Lanes of one cell are contiguous after the sort; invalid lanes form their own run.
    const int key = valid ? node_index(base, p.n_grid, D) : -1 - lane;
    const std::uint32_t peers = __match_any_sync(0xffffffffu, key);
    leader = valid && (__ffs(peers) - 1 == lane);
    run_last = 31 - __clz(peers);
  }
  constexpr int kNodes = D == 2 ? 9 : 27;
  for (int node = 0; node < kNodes; ++node) {
    int offset[D], cell[D];
    float weight = 1.f, dpos[D];
    for (int d = 0, rest = node; d < D; ++d, rest /= 3) {
      offset[d] = rest % 3;
      cell[d] = base[d] + offset[d];
      weight *= w[d][offset[d]];
      dpos[d] = (offset[d] - fx[d]) * p.dx;
    }
    float contribution[D + 1];
    for (int r = 0; r < D; ++r) {
      float affine = 0.f;
      for (int c = 0; c < D; ++c) affine += (p.p_mass * C[r * D + c] + (r == c ? stress : 0.f)) * dpos[c];
      contribution[r] = valid ? weight * (p.p_mass * v.c[r] + affine) : 0.f;
    }
    contribution[D] = valid ? weight * p.p_mass : 0.f;
    if constexpr (kWarp)
      for (int k = 0; k <= D; ++k) contribution[k] = run_sum(contribution[k], lane, run_last);
    if (leader) {
      const int idx = node_index(cell, p.n_grid, D);
      for (int r = 0; r < D; ++r) atomicAdd(&grid_v[std::size_t(idx) * D + r], contribution[r]);
      atomicAdd(&grid_m[idx], contribution[D]);
    }
  }
}

template <int D>
__global__ void mpm_grid(float* grid_v, const float* grid_m, Params p) {
  const int idx = blockIdx.x * blockDim.x + threadIdx.x;
  int total = 1;
  for (int d = 0; d < D; ++d) total *= p.n_grid;
  if (idx >= total) return;
  const float m = grid_m[idx];
  float* gv = grid_v + std::size_t(idx) * D;
  if (m <= 0.f) {
    for (int d = 0; d < D; ++d) gv[d] = 0.f;
    return;
  }
  int cell[D];
  for (int d = D - 1, rest = idx; d >= 0; --d, rest /= p.n_grid) cell[d] = rest % p.n_grid;
  for (int d = 0; d < D; ++d) gv[d] /= m;
  gv[1] -= p.dt * p.gravity;
  // Walls: three cells thick; velocity into a wall is removed.
  for (int d = 0; d < D; ++d) {
    if (cell[d] < 3 && gv[d] < 0.f) gv[d] = 0.f;
    if (cell[d] > p.n_grid - 3 && gv[d] > 0.f) gv[d] = 0.f;
  }
}

template <int D>
__global__ void mpm_g2p(Particles<D> ps, int n, Params p, const float* grid_v) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  Vec<D> x = ps.x[i];
  int base[D];
  float w[D][3], fx[D];
  weights<D>(x, p, base, w, fx);
  Vec<D> nv{};
  float nC[D * D] = {};
  constexpr int kNodes = D == 2 ? 9 : 27;
  for (int node = 0; node < kNodes; ++node) {
    int cell[D];
    float weight = 1.f, dpos[D];
    for (int d = 0, rest = node; d < D; ++d, rest /= 3) {
      const int o = rest % 3;
      cell[d] = base[d] + o;
      weight *= w[d][o];
      dpos[d] = (o - fx[d]);
    }
    const float* gv = grid_v + std::size_t(node_index(cell, p.n_grid, D)) * D;
    for (int r = 0; r < D; ++r) {
      nv.c[r] += weight * gv[r];
      for (int c = 0; c < D; ++c) nC[r * D + c] += 4.f * p.inv_dx * weight * gv[r] * dpos[c];
    }
  }
  float trace = 0.f;
  for (int d = 0; d < D; ++d) {
    x.c[d] += p.dt * nv.c[d];
    trace += nC[d * D + d];
  }
  ps.x[i] = x;
  ps.v[i] = nv;
  for (int k = 0; k < D * D; ++k) ps.C[std::size_t(i) * D * D + k] = nC[k];
  ps.J[i] *= 1.f + p.dt * trace;
}

template <int D>
__global__ void mpm_cell_keys(const Vec<D>* x, int n, Params p, int* keys, int* order) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  keys[i] = cell_of<D>(x[i], p);
  order[i] = i;
}

template <int D>
__global__ void mpm_gather(Particles<D> from, Particles<D> to, const int* order, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const int j = order[i];
  to.x[i] = from.x[j];
  to.v[i] = from.v[j];
  for (int k = 0; k < D * D; ++k) to.C[std::size_t(i) * D * D + k] = from.C[std::size_t(j) * D * D + k];
  to.J[i] = from.J[j];
}

template <int D>
Particles<D> alloc_particles(int n) {
  Particles<D> ps;
  WORKLOAD_CHECK(cudaMalloc(&ps.x, n * sizeof(Vec<D>)));
  WORKLOAD_CHECK(cudaMalloc(&ps.v, n * sizeof(Vec<D>)));
  WORKLOAD_CHECK(cudaMalloc(&ps.C, std::size_t(n) * D * D * sizeof(float)));
  WORKLOAD_CHECK(cudaMalloc(&ps.J, n * sizeof(float)));
  return ps;
}

template <int D>
int run(const Options& o) {
  const int n_grid = static_cast<int>(o.integer("grid", 16, D == 2 ? 4096 : 512));
  const int per_side = static_cast<int>(o.integer("ppc-side", 1, 4));
  const bool warp = o.choice("variant", {"baseline", "warp"}) == "warp";
  const int warmup = static_cast<int>(o.integer("warmup", 0, 100000)), steps = static_cast<int>(o.integer("steps", 1, 100000));
  Params p{};
  p.n_grid = n_grid;
  p.dx = 1.f / n_grid;
  p.inv_dx = static_cast<float>(n_grid);
  p.dt = 2e-4f * 128.f / n_grid;
  p.p_vol = (p.dx / per_side) * (p.dx / per_side) * (D == 3 ? p.dx / per_side : 1.f);
  p.p_mass = p.p_vol * 1.f;
  p.E = 400.f;
  p.gravity = 9.8f;

  // The falling block: a regular lattice of per_side^D particles per cell over [0.3, 0.6] x [0.45, 0.75] (x [0.3, 0.6]).
  std::vector<Vec<D>> x;
  const float lo[3] = {0.3f, 0.45f, 0.3f}, hi[3] = {0.6f, 0.75f, 0.6f};
  int count[3] = {1, 1, 1};
  for (int d = 0; d < D; ++d) count[d] = static_cast<int>((hi[d] - lo[d]) * n_grid * per_side);
  for (int a = 0; a < count[0]; ++a)
    for (int b = 0; b < count[1]; ++b)
      for (int c = 0; c < count[2]; ++c) {
        Vec<D> q;
        const int idx[3] = {a, b, c};
        for (int d = 0; d < D; ++d) q.c[d] = lo[d] + (idx[d] + 0.5f) * p.dx / per_side;
        x.push_back(q);
      }
  const int n = static_cast<int>(x.size());
  // Particles are stored in scrambled order, as after emission; the warp
  // variant sorts them each step. (A prime multiplier above n permutes.)
  std::vector<Vec<D>> scrambled(n);
  for (int i = 0; i < n; ++i) scrambled[(std::uint64_t(i) * 2654435761u) % n] = x[i];
  require_gpu();

  Particles<D> ps = alloc_particles<D>(n), sorted = alloc_particles<D>(n);
  WORKLOAD_CHECK(cudaMemcpy(ps.x, scrambled.data(), n * sizeof(Vec<D>), cudaMemcpyHostToDevice));
  WORKLOAD_CHECK(cudaMemset(ps.v, 0, n * sizeof(Vec<D>)));
  WORKLOAD_CHECK(cudaMemset(ps.C, 0, std::size_t(n) * D * D * sizeof(float)));
  std::vector<float> ones(n, 1.f);
  WORKLOAD_CHECK(cudaMemcpy(ps.J, ones.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  std::size_t nodes = 1;
  for (int d = 0; d < D; ++d) nodes *= n_grid;
  float *grid_v = nullptr, *grid_m = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&grid_v, nodes * D * sizeof(float)));
  WORKLOAD_CHECK(cudaMalloc(&grid_m, nodes * sizeof(float)));
  int *keys = nullptr, *keys_sorted = nullptr, *order = nullptr, *order_sorted = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&keys, n * sizeof(int)));
  WORKLOAD_CHECK(cudaMalloc(&keys_sorted, n * sizeof(int)));
  WORKLOAD_CHECK(cudaMalloc(&order, n * sizeof(int)));
  WORKLOAD_CHECK(cudaMalloc(&order_sorted, n * sizeof(int)));
  std::size_t temp_bytes = 0;
  int key_bits = 0;
  while ((std::size_t(1) << key_bits) < nodes) ++key_bits;
  cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys, keys_sorted, order, order_sorted, n, 0, key_bits);
  void* temp = nullptr;
  WORKLOAD_CHECK(cudaMalloc(&temp, temp_bytes));

  const int threads = 128, blocks = (n + threads - 1) / threads, grid_blocks = static_cast<int>((nodes + 255) / 256);
  KernelTimes times;
  auto p2g = [&](bool warp_variant) {
    WORKLOAD_CHECK(cudaMemsetAsync(grid_v, 0, nodes * D * sizeof(float)));
    WORKLOAD_CHECK(cudaMemsetAsync(grid_m, 0, nodes * sizeof(float)));
    if (warp_variant) mpm_p2g<D, true><<<blocks, threads>>>(ps, n, p, grid_v, grid_m);
    else mpm_p2g<D, false><<<blocks, threads>>>(ps, n, p, grid_v, grid_m);
  };
  auto sort = [&] {
    mpm_cell_keys<D><<<blocks, threads>>>(ps.x, n, p, keys, order);
    cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, keys_sorted, order, order_sorted, n, 0, key_bits);
    mpm_gather<D><<<blocks, threads>>>(ps, sorted, order_sorted, n);
    std::swap(ps, sorted);
  };
  double y0 = 0;
  for (const auto& q : x) y0 += q.c[1];
  y0 /= n;
  // Both scatters on one sorted state must give the same grid (the aggregation is exact up to float order).
  sort();
  std::vector<float> reference(nodes * (D + 1)), aggregated(nodes * (D + 1));
  for (int variant = 0; variant < 2; ++variant) {
    p2g(variant == 1);
    WORKLOAD_CHECK(cudaDeviceSynchronize());
    std::vector<float>& out = variant == 0 ? reference : aggregated;
    WORKLOAD_CHECK(cudaMemcpy(out.data(), grid_v, nodes * D * sizeof(float), cudaMemcpyDeviceToHost));
    WORKLOAD_CHECK(cudaMemcpy(out.data() + nodes * D, grid_m, nodes * sizeof(float), cudaMemcpyDeviceToHost));
  }
  double scale = 0, worst = 0, grid_mass = 0;
  for (float v : reference) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (std::size_t k = 0; k < reference.size(); ++k) worst = std::max(worst, std::fabs(static_cast<double>(reference[k]) - aggregated[k]));
  worst /= scale > 0 ? scale : 1;
  for (std::size_t k = 0; k < nodes; ++k) grid_mass += reference[nodes * D + k];
  const double mass_error = std::fabs(grid_mass - static_cast<double>(p.p_mass) * n) / (static_cast<double>(p.p_mass) * n);

  for (int s = 0; s < warmup + steps; ++s) {
    const bool keep = s >= warmup;
    times.time("mpm_step", keep, [&] {
      if (warp) sort();
      p2g(warp);
      mpm_grid<D><<<grid_blocks, 256>>>(grid_v, grid_m, p);
      mpm_g2p<D><<<blocks, threads>>>(ps, n, p, grid_v);
    });
    if (warp) times.time("mpm_sort", keep, sort);
    times.time("mpm_p2g", keep, [&] { p2g(warp); });
    times.time("mpm_grid", keep, [&] { mpm_grid<D><<<grid_blocks, 256>>>(grid_v, grid_m, p); });
    times.time("mpm_g2p", keep, [&] { mpm_g2p<D><<<blocks, threads>>>(ps, n, p, grid_v); });
  }
  std::vector<Vec<D>> final_x(n), final_v(n);
  WORKLOAD_CHECK(cudaMemcpy(final_x.data(), ps.x, n * sizeof(Vec<D>), cudaMemcpyDeviceToHost));
  WORKLOAD_CHECK(cudaMemcpy(final_v.data(), ps.v, n * sizeof(Vec<D>), cudaMemcpyDeviceToHost));
  bool inside = true;
  double y1 = 0, vy = 0;
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < D; ++d) inside = inside && std::isfinite(final_x[i].c[d]) && final_x[i].c[d] > 0.f && final_x[i].c[d] < 1.f;
    y1 += final_x[i].c[1];
    vy += final_v[i].c[1];
  }
  y1 /= n;
  const bool falling = vy < 0 && y1 <= y0;  // gravity acts; short runs move the block too little to see in position
  const bool correct = worst < 1e-4 && mass_error < 1e-4 && inside && falling;
  std::printf("{\"workload\":\"mpm\",\"dimensions\":%d,\"variant\":\"%s\",\"grid\":%d,\"particles\":%d,\"ppc_side\":%d,"
              "\"steps\":%d,\"warmup\":%d,%s,\"kernels\":%s,\"p2g_variant_difference\":%.3e,\"grid_mass_error\":%.3e,"
              "\"centre_of_mass_y\":[%.5f,%.5f],\"particles_inside\":%s,\"correct\":%s}\n",
              D, warp ? "warp" : "baseline", n_grid, n, per_side, steps, warmup, device_json().c_str(), times.json().c_str(),
              worst, mass_error, y0, y1, inside ? "true" : "false", correct ? "true" : "false");
  if (!correct) fail(3, "check failed (scatter variants differ by %.3e, grid mass error %.3e, particles inside: %s, fell: %s)", worst,
                     mass_error, inside ? "yes" : "no", falling ? "yes" : "no");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o(argc, argv,
            {{"dimensions", "3"}, {"grid", "128"}, {"ppc-side", "2"}, {"variant", "baseline"}, {"warmup", "20"}, {"steps", "50"}},
            "[--dimensions 2|3] [--grid N] [--ppc-side K] [--variant baseline|warp] [--warmup W] [--steps S]");
  return o.integer("dimensions", 2, 3) == 2 ? run<2>(o) : run<3>(o);
}
