#!/usr/bin/env bash
# What reading a capture through Accel-Sim's trace format costs in accuracy:
# each kernel of a compare manifest is simulated from its own trace and from
# that trace exported as Accel-Sim traces and imported again (no control
# bits, predicate or uniform registers, or atomic operands), both against the
# same measurement. Prints one line per kernel (measured cycles, both
# simulations' errors, the round trip's change in simulated cycles) and the
# mean |change|.
# Usage: tools/bench/accelsim_roundtrip.sh ATOMSIM MANIFEST [compare options: --config, --set ...]
set -euo pipefail
atomsim=$(realpath "${1:?usage: accelsim_roundtrip.sh ATOMSIM MANIFEST [compare options]}")
manifest=$(realpath "${2:?usage: accelsim_roundtrip.sh ATOMSIM MANIFEST [compare options]}")
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dataset=$(dirname "$manifest")
# The round-tripped copy: every capture file linked, the trace replaced.
python3 - "$manifest" "$work/roundtrip" <<'PY'
import json, os, sys
manifest, out = sys.argv[1], sys.argv[2]
base = os.path.dirname(manifest)
for k in json.load(open(manifest))["kernels"]:
    src = os.path.join(base, k["capture"])
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        os.makedirs(os.path.join(out, k["capture"], rel), exist_ok=True)
        for f in files:
            if f != "trace.atr":
                os.symlink(os.path.abspath(os.path.join(root, f)), os.path.join(out, k["capture"], rel, f))
os.symlink(os.path.abspath(manifest), os.path.join(out, os.path.basename(manifest)))
PY
python3 -c 'import json,sys; [print(k["capture"]) for k in json.load(open(sys.argv[1]))["kernels"]]' "$manifest" |
while read -r capture; do
  "$atomsim" trace export "$dataset/$capture/trace/trace.atr" --format accelsim --out "$work/accelsim/$capture" >/dev/null
  "$atomsim" trace import "$work/accelsim/$capture/kernelslist.g" --out "$work/roundtrip/$capture/trace/trace.atr" >/dev/null
  rm -rf "$work/accelsim/$capture"
done
"$atomsim" compare --manifest "$manifest" -q --json "$work/original.json" "$@" >/dev/null
"$atomsim" compare --manifest "$work/roundtrip/$(basename "$manifest")" -q --json "$work/roundtrip.json" "$@" >/dev/null
python3 - "$work/original.json" "$work/roundtrip.json" <<'PY'
import json, sys
a, b = (json.load(open(p))["kernels"] for p in sys.argv[1:3])
print(f"{'kernel':<34}{'meas cyc':>10}{'sim cyc':>10}{'error':>9}{'via Accel-Sim':>15}{'error':>9}{'change':>9}")
changes = []
for x, y in zip(a, b):
    sim_x, sim_y = x["simulated"]["cycles"], y["simulated"]["cycles"]
    change = sim_y / sim_x - 1
    changes.append(abs(change))
    print(f"{x['id']:<34}{x['measured']['cycles']:>10.0f}{sim_x:>10}{100 * x['cycle_error']:>+8.1f}%"
          f"{sim_y:>15}{100 * y['cycle_error']:>+8.1f}%{100 * change:>+8.2f}%")
print(f"mean |change| {100 * sum(changes) / len(changes):.2f}%, worst {100 * max(changes):.2f}% over {len(changes)} kernels")
PY
