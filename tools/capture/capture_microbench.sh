#!/usr/bin/env bash
# Recaptures the H100 microbenchmark dataset in one command on a GPU machine:
# builds the native microbenchmark for sm_90, and for every configuration of the
# grid (3 active-lane fractions x 2 lanes-per-primitive x 3 variants, plus a
# balancing-threshold sweep) records the runner's own timing and checked result
# (timing.jsonl), the capture tool's timing pass over 5 warm-up and 51 timed
# launches (GPU timestamps), and its stall and count passes on one launch after
# a warm-up. manifest.json lists each configuration with its parameters.
#
# Usage: tools/capture/capture_microbench.sh OUTDIR [BUILD_DIR]
#   BUILD_DIR holds atomsim-capture and its injection libraries (default: build).
# The configuration matches `atomsim gen microbench` defaults (264 blocks x 8
# warps, 8 iterations, 9 parameters, 65536 primitives) so that the simulator can
# replay the same kernels; see docs/capture.md.
set -euo pipefail
out=${1:?usage: capture_microbench.sh OUTDIR [BUILD_DIR]}
build=${2:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/capture/microbench_grid.sh"
build_microbench capture_microbench "$out" "$build"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv > "$out/device.txt" 2>&1 || true

microbench_grid 264 8 8 9 65536

: > "$out/timing.jsonl"
failures=0
entries=()
for c in "${configs[@]}"; do
  read -r v lpp af thr <<<"$c"
  name="$v-lpp$lpp-af$af-thr$thr"
  args="$shape --variant $v --lanes-per-primitive $lpp --active-fraction $af --threshold $thr"
  # The runner's own timing: 5 warm-up launches, median of 51.
  if ! "$bin" $args --warmup 5 --repeat 51 >> "$out/timing.jsonl"; then
    echo "capture_microbench: $name: native run failed" >&2; failures=$((failures + 1)); continue
  fi
  if ! "$capture" --pass timing --timeout 300 --out "$out/$name" -- "$bin" $args --warmup 5 --repeat 51 > /dev/null ||
     ! "$capture" --pass stall,count --kernel microbench_ --launch 1 --timeout 300 --out "$out/$name" -- \
       "$bin" $args --warmup 1 --repeat 1 > /dev/null; then
    echo "capture_microbench: $name: capture failed" >&2; failures=$((failures + 1)); continue
  fi
  entries+=("{\"id\":\"$name\",\"variant\":\"$v\",\"lanes_per_primitive\":$lpp,\"active_fraction\":$af,\"threshold\":$thr,\"warmup_launches\":5}")
done
write_manifest "$out/manifest.json" "" "${entries[@]}"
# Every configuration runs the same module: keep one cubin and its SASS at the top.
first=$(ls -d "$out"/*/ | head -1)
cp "$first"/cubin-*.cubin "$first"/cubin-*.sass "$out"/ 2>/dev/null || true
for d in "$out"/*/; do rm -f "$d"/cubin-*.cubin "$d"/cubin-*.sass; done
rm -f "$bin"
echo "capture_microbench: ${#configs[@]} configurations, $failures failed; results in $out"
[ "$failures" -eq 0 ]
