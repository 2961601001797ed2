#!/usr/bin/env python3
"""Accel-Sim beside atomsim and the H100, on the microbenchmark grid.

Builds Accel-Sim from its public source trees (its framework and its GPGPU-Sim,
BSD-licensed; nothing of them enters this repository) against a CUDA 11
toolkit. Then, for each kernel of the H100 grid
(traces/datasets/h100/microbench/grid), it:

- generates the kernel's trace as `atomsim compare` simulates it;
- times atomsim on it, with one thread;
- exports it as Accel-Sim traces;
- runs Accel-Sim's SM90_H100 configuration on those traces, with a time limit per kernel.

It prints the kernels' cycles and speedups, measured and simulated by both,
and both simulators' host seconds, measured in the same run on the same
machine.

Two adaptations are needed for Accel-Sim's public release to run at all:
- It reads Hopper SASS only under Ampere's opcode map. The traces say binary
  version 80, and the two opcodes that map lacks are renamed: REDG to RED,
  VIADD to IADD3.
- Its SM90_H100 configuration hashes 80 memory channels with a function that
  takes 16, 32 or 64, and asserts. `-gpgpu_memory_partition_indexing 0` is set
  on its command line.

  tools/peer/accelsim_peer.py --accelsim-src DIR --gpgpusim-src DIR --cuda DIR --work DIR
      [--atomsim build/atomsim] [--limit SECONDS] [--jobs N] [--only REGEX]

--cuda: a CUDA 11 toolkit's root (bin/nvcc, include/), e.g. /usr with
Debian's nvidia-cuda-toolkit (11.8, non-free). GPGPU-Sim does not build
against CUDA 12 or later, which removed texture references.
"""
import argparse
import concurrent.futures
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
GRID = ROOT / "traces/datasets/h100/microbench/grid"
HOPPER_OPCODES_AMPERE_LACKS = [(re.compile(r" REDG\."), " RED."), (re.compile(r" VIADD "), " IADD3 ")]


