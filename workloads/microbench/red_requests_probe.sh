#!/usr/bin/env bash
# One-call probe on a GPU machine: builds red_requests.cu for sm_90 and runs it
# under Nsight Compute, one profiled launch per pattern (in the program's
# order): RED instructions, l1tex and lts requests and sectors, duration, and
# per slice (sum, mean and busiest) the cycles its atomic unit took input, the
# cycles its crossbar port was busy and the atomics it received from the other
# partition. BLOCKS (default 528, four CTAs of 8 warps an SM) sets how many
# warps send REDs: fewer leave the slices unsaturated, so that what an SM's
# REDs cost shows apart from what a slice's do; THREADS (default 256) sets a
# CTA's warps; further options go to the program (--warps-per-region,
# --regions, --op: red_requests.cu). Nsight Compute's warp-state section comes
# with each launch. OUTDIR/red_requests.sass: the kernels' SASS.
# Usage: workloads/microbench/red_requests_probe.sh OUTDIR [BLOCKS] [THREADS] [PROGRAM OPTIONS...]
set -euo pipefail
out=${1:?usage: red_requests_probe.sh OUTDIR [BLOCKS] [THREADS] [PROGRAM OPTIONS...]}
blocks=${2:-528}
threads=${3:-256}
shift $(( $# < 3 ? $# : 3 ))
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/red_requests" "$here/red_requests.cu"
# The kernel's SASS with its control bits, which the model runs (tests/test_red_issue.cpp).
cuobjdump -sass "$out/red_requests" > "$out/red_requests.sass"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt"
metrics=smsp__inst_executed.sum,sm__cycles_active.max,smsp__cycles_active.max,smsp__inst_executed_op_global_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum,lts__t_requests_srcunit_tex_op_red.sum,lts__t_sectors_srcunit_tex_op_red.sum,lts__cycles_elapsed.avg,sm__cycles_elapsed.avg,gpu__time_duration.sum
# The same counts for ATOMs (--op atom).
metrics+=,smsp__inst_executed_op_global_atom.sum,l1tex__t_requests_pipe_lsu_mem_global_op_atom.sum,lts__t_requests_srcunit_tex_op_atom.sum,lts__t_sectors_srcunit_tex_op_atom.sum
for m in lts__d_atomic_input_cycles_active lts__xbar2lts_cycles_active lts__t_requests_srcunit_ltcfabric; do
  metrics+=",$m.sum,$m.avg,$m.max"
done
ncu --clock-control none --metrics $metrics --section WarpStateStats --csv --page raw "$out/red_requests" --blocks "$blocks" --threads "$threads" "$@" 2>&1 |
  grep -v '^==' > "$out/ncu.csv"
"$out/red_requests" --blocks "$blocks" --threads "$threads" "$@" > "$out/patterns.json"
echo "probe done"
