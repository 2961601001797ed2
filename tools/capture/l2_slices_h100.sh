#!/usr/bin/env bash
# Where the full-size sort, sparse and MPM kernels' L2 requests go, slice by
# slice, on an H100 (Nsight Compute): for each kernel the total and the busiest
# slice's requests by operation (atomic, reduction, read, write), the busiest
# slice's atomic-unit input cycles, how busy the links into and out of the
# slices are (from the SMs' crossbar, to it, and from the other partition into
# a slice and into an LTC of two), and the kernel's time, to set beside the
# model's per-slice statistics (`atomsim run --json`, units.l2_slice: total
# and max of atomic_packets, reads, rop_utilization). Each kernel is profiled
# at every launch (ID orders them); the trace pass takes the second of each.
#
# Usage: tools/capture/l2_slices_h100.sh OUT_DIR   (writes OUT_DIR/ncu-l2-slices.csv,
#        OUT_DIR/device.txt, OUT_DIR/lts-metrics.txt: the lts__ metrics this ncu knows)
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: l2_slices_h100.sh OUT_DIR}
mkdir -p "$out"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for w in sort/onesweep sparse/sparse_grid mpm/mpm microbench/atom_return; do
  nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -I"$root" -o "$bin/$(basename $w)" "$root/workloads/$w.cu" || exit 1
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt" 2>&1
ncu --query-metrics --chip gh100 2>/dev/null | grep -o '^lts__[a-z_0-9]*' | sort -u > "$out/lts-metrics.txt"
wanted=(lts__t_requests_op_atom lts__t_requests_op_red lts__t_requests_op_read lts__t_requests_op_write
        lts__t_sectors_op_atom lts__t_sectors_op_red lts__t_sectors_op_read lts__t_sectors_lookup_miss
        lts__t_requests_srcunit_ltcfabric lts__d_atomic_input_cycles_active lts__cycles_active
        lts__xbar2lts_cycles_active lts__lts2xbar_cycles_active lts__ltcfabric2lts_cycles_active lts__ltcfabric2ltc_cycles_active)
metrics=gpu__time_duration.sum,lts__cycles_elapsed.avg
for m in "${wanted[@]}"; do
  if grep -qx "$m" "$out/lts-metrics.txt"; then metrics+=",$m.sum,$m.max"; else echo "l2_slices: $m unknown to this ncu, left out" >&2; fi
done
# label | runner | kernel regex | second kernel regex or - | arguments (as
# capture_h100_workloads.sh), each run with a warm-up launch and one more
# (the runners' own options for that are appended below).
runs=(
  "sort-keys|onesweep|onesweep_histogram|onesweep_scatter|--keys 5242880"
  "sort-keys-histogram|onesweep|onesweep_histogram|-|--keys 17825792"
  "sort-pairs-narrow|onesweep|onesweep_histogram|onesweep_scatter|--keys 5242880 --pairs 1 --distribution narrow"
  "sparse-baseline|sparse_grid|sparse_write|sparse_restrict|--variant baseline --points 1048576"
  "sparse-warp|sparse_grid|sparse_write|sparse_restrict|--variant warp --points 1048576"
  "sparse-baseline-restrict|sparse_grid|sparse_restrict|-|--variant baseline"
  "sparse-warp-restrict|sparse_grid|sparse_restrict|-|--variant warp"
  "mpm-2d-baseline|mpm|mpm_p2g|-|--dimensions 2 --grid 1280 --variant baseline"
  "mpm-2d-warp|mpm|mpm_p2g|-|--dimensions 2 --grid 1280 --variant warp"
  "mpm-3d-baseline|mpm|mpm_p2g|-|--dimensions 3 --grid 128 --variant baseline"
)
# The atomics probe (workloads/microbench/atom_return.cu) as captured in traces/datasets/h100/probes/atom.
for p in red-private1 atom-private1 red-private32 atom-private32 red-hot atom-hot; do
  runs+=("probe-$p|atom_return|atom_return|-|--op ${p%-*} --pattern ${p##*-} --iterations 16")
done
first=1
for r in "${runs[@]}"; do
  IFS='|' read -r label runner k1 k2 args <<<"$r"
  regex=$k1; [ "$k2" != - ] && regex="$k1|$k2"
  # every launch profiled; the second of each kernel is the one the trace pass takes.
  repeat="--warmup 1 --repeat 1"; [ "$runner" = mpm ] && repeat="--warmup 1 --steps 1"
  ncu --kernel-name "regex:($regex)" --csv --metrics "$metrics" \
    "$bin/$runner" $args $repeat > "$bin/$label.csv" 2> "$bin/$label.err" || { echo "l2_slices: $label failed: $(tail -2 $bin/$label.err)" >&2; continue; }
  sed -n '/^"ID"/,$p' "$bin/$label.csv" | { if [ $first = 1 ]; then sed "s/^\"ID\"/\"Run\",\"ID\"/; 2,\$s/^/\"$label\",/"; else sed -n "2,\$s/^/\"$label\",/p"; fi; } >> "$out/ncu-l2-slices.csv"
  first=0
done
echo "l2_slices: $(($(wc -l < "$out/ncu-l2-slices.csv") - 1)) metric values in $out/ncu-l2-slices.csv"