def build(args):
    tree = args.work / "accel-sim"
    binary = tree / "gpu-simulator/bin/release/accel-sim.out"
    if binary.exists():
        return tree
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(args.accelsim_src, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    sim = tree / "gpu-simulator"
    shutil.copytree(args.gpgpusim_src, sim / "gpgpu-sim", symlinks=True, ignore=shutil.ignore_patterns(".git"))
    (sim / "extern/pybind11").mkdir(parents=True, exist_ok=True)  # the Python wrapper is not built
    script = f"export CUDA_INSTALL_PATH={args.cuda}; export PS1=; cd {sim} && source setup_environment.sh && make -j{args.jobs}"
    with open(args.work / "build.log", "w") as log:
        if subprocess.run(["bash", "-c", script], stdout=log, stderr=subprocess.STDOUT).returncode != 0 or not binary.exists():
            sys.exit(f"accelsim_peer: Accel-Sim did not build; see {args.work / 'build.log'}")
    return tree


def library_path(tree):
    libs = list((tree / "gpu-simulator/gpgpu-sim/lib").glob("*/*/release"))
    if len(libs) != 1:
        sys.exit(f"accelsim_peer: no single GPGPU-Sim library folder under {tree / 'gpu-simulator/gpgpu-sim/lib'}")
    return str(libs[0])


def generate(args, shape, config, trace):
    subprocess.run([str(args.atomsim), "gen", "microbench", "--out", str(trace), "--variant", config["variant"],
                    "--blocks", str(shape["blocks"]), "--warps-per-block", str(shape["warps_per_block"]),
                    "--iterations", str(shape["iterations"]), "--params", str(shape["params"]),
                    "--primitives", str(shape["primitives"]), "--active-fraction", str(config["active_fraction"]),
                    "--lanes-per-primitive", str(config["lanes_per_primitive"]), "--threshold", str(config["threshold"])],
                   check=True, stdout=subprocess.DEVNULL)


def run_kernel(args, tree, shape, config):
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        scratch = Path(scratch)
        trace = scratch / "kernel.trace"
        generate(args, shape, config, trace)
        start = time.monotonic()
        subprocess.run([str(args.atomsim), "run", "--quiet", "--no-check", "--threads", "1", "--config", "h100",
                        "--trace", str(trace)], check=True, stdout=subprocess.DEVNULL)
        atomsim_seconds = time.monotonic() - start
        traces = scratch / "accelsim"
        subprocess.run([str(args.atomsim), "trace", "export", str(trace), "--format", "accelsim", "--out", str(traces),
                        "--binary-version", "80"], check=True, stdout=subprocess.DEVNULL)
        for kernel in traces.glob("*.traceg"):
            text = kernel.read_text()
            for pattern, replacement in HOPPER_OPCODES_AMPERE_LACKS:
                text = pattern.sub(replacement, text)
            kernel.write_text(text)
        configs = tree / "gpu-simulator/gpgpu-sim/configs/tested-cfgs/SM90_H100"
        for f in configs.iterdir():
            shutil.copy(f, scratch)
        shutil.copy(tree / "gpu-simulator/configs/tested-cfgs/SM90_H100/trace.config", scratch)
        env = dict(os.environ, LD_LIBRARY_PATH=library_path(tree))
        start = time.monotonic()
        try:
            done = subprocess.run([str(tree / "gpu-simulator/bin/release/accel-sim.out"), "-trace",
                                   str(traces / "kernelslist.g"), "-config", "gpgpusim.config", "-config", "trace.config",
                                   "-gpgpu_memory_partition_indexing", "0"], cwd=scratch, env=env, capture_output=True,
                                  text=True, timeout=args.limit)
            output = done.stdout + done.stderr
            cycles = re.findall(r"gpu_tot_sim_cycle = (\d+)", output)
            result = int(cycles[-1]) if done.returncode == 0 and cycles else f"failed ({output.strip().splitlines()[-1][:80]})"
        except subprocess.TimeoutExpired:
            result = f"past {args.limit:.0f} s"
        return config["id"], result, atomsim_seconds, time.monotonic() - start


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--accelsim-src", type=Path, required=True)
    p.add_argument("--gpgpusim-src", type=Path, required=True)
    p.add_argument("--cuda", type=Path, required=True)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--atomsim", type=Path, default=ROOT / "build/atomsim")
    p.add_argument("--limit", type=float, default=1800, help="seconds Accel-Sim may take per kernel")
    p.add_argument("--jobs", type=int, default=1, help="kernels run at once (each simulator has one thread)")
    p.add_argument("--only", default=".", help="regular expression on the grid's kernel ids")
    args = p.parse_args()
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    args.atomsim = args.atomsim.resolve()
    if not (args.cuda / "bin/nvcc").exists():
        sys.exit(f"accelsim_peer: {args.cuda}/bin/nvcc not found (--cuda: a CUDA 11 toolkit's root)")
    tree = build(args)
    manifest = json.loads((GRID / "manifest.json").read_text())
    configs = [c for c in manifest["configurations"] if re.search(args.only, c["id"])]
    compared = args.work / "atomsim-grid.json"
    subprocess.run([str(args.atomsim), "compare", "--dataset", str(GRID), "--config", "h100", "--only", args.only, "-q",
                    "--json", str(compared)], check=True, stdout=subprocess.DEVNULL)
    atomsim = {k["id"]: k for k in json.loads(compared.read_text())["kernels"]}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = {r[0]: r[1:] for r in pool.map(lambda c: run_kernel(args, tree, manifest["shape"], c), configs)}

    def baseline_of(kernel_id):
        return re.sub(r"^(swb|sws)-", "baseline-", kernel_id)

    lines = [f"{'kernel':<28}{'H100':>9}{'atomsim':>9}{'error':>8}{'Accel-Sim':>11}{'error':>8}"
             f"{'speedup H100 / atomsim / Accel-Sim':>36}{'host s atomsim':>16}{'Accel-Sim':>11}{'ratio':>8}"]
    errors = {"atomsim": [], "accelsim": []}
    for c in configs:
        k = atomsim[c["id"]]
        measured, ours = k["measured"]["cycles"], k["simulated"]["cycles"]
        peer, atomsim_s, peer_s = results[c["id"]]
        base = baseline_of(c["id"])
        speedups = "-"
        if base != c["id"] and base in atomsim and base in results:
            b = atomsim[base]
            peer_base = results[base][0]
            peer_speedup = f"{peer_base / peer:.2f}" if isinstance(peer, int) and isinstance(peer_base, int) else "-"
            speedups = (f"{b['measured']['cycles'] / measured:.2f} / {b['simulated']['cycles'] / ours:.2f} / "
                        f"{peer_speedup}")
        errors["atomsim"].append(abs(ours / measured - 1))
        peer_text, peer_error = str(peer), "-"
        if isinstance(peer, int):
            errors["accelsim"].append(abs(peer / measured - 1))
            peer_error = f"{100 * (peer / measured - 1):+.1f}%"
        lines.append(f"{c['id']:<28}{measured:>9.0f}{ours:>9}{100 * (ours / measured - 1):>+7.1f}%{peer_text:>11}"
                     f"{peer_error:>8}{speedups:>36}{atomsim_s:>16.1f}{peer_s:>11.1f}{peer_s / atomsim_s:>7.0f}x")
    mean = lambda v: f"{100 * sum(v) / len(v):.1f}%" if v else "-"  # noqa: E731
    lines.append(f"mean |cycle error|: atomsim {mean(errors['atomsim'])} over {len(errors['atomsim'])} kernels, "
                 f"Accel-Sim {mean(errors['accelsim'])} over the {len(errors['accelsim'])} it finished")
    text = "\n".join(lines) + "\n"
    (args.work / "peer.txt").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
