#!/usr/bin/env python3
"""What the L2 sees of each corpus case's selected launch (Nsight Compute):
atomic and reduction requests and sectors, in total and at the busiest slice,
the atomic units' input cycles, read sectors that hit and missed, DRAM bytes,
and the launch's time. To set beside the model's per-slice statistics
(`atomsim run --json`, units.l2_slice: total and max of atomic_packets,
atomic_sectors, hits, misses).

  tools/capture/corpus_l2_counters.py OUT.csv [--only REGEX] [--warm]

Needs ncu and the corpus' Python packages; the case runs as in
capture_corpus.py, its selected launch (corpus.json's `launch`, else the
second matching one) profiled alone. Nsight Compute flushes the caches
before it (a cold launch); with --warm it does not, and the launch finds the
L2 as the launches before it left it, as the timing pass's launches do.
"""
import argparse
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WANTED = ["lts__t_requests_op_red", "lts__t_requests_op_atom", "lts__t_sectors_op_red", "lts__t_sectors_op_atom",
          "lts__t_sectors_op_read", "lts__t_sectors_op_write", "lts__t_sectors_op_read_lookup_hit",
          "lts__t_sectors_op_read_lookup_miss", "lts__t_requests_srcunit_ltcfabric", "lts__d_atomic_input_cycles_active",
          "lts__t_sectors_lookup_miss", "lts__cycles_active", "dram__bytes_read", "dram__bytes_write"]


def known_metrics():
    listing = subprocess.run(["ncu", "--query-metrics", "--chip", "gh100"], capture_output=True, text=True).stdout
    return set(re.findall(r"^([a-z0-9_]+__[a-z0-9_]+)", listing, re.M))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path)
    p.add_argument("--only", default=".", help="regular expression: the case ids to profile")
    p.add_argument("--warm", action="store_true", help="keep the caches as the launches before left them")
    a = p.parse_args()
    known = known_metrics()
    metrics = ["gpu__time_duration.sum", "lts__cycles_elapsed.avg", "sm__cycles_elapsed.max"]
    for m in WANTED:
        if m in known:
            metrics += [f"{m}.sum", f"{m}.max"]
        else:
            print(f"corpus_l2_counters: {m} unknown to this ncu, left out", file=sys.stderr)
    cases = [c for c in json.loads((ROOT / "workloads/corpus/corpus.json").read_text())["cases"]
             if re.search(a.only, c["id"])]
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    rows, failures, start = [], 0, time.monotonic()
    with tempfile.TemporaryDirectory() as bin_dir:
        if any(c["program"].startswith("BIN/cub_histogram") for c in cases):
            subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-o", f"{bin_dir}/cub_histogram",
                            str(ROOT / "workloads/corpus/cub_histogram.cu")], check=True)
        for case in cases:
            program = [f"{bin_dir}/{w[4:]}" if w.startswith("BIN/") else w for w in case["program"].split()]
            command = ["ncu", "--csv", "--kernel-name", f"regex:{case['kernel']}", "--launch-skip",
                       str(case.get("launch", 1)), "--launch-count", "1", "--metrics", ",".join(metrics)]
            command += ["--cache-control", "none"] if a.warm else []
            command += program
            run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
            table = run.stdout[run.stdout.find('"ID"'):] if '"ID"' in run.stdout else ""
            got = [r for r in csv.DictReader(io.StringIO(table))] if table else []
            if run.returncode != 0 or not got:
                failures += 1
                tail = (run.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"{case['id']:<34} FAILED: {tail}", flush=True)
                continue
            for r in got:
                rows.append({"case": case["id"], "kernel": r["Kernel Name"][:80], "metric": r["Metric Name"],
                             "unit": r["Metric Unit"], "value": r["Metric Value"].replace(",", "")})
            print(f"{case['id']:<34} {len(got)} values", flush=True)
    with open(a.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["case", "kernel", "metric", "unit", "value"])
        w.writeheader()
        w.writerows(rows)
    print(f"corpus_l2_counters: {len(cases)} cases, {failures} failed, {time.monotonic() - start:.0f} s -> {a.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
