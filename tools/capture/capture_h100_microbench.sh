#!/usr/bin/env bash
# The whole microbenchmark dataset in one command on a GPU machine (about
# 2.5 minutes on an H100): the full-shape grid of timing, stall and count
# passes (capture_microbench.sh) and the captured traces with their count
# passes (capture_microbench_traces.sh), then, where the simulator is built,
# the faithfulness check of every trace (check_traces.sh).
#
# Usage: tools/capture/capture_h100_microbench.sh [BUILD_DIR] [DEST]
#   DEST defaults to traces/datasets/h100/microbench of this checkout.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
dest=${2:-$root/traces/datasets/h100/microbench}
"$root/tools/capture/capture_microbench.sh" "$dest/grid" "$build"
"$root/tools/capture/capture_microbench_traces.sh" "$dest/traces" "$build"
if [ -x "$build/atomsim" ]; then
  "$root/tools/capture/check_traces.sh" "$dest/traces" "$build/atomsim"
else
  echo "capture_h100_microbench: $build/atomsim not built here; run tools/capture/check_traces.sh $dest/traces on a machine where it is"
fi
