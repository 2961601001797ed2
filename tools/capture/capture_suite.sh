#!/usr/bin/env bash
# The capture regression suite, in one command on a GPU machine: programs of
# the kinds users run, each captured with every pass and its trace checked
# faithful.
#   eager-index-add, compiled-index-add (torch.compile with its default compile
#   workers), graph-index-add (a torch.cuda.CUDAGraph replay),
#   grid-sample-magnified / -minified (F.grid_sample's backward), spawn-index-add
#   (a shell running python, whose index_add_ runs in it and in a multiprocessing
#   spawn worker: the worker's is taken with --process), jax-scatter (jax.jit), cupy-p2g / cupy-p2g-packed (a RawKernel),
#   launch-cluster, launch-cooperative, launch-explicit-graph
#   (cudaLaunchKernelEx with a cluster, cudaLaunchCooperativeKernel, a node of
#   an explicitly built graph of two kernels, whose counts come from Nsight
#   Compute: docs/capture.md).
# Per case, DEST/CASE/ gets the timing and stall passes (timing.json,
# stall.json) and DEST/CASE/trace/ the count, trace and counters passes of the
# same launch (count.json, trace.json, counters.json, the saved join input,
# faithfulness.json; trace.atr and cubins are removed, DEST being for
# committing). Checks per case: every pass succeeds, the passes selected the
# same kernel, graph launches are marked so in every pass, the trace is
# faithful (atomsim trace check). spawn-index-add also checks that a kernel two
# processes launch is refused without --process, and its counters pass (which
# Nsight Compute cannot place among two processes' launches) with it.
# DEST/suite.txt: one line per case with its verdict and each pass's seconds.
#
# Usage: tools/capture/capture_suite.sh CAPTURE_DIR DEST [CASE_REGEX]
#   TRACE_PASSES: the passes of the traced launch (default count,trace,counters).
#   CAPTURE_DIR: an unpacked `make capture-bundle` or a build folder (atomsim-capture,
#   the trace pass and atomsim). Needs python3 with torch, jax and cupy, and nvcc.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: capture_suite.sh CAPTURE_DIR DEST [CASE_REGEX]"
tools=$(cd "${1:?$usage}" && pwd)
dest=${2:?$usage}
only=${3:-.}
capture=$tools/atomsim-capture atomsim=$tools/atomsim
for f in "$capture" "$atomsim"; do [ -x "$f" ] || { echo "capture_suite: $f not found" >&2; exit 1; }; done
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
programs=$root/workloads/capture_suite
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
nvcc -O3 -std=c++17 -arch=sm_90 -I"$root" -o "$bin/launch_apis" "$programs/launch_apis.cu" || exit 1
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1

# name | kernel regex | launch | expects a graph launch | capture options | program
cases=(
  "eager-index-add|indexFuncLargeIndex|1|no||python3 $programs/torch_programs.py eager-index-add"
  "compiled-index-add|triton_.*index_add|1|no||python3 $programs/torch_programs.py compiled-index-add"
  "graph-index-add|indexFuncLargeIndex|2|yes||python3 $programs/torch_programs.py graph-index-add"
  "grid-sample-magnified|grid_sampler_2d_backward|1|no||python3 $programs/torch_programs.py grid-sample-magnified"
  "grid-sample-minified|grid_sampler_2d_backward|1|no||python3 $programs/torch_programs.py grid-sample-minified"
  "spawn-index-add|indexFuncLargeIndex|0|no|--process spawn_main|bash -c 'exec python3 $programs/torch_programs.py spawn-bincount --elements 4194304'"
  "jax-scatter|scatter|1|any||python3 $programs/jax_scatter.py"
  "cupy-p2g|p2g|1|no||python3 $programs/cupy_p2g.py"
  "cupy-p2g-packed|p2g|1|no||python3 $programs/cupy_p2g.py --packed"
  "launch-cluster|histogram|1|no||$bin/launch_apis --mode cluster"
  "launch-cooperative|histogram|1|no||$bin/launch_apis --mode cooperative"
  "launch-explicit-graph|histogram|1|yes||$bin/launch_apis --mode explicit-graph"
)

# The kernel each pass selected, and whether it came from a graph, as one line per pass.
selected_kernels() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    d = json.load(open(path))
    if d["pass"] == "timing":
        print(f'timing {len(d["kernels"])} launches, {sum("graph" in k for k in d["kernels"])} from graphs')
        continue
    k = d["kernels"][0]
    graph = k.get("graph") is not None or k.get("graph_node", False)
    print(f'{d["pass"]} {k["name"][:60]} graph={"yes" if graph else "no"}')
