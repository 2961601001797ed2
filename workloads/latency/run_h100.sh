#!/usr/bin/env bash
# Builds and runs the latency microbenchmarks on a GPU machine; writes
# OUTDIR/latency.json, loaded.json (memory under load, workloads/latency/loaded.cu) and
# load_spread.json (each load's latency under load, load_spread.cu), shared_banks.json
# (shared memory's bank conflicts and atomics, shared_banks.cu), red_issue.json
# (what limits an SM's REDs and ATOMs, whether a warp's exit waits for them, an
# ATOM's round trip and how long a RED's operands hold its warp, red_issue.cu),
# the SASS (to check each chain is what it claims) and the clocks.
# Usage: workloads/latency/run_h100.sh OUTDIR
set -euo pipefail
out=${1:?usage: run_h100.sh OUTDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
# Builds a probe, lists its SASS (to check each chain is what it claims) and runs it.
probe() {
  nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/$1" "$here/$1.cu"
  cuobjdump --dump-sass "$out/$1" > "$out/$1.sass"
  "$out/$1" | tee "$out/$1.json"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt" 2>&1 || true
for name in latency loaded load_spread shared_banks red_issue; do probe "$name"; done
# Where part five's REDs go: requests and sectors per L2 slice (Nsight Compute).
ncu --kernel-name regex:red_lines --csv \
  --metrics lts__t_requests_op_red.sum,lts__t_requests_op_red.max,lts__t_requests_op_red.min,lts__t_sectors_op_red.sum,lts__t_sectors_op_red.max,lts__d_atomic_input_cycles_active.max,smsp__inst_executed_op_global_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,gpu__time_duration.sum \
  "$out/shared_banks" | sed -n '/^"ID"/,$p' > "$out/ncu-red-lines.csv"
