#!/usr/bin/env bash
# How atomsim-capture gathers a program's processes, with no GPU: a stand-in
# program writes into its process folder what the injection library writes
# there (process.json, launches.json, the selected marker, the pass's result
# or error, the count pass's cubins), in a parent and a child process, and
# the launcher must keep, merge, refuse or explain as docs/capture.md says.
# Usage: capture_processes.sh ATOMSIM_CAPTURE
set -uo pipefail
capture=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

# Writes one process's folder: PID COMMAND SEEN SELECTED [exits-early]
cat > "$work/process.sh" <<'SH'
#!/usr/bin/env bash
set -e
stage=$ATOMSIM_CAPTURE_OUT/.capture-$ATOMSIM_CAPTURE_PASS/$$
if [ -n "${ATOMSIM_CAPTURE_PROCESS:-}" ] && ! [[ "$1" =~ $ATOMSIM_CAPTURE_PROCESS ]]; then exit 0; fi
mkdir -p "$stage"
echo "{\"pid\": $$, \"parent\": $PPID, \"command\": \"$1\"}" > "$stage/process.json"
[ "$3" -gt 0 ] && echo selected > "$stage/selected"
[ "${4:-}" = exits-early ] && exit 0
echo "{\"seen\": $2, \"matching\": $3, \"selected\": $3}" > "$stage/launches.json"
[ "$3" -gt 0 ] || exit 0
start=$((1000 + $$))
echo "{\"pass\": \"$ATOMSIM_CAPTURE_PASS\", \"selection\": {\"launches_seen\": $2, \"launches_selected\": $3}, \"cubins\": [], \"kernels\": [{\"launch\": 0, \"name\": \"k\", \"mangled\": \"k\", \"pcs\": [], \"start_ns\": $start}]}" \
  > "$stage/$ATOMSIM_CAPTURE_PASS.json"
echo cubin > "$stage/cubin-$$.cubin"
SH
chmod +x "$work/process.sh"
# A parent that launches PARENT_SELECTED kernels and a child that launches CHILD_SELECTED.
cat > "$work/program.sh" <<SH
#!/usr/bin/env bash
"$work/process.sh" "python3 train.py" 3 \${PARENT_SELECTED:-1} \${PARENT_EXIT:-}
"$work/process.sh" "python3 -c spawn_main worker" 2 \${CHILD_SELECTED:-1}
SH
chmod +x "$work/program.sh"
run() { "$capture" "$@" -- "$work/program.sh" 2> "$work/err"; }

# The timing pass keeps every process's launches, each with its process.
if run --pass timing --out "$work/t"; then
  python3 - "$work/t/timing.json" <<'PY' || fail "timing: $(cat "$work/err")"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["processes"]) == 2, d
assert sorted(k["process"] for k in d["kernels"]) == [0, 1], d
assert d["selection"]["launches_seen"] == 5, d
assert d["selection"]["launches_selected"] == 2, d
PY
  [ -d "$work/t/.capture-timing" ] && fail "timing: the process folders were left behind"
else
  fail "timing pass refused two processes: $(cat "$work/err")"
fi
# Two processes with selected launches: refused, naming both.
run --pass stall --out "$work/s" && fail "stall of two processes was not refused"
grep -q "2 processes ran selected launches: process [0-9]* (python3 train.py), process [0-9]* (python3 -c spawn_main worker); choose one with --process" "$work/err" ||
  fail "refusal: $(cat "$work/err")"
[ -f "$work/s/stall.json" ] && fail "a refused pass left stall.json"
# --process picks one; its result names it, and its other files come along.
run --pass stall --process spawn_main --out "$work/p" || fail "--process: $(cat "$work/err")"
grep -q '"command": "python3 -c spawn_main worker"' "$work/p/stall.json" 2>/dev/null || fail "--process kept another process"
ls "$work/p"/cubin-*.cubin >/dev/null 2>&1 || fail "--process did not bring the process's files"
# Only the child selects: it is kept without --process; the parent never touches the outputs.
PARENT_SELECTED=0 run --pass count --out "$work/c" || fail "one selecting process: $(cat "$work/err")"
[ "$(ls "$work/c"/cubin-*.cubin 2>/dev/null | wc -l)" -eq 1 ] || fail "the parent's files reached the outputs"
# The parent launched 3 kernels: Nsight Compute could not place the child's
# launch among both processes', so the counters pass refuses it.
grep -q '"launches_in_other_processes": 3' "$work/c/count.json" || fail "count.json does not say the parent launched 3 kernels"
run --pass counters --out "$work/c" && fail "the counters pass of a child's launch was not refused"
grep -q "Nsight Compute numbers launches across processes" "$work/err" || fail "counters refusal: $(cat "$work/err")"
# Nothing selected anywhere: the reason counts every process's launches.
PARENT_SELECTED=0 CHILD_SELECTED=0 run --pass stall --kernel k --out "$work/n" && fail "nothing selected was not an error"
grep -q "no kernel matching 'k' among 5 launches" "$work/err" || fail "nothing selected: $(cat "$work/err")"
# A selecting process that ends without its exit handlers is named.
PARENT_EXIT=exits-early CHILD_SELECTED=0 run --pass stall --out "$work/e" && fail "an early exit was not an error"
grep -q "process [0-9]* (python3 train.py) ended without running its exit handlers" "$work/err" ||
  fail "early exit: $(cat "$work/err")"
[ $status -eq 0 ] && echo "capture processes: kept, merged, refused and explained as documented"
exit $status
