#!/usr/bin/env python3
"""Accel-Sim beside atomsim and the GPU, on the microbenchmark grid or on captures.

Builds Accel-Sim from its public source trees (its framework and its GPGPU-Sim,
BSD-licensed; nothing of them enters this repository) against a CUDA 11
toolkit. Then, for each kernel of the H100 grid
(traces/datasets/h100/microbench/grid), or of a compare manifest's captures
(`--manifest`: the corpus, the regressions, the full-size workloads where
their traces were captured), it:

- takes the kernel's trace: generated as `atomsim compare` simulates it, or the capture's trace/trace.atr;
- times atomsim on it, with one thread;
- exports it as Accel-Sim traces;
- runs Accel-Sim's SM90_H100 configuration on those traces, with a time limit per kernel.

It prints the kernels' cycles and speedups, measured and simulated by both,
and both simulators' host seconds, measured in the same run on the same
machine. atomsim simulates each capture with the configuration `atomsim
compare` takes for it (the bundled one of the device it was captured on,
unless --config); Accel-Sim has one Hopper configuration, SM90_H100, which it
runs for every kernel, H200 captures included.

Two adaptations are needed for Accel-Sim's public release to run at all:
- It reads Hopper SASS only under Ampere's opcode map. The traces say binary
  version 80, and the opcodes that map lacks are renamed: REDG to RED,
  VIADD to IADD3, VIMNMX to IMNMX, and ACQBULK (which waits for bulk copies,
  of which the traces hold none) to NOP.
- Its SM90_H100 configuration hashes 80 memory channels with a function that
  takes 16, 32 or 64, and asserts. `-gpgpu_memory_partition_indexing 0` is set
  on its command line.

  tools/peer/accelsim_peer.py --accelsim-src DIR --gpgpusim-src DIR --cuda DIR --work DIR
      [--manifest FILE [--config NAME]] [--atomsim build/atomsim] [--limit SECONDS] [--jobs N] [--only REGEX]

Building GPGPU-Sim takes, besides the toolkit, bison, flex, zlib and makedepend
(Debian: bison flex zlib1g-dev xutils-dev).

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
HOPPER_OPCODES_AMPERE_LACKS = [(re.compile(r" REDG\."), " RED."), (re.compile(r" VIADD "), " IADD3 "),
                                (re.compile(r" VIMNMX(?=[. ])"), " IMNMX"), (re.compile(r" ACQBULK(?=[. ])"), " NOP")]


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


def run_kernel(args, tree, kernel):
    """kernel: (id, trace or None, grid configuration or None, atomsim configuration)."""
    kernel_id, capture_trace, grid_config, atomsim_config = kernel
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        scratch = Path(scratch)
        trace = capture_trace
        if trace is None:
            trace = scratch / "kernel.trace"
            generate(args, args.grid_shape, grid_config, trace)
        start = time.monotonic()
        subprocess.run([str(args.atomsim), "run", "--quiet", "--no-check", "--threads", "1", "--config", atomsim_config,
                        "--trace", str(trace)], check=True, stdout=subprocess.DEVNULL)
        atomsim_seconds = time.monotonic() - start
        traces = scratch / "accelsim"
        subprocess.run([str(args.atomsim), "trace", "export", str(trace), "--format", "accelsim", "--out", str(traces),
                        "--binary-version", "80"], check=True, stdout=subprocess.DEVNULL)
        for f in traces.glob("*.traceg"):
            text = f.read_text()
            for pattern, replacement in HOPPER_OPCODES_AMPERE_LACKS:
                text = pattern.sub(replacement, text)
            f.write_text(text)
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
        return kernel_id, result, atomsim_seconds, time.monotonic() - start


def grid_kernels(args):
    """The grid's kernels, atomsim's comparison of them, and each one's baseline."""
    manifest = json.loads((GRID / "manifest.json").read_text())
    args.grid_shape = manifest["shape"]
    configs = [c for c in manifest["configurations"] if re.search(args.only, c["id"])]
    compared = args.work / "atomsim-compare.json"
    subprocess.run([str(args.atomsim), "compare", "--dataset", str(GRID), "--config", args.config or "h100",
                    "--only", args.only, "-q", "--json", str(compared)], check=True, stdout=subprocess.DEVNULL)
    kernels = [(c["id"], None, c, args.config or "h100") for c in configs]
    baselines = {c["id"]: re.sub(r"^(swb|sws)-", "baseline-", c["id"]) for c in configs}
    return kernels, compared, baselines


