#!/usr/bin/env python3
"""Captures the validation corpus (workloads/corpus/corpus.json) on a GPU
machine: per case, DEST/ID/ gets the timing and stall passes of the selected
launch and DEST/ID/trace/ its count, trace and counters passes, the trace
(trace.atr) and atomsim's faithfulness check of it (faithfulness.json); where
the trace differs from the count, two more count passes (count-again-N.json)
tell instructions whose counts depend on timing from the rest. Cases
run one after another, so that no capture shares the GPU with another.
DEST/corpus.txt: one line per case with its verdict and each pass's seconds;
a case whose kernel matched nothing lists the kernels its timing pass saw.

  tools/capture/capture_corpus.py CAPTURE_DIR DEST [--only REGEX] [--deadline SECONDS]

CAPTURE_DIR: an unpacked `make capture-bundle` or a build folder. Needs
python3 with torch, torch_geometric, jax and cupy, and nvcc for the CUB case.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def capture(tools, case, passes, out, program, log):
    out.mkdir(parents=True, exist_ok=True)
    command = [str(tools / "atomsim-capture"), "--pass", passes, "--kernel", case["kernel"], "--launch",
               str(case.get("launch", 1)), "--timeout", "300", "--out", str(out), "--"] + program
    with open(out / "program.log", "w") as stdout, open(log, "w") as stderr:
        ok = subprocess.run(command, stdout=stdout, stderr=stderr, cwd=ROOT).returncode == 0
    text = Path(log).read_text()
    seconds = re.findall(r"atomsim-capture: ([a-z]+) pass -> .* \(([0-9.]+) s\)", text)
    last = text.strip().splitlines()[-1] if text.strip() else "no output"
    return ok, seconds, last


def kernels_seen(timing):
    try:
        names = [k["name"] for k in json.loads(Path(timing).read_text())["kernels"]]
    except (OSError, ValueError, KeyError):
        return "none recorded"
    unique = list(dict.fromkeys(n[:70] for n in names))
    return "; ".join(unique[:12])


def check_trace(tools, trace, counts_again):
    command = [str(tools / "atomsim"), "trace", "check", str(trace / "trace.atr"), "--count", str(trace / "count.json"),
               "--capture", str(trace / "trace.json"), "--report", str(trace / "faithfulness.json")]
    for again in counts_again:
        command += ["--count-again", str(again)]
    check = subprocess.run(command, capture_output=True, text=True)
    lines = (check.stdout + check.stderr).strip().splitlines()
    return lines[-1] if lines else "no verdict"


def run_case(tools, case, dest, bin_dir):
    out = dest / case["id"]
    shutil.rmtree(out, ignore_errors=True)
    program = [bin_dir / a[4:] if a.startswith("BIN/") else a for a in case["program"].split()]
    program = [str(a) for a in program]
    times = []
    for passes, where in (("timing,stall", out), ("count,trace,counters", out / "trace")):
        ok, seconds, last = capture(tools, case, passes, where, program, where / "capture.log")
        times += [f"{p} {s}" for p, s in seconds]
        if not ok:
            seen = kernels_seen(out / "timing.json") if "no kernel matching" in last else ""
            return f"FAILED {passes}: {last}" + (f" [kernels seen: {seen}]" if seen else ""), times
    verdict = check_trace(tools, out / "trace", [])
    if not verdict.startswith("faithful"):
        # Kernels whose instruction stream depends on timing (CAS retries, tile
        # queues): two more count passes show which instructions the GPU itself
        # counts differently from run to run.
        again = []
        for n in (1, 2):
            ok, seconds, last = capture(tools, case, "count", out / "trace/again", program, out / "trace/again.log")
            times += [f"{p}-again {s}" for p, s in seconds]
            if not ok:
                return f"FAILED count again: {last}", times
            again.append(out / f"trace/count-again-{n}.json")
            (out / "trace/again/count.json").rename(again[-1])
        shutil.rmtree(out / "trace/again")
        verdict = check_trace(tools, out / "trace", again)
    for cubin in list(out.glob("**/cubin-*")):
        cubin.unlink()
    if shutil.which("zstd"):  # a PyTorch module's counts run to megabytes
        for counts in out.glob("trace/count*.json"):
            subprocess.run(["zstd", "-q", "-19", "--rm", str(counts)], check=True)
    return ("ok " + verdict) if verdict.startswith("faithful") else f"FAILED trace check: {verdict}", times


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tools", type=Path)
    p.add_argument("dest", type=Path)
    p.add_argument("--only", default=".", help="regular expression: the case ids to capture")
    p.add_argument("--deadline", type=float, default=0, help="start no case after this many seconds (0: none)")
    a = p.parse_args()
    tools = a.tools.resolve()
    for f in ("atomsim-capture", "atomsim"):
        if not (tools / f).is_file():
            sys.exit(f"capture_corpus: {tools / f} not found")
    cases = [c for c in json.loads((ROOT / "workloads/corpus/corpus.json").read_text())["cases"]
             if re.search(a.only, c["id"])]
    dest = a.dest.resolve()
    dest.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    os.environ["PYTHONUNBUFFERED"] = "1"
    start = time.monotonic()
    failures = 0
    with tempfile.TemporaryDirectory() as bin_dir:
        bin_dir = Path(bin_dir)
        if any(c["program"].startswith("BIN/cub_histogram") for c in cases):
            subprocess.run(["nvcc", "-O3", "-std=c++17", "-arch=sm_90", "-o", str(bin_dir / "cub_histogram"),
                            str(ROOT / "workloads/corpus/cub_histogram.cu")], check=True)
        with open(dest / "corpus.txt", "a") as summary:
            for case in cases:
                if a.deadline and time.monotonic() - start > a.deadline:
                    print(f"capture_corpus: deadline reached before {case['id']}", flush=True)
                    break
                verdict, times = run_case(tools, case, dest, bin_dir)
                failures += not verdict.startswith("ok")
                line = f"{case['id']:<34} {verdict} | {' '.join(times)}"
                print(line, flush=True)
                summary.write(line + "\n")
    print(f"capture_corpus: {len(cases)} cases selected, {failures} failed, {time.monotonic() - start:.0f} s; results in {dest}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
