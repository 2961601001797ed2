#!/usr/bin/env bash
# The workload dataset in one command on a GPU machine: builds the native
# runners (sort, sparse, mpm, splat3d) for sm_90 and, for every workload and variant,
# records the runner's own timed and checked result (native.json: CUDA
# events, warm-up, medians), the stall and count passes of its atomic-heavy
# kernels on a launch after warm-up (full size), and a captured trace with
# the count pass of the same launch at a reduced size (trace/), which
# check_traces.sh sets beside each other.
#
# Usage: tools/capture/capture_h100_workloads.sh [BUILD_DIR] [DEST] [FILTER]
#   DEST defaults to traces/h100 of this checkout; FILTER, a regular
#   expression over names such as sparse/warp.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
dest=${2:-$root/traces/h100}
filter=${3:-.}
capture=$build/atomsim-capture
[ -x "$capture" ] || { echo "capture_h100_workloads: $capture not found (build the project first)" >&2; exit 1; }
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
mesh=$root/workloads/splat3d/data/node_modules/bunny/index.js
[ -f "$mesh" ] || { echo "capture_h100_workloads: $mesh not found (run tools/install-deps.sh)" >&2; exit 1; }
for w in sort/onesweep sparse/sparse_grid mpm/mpm splat3d/splat3d; do
  nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -I"$root" -DATOMSIM_SPLAT3D_MESH="\"$mesh\"" -o "$bin/$(basename $w)" "$root/workloads/$w.cu"
done

# name | runner | kernels as label=regex (over demangled names) | full-size arguments | reduced-size arguments for the trace
runs=(
  "sort/keys|onesweep|histogram=onesweep_histogram scatter=onesweep_scatter|--keys 16777216|--keys 262144"
  "sort/pairs-narrow|onesweep|histogram=onesweep_histogram scatter=onesweep_scatter|--keys 16777216 --pairs 1 --distribution narrow|--keys 262144 --pairs 1 --distribution narrow"
  "sparse/baseline|sparse_grid|write=sparse_write restrict=sparse_restrict|--variant baseline|--variant baseline --points 65536 --side 1024"
  "sparse/warp|sparse_grid|write=sparse_write restrict=sparse_restrict|--variant warp|--variant warp --points 65536 --side 1024"
  "mpm/3d-baseline|mpm|p2g=mpm_p2g<3,.false>|--dimensions 3 --grid 256 --variant baseline|--dimensions 3 --grid 32 --variant baseline"
  "mpm/3d-warp|mpm|p2g=mpm_p2g<3,.true>|--dimensions 3 --grid 256 --variant warp|--dimensions 3 --grid 32 --variant warp"
  "mpm/2d-baseline|mpm|p2g=mpm_p2g<2,.false>|--dimensions 2 --grid 2048 --variant baseline|--dimensions 2 --grid 128 --variant baseline"
  "mpm/2d-warp|mpm|p2g=mpm_p2g<2,.true>|--dimensions 2 --grid 2048 --variant warp|--dimensions 2 --grid 128 --variant warp"
  "splat3d/baseline|splat3d|backward=splat_render_backward|--gaussians 100000 --variant baseline|--gaussians 5000 --width 128 --height 128 --views 4 --variant baseline"
  "splat3d/sws|splat3d|backward=splat_render_backward|--gaussians 100000 --variant sws|--gaussians 5000 --width 128 --height 128 --views 4 --variant sws"
  "splat3d/swb|splat3d|backward=splat_render_backward|--gaussians 100000 --variant swb|--gaussians 5000 --width 128 --height 128 --views 4 --variant swb"
  "splat3d/warp|splat3d|backward=splat_render_backward|--gaussians 100000 --variant warp|--gaussians 5000 --width 128 --height 128 --views 4 --variant warp"
)
# Kernels whose instruction stream depends on timing by design (look-back
# spin, activation race): two more count passes of the trace's launch show
# which instructions the GPU itself counts differently from run to run
# (count-again-N.json beside the trace; `atomsim trace check --count-again`).
timing_dependent='^(sort/.*/scatter|sparse/.*/write)$'
short_run() {  # one warm-up launch, then the captured one (the trainer's variant check launches every variant: off)
  case $1 in mpm) echo "--warmup 1 --steps 1" ;; splat3d) echo "--iterations 3 --warmup 0 --check 0" ;; *) echo "--warmup 1 --repeat 1" ;; esac
}
failures=0
for r in "${runs[@]}"; do
  IFS='|' read -r name runner kernels full reduced <<<"$r"
  [[ $name =~ $filter ]] || continue
  out=$dest/$name
  mkdir -p "$out"
  echo "capture_h100_workloads: $name"
  if ! "$bin/$runner" $full > "$out/native.json"; then
    echo "capture_h100_workloads: $name: the runner failed" >&2; failures=$((failures + 1)); continue
  fi
  for k in $kernels; do
    label=${k%%=*} kernel=${k#*=}
    "$capture" --pass stall,count --kernel "$kernel" --launch 1 --timeout 300 --out "$out/$label" -- \
      "$bin/$runner" $full $(short_run $runner) > /dev/null || { failures=$((failures + 1)); continue; }
    rm -f "$out/$label"/cubin-*
    "$capture" --pass trace,count --kernel "$kernel" --launch 1 --timeout 300 --out "$out/$label/trace" -- \
      "$bin/$runner" $reduced $(short_run $runner) > /dev/null || { failures=$((failures + 1)); continue; }
    rm -f "$out/$label/trace"/cubin-*
    [[ $name/$label =~ $timing_dependent ]] || continue
    for again in 1 2; do
      "$capture" --pass count --kernel "$kernel" --launch 1 --timeout 300 --out "$out/$label/trace/again" -- \
        "$bin/$runner" $reduced $(short_run $runner) > /dev/null || { failures=$((failures + 1)); continue; }
      mv "$out/$label/trace/again/count.json" "$out/$label/trace/count-again-$again.json"
      rm -rf "$out/$label/trace/again"
    done
  done
done
echo "capture_h100_workloads: done, $failures failed; results in $dest"
[ "$failures" -eq 0 ]
