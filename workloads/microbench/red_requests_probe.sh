#!/usr/bin/env bash
# One-call probe on a GPU machine: builds red_requests.cu for sm_90 and runs it
# under Nsight Compute, one profiled launch per pattern (in the program's
# order): RED instructions, l1tex and lts requests and sectors, duration.
# Usage: workloads/microbench/red_requests_probe.sh OUTDIR
set -euo pipefail
out=${1:?usage: red_requests_probe.sh OUTDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/red_requests" "$here/red_requests.cu"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt"
metrics=smsp__inst_executed_op_global_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum,lts__t_requests_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__cycles_elapsed.avg,sm__cycles_elapsed.avg,gpu__time_duration.sum
ncu --clock-control none --metrics $metrics --csv --page raw "$out/red_requests" 2>&1 | grep -v '^==' > "$out/ncu.csv"
"$out/red_requests" > "$out/patterns.json"
echo "probe done"
