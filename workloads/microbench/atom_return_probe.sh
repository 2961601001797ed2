#!/usr/bin/env bash
# One-call probe on a GPU machine: builds atom_return.cu for sm_90 and runs each
# of its patterns once under Nsight Compute: atomic instructions, l1tex and lts
# requests and sectors for ATOM and RED, duration. How many L2 requests a
# returning atomic becomes, against the REDs whose rule red_requests_probe.sh found.
# Usage: workloads/microbench/atom_return_probe.sh OUTDIR
set -euo pipefail
out=${1:?usage: atom_return_probe.sh OUTDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O3 -std=c++17 -arch=sm_90 -I"$here/../.." -o "$out/atom_return" "$here/atom_return.cu"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt"
metrics=smsp__inst_executed_op_global_red.sum  # (no such counter for ATOM; the count pass has them)
for op in atom red; do
  metrics+=,l1tex__t_requests_pipe_lsu_mem_global_op_$op.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_$op.sum
  metrics+=,lts__t_requests_srcunit_tex_op_$op.sum,lts__t_sectors_srcunit_tex_op_$op.sum
done
metrics+=,lts__cycles_elapsed.avg,sm__cycles_elapsed.avg,gpu__time_duration.sum
for p in red-private1 atom-private1 red-private32 atom-private32 red-hot atom-hot atom-or-hot; do
  # The report goes to its own file: the program's JSON line stays on stdout.
  ncu --clock-control none --metrics "$metrics" --csv --page raw --log-file "$out/ncu-$p.csv" \
    "$out/atom_return" --op "${p%-*}" --pattern "${p##*-}" --iterations 16 --warmup 0 --repeat 1 > "$out/native-$p.json"
  sed -i '/^==/d' "$out/ncu-$p.csv"
done
echo "probe done"
