#!/usr/bin/env bash
# Measures the fixed cost of a kernel launch on a GPU machine: the GPU's own
# duration (CUPTI activity timestamps) of an empty kernel at several grid sizes,
# median of 51 launches after 5 warm-up launches. Writes OUTDIR/launch_overhead.json.
# Usage: workloads/latency/launch_overhead_h100.sh OUTDIR [BUILD_DIR]
set -euo pipefail
out=${1:?usage: launch_overhead_h100.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvcc -O3 -arch=sm_90 -o "$out/.empty_kernel" "$here/empty_kernel.cu"
for shape in "1 32" "132 256" "264 256" "528 256" "1056 256"; do
  read -r blocks threads <<<"$shape"
  "$build/atomsim-capture" --pass timing --out "$out/.empty-$blocks" -- "$out/.empty_kernel" "$blocks" "$threads" 56 2>/dev/null
done
python3 - "$out" <<'PY'
import json, statistics, sys, glob, os
out = sys.argv[1]
rows = []
for d in sorted(glob.glob(os.path.join(out, ".empty-*")), key=lambda p: int(p.rsplit("-", 1)[1])):
    doc = json.load(open(os.path.join(d, "timing.json")))
    ks = [k for k in doc["kernels"] if k["launch"] >= 5]
    ns = statistics.median(k["duration_ns"] for k in ks)
    mhz = doc["clocks"]["sm_mhz_at_exit"]
    rows.append({"blocks": ks[0]["grid"][0], "threads": ks[0]["block"][0], "launches": len(ks), "median_ns": ns,
                 "sm_clock_mhz": mhz, "median_cycles": ns * mhz / 1000})
    print(f"empty kernel {rows[-1]['blocks']:5} x {rows[-1]['threads']:3}: {ns:8.0f} ns = {rows[-1]['median_cycles']:7.0f} cycles")
json.dump({"device": doc["device"], "clocks": doc["clocks"], "empty_kernel": rows}, open(os.path.join(out, "launch_overhead.json"), "w"), indent=1)
PY
rm -rf "$out"/.empty-* "$out/.empty_kernel"
