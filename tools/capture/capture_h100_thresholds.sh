#!/usr/bin/env bash
# The balancing-threshold study's H100 side in one command on a GPU machine
# (docs/studies.md, "The balancing threshold"):
#   1. the atomics microbenchmark's measured curve: SW-S and SW-B at thresholds
#      0-32 and the baseline, 32 lanes per primitive, half the lanes active; the
#      runner's own timing (DEST/microbench/timing.jsonl: CUDA events around each
#      launch, so a few microseconds of launch overhead shrink its speedups) and
#      the capture's timing pass of the same 5 warm-up and 51 timed launches
#      (DEST/microbench/NAME/timing.json: the kernels' own durations);
#   2. the 3DGS backward in DISTWAR's regime at 320x320: native run, timing and
#      stall passes of SW-S and SW-B at thresholds 1-32 and of the baseline
#      (capture_h100_workloads.sh, DEST/splat3d-threshold/);
#   3. the count and trace passes of the kernels named by TRACED (a regular
#      expression over names such as baseline or sws-t16);
#   4. where the simulator is in CAPTURE_DIR and DEST is the default (where the
#      specs look for the traces), the study's sweeps (tools/studies/threshold.toml
#      and threshold-gpus.toml) on every core: DEST/threshold-sweep*/.
# Traces stay where they are captured (tens of MB each); the sweep's table is
# what comes away.
#
# Usage: tools/capture/capture_h100_thresholds.sh CAPTURE_DIR [DEST] [TRACED] [STEPS]
#   DEST defaults to traces/datasets/h100/thresholds of this checkout (where the study's
#   spec looks for the traces); TRACED defaults to the baseline and thresholds 8, 16, 24 and 32;
#   STEPS: comma-separated subset of microbench,measure,trace,sweep (default all).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: capture_h100_thresholds.sh CAPTURE_DIR [DEST] [TRACED] [STEPS]"
tools=$(cd "${1:?$usage}" && pwd)
dest=${2:-$root/traces/datasets/h100/thresholds}
traced=${3:-'baseline|(sws|swb)-t(8|16|24|32)'}
steps=,${4:-microbench,measure,trace,sweep},
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
workloads=$root/tools/capture/capture_h100_workloads.sh

if [[ $steps == *,microbench,* ]]; then
  source "$root/tools/capture/microbench_grid.sh"
  out=$dest/microbench
  build_microbench capture_h100_thresholds "$out" "$tools"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv > "$out/device.txt" 2>&1 || true
  shape="--blocks 264 --warps-per-block 8 --iterations 8 --params 9 --primitives 65536 --lanes-per-primitive 32 --active-fraction 0.5"
  : > "$out/timing.jsonl"
  runs=("baseline 8")
  for t in 0 1 4 8 12 16 20 24 28 32; do runs+=("sws $t" "swb $t"); done
  for r in "${runs[@]}"; do
    read -r v t <<<"$r"
    args="$shape --variant $v --threshold $t --warmup 5 --repeat 51"
    "$bin" $args >> "$out/timing.jsonl" && "$capture" --pass timing --timeout 300 --out "$out/$v-thr$t" -- "$bin" $args > /dev/null ||
      { echo "capture_h100_thresholds: microbenchmark $v threshold $t failed" >&2; exit 1; }
  done
  rm -f "$bin"
fi
if [[ $steps == *,measure,* ]]; then
  "$workloads" "$tools" "$dest" '^splat3d-threshold/' measure
fi
if [[ $steps == *,trace,* ]]; then
  "$workloads" "$tools" "$dest" "^splat3d-threshold/($traced)/" trace
fi
if [[ $steps == *,sweep,* ]] && [ -x "$tools/atomsim" ] && [ "$dest" = "$root/traces/datasets/h100/thresholds" ]; then
  for spec in threshold threshold-gpus; do
    start=$(date +%s)
    "$tools/atomsim" sweep run "$root/tools/studies/$spec.toml" --out "$dest/$spec-sweep" -j "$(nproc)"
    "$tools/atomsim" sweep collect "$dest/$spec-sweep"
    echo "$spec sweep $(( $(date +%s) - start )) s on $(nproc) cores" >> "$dest/times.txt"
  done
fi
