#!/usr/bin/env bash
# Runs one small sweep through a real single-node Slurm (started here, stopped
# on exit) and through the local pool; their collected tables must be equal
# byte for byte. Exit 77 (skip) with one line only where Slurm cannot start.
set -euo pipefail
atomsim=$1
source_dir=$2
work=$(mktemp -d /tmp/atomsim-sweep-slurm.XXXXXX)
cleanup() {
  "$source_dir/tools/sweep/slurm-local.sh" stop "$work/slurm" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

set +e
started=$("$source_dir/tools/sweep/slurm-local.sh" start "$work/slurm" 2>"$work/slurm-start.err")
status=$?
set -e
if [ $status -eq 3 ]; then
  echo "skipped: Slurm cannot start here: $(cat "$work/slurm-start.err")"
  exit 77
fi
[ $status -eq 0 ] || { cat "$work/slurm-start.err" >&2; exit 1; }
eval "$started"

cat > "$work/spec.toml" <<'SPEC'
[sweep]
name = "slurm-check"
configs = ["h100", "rtx3060"]
baseline = "baseline"

[axes]
"l2.rop_units_per_slice" = [1, 2]

[[trace]]
name = "mb"
microbench = { variant = "all", blocks = 16, warps_per_block = 4, iterations = 2, active_fraction = 0.5 }
SPEC

"$atomsim" sweep run "$work/spec.toml" --out "$work/local" -j 2 2>/dev/null
"$atomsim" sweep collect "$work/local" >/dev/null

# Three points per task: 4 points in 2 array tasks, one of them partial.
"$atomsim" sweep run "$work/spec.toml" --out "$work/slurm-out" --backend slurm --points-per-task 3 --wait
"$atomsim" sweep status "$work/slurm-out" | tee "$work/status"
grep -q "4 points: 4 done, 0 running, 0 failed, 0 pending" "$work/status"
grep -q "slurm job .* (submission 1, 4 points in 2 tasks)" "$work/status"
"$atomsim" sweep collect "$work/slurm-out" >/dev/null
cmp "$work/local/results.csv" "$work/slurm-out/results.csv"
cmp "$work/local/results.json" "$work/slurm-out/results.json"

# Re-submitting runs only what is missing: nothing here, then one removed point.
"$atomsim" sweep run "$work/spec.toml" --out "$work/slurm-out" --backend slurm | grep -q "nothing to submit"
rm "$(ls "$work"/slurm-out/points/*.json | head -1)"
"$atomsim" sweep run "$work/spec.toml" --out "$work/slurm-out" --backend slurm --wait | grep -q "1 points in 1 array tasks"
"$atomsim" sweep collect "$work/slurm-out" >/dev/null
cmp "$work/local/results.csv" "$work/slurm-out/results.csv"
echo "slurm and local backends agree: $(($(wc -l < "$work/local/results.csv") - 1)) rows"
