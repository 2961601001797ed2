#!/usr/bin/env bash
# The faithfulness check over a folder of captured traces (as
# capture_microbench_traces.sh writes): for every configuration listed in
# DIR/manifest.json, `atomsim trace check` of its trace against its count pass
# and atomic replay (and its further count passes, count-again-N.json, where
# the kernel depends on timing), with the report written beside it as
# faithfulness.json.
# Prints one verdict per configuration; exits 1 if any is missing or not faithful.
#
# Usage: tools/capture/check_traces.sh DIR [ATOMSIM_BINARY]
set -euo pipefail
dir=${1:?usage: check_traces.sh DIR [ATOMSIM_BINARY]}
atomsim=${2:-build/atomsim}
[ -x "$atomsim" ] || { echo "check_traces: $atomsim not found (build the project first)" >&2; exit 1; }
[ -f "$dir/manifest.json" ] || { echo "check_traces: $dir/manifest.json not found" >&2; exit 1; }
ids=$(python3 -c 'import json,sys; print("\n".join(c["id"] for c in json.load(open(sys.argv[1]))["configurations"]))' "$dir/manifest.json")
bad=0
for id in $ids; do
  d=$dir/$id
  if [ ! -f "$d/trace.atr" ]; then
    echo "$id: no trace"; bad=$((bad + 1)); continue
  fi
  again=()
  for f in "$d"/count-again-*.json "$d"/count-again-*.json.zst; do [ -f "$f" ] && again+=(--count-again "$f"); done
  if verdict=$("$atomsim" trace check "$d/trace.atr" --count "$d/count.json" "${again[@]}" --capture "$d/trace.json" \
               --report "$d/faithfulness.json" 2>&1 | tail -1) && [[ $verdict == faithful* ]]; then
    echo "$id: $verdict"
  else
    echo "$id: $verdict"; bad=$((bad + 1))
  fi
done
echo "check_traces: $(echo "$ids" | wc -l) configurations, $bad not faithful"
[ "$bad" -eq 0 ]
