#!/usr/bin/env bash
# Captures real per-warp traces of the microbenchmark on a GPU machine, in one
# command: for every configuration of the grid (as capture_microbench.sh) at a
# reduced shape that keeps the committed traces small, the trace pass and the
# count pass on the same launch (the second, after one warm-up), so that
# `atomsim trace check` can set the trace beside the GPU's own counts.
#
# Usage: tools/capture/capture_microbench_traces.sh OUTDIR [BUILD_DIR] [CONFIG_FILTER]
#   BUILD_DIR holds atomsim-capture, its libraries and the trace patches.
#   CONFIG_FILTER, a regular expression over names such as sws-lpp32-af0.5-thr8.
set -euo pipefail
out=${1:?usage: capture_microbench_traces.sh OUTDIR [BUILD_DIR] [CONFIG_FILTER]}
build=${2:-build}
filter=${3:-.}
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tools/capture/microbench_grid.sh"
build_microbench capture_microbench_traces "$out" "$build"

microbench_grid 16 8 4 9 4096

failures=0
entries=()
for c in "${configs[@]}"; do
  read -r v lpp af thr <<<"$c"
  name="$v-lpp$lpp-af$af-thr$thr"
  [[ $name =~ $filter ]] || continue
  args="$shape --variant $v --lanes-per-primitive $lpp --active-fraction $af --threshold $thr"
  if ! "$capture" --pass trace,count --kernel microbench_ --launch 1 --timeout 300 --out "$out/$name" -- \
       "$bin" $args --warmup 1 --repeat 1 > /dev/null; then
    echo "capture_microbench_traces: $name: capture failed" >&2; failures=$((failures + 1)); continue
  fi
  rm -f "$out/$name"/cubin-*
  entries+=("{\"id\":\"$name\",\"variant\":\"$v\",\"lanes_per_primitive\":$lpp,\"active_fraction\":$af,\"threshold\":$thr}")
done
write_manifest "$out/manifest.json" "\"captured\":\"traces\"," "${entries[@]}"
rm -f "$bin"
echo "capture_microbench_traces: ${#entries[@]} configurations captured, $failures failed; results in $out"
[ "$failures" -eq 0 ]
