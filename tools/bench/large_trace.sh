#!/usr/bin/env bash
# A trace of about 2 GB (the built-in microbenchmark's baseline kernel, 1056
# CTAs of 8 warps, ITERATIONS rounds each): generates it, then validates,
# summarises and simulates it, printing each step's wall time and peak memory.
# Every reader streams warps segment by segment, so peak memory must not grow
# with the trace (the target: under 1 GB for a 2 GB trace).
#   tools/bench/large_trace.sh build/atomsim [ITERATIONS (448: ~2.2 GB)] [DIR (/tmp)]
set -euo pipefail
atomsim=$1
iterations=${2:-448}
dir=${3:-${TMPDIR:-/tmp}}
trace=$dir/atomsim-large-$$.trace
trap 'rm -f "$trace"' EXIT
step() {
  local name=$1; shift
  /usr/bin/time -f "$name: %e s wall, peak memory %M KB" "$@" >"$dir/atomsim-large-$$.out" 2>"$dir/atomsim-large-$$.err" ||
    { cat "$dir/atomsim-large-$$.err" >&2; exit 1; }
  tail -1 "$dir/atomsim-large-$$.err"
  rm -f "$dir/atomsim-large-$$.out" "$dir/atomsim-large-$$.err"
}
step generate "$atomsim" gen microbench -o "$trace" --variant baseline --blocks 1056 --warps-per-block 8 \
  --iterations "$iterations" --params 9 --active-fraction 0.5 --lanes-per-primitive 32
echo "trace: $(stat -c %s "$trace") bytes"
step validate "$atomsim" trace validate "$trace"
step info "$atomsim" trace info "$trace"
step simulate "$atomsim" run -q -t "$trace" --no-check
step "simulate with the functional check" "$atomsim" run -q -t "$trace"
