#!/usr/bin/env bash
# Fuzzes one target (tests/fuzz/targets.hpp) with libFuzzer, starting from the
# hand-written seeds (tests/fuzz/seeds/TARGET) and the committed corpus.
#   tests/fuzz/run.sh FUZZ_BUILD TARGET SECONDS      a timed run; the corpus it grew, minimised,
#                                                     replaces tests/fuzz/corpus/TARGET
#   tests/fuzz/run.sh FUZZ_BUILD TARGET --runs N      N executions, nothing kept (CI)
# Inputs that break the target land in FUZZ_BUILD/fuzz-work/TARGET-findings/;
# each one fixed is committed under tests/fuzz/findings/TARGET/.
set -euo pipefail
build=$1 target=$2
root=$(cd "$(dirname "$0")/../.." && pwd)
binary=$build/tests/fuzz/fuzz_$target
seeds=$root/tests/fuzz/seeds/$target
corpus=$root/tests/fuzz/corpus/$target
[[ -x $binary ]] || { echo "run.sh: $binary: not built (make fuzz)" >&2; exit 2; }
[[ -d $seeds ]] || { echo "run.sh: $seeds: no seeds for target '$target'" >&2; exit 2; }
# Inputs stay near the seeds' sizes, which keeps the committed corpus small.
case $target in
  trace_file) max_len=8192 ;;
  gpu_config | join_input) max_len=12288 ;;
  *) max_len=4096 ;;
esac
work=$build/fuzz-work/$target
findings=$build/fuzz-work/$target-findings
rm -rf "$work"
mkdir -p "$work" "$findings" "$corpus"
# -timeout: an input that runs for a minute is a hang (the sanitizers slow the
# joiner's bounded search twentyfold: its worst case takes seconds); -rss_limit_mb: one that
# needs gigabytes is a finding too (atomsim must refuse it, not swap).
options=(-timeout=60 -rss_limit_mb=2048 -max_len=$max_len -artifact_prefix="$findings/" -print_final_stats=1)
if [[ ${3:-} == --runs ]]; then
  exec "$binary" "${options[@]}" -runs="$4" "$work" "$corpus" "$seeds"
fi
seconds=$3
log=$build/fuzz-work/$target.log
"$binary" "${options[@]}" -max_total_time="$seconds" "$work" "$corpus" "$seeds" 2>&1 | tee "$log" |
  grep -E "^#[0-9]+\s+(INITED|DONE)|^stat::|ERROR|SUMMARY" || true
merged=$build/fuzz-work/$target-merged
rm -rf "$merged" && mkdir -p "$merged"
# Kept: the fewest inputs that reach every edge the run reached.
"$binary" -merge=1 -use_counters=0 -max_len=$max_len "$merged" "$corpus" "$work" >/dev/null 2>&1
rm -rf "$corpus" && mkdir -p "$corpus" && cp "$merged"/* "$corpus"/ 2>/dev/null || true
echo "$target: $(ls "$corpus" | wc -l) corpus inputs ($(du -sh "$corpus" | cut -f1)) after merging, $(ls "$findings" | wc -l) findings, log $log"
