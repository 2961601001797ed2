"""Corpus kernels from JAX (XLA's scatter fusions under jax.jit), each run once
to warm up and then REPEATS times, checked against float64 on the CPU.

  python3 jax_corpus.py CASE
"""
import argparse
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np

REPEATS = 5
BINS = 1 << 16


def indices(pattern, count, rng):
    if pattern == "zipf":  # a quarter of all updates on one word
        return (rng.zipf(1.3, count) - 1) % BINS
    index = rng.integers(0, BINS, count)
    return np.sort(index) if pattern == "sorted" else index


def run(name, pattern, count=1 << 18):
    if pattern == "sorted":  # XLA's segment sum takes some 20 warp instructions an element
        count = 1 << 16
    rng = np.random.default_rng(21)
    index = indices(pattern, count, rng)
    values = rng.standard_normal(count).astype(np.float32)
    if pattern == "sorted":  # segment_sum of sorted segment ids
        fn = jax.jit(lambda v, i: jax.ops.segment_sum(v, i, num_segments=BINS, indices_are_sorted=True))
        step = lambda out, i, v: out + fn(v, i)  # noqa: E731
    else:
        fn = jax.jit(lambda out, i, v: out.at[i].add(v))
        step = fn
    out = jnp.zeros(BINS, jnp.float32)
    index_d, values_d = jnp.asarray(index, jnp.int32), jnp.asarray(values)
    for _ in range(REPEATS + 1):
        out = step(out, index_d, values_d)
    got = np.asarray(out, dtype=np.float64)
    reference = np.zeros(BINS)
    np.add.at(reference, index, values.astype(np.float64))
    reference *= REPEATS + 1
    error = float(np.linalg.norm(got - reference) / np.linalg.norm(reference))
    print(json.dumps({"case": name, "device": str(jax.devices()[0]), "relative_error": error,
                      "check": "passed" if error < 1e-4 else "FAILED"}))
    if error >= 1e-4:
        sys.exit(f"jax_corpus.py {name}: result differs from the float64 reference by {error:.2e}")


CASES = {"xla-scatter-add-uniform": "uniform", "xla-scatter-add-zipf": "zipf", "xla-segment-sum-sorted": "sorted"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("case", choices=sorted(CASES))
    a = p.parse_args()
    run(a.case, CASES[a.case])


if __name__ == "__main__":
    main()
