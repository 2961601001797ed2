#!/usr/bin/env python3
"""Sampled simulation against full simulation on every trace the project
keeps, and on generated microbenchmarks of many CTA waves: per set, how many
kernels the sampler sampled, their cycles error and speedup error against the
full simulation, the stall distance sampling adds, and the wall-time ratio,
each set simulated in full and sampled in one run on this machine.

  tools/bench/sample_validation.py build/atomsim [--jobs 2] [--only REGEX] [--mode MODE] [--markdown OUT.md]

Targets (docs/performance.md, "Sampled simulation"): on every kernel it
samples, cycles within 2% (mean at most 1%), speedups within 2%, stall
distance added at most 0.02.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
D = "traces/datasets"
COMPARED = [
    ("h100 microbenchmark grid", ["--dataset", f"{D}/h100/microbench/grid"]),
    ("h200 microbenchmark grid", ["--dataset", f"{D}/h200/microbench/grid"]),
    ("h100 PyTorch regressions", ["--manifest", f"{D}/h100/regressions/pytorch/manifest.json"]),
    ("h200 corpus", ["--manifest", f"{D}/h200/corpus/manifest.json"]),
]
# Traces without measurements beside them, simulated with `atomsim run`.
TRACES = [("h100 divergence regressions (traces alone)", f"{D}/h100/regressions/divergence/*/trace.atr")]
# Generated: the atomics microbenchmark's three variants at 12 CTA waves of
# the h100 (1,056 CTAs of 8 warps a wave), and its baseline at 24 waves with
# 15% of lanes active; for sampling by loop trips, one wave of 8 iterations.
GENERATED = [
    ("generated microbenchmark, 12 waves", ["--variant", "all", "--blocks", "12672", "--iterations", "1"]),
    ("generated baseline, 24 waves, 15% of lanes", ["--variant", "baseline", "--blocks", "25344", "--iterations", "1",
                                                     "--active-fraction", "0.15"]),
    ("generated microbenchmark, one wave, 8 iterations", ["--variant", "all", "--blocks", "528", "--iterations", "8"]),
]


def timed(command):
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"sample_validation: {' '.join(command)} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return time.monotonic() - start


def distance(a, b):
    return sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b)) / 2


def compared_rows(atomsim, args, jobs, tmp, sample):
    runs = {}
    for mode, extra in (("full", []), ("sampled", sample)):
        out = Path(tmp) / f"{mode}.json"
        seconds = timed([atomsim, "compare", *args, "-j", str(jobs), "-q", "--json", str(out), *extra])
        runs[mode] = (json.loads(out.read_text())["kernels"], seconds)
    rows = []
    for f, s in zip(runs["full"][0], runs["sampled"][0]):
        rows.append({"id": f["id"], "full": f["simulated"]["cycles"], "sampled": s["simulated"]["cycles"],
                     "full_speedup": f["simulated"].get("speedup"), "sampled_speedup": s["simulated"].get("speedup"),
                     "distance": distance(f["simulated"]["stall_fractions"], s["simulated"]["stall_fractions"]),
                     "detail_share": s["simulated"].get("detail_share", 1.0)})
    return rows, runs["full"][1], runs["sampled"][1]


def generated_rows(atomsim, args, tmp, sample):
    trace = Path(tmp) / "generated.trace"
    subprocess.run([atomsim, "gen", "microbench", "--out", str(trace), "--params", "9",
                    "--threshold", "8", "--lanes-per-primitive", "32", *args], check=True, capture_output=True, cwd=ROOT)
    return run_rows(atomsim, [trace], tmp, sample)


def run_rows(atomsim, traces, tmp, sample):
    runs = {"full": ([], 0.0), "sampled": ([], 0.0)}
    for trace in traces:
        for mode, extra in (("full", []), ("sampled", sample)):
            out = Path(tmp) / f"{mode}.json"
            seconds = timed([atomsim, "run", "--trace", str(trace), "--no-check", "-q", "--threads", "1", "--json", str(out), *extra])
            runs[mode] = (runs[mode][0] + json.loads(out.read_text())["kernels"], runs[mode][1] + seconds)
    rows = []
    base_full, base_sampled = runs["full"][0][0]["cycles"], runs["sampled"][0][0]["cycles"]
    for i, (f, s) in enumerate(zip(runs["full"][0], runs["sampled"][0])):
        i = i if len(traces) == 1 else 0  # speedups only within one generated trace
        fractions = lambda k: {n: r["fraction"] for n, r in k["warp_states"]["reasons"].items()}  # noqa: E731
        sampling = s.get("sampling", {})
        share = 1 - sampling.get("warp_instructions_skipped", 0) / s["warp_instructions"] if sampling.get("sampled") else 1.0
        rows.append({"id": f["name"], "full": f["cycles"], "sampled": s["cycles"],
                     "full_speedup": base_full / f["cycles"] if i else None,
                     "sampled_speedup": base_sampled / s["cycles"] if i else None,
                     "distance": distance(fractions(f), fractions(s)), "detail_share": share})
    return rows, runs["full"][1], runs["sampled"][1]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("atomsim")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--only", default=".", help="regular expression on the sets' names")
    p.add_argument("--markdown", type=Path, help="also write the table here")
    p.add_argument("--mode", default="", help="a sample.mode to validate (default: what --sample sets)")
    a = p.parse_args()
    sample = ["--set", f"sample.mode={a.mode}"] if a.mode else ["--sample"]
    atomsim = str(Path(a.atomsim).resolve())
    lines = ["| set | kernels | sampled | detail share | cycles error mean / worst | speedup error worst | stall distance added worst | wall full / sampled |",
             "|---|---|---|---|---|---|---|---|"]
    worst = []
    sets = ([(n, x, "compare") for n, x in COMPARED] + [(n, x, "traces") for n, x in TRACES] +
            [(n, x, "generated") for n, x in GENERATED])
    for name, args, kind in sets:
        if not re.search(a.only, name):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            if kind == "compare":
                rows, full_s, sampled_s = compared_rows(atomsim, args, a.jobs, tmp, sample)
            elif kind == "traces":
                rows, full_s, sampled_s = run_rows(atomsim, sorted(ROOT.glob(args)), tmp, sample)
            else:
                rows, full_s, sampled_s = generated_rows(atomsim, args, tmp, sample)
        sampled = [r for r in rows if r["detail_share"] < 1]
        errors = [r["sampled"] / r["full"] - 1 for r in sampled]
        speedups = [r["sampled_speedup"] / r["full_speedup"] - 1 for r in sampled if r["full_speedup"] and r["sampled_speedup"]]
        distances = [r["distance"] for r in sampled]
        unsampled_moved = [r["id"] for r in rows if r["detail_share"] >= 1 and r["sampled"] != r["full"]]
        if unsampled_moved:
            sys.exit(f"sample_validation: {name}: kernels not sampled whose cycles moved: {unsampled_moved}")
        fmt_err = (f"{100 * sum(map(abs, errors)) / len(errors):.2f}% / {100 * max(errors, key=abs):+.2f}%" if errors else "-")
        line = (f"| {name} | {len(rows)} | {len(sampled)} | "
                f"{100 * sum(r['detail_share'] for r in sampled) / len(sampled):.0f}% | " if sampled else f"| {name} | {len(rows)} | 0 | - | ")
        line += (f"{fmt_err} | {100 * max(map(abs, speedups)):.2f}% | " if speedups else f"{fmt_err} | - | ")
        line += f"{max(distances):.4f} | " if distances else "- | "
        line += f"{full_s:.0f} s / {sampled_s:.0f} s = {full_s / sampled_s:.2f}x |"
        print(line, flush=True)
        lines.append(line)
        worst += [(abs(e), r["id"]) for e, r in zip(errors, sampled)]
    print("\n".join(lines))
    if worst:
        e, k = max(worst)
        print(f"worst sampled kernel: {k}, cycles {100 * e:.2f}% from full simulation")
    if a.markdown:
        a.markdown.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