def manifest_kernels(args):
    """A compare manifest's captures, atomsim's comparison of them, and each one's baseline."""
    manifest = json.loads(args.manifest.read_text())
    entries = [k for k in manifest["kernels"] if re.search(args.only, k["id"])]
    chosen = args.work / "manifest.json"
    base = args.manifest.parent.resolve()
    ids = {k["id"] for k in entries}
    # A baseline left out by --only is left out of the speedups too.
    chosen.write_text(json.dumps({"kernels": [
        {key: value for key, value in dict(k, capture=str(base / k["capture"])).items()
         if key != "baseline" or value in ids} for k in entries]}))
    compared = args.work / "atomsim-compare.json"
    command = [str(args.atomsim), "compare", "--manifest", str(chosen), "-q", "--json", str(compared), "--jobs", str(args.jobs)]
    if args.config:
        command += ["--config", args.config]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    config = json.loads(compared.read_text())["config"]
    kernels = []
    for k in entries:
        trace = base / k["capture"] / "trace/trace.atr"
        if not trace.exists():
            sys.exit(f"accelsim_peer: {trace}: no trace in this capture (its kernel cannot be run by either simulator)")
        kernels.append((k["id"], trace, None, config))
    return kernels, compared, {k["id"]: k.get("baseline", k["id"]) if k.get("baseline") in ids else k["id"] for k in entries}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--accelsim-src", type=Path, required=True)
    p.add_argument("--gpgpusim-src", type=Path, required=True)
    p.add_argument("--cuda", type=Path, required=True)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--atomsim", type=Path, default=ROOT / "build/atomsim")
    p.add_argument("--manifest", type=Path, help="a compare manifest of captures with traces, instead of the H100 grid")
    p.add_argument("--config", help="atomsim's configuration (default: h100 on the grid; compare's choice for captures)")
    p.add_argument("--limit", type=float, default=1800, help="seconds Accel-Sim may take per kernel")
    p.add_argument("--jobs", type=int, default=1, help="kernels run at once (each simulator has one thread)")
    p.add_argument("--only", default=".", help="regular expression on the kernel ids")
    args = p.parse_args()
    args.work = args.work.resolve()
    args.work.mkdir(parents=True, exist_ok=True)
    args.atomsim = args.atomsim.resolve()
    if not (args.cuda / "bin/nvcc").exists():
        sys.exit(f"accelsim_peer: {args.cuda}/bin/nvcc not found (--cuda: a CUDA 11 toolkit's root)")
    if args.manifest and not args.manifest.is_file():
        sys.exit(f"accelsim_peer: {args.manifest}: no such manifest")
    tree = build(args)
    kernels, compared, baselines = manifest_kernels(args) if args.manifest else grid_kernels(args)
    report = json.loads(compared.read_text())
    atomsim = {k["id"]: k for k in report["kernels"]}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        results = {r[0]: r[1:] for r in pool.map(lambda k: run_kernel(args, tree, k), kernels)}

    device = report.get("device", "GPU")
    lines = [f"measured on {device}; atomsim with {report['config']}, Accel-Sim with SM90_H100",
             f"{'kernel':<34}{'GPU':>9}{'atomsim':>9}{'error':>8}{'Accel-Sim':>11}{'error':>8}"
             f"{'speedup GPU / atomsim / Accel-Sim':>36}{'host s atomsim':>16}{'Accel-Sim':>11}{'ratio':>8}"]
    errors = {"atomsim": [], "accelsim": []}
    ratios = []
    for kernel_id, *_ in kernels:
        k = atomsim[kernel_id]
        measured, ours = k["measured"]["cycles"], k["simulated"]["cycles"]
        peer, atomsim_s, peer_s = results[kernel_id]
        base = baselines[kernel_id]
        speedups = "-"
        if base != kernel_id and base in atomsim and base in results:
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
            ratios.append(peer_s / atomsim_s)
        # A kernel Accel-Sim did not finish in time gives a ratio it would exceed; one it failed on, none.
        ratio = f"{peer_s / atomsim_s:.0f}x"
        if not isinstance(peer, int):
            ratio = f">{ratio}" if peer.startswith("past") else "-"
        lines.append(f"{kernel_id:<34}{measured:>9.0f}{ours:>9.0f}{100 * (ours / measured - 1):>+7.1f}%{peer_text:>11}"
                     f"{peer_error:>8}{speedups:>36}{atomsim_s:>16.1f}{peer_s:>11.1f}{ratio:>8}")
    mean = lambda v: f"{100 * sum(v) / len(v):.1f}%" if v else "-"  # noqa: E731
    lines.append(f"mean |cycle error|: atomsim {mean(errors['atomsim'])} over {len(errors['atomsim'])} kernels, "
                 f"Accel-Sim {mean(errors['accelsim'])} over the {len(errors['accelsim'])} it finished")
    if ratios:
        ratios.sort()
        lines.append(f"host time, Accel-Sim to atomsim, on the kernels it finished: median {ratios[len(ratios) // 2]:.0f}x, "
                     f"{ratios[0]:.0f}-{ratios[-1]:.0f}x")
    text = "\n".join(lines) + "\n"
    (args.work / "peer.txt").write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
