#!/usr/bin/env bash
# Builds and runs the latency microbenchmarks on a GPU machine; writes
# OUTDIR/latency.json, loaded.json (memory under load, workloads/latency/loaded.cu) and
# load_spread.json (each load's latency under load, load_spread.cu), shared_banks.json
# (shared memory's bank conflicts and atomics, shared_banks.cu), red_issue.json
# (what limits an SM's REDs, and whether a warp's exit waits for them, red_issue.cu),
# the SASS (to check each chain is what it claims) and the clocks.
# Usage: workloads/latency/run_h100.sh OUTDIR
set -euo pipefail
out=${1:?usage: run_h100.sh OUTDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O3 -arch=sm_90 -o "$out/latency" "$here/latency.cu"
cuobjdump --dump-sass "$out/latency" > "$out/latency.sass"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt" 2>&1 || true
"$out/latency" | tee "$out/latency.json"
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/loaded" "$here/loaded.cu"
cuobjdump --dump-sass "$out/loaded" > "$out/loaded.sass"
"$out/loaded" | tee "$out/loaded.json"
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/load_spread" "$here/load_spread.cu"
cuobjdump --dump-sass "$out/load_spread" > "$out/load_spread.sass"
"$out/load_spread" | tee "$out/load_spread.json"
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/shared_banks" "$here/shared_banks.cu"
cuobjdump --dump-sass "$out/shared_banks" > "$out/shared_banks.sass"
"$out/shared_banks" | tee "$out/shared_banks.json"
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/red_issue" "$here/red_issue.cu"
cuobjdump --dump-sass "$out/red_issue" > "$out/red_issue.sass"
"$out/red_issue" | tee "$out/red_issue.json"
# Where part five's REDs go: requests and sectors per L2 slice (Nsight Compute).
ncu --kernel-name regex:red_lines --csv \
  --metrics lts__t_requests_op_red.sum,lts__t_requests_op_red.max,lts__t_requests_op_red.min,lts__t_sectors_op_red.sum,lts__t_sectors_op_red.max,lts__d_atomic_input_cycles_active.max,smsp__inst_executed_op_global_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,gpu__time_duration.sum \
  "$out/shared_banks" | sed -n '/^"ID"/,$p' > "$out/ncu-red-lines.csv"
