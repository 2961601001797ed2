#!/usr/bin/env bash
# Captures that check the capture tool itself, in one command on a GPU machine:
#  - divergence/KERNEL: trace and count passes of each kernel of
#    workloads/divergence (warps diverging the ways real kernels do), for the
#    faithfulness check (tools/capture/check_traces.sh DEST/divergence);
#  - pytorch/scatter-add-PATTERN: all five passes of the library kernel of a
#    PyTorch program (workloads/pytorch/scatter_add.py, 2^20 elements), the 6th launch, with
#    each pass's wall time in DEST/pytorch/times.txt (the modules' SASS listings, 60 MB for PyTorch's, are not kept).
# CAPTURE_DIR holds atomsim-capture and its libraries (a build folder or an
# unpacked `make capture-bundle`).
#
# Usage: tools/capture/capture_regressions.sh CAPTURE_DIR DIVERGENCE_BINARY DEST
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
capture=${1:?usage: capture_regressions.sh CAPTURE_DIR DIVERGENCE_BINARY DEST}/atomsim-capture
bin=${2:?usage: capture_regressions.sh CAPTURE_DIR DIVERGENCE_BINARY DEST}
dest=${3:?usage: capture_regressions.sh CAPTURE_DIR DIVERGENCE_BINARY DEST}
[ -x "$capture" ] || { echo "capture_regressions: $capture not found" >&2; exit 1; }
failures=0
kernels=(early_exit lane_loops nested partial_atomics sync_under_divergence sparse_loop)
entries=()
for k in "${kernels[@]}"; do
  out=$dest/divergence/$k
  if "$capture" --pass trace,count --kernel "::$k\\(" --launch 1 --timeout 300 --out "$out" -- \
       "$bin" --kernel "$k" --repeat 2 > /dev/null; then
    rm -f "$out"/cubin-*.cubin "$out"/cubin-*.sass
  else
    echo "capture_regressions: divergence/$k failed" >&2; failures=$((failures + 1))
  fi
  entries+=("{\"id\":\"$k\"}")
done
(IFS=,; echo "{\"schema\":\"atomsim.dataset/1\",\"workload\":\"divergence\",\"configurations\":[${entries[*]}]}") \
  > "$dest/divergence/manifest.json"

mkdir -p "$dest/pytorch"
: > "$dest/pytorch/times.txt"
for pattern in random sorted few; do
  out=$dest/pytorch/scatter-add-$pattern
  program=(python3 "$root/workloads/pytorch/scatter_add.py" --pattern "$pattern" --elements 1048576)
  # timing and stall of the launch configuration; count then trace of the same launch (the join uses the counts)
  for run in "timing,stall $out" "count,trace,counters $out/trace"; do
    read -r passes where <<<"$run"
    mkdir -p "$where"
    if "$capture" --pass "$passes" --kernel scatter_gather --launch 5 --timeout 300 --out "$where" -- "${program[@]}" \
         > /dev/null 2> "$where/capture.log"; then
      sed -n "s|^atomsim-capture: \([a-z]*\) pass -> .* (\(.*\))$|$pattern \1 \2|p" "$where/capture.log" >> "$dest/pytorch/times.txt"
      rm -f "$where/capture.log"
    else
      echo "capture_regressions: pytorch/$pattern $passes failed: $(tail -1 "$where/capture.log")" >&2
      failures=$((failures + 1))
    fi
  done
  rm -f "$out"/cubin-*.cubin "$out"/trace/cubin-*.cubin "$out"/cubin-*.sass "$out"/trace/cubin-*.sass
done
cat "$dest/pytorch/times.txt"
echo "capture_regressions: done, $failures failed; results in $dest"
[ "$failures" -eq 0 ]
