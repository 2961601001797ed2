"""MLS-MPM's particle-to-grid scatter written as a CuPy RawKernel (each
particle adds its mass to the 3x3 nodes around it with float atomics), for the
capture suite (tools/capture/capture_suite.sh), checked against float64 on the CPU.

  python3 cupy_p2g.py [--particles N] [--grid G] [--packed]

--packed puts every particle in a block of 32x32 cells, so that many SMs
update the same nodes.
"""
import argparse
import json
import sys

import cupy as cp
import numpy as np

SOURCE = r"""
extern "C" __global__ void p2g(const float* x, const float* y, const float* mass, float* grid, int n, int size) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float px = x[i] * size, py = y[i] * size;
  int bx = (int)(px - 0.5f), by = (int)(py - 0.5f);
  float fx = px - bx, fy = py - by;
  float wx[3] = {0.5f * (1.5f - fx) * (1.5f - fx), 0.75f - (fx - 1.f) * (fx - 1.f), 0.5f * (fx - 0.5f) * (fx - 0.5f)};
  float wy[3] = {0.5f * (1.5f - fy) * (1.5f - fy), 0.75f - (fy - 1.f) * (fy - 1.f), 0.5f * (fy - 0.5f) * (fy - 0.5f)};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b) {
      int gx = min(max(bx + a, 0), size - 1), gy = min(max(by + b, 0), size - 1);
      atomicAdd(&grid[gx * size + gy], wx[a] * wy[b] * mass[i]);
    }
}
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--particles", type=int, default=1 << 18)
    p.add_argument("--grid", type=int, default=256)
    p.add_argument("--packed", action="store_true")
    a = p.parse_args()
    rng = np.random.default_rng(5)
    scale = 32.0 / a.grid if a.packed else 1.0
    x = (0.25 + rng.random(a.particles) * scale * 0.5).astype(np.float32)
    y = (0.25 + rng.random(a.particles) * scale * 0.5).astype(np.float32)
    mass = rng.random(a.particles).astype(np.float32)
    kernel = cp.RawKernel(SOURCE, "p2g")
    grid = cp.zeros(a.grid * a.grid, cp.float32)
    args = (cp.asarray(x), cp.asarray(y), cp.asarray(mass), grid, np.int32(a.particles), np.int32(a.grid))
    blocks = (a.particles + 255) // 256
    for _ in range(3):
        kernel((blocks,), (256,), args)
    got = cp.asnumpy(grid).astype(np.float64)
    total = float(mass.astype(np.float64).sum()) * 3
    error = abs(got.sum() - total) / total
    print(json.dumps({"case": "cupy-p2g" + ("-packed" if a.packed else ""), "relative_error": error,
                      "check": "passed" if error < 1e-4 else "FAILED"}))
    if error >= 1e-4:
        sys.exit(f"cupy_p2g.py: grid mass differs from the particles' by {error:.2e}")


if __name__ == "__main__":
    main()
