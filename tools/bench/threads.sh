#!/usr/bin/env bash
# How the simulator's speed grows with the threads that evaluate a cycle's
# units, and that the results do not move: each trace is simulated on the h100
# configuration (`atomsim run -q --no-check`) once per thread count, and every
# run's JSON report is compared byte for byte with the first count's. Prints one
# line per run: trace, threads, wall seconds, simulated warp-instructions per
# second, peak memory, and whether the report is identical. LOOKAHEAD (default
# 1) sets gpu.lookahead_cycles for every run (docs/notes/2026-11-27-threads-and-full-size-traces.md, "Clusters
# that run cycles apart"): the reports then agree with each other, not with
# those of another lookahead.
# Usage: [LOOKAHEAD=L] tools/bench/threads.sh ATOMSIM "1 2 4 8" TRACE...
set -euo pipefail
bin=${1:?usage: threads.sh ATOMSIM "THREAD COUNTS" TRACE...}
counts=${2:?usage: threads.sh ATOMSIM "THREAD COUNTS" TRACE...}
shift 2
lookahead=${LOOKAHEAD:-1}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; gpu.lookahead_cycles = $lookahead"
printf '%-60s %7s %9s %14s %9s %s\n' trace threads wall_s M_winst/s peak_MB identical
for trace in "$@"; do
  first=""
  for t in $counts; do
    report=$dir/run-$t.json
    line=$("$bin" run -q --no-check --threads "$t" --set gpu.lookahead_cycles="$lookahead" --trace "$trace" --json "$report" | grep '^simulated')
    # "simulated N warp instructions and C cycles in S s: R M warp-instructions/s, ..., peak memory P MB"
    wall=$(sed -n 's/.* in \([0-9.]*\) s:.*/\1/p' <<<"$line")
    rate=$(sed -n 's/.*: \([0-9.]*\) M warp-instructions\/s.*/\1/p' <<<"$line")
    peak=$(sed -n 's/.*peak memory \([0-9]*\) MB.*/\1/p' <<<"$line")
    if [ -z "$first" ]; then first=$report; same=reference; elif cmp -s "$first" "$report"; then same=yes; else same=NO; fi
    printf '%-60s %7s %9s %14s %9s %s\n' "$trace" "$t" "$wall" "$rate" "$peak" "$same"
    [ "$report" = "$first" ] || rm -f "$report"
  done
done