PY
}

: > "$dest/suite.txt"
failures=0
for entry in "${cases[@]}"; do
  IFS='|' read -r name kernel launch graph options program <<<"$entry"
  [[ $name =~ $only ]] || continue
  out=$dest/$name
  rm -rf "$out"
  mkdir -p "$out/trace"
  verdict=ok times=""
  trace_passes=${TRACE_PASSES:-count,trace,counters}
  # Nsight Compute cannot place a launch of one of several processes (checked below).
  [[ $options == *--process* ]] && trace_passes=${trace_passes/,counters/}
  for run in "timing,stall $out" "$trace_passes $out/trace"; do
    read -r passes where <<<"$run"
    if ! eval "\"$capture\" --pass $passes --kernel '$kernel' --launch $launch $options --timeout 300 --keep-join-input \
          --out \"$where\" -- $program" > "$where/program.log" 2> "$where/capture.log"; then
      verdict="FAILED $passes: $(tail -1 "$where/capture.log")"
      break
    fi
    times+=" $(sed -n 's|^atomsim-capture: \([a-z]*\) pass -> .* (\(.*\) s)$|\1 \2|p' "$where/capture.log" | tr '\n' ' ')"
  done
  if [ "$verdict" = ok ]; then
    selected=("$out/timing.json" "$out/stall.json" "$out/trace/trace.json")
    [ -f "$out/trace/count.json" ] && selected+=("$out/trace/count.json")
    kinds=$(selected_kernels "${selected[@]}")
    echo "$kinds" > "$out/selected.txt"
    names=$(echo "$kinds" | grep -v '^timing' | sed 's/^[a-z]* \(.*\) graph=.*/\1/' | sort -u | wc -l)
    [ "$names" -eq 1 ] || verdict="FAILED the passes selected different kernels: $(echo "$kinds" | tr '\n' ';')"
    if [ "$graph" != any ]; then
      bad=$(echo "$kinds" | grep -v '^timing' | grep -vc "graph=$graph")
      [ "$bad" -eq 0 ] || verdict="FAILED graph launch expected: $graph: $(echo "$kinds" | tr '\n' ';')"
    fi
  fi
  if [ "$verdict" = ok ] && [ "$name" = launch-explicit-graph ] &&
     ! python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["kernels"][0].get("counted_by") == "Nsight Compute" else 1)' \
         "$out/trace/count.json"; then
    verdict="FAILED the node of a two-kernel graph was not counted under Nsight Compute"
  elif [ "$verdict" = ok ]; then
    check=$("$atomsim" trace check "$out/trace/trace.atr" --count "$out/trace/count.json" \
            --capture "$out/trace/trace.json" --report "$out/trace/faithfulness.json" 2>&1 | tail -1)
    [[ $check == faithful* ]] || verdict="FAILED trace check: $check"
  fi
  if [ "$verdict" = ok ] && [ "$name" = spawn-index-add ]; then
    # Both processes run index_add_: the stall pass refuses them without
    # --process; the timing pass keeps both.
    p=$out/two-processes
    mkdir -p "$p"
    if eval "\"$capture\" --pass stall --kernel indexFuncLargeIndex --launch 0 --out \"$p\" -- $program" >/dev/null 2>"$p/refused.log"; then
      verdict="FAILED two processes' launches were not refused"
    elif ! grep -q "processes ran selected launches" "$p/refused.log"; then
      verdict="FAILED refusal: $(tail -1 "$p/refused.log")"
    elif eval "\"$capture\" --pass counters --out \"$out/trace\" -- $program" >/dev/null 2>"$p/counters-refused.log" ||
         ! grep -q "numbers launches across processes" "$p/counters-refused.log"; then
      verdict="FAILED the counters pass of a launch of one of two processes: $(tail -1 "$p/counters-refused.log")"
    elif eval "\"$capture\" --pass timing --kernel indexFuncLargeIndex --out \"$p\" -- $program" >/dev/null 2>&1; then
      python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("timing of both:", len(d["processes"]), "processes,", len(d["kernels"]), "launches")' "$p/timing.json" >> "$p/refused.log"
    else
      verdict="FAILED the timing pass of both processes"
    fi
  fi
  rm -f "$out"/trace/trace.atr "$out"/trace/cubin-* "$out"/cubin-*
  [ "$verdict" = ok ] || failures=$((failures + 1))
  printf '%-24s %s |%s\n' "$name" "$verdict" "$times" | tee -a "$dest/suite.txt"
done
echo "capture_suite: $(wc -l < "$dest/suite.txt") cases, $failures failed; results in $dest"
[ "$failures" -eq 0 ]
