"""A PyTorch program as users write them: float values scatter-added into bins
(Tensor.scatter_add_), the pattern of histogramming, segment sums and the
gradient of an embedding lookup. The library kernel loads each element's index
and value and does one float RED per element. Run under atomsim-capture to
capture that library kernel (docs/capture.md); the result is checked against a
float64 sum on the CPU.

  python3 workloads/pytorch/scatter_add.py [--elements N] [--bins B]
      [--pattern random|sorted|few] [--iterations I]

random: indices uniform over the bins; sorted: the same indices sorted (lanes
of a warp mostly share a bin); few: 32 bins, so every warp instruction's lanes
land on a handful of words.
"""
import argparse
import json
import sys

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--elements", type=int, default=1 << 22)
    p.add_argument("--bins", type=int, default=1 << 16)
    p.add_argument("--pattern", choices=["random", "sorted", "few"], default="random")
    p.add_argument("--iterations", type=int, default=20)
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("scatter_add.py: no CUDA device")
    bins = 32 if a.pattern == "few" else a.bins
    gen = torch.Generator(device="cuda").manual_seed(1)
    index = torch.randint(0, bins, (a.elements,), device="cuda", generator=gen)
    if a.pattern == "sorted":
        index, _ = index.sort()
    values = torch.randn(a.elements, device="cuda", generator=gen)
    out = torch.zeros(bins, device="cuda")
    for _ in range(a.iterations):
        out.scatter_add_(0, index, values)
    torch.cuda.synchronize()
    reference = torch.zeros(bins, dtype=torch.float64).scatter_add_(0, index.cpu(), values.double().cpu()) * a.iterations
    error = ((out.double().cpu() - reference).norm() / reference.norm()).item()
    ok = error < 1e-4
    print(json.dumps({"device": torch.cuda.get_device_name(), "elements": a.elements, "bins": bins,
                      "pattern": a.pattern, "iterations": a.iterations, "relative_error": error,
                      "check": "passed" if ok else "FAILED"}))
    if not ok:
        sys.exit(f"scatter_add.py: result differs from the float64 reference by {error:.2e}")


if __name__ == "__main__":
    main()
