"""A jax.jit scatter-add (XLA's scatter fusion) of Zipf-skewed indices, for
the capture suite (tools/capture/capture_suite.sh), checked against float64
on the CPU.

  python3 jax_scatter.py [--elements N] [--bins B]
"""
import argparse
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--elements", type=int, default=1 << 20)
    p.add_argument("--bins", type=int, default=1 << 16)
    a = p.parse_args()
    rng = np.random.default_rng(4)
    index = (rng.zipf(1.3, a.elements) - 1) % a.bins
    values = rng.standard_normal(a.elements).astype(np.float32)

    @jax.jit
    def scatter(out, index, values):
        return out.at[index].add(values)

    out = jnp.zeros(a.bins, jnp.float32)
    index_d, values_d = jnp.asarray(index, jnp.int32), jnp.asarray(values)
    for _ in range(4):
        out = scatter(out, index_d, values_d)
    got = np.asarray(out, dtype=np.float64)
    reference = np.zeros(a.bins)
    np.add.at(reference, index, values.astype(np.float64))
    reference *= 4
    error = float(np.linalg.norm(got - reference) / np.linalg.norm(reference))
    print(json.dumps({"case": "jax-scatter", "device": str(jax.devices()[0]), "relative_error": error,
                      "check": "passed" if error < 1e-4 else "FAILED"}))
    if error >= 1e-4:
        sys.exit(f"jax_scatter.py: result differs from the float64 reference by {error:.2e}")


if __name__ == "__main__":
    main()
