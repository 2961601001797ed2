#!/usr/bin/env bash
# PC samples of the latency probe's MIO kernels on a GPU machine: where the
# warps of match_under_shuffles (a MATCH.ANY chain beside 0, 1 or 3 warps of
# shuffles on its sub-core) and sws_reduce (SW-S's peer loop on 1 to 32 warps)
# wait, by pc. Each launch configuration's samples are summed over its launches
# into OUTDIR/mio-stalls.json, which tests/test_sm.cpp compares the model with.
# Usage: workloads/latency/mio_stalls_h100.sh ATOMSIM_CAPTURE OUTDIR
set -euo pipefail
capture=${1:?usage: mio_stalls_h100.sh ATOMSIM_CAPTURE OUTDIR}
out=${2:?usage: mio_stalls_h100.sh ATOMSIM_CAPTURE OUTDIR}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$work/latency" "$here/latency.cu"
"$capture" --pass stall --kernel 'match_under_shuffles|sws_reduce' --sampling-period 5 --out "$work/capture" -- "$work/latency" > "$work/run.log"
python3 - "$work/capture/stall.json" "$out/mio-stalls.json" <<'PY'
import collections, json, sys
capture = json.load(open(sys.argv[1]))
kernels = collections.OrderedDict()
for k in capture["kernels"]:
    e = kernels.setdefault((k["mangled"], k["block"][0]), {"function": k["mangled"], "threads": k["block"][0], "launches": 0,
                                                           "samples": 0, "reasons": collections.Counter(),
                                                           "pcs": collections.defaultdict(collections.Counter)})
    e["launches"] += 1
    for reason, n in k["reasons"].items():
        if not reason.endswith("_not_issued"):
            e["reasons"][reason] += n
            e["samples"] += n
    for pc in k["pcs"]:
        for reason, n in pc["reasons"].items():
            if not reason.endswith("_not_issued"):
                e["pcs"][pc["pc_offset"]][reason] += n
doc = {"device": capture["device"], "clocks": capture["clocks"], "sampling_period_log2_cycles": capture["sampling_period_log2_cycles"],
       "what": "PC samples of the latency probe's match_under_shuffles and sws_reduce kernels "
               "(workloads/latency/latency.cu), each launch configuration's summed over its launches; per pc offset, samples by reason",
       "kernels": [{"function": e["function"], "threads": e["threads"], "launches": e["launches"], "samples": e["samples"],
                    "reasons": dict(e["reasons"].most_common()),
                    "pcs": [{"pc": pc, "reasons": dict(c.most_common())} for pc, c in sorted(e["pcs"].items())]}
                   for e in kernels.values()]}
json.dump(doc, open(sys.argv[2], "w"), separators=(",", ":"))
PY
echo "mio_stalls_h100.sh: $out/mio-stalls.json"
