#!/usr/bin/env bash
# Digests of the reports atomsim writes, to show that a change which should not
# alter behaviour (a refactoring, a move) leaves every one byte-identical:
#   the embedded default run, the microbenchmark grids' comparisons (H100 and
#   H200), the PyTorch regressions' comparison, the full-size workloads' saved
#   comparison (their traces are not kept), and a sweep's table.
# Left out of each report: the lines that name the source revision and the
# host's time; dataset paths are read as traces/<gpu>/ wherever the datasets lie.
#
# Usage: tools/bench/report_digests.sh BUILD [EXPECTED]
#   prints one "sha256  report" line per report; with EXPECTED (an earlier
#   output, e.g. tools/bench/report_digests.txt, this revision's), fails on
#   any that differs. About 4 minutes on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
atomsim=$(cd "${1:?usage: report_digests.sh BUILD [EXPECTED]}" && pwd)/atomsim
expected=${2:-}
[ -x "$atomsim" ] || { echo "report_digests: $atomsim not found" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
jobs=$(nproc)

digest() {
  grep -v -E '"(revision|source_revision|wall_seconds|host)"|^revision|^simulated .* in [0-9.]+ s:' "$2" |
    sed 's#traces/datasets/#traces/#g' | sha256sum | sed "s|-\$|$1|" | tee -a "$work/digests.txt"
}

"$atomsim" run --json "$work/run.json" > "$work/run.txt"
digest run.txt "$work/run.txt"
digest run.json "$work/run.json"
"$atomsim" compare -q --dataset traces/datasets/h100/microbench/grid -c h100 -j "$jobs" --json "$work/grid.json" > "$work/grid.txt"
digest grid.txt "$work/grid.txt"
digest grid.json "$work/grid.json"
"$atomsim" compare -q --manifest traces/datasets/h100/regressions/pytorch/manifest.json -c h100 -j "$jobs" \
  --json "$work/pytorch.json" > "$work/pytorch.txt"
digest pytorch.txt "$work/pytorch.txt"
digest pytorch.json "$work/pytorch.json"
"$atomsim" compare -q --dataset traces/datasets/h200/microbench/grid -c h100 --set l2.slices=94 -j "$jobs" > "$work/grid-h200.txt"
digest grid-h200.txt "$work/grid-h200.txt"
"$atomsim" compare -q --manifest traces/datasets/h100/workloads/manifest.json -c h100 --saved > "$work/workloads-saved.txt"
digest workloads-saved.txt "$work/workloads-saved.txt"
"$atomsim" sweep run tools/sweep/examples/sm-rop-microbench.toml --out "$work/sweep" -j "$jobs" > /dev/null
"$atomsim" sweep collect "$work/sweep" --csv "$work/sweep.csv" --json "$work/sweep.json" > /dev/null
# Without its first column, the points' keys: they name the simulator's build.
cut -d, -f2- "$work/sweep.csv" > "$work/sweep-results.csv"
digest sweep-results.csv "$work/sweep-results.csv"
if [ -n "$expected" ]; then
  diff "$expected" "$work/digests.txt" >&2 || { echo "report_digests: reports differ from $expected" >&2; exit 1; }
  echo "report_digests: every report identical to $expected" >&2
fi
