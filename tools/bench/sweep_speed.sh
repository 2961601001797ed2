#!/usr/bin/env bash
# What the sweep engine costs: the example SM:ROP sweep run by `sweep run -j 1`
# against the sum of its points run alone (`atomsim run` on the same traces),
# and its throughput with 2 workers. Each figure is the median of REPEATS
# interleaved rounds (this machine's timings vary by several percent).
# Usage: tools/bench/sweep_speed.sh build/atomsim [REPEATS] [SPEC]
set -euo pipefail
atomsim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
repeats=${2:-3}
spec=${3:-$(cd "$(dirname "$0")/../.." && pwd)/tools/sweep/examples/sm-rop-microbench.toml}
work=$(mktemp -d /tmp/atomsim-sweep-speed.XXXXXX)
trap 'rm -rf "$work"' EXIT
now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

"$atomsim" sweep run "$spec" --out "$work/traces-only" --dry-run > "$work/points"
for round in $(seq "$repeats"); do
  rm -rf "$work/j1" "$work/j2"
  start=$(now); "$atomsim" sweep run "$spec" --out "$work/j1" -j 1 2>/dev/null; calc "$(now) - $start" >> "$work/j1.times"
  # The points' own time inside that run (each result records it): what the
  # engine adds is the rest, measured within one run and so immune to drift.
  awk '/"wall_seconds"/ { gsub(/[,}]/, "", $2); s += $2 } END { print s }' "$work"/j1/points/*.json >> "$work/inside.times"
  alone=0
  while read -r _key trace _on config settings; do
    sets=()
    for s in $settings; do sets+=(--set "$s"); done
    start=$(now)
    "$atomsim" run -q --config "$config" --trace "$work/j1/traces/$trace.trace" "${sets[@]}" >/dev/null </dev/null
    alone=$(calc "$alone + $(now) - $start")
  done < <(tail -n +2 "$work/points")
  echo "$alone" >> "$work/alone.times"
  start=$(now); "$atomsim" sweep run "$spec" --out "$work/j2" -j 2 2>/dev/null; calc "$(now) - $start" >> "$work/j2.times"
  "$atomsim" sweep collect "$work/j1" >/dev/null
  "$atomsim" sweep collect "$work/j2" >/dev/null
  cmp -s "$work/j1/results.csv" "$work/j2/results.csv" || { echo "the 1- and 2-worker tables differ" >&2; exit 1; }
  echo "round $round: alone $(tail -1 "$work/alone.times") s, -j 1 $(tail -1 "$work/j1.times") s (points inside $(tail -1 "$work/inside.times") s), -j 2 $(tail -1 "$work/j2.times") s"
  paste "$work/j1.times" "$work/inside.times" | tail -1 | awk '{ print 100 * ($1 - $2) / $2 }' >> "$work/overhead.percent"
done
alone=$(median < "$work/alone.times")
j1=$(median < "$work/j1.times")
j2=$(median < "$work/j2.times")
printf '%d points on %d cores, medians of %d rounds\n' "$(($(wc -l < "$work/points") - 1))" "$(nproc)" "$repeats"
printf 'points run alone, summed:   %7.2f s\n' "$alone"
printf 'sweep run -j 1:             %7.2f s  (%+.1f%% over the points alone, trace generation included)\n' "$j1" "$(calc "100 * ($j1 - $alone) / $alone")"
printf 'engine overhead in -j 1:    %7.2f %%  (wall time beyond the points own simulation time, same run)\n' "$(median < "$work/overhead.percent")"
printf 'sweep run -j 2:             %7.2f s  (%.2fx the throughput of -j 1)\n' "$j2" "$(calc "$j1 / $j2")"
