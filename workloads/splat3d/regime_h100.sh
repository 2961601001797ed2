#!/usr/bin/env bash
# The DISTWAR regime on a GPU machine in one command: 3DGS training from
# random points in the scene's volume (--init volume: large, overlapping
# Gaussians) beside the usual surface initialisation, each reduction variant
# timed natively (native-INIT-N-VARIANT.json), and the baseline backward
# kernel's stall and count passes (stall-INIT-N/), to tell whether the
# H100's baseline is LSU-bound there (lg_throttle first).
#
# Usage: workloads/splat3d/regime_h100.sh SPLAT3D_BINARY CAPTURE_DIR MESH OUT [GAUSSIANS...]
set -euo pipefail
bin=${1:?usage}; capture=${2:?usage}/atomsim-capture; mesh=${3:?usage}; out=${4:?usage}
shift 4
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000)
mkdir -p "$out"
for init in volume surface; do
  for n in "${sizes[@]}"; do
    for v in baseline sws swb warp; do
      "$bin" --mesh "$mesh" --init $init --gaussians $n --variant $v --iterations 100 --warmup 10 --check 0 \
        > "$out/native-$init-$n-$v.json" || echo "regime: $init $n $v failed" >&2
    done
    "$capture" --pass stall,count --kernel splat_render_backward --launch 1 --timeout 300 --out "$out/stall-$init-$n" -- \
      "$bin" --mesh "$mesh" --init $init --gaussians $n --variant baseline --iterations 3 --warmup 0 --check 0 > /dev/null \
      || echo "regime: stall pass $init $n failed" >&2
    rm -f "$out/stall-$init-$n"/cubin-*
  done
done
