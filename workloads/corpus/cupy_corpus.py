"""Corpus kernels from CuPy (cupyx.scatter_add, cupy.bincount), each run once
to warm up and then REPEATS times, checked against NumPy in float64.

  python3 cupy_corpus.py CASE
"""
import argparse
import json
import sys

import cupy as cp
import cupyx
import numpy as np

REPEATS = 5
BINS = 1 << 16


def indices(pattern, count, rng):
    if pattern == "zipf":
        return (rng.zipf(1.3, count) - 1) % BINS
    return rng.integers(0, BINS, count)


def run(name, op, pattern, count=1 << 18):
    rng = np.random.default_rng(31)
    index = indices(pattern, count, rng)
    index_d = cp.asarray(index, dtype=cp.int32)
    if op == "bincount":
        for _ in range(REPEATS + 1):
            got = cp.bincount(index_d, minlength=BINS)
        reference = np.bincount(index, minlength=BINS).astype(np.float64)
        got = cp.asnumpy(got).astype(np.float64)
    else:
        values = rng.standard_normal(count).astype(np.float32)
        values_d = cp.asarray(values)
        out = cp.zeros(BINS, cp.float32)
        for _ in range(REPEATS + 1):
            cupyx.scatter_add(out, index_d, values_d)
        reference = np.zeros(BINS)
        np.add.at(reference, index, values.astype(np.float64))
        reference *= REPEATS + 1
        got = cp.asnumpy(out).astype(np.float64)
    cp.cuda.Device().synchronize()
    error = float(np.linalg.norm(got - reference) / np.linalg.norm(reference))
    print(json.dumps({"case": name, "relative_error": error, "check": "passed" if error < 1e-4 else "FAILED"}))
    if error >= 1e-4:
        sys.exit(f"cupy_corpus.py {name}: result differs from the float64 reference by {error:.2e}")


CASES = {"cupy-scatter-add-uniform": ("scatter_add", "uniform"), "cupy-scatter-add-zipf": ("scatter_add", "zipf"),
         "cupy-bincount-zipf": ("bincount", "zipf")}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    a = p.parse_args()
    run(a.case, *CASES[a.case])


if __name__ == "__main__":
    main()
