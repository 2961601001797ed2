#!/usr/bin/env bash
# Simulator speed on the h100 config: simulated warp-instructions per second,
# simulated cycles per second and peak memory, for a microbenchmark trace of
# more than 10 million warp-instructions and for one twice as long (memory
# must not grow with trace length: the 4096 primitives bound the atomic memory
# image, so only the trace grows), then for a memory-bound one: the baseline
# with every lane on a primitive of its own, each RED 32 single-lane requests
# through the crossbars and slices. Then, on a machine of several cores, the
# first and last of those again with one thread per core (`--threads`),
# checking that the reports are the ones one thread wrote
# (tools/bench/threads.sh), and with the clusters running 8 cycles apart
# (gpu.lookahead_cycles = 8). Usage: tools/bench/speed.sh [atomsim-binary]
set -euo pipefail
bin=${1:-build/atomsim}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; one simulation thread"
for iterations in 4 8; do
  trace=$dir/microbench-$iterations.trace
  "$bin" gen microbench --out "$trace" --blocks 528 --warps-per-block 8 --iterations "$iterations" \
    --active-fraction 0.5 --lanes-per-primitive 32 --params 9 --threshold 8 --primitives 4096 >/dev/null
  echo "trace: 528 CTAs x 8 warps, $iterations iterations, 4096 primitives x 9 parameters, baseline + SW-B + SW-S, $(du -h "$trace" | cut -f1)"
  "$bin" run --quiet --no-check --config h100 --trace "$trace" | grep -E "^microbench|^simulated"
done
trace=$dir/microbench-distinct.trace
"$bin" gen microbench --out "$trace" --variant baseline --blocks 528 --warps-per-block 8 --iterations 2 \
  --active-fraction 1.0 --lanes-per-primitive 1 --params 9 --primitives 4096 >/dev/null
echo "trace: memory-bound, 528 CTAs x 8 warps, 2 iterations, baseline, one lane per primitive, $(du -h "$trace" | cut -f1)"
"$bin" run --quiet --no-check --config h100 --trace "$trace" | grep -E "^simulated"
# Sampled simulation (--sample): a trace of 12 CTA waves, in full and sampled,
# cycles beside cycles and wall time beside wall time.
trace=$dir/microbench-waves.trace
"$bin" gen microbench --out "$trace" --blocks 12672 --warps-per-block 8 --iterations 1 \
  --active-fraction 0.5 --lanes-per-primitive 32 --params 9 --threshold 8 --primitives 4096 >/dev/null
echo "trace: 12672 CTAs (12 waves) x 8 warps, 1 iteration, baseline + SW-B + SW-S, $(du -h "$trace" | cut -f1), in full and sampled"
for mode in full sampled; do
  flag=; [ $mode = sampled ] && flag=--sample
  start=$(date +%s.%N)
  "$bin" run --quiet --no-check --config h100 --threads 1 --trace "$trace" $flag > "$dir/$mode.txt"
  end=$(date +%s.%N)
  echo "$mode: $(grep -E '^microbench' "$dir/$mode.txt" | awk '{printf "%s %s %s  ", $1, $2, $3}')wall $(awk "BEGIN{printf \"%.1f\", $end - $start}") s"
  grep -E '^  sampled' "$dir/$mode.txt" | sed 's/^  /  /' || true
done
cores=$(nproc)
if [ "$cores" -gt 1 ]; then
  echo "the 4-iteration and the memory-bound traces, 1 and $cores threads:"
  "$(dirname "$0")/threads.sh" "$bin" "1 $cores" "$dir/microbench-4.trace" "$trace" | tail -n +2
  echo "the same with gpu.lookahead_cycles = 8:"
  LOOKAHEAD=8 "$(dirname "$0")/threads.sh" "$bin" "1 $cores" "$dir/microbench-4.trace" "$trace" | tail -n +2
fi
