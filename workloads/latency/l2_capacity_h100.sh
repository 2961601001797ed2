#!/usr/bin/env bash
# The L2's capacity, measured (workloads/latency/l2_capacity.cu): for each
# footprint, the second pass of reads, and of whole-line writes, over it,
# counted by Nsight Compute without flushing the caches between the passes.
# Writes OUT/ncu-l2-capacity.csv (Run = read-MB or write-MB) and OUT/device.txt.
# Usage: workloads/latency/l2_capacity_h100.sh OUT [MB...]
set -euo pipefail
out=${1:?usage: l2_capacity_h100.sh OUT [MB...]}
shift
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(8 16 24 28 32 36 40 44 48 52 56 64 80)
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$bin/l2_capacity" "$here/l2_capacity.cu"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt" 2>&1 || true
metrics=gpu__time_duration.sum,lts__t_sectors_lookup_hit.sum,lts__t_sectors_lookup_miss.sum,dram__sectors_read.sum,dram__sectors_write.sum
first=1
for mode in read write; do
  for mb in "${sizes[@]}"; do
    # The second pass: after the flush (a read_pass) and the first pass.
    skip=1; [ $mode = read ] && skip=2
    ncu --cache-control none --kernel-name "regex:${mode}_pass" --launch-skip $skip --launch-count 1 --csv --metrics "$metrics" \
      "$bin/l2_capacity" $mode $mb > "$bin/run.csv" 2> "$bin/run.err" || { echo "l2_capacity: $mode $mb failed: $(tail -2 "$bin/run.err")" >&2; continue; }
    sed -n '/^"ID"/,$p' "$bin/run.csv" | { if [ $first = 1 ]; then sed "s/^\"ID\"/\"Run\",\"ID\"/; 2,\$s/^/\"$mode-$mb\",/"; else sed -n "2,\$s/^/\"$mode-$mb\",/p"; fi; } >> "$out/ncu-l2-capacity.csv"
    first=0
  done
done
echo "l2_capacity: $(($(wc -l < "$out/ncu-l2-capacity.csv") - 1)) metric values in $out/ncu-l2-capacity.csv"
