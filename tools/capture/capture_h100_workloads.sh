#!/usr/bin/env bash
# The full-size workload dataset in one command on a GPU machine. For every
# atomic-heavy kernel of every workload variant, at one launch configuration
# that fills the GPU (at least two full waves of CTAs on an H100; the sizes
# below say which arguments give that, docs/workloads.md the waves):
#   measure  the runner's own timed and checked result (LABEL/native.json: CUDA
#            events, warm-up, medians) and the timing and stall passes
#            (LABEL/timing.json, LABEL/stall.json) of the same arguments;
#   trace    the count, trace and counters passes of the second launch of the
#            kernel (LABEL/trace/: count.json, trace.atr, trace.json,
#            counters.json), two more count passes where the kernel depends on
#            timing (count-again-N.json), and the faithfulness check
#            (trace/faithfulness.json);
#   counters the counters pass alone, into a folder traced before it existed
#            (LABEL/trace/counters.json: Nsight Compute's ADU passes and shared
#            wavefronts of the launch trace/count.json counted);
#   compare  `atomsim compare` of each kernel as soon as it is traced, while the
#            next one is captured (LABEL/compare.{txt,json}: a result survives a
#            run cut short), then the table of all of them, variants against
#            their baselines (DEST/compare.{txt,json,svg}), from those saved
#            comparisons (with PHASES compare alone: simulating every kernel
#            again, all cores at once).
#            DEST/manifest.json gathers every kernel compared in DEST, this run's
#            and earlier ones', so that `atomsim compare --manifest
#            DEST/manifest.json --saved` prints the whole dataset's table from
#            the kernels' own compare.json without their traces.
# Each pass's wall time goes to DEST/times.txt. Traces of full-size kernels
# run to hundreds of MB: compare where they were captured and keep the rest.
#
# Usage: tools/capture/capture_h100_workloads.sh CAPTURE_DIR DEST [FILTER] [PHASES]
#   CAPTURE_DIR: a build folder or an unpacked `make capture-bundle` (atomsim-capture,
#   and atomsim for the trace check and compare); FILTER: a regular expression over
#   names such as splat3d/sws/backward, by default every kernel of the full-size dataset
#   (not the threshold study's, which capture_h100_thresholds.sh names, nor the
#   probe/lds-red/ and probe/atom/ probes');
#   PHASES: comma-separated, default measure,trace,compare.
#   WORKLOADS_BIN, if set, is a folder with the runners already built for sm_90
#   (build/workloads); otherwise they are built here with nvcc. TRACE_BUFFER_MIB
#   sizes the trace pass's device buffer (default 16384, doubled and the pass run
#   again while it fills up: the regime's SW-S needs more). SIM_THREADS: threads
#   each kernel's simulation runs on while the next kernel is captured (default
#   1; `atomsim run --threads`, the results do not depend on it). GPUS: kernels
#   captured at once, each on a GPU of its own (CUDA_VISIBLE_DEVICES 0 to
#   GPUS-1; default 1), each compared on its GPU's turn; give each SIM_THREADS
#   of the cores divided among them. COMPARE_ALSO: more comparisons of each
#   kernel on the same trace, each LABEL=KEY=VALUE[,KEY=VALUE...] (spaces between
#   them), written to LABEL/compare-LABEL.{txt,json} with those `--set`s: a model
#   change tried on the whole dataset at once, against the configuration.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
usage="usage: capture_h100_workloads.sh CAPTURE_DIR DEST [FILTER] [PHASES]"
tools=$(cd "${1:?$usage}" && pwd)
dest=${2:?$usage}
filter=${3:-'^(sort|sparse|mpm|splat3d|splat3d-volume)/'}
phases=,${4:-measure,trace,compare},
capture=$tools/atomsim-capture atomsim=$tools/atomsim
sim_threads=${SIM_THREADS:-1}
for also in ${COMPARE_ALSO:-}; do
  [[ $also =~ ^[A-Za-z0-9._-]+=[^=,]+=[^=,]+(,[^=,]+=[^=,]+)*$ ]] ||
    { echo "capture_h100_workloads: COMPARE_ALSO entry '$also' is not LABEL=KEY=VALUE[,KEY=VALUE...]" >&2; exit 1; }
done
gpus=${GPUS:-1}
[[ $gpus =~ ^[1-9][0-9]*$ ]] || { echo "capture_h100_workloads: GPUS must be a positive number, not '$gpus'" >&2; exit 1; }
[ -x "$capture" ] || { echo "capture_h100_workloads: $capture not found" >&2; exit 1; }
if [[ $phases =~ ,(trace|compare), ]]; then
  [ -x "$atomsim" ] || { echo "capture_h100_workloads: $atomsim not found (needed to check and compare traces)" >&2; exit 1; }
fi
mesh=$root/workloads/splat3d/data/node_modules/bunny/index.js
[ -f "$mesh" ] || { echo "capture_h100_workloads: $mesh not found (run tools/install-deps.sh)" >&2; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
if [ -n "${WORKLOADS_BIN:-}" ]; then
  bin=$(cd "$WORKLOADS_BIN" && pwd)
else
  bin=$(mktemp -d)
  trap 'rm -rf "$bin"' EXIT
  if [[ $phases =~ ,(measure|trace|counters), ]]; then
    for w in sort/onesweep sparse/sparse_grid mpm/mpm splat3d/splat3d microbench/lds_red microbench/atom_return; do
      nvcc -O3 -std=c++17 -arch=sm_90 -lineinfo -I"$root" -DATOMSIM_SPLAT3D_MESH="\"$mesh\"" -o "$bin/$(basename $w)" "$root/workloads/$w.cu"
    done
  fi
fi

# name | runner | kernel (regex over demangled names) | arguments | baseline (another name), if a variant.
# A kernel written PRECEDING~>KERNEL (not '>', which closes a template's arguments) is traced together with the launch of PRECEDING just before it, in
# one trace: simulated first, that launch leaves the caches as KERNEL found them on the GPU, and
# `atomsim compare` compares the trace's last kernel.
# H100 occupancy (registers, threads, shared memory per CTA) gives the CTAs per SM in the comment;
# 132 SMs times that is a wave.
kernels=(
  # 128 threads, 18 registers: 16 CTAs/SM; 2^24+2^20 keys: 4352 CTAs, 2.06 waves
  "sort/keys/histogram|onesweep|onesweep_histogram|--keys 17825792|"
  # 256 threads, 48 registers: 5 CTAs/SM; 5 Mi keys: 1366 CTAs, 2.07 waves
  "sort/keys/scatter|onesweep|onesweep_scatter|--keys 5242880|"
  "sort/pairs-narrow/histogram|onesweep|onesweep_histogram|--keys 17825792 --pairs 1 --distribution narrow|"
  "sort/pairs-narrow/scatter|onesweep|onesweep_scatter|--keys 5242880 --pairs 1 --distribution narrow|"
  # 256 threads: 8 CTAs/SM; 2^20 points: 4096 CTAs, 3.9 waves
  "sparse/baseline/write|sparse_grid|sparse_write|--variant baseline --points 1048576|"
  "sparse/warp/write|sparse_grid|sparse_write|--variant warp --points 1048576|sparse/baseline/write"
  # 8 CTAs/SM; the default 4 Mi points activate 3085 blocks: 2.9 waves
  # traced after the write launch before it, which leaves the L2 as the restriction finds it
  "sparse/baseline/restrict|sparse_grid|sparse_write~>sparse_restrict|--variant baseline|"
  "sparse/warp/restrict|sparse_grid|sparse_write~>sparse_restrict|--variant warp|sparse/baseline/restrict"
  # 128 threads, 71 / 46 registers: 7 / 10 CTAs/SM; grid 128: 438,976 particles, 3430 CTAs, 3.7 / 2.6 waves
  "mpm/3d-baseline/p2g|mpm|mpm_p2g<3,.false>|--dimensions 3 --grid 128 --variant baseline|"
  "mpm/3d-warp/p2g|mpm|mpm_p2g<3,.true>|--dimensions 3 --grid 128 --variant warp|mpm/3d-baseline/p2g"
  # 128 threads, 32 / 38 registers: 16 / 12 CTAs/SM; grid 1280: 589,824 particles, 4608 CTAs, 2.2 / 2.9 waves
  "mpm/2d-baseline/p2g|mpm|mpm_p2g<2,.false>|--dimensions 2 --grid 1280 --variant baseline|"
  "mpm/2d-warp/p2g|mpm|mpm_p2g<2,.true>|--dimensions 2 --grid 1280 --variant warp|mpm/2d-baseline/p2g"
  # 256 threads, 40-48 registers: 5-6 CTAs/SM; 640x640 in 16x16 tiles: 1600 CTAs, 2.02-2.42 waves
  "splat3d/baseline/backward|splat3d|splat_render_backward|--gaussians 100000 --width 640 --height 640 --variant baseline|"
  "splat3d/sws/backward|splat3d|splat_render_backward|--gaussians 100000 --width 640 --height 640 --variant sws|splat3d/baseline/backward"
  "splat3d/swb/backward|splat3d|splat_render_backward|--gaussians 100000 --width 640 --height 640 --variant swb|splat3d/baseline/backward"
  "splat3d/warp/backward|splat3d|splat_render_backward|--gaussians 100000 --width 640 --height 640 --variant warp|splat3d/baseline/backward"
  # The DISTWAR regime (docs/validation.md): training from random points in the scene's volume,
  # large overlapping Gaussians; the same 1600 CTAs.
  "splat3d-volume/baseline/backward|splat3d|splat_render_backward|--init volume --gaussians 10000 --width 640 --height 640 --variant baseline|"
  "splat3d-volume/sws/backward|splat3d|splat_render_backward|--init volume --gaussians 10000 --width 640 --height 640 --variant sws|splat3d-volume/baseline/backward"
  "splat3d-volume/swb/backward|splat3d|splat_render_backward|--init volume --gaussians 10000 --width 640 --height 640 --variant swb|splat3d-volume/baseline/backward"
  "splat3d-volume/warp/backward|splat3d|splat_render_backward|--init volume --gaussians 10000 --width 640 --height 640 --variant warp|splat3d-volume/baseline/backward"
  # The balancing-threshold study (tools/capture/capture_h100_thresholds.sh): DISTWAR's regime at
  # 320x320, 400 CTAs (one wave, 3 per SM), small enough to trace SW-S and SW-B at many thresholds.
  "splat3d-threshold/baseline/backward|splat3d|splat_render_backward|--init volume --gaussians 10000 --width 320 --height 320 --variant baseline|"
)
# Probe of shared loads behind backed-up REDs (workloads/microbench/lds_red.cu):
# 256 threads, 8 CTAs/SM; 2112 CTAs, 2 waves. Not in the default FILTER.
for p in l0-same l1-same l2-same l4-same l8-same l4-distinct; do
  loads=${p%%-*}; loads=${loads#l}; pattern=${p#*-}
  kernels+=("probe/lds-red/$p|lds_red|lds_red<$loads>|--loads $loads --pattern $pattern --blocks 2112 --iterations 32|")
done
# Probe of atomics that return (workloads/microbench/atom_return.cu) against
# the same updates as REDs: 256 threads, 8 CTAs/SM; 2112 CTAs, 2 waves. Not in
# the default FILTER.
for p in red-private1 atom-private1 red-private32 atom-private32 red-hot atom-hot atom-or-hot; do
  kernels+=("probe/atom/$p|atom_return|atom_return|--op ${p%-*} --pattern ${p##*-} --iterations 16|")
done
for t in 1 4 8 12 16 20 24 28 32; do
  for v in sws swb; do
    kernels+=("splat3d-threshold/$v-t$t/backward|splat3d|splat_render_backward|--init volume --gaussians 10000 --width 320 --height 320 --variant $v --threshold $t|splat3d-threshold/baseline/backward")
  done
done
# Kernels whose instruction stream depends on timing (look-back spin,
# activation race; the 3DGS backward of the second training iteration, whose
# Gaussians the first iteration's float atomics summed in a varying order):
# more count passes show which instructions the GPU itself counts differently
# from run to run (`atomsim trace check --count-again`).
timing_dependent='^(sort/.*/scatter|sparse/.*/write|splat3d.*/backward)$'
# Launches under the capture tool: several after a warm-up for timing and
# stalls; the traced launch (the second) for count and trace. The trainer's
# variant check, which launches every variant, is off.
launches() {  # runner, measure|trace
  case $1/$2 in
    mpm/measure) echo "--warmup 1 --steps 10" ;;            mpm/trace) echo "--warmup 1 --steps 1" ;;
    splat3d/measure) echo "--iterations 11 --warmup 0 --check 0" ;; splat3d/trace) echo "--iterations 2 --warmup 0 --check 0" ;;
    */measure) echo "--warmup 1 --repeat 10" ;;             */pair) echo "--warmup 0 --repeat 1" ;;
    *) echo "--warmup 1 --repeat 1" ;;
  esac
}

failures=0
times=$dest/times.txt
touch "$times"
run_capture() {  # name, folder, passes, runner, arguments...: one capture of $kernel; wall times to times.txt
  local name=$1 out=$2 passes=$3 runner=$4 buffer=${TRACE_BUFFER_MIB:-16384}
  shift 4
  mkdir -p "$out"
  # A trace buffer too small for the kernel is doubled and the capture run again, up to 64 GiB.
  until "$capture" --pass "$passes" "${selection[@]}" --timeout 600 --trace-buffer-mib "$buffer" --out "$out" -- \
          "$bin/$runner" "$@" > /dev/null 2> "$out/capture.log"; do
    if grep -q 'the trace buffer filled up' "$out/capture.log" && [ "$buffer" -lt 65536 ]; then
      buffer=$((buffer * 2))
      echo "capture_h100_workloads: $name: trace buffer full, again with $buffer MiB"
      continue
    fi
    echo "capture_h100_workloads: $name: $passes failed: $(tail -1 "$out/capture.log")" >&2
    failures=$((failures + 1))
    return 1
  done
  sed -n "s|^atomsim-capture: \([a-z]*\) pass -> .* (\(.*\))$|$name \1 \2|p" "$out/capture.log" >> "$times"
  rm -f "$out/capture.log" "$out"/cubin-*.cubin "$out"/cubin-*.sass
}

# A traced kernel compared with the configuration, then with each of
# COMPARE_ALSO's overrides, one after another (each on SIM_THREADS threads).
compare_kernel() {  # name, folder
  local name=$1 out=$2 begun also label pair
  # From DEST, so that the comparison names the kernel as the dataset does, not by this machine's path.
  cd "$dest"
  begun=$(date +%s)
  "$atomsim" compare -q "$name" --instructions 8 --threads "$sim_threads" --config "$root/configs/h100.toml" \
    --json "$out/compare.json" > "$out/compare.txt" 2>&1 &&
    echo "$name compare $(( $(date +%s) - begun )) s on $sim_threads threads" >> "$times"
  for also in ${COMPARE_ALSO:-}; do
    label=${also%%=*}
    local sets=() pairs=()
    IFS=, read -ra pairs <<<"${also#*=}"
    for pair in "${pairs[@]}"; do sets+=(--set "$pair"); done
    "$atomsim" compare -q "$name" --instructions 8 --threads "$sim_threads" --config "$root/configs/h100.toml" "${sets[@]}" \
      --json "$out/compare-$label.json" > "$out/compare-$label.txt" 2>&1 ||
      echo "capture_h100_workloads: $name: compare-$label failed: $(tail -1 "$out/compare-$label.txt")" >&2
  done
}

# One kernel's phases. With one GPU the comparison runs in the background
# while the next kernel is captured; a kernel given a GPU of its own compares
# in turn (other kernels hold the other GPUs meanwhile).
capture_kernel() {  # index name runner kernel args (from the kernels table); marks the kernel done in $tally
  local index=$1 name=$2 runner=$3 kernel=$4 args=$5 out n t last verdict again preceding=
  [ "$runner" = splat3d ] && args="$args --mesh $mesh"
  if [[ $kernel == *'~>'* ]]; then preceding=${kernel%%'~>'*}; kernel=${kernel#*'~>'}; fi
  local selection=(--kernel "$kernel" --launch 1)  # run_capture's: the kernel's second launch
  out=$dest/$name
  mkdir -p "$out"
  echo "capture_h100_workloads: $name${CUDA_VISIBLE_DEVICES:+ (GPU $CUDA_VISIBLE_DEVICES)}"
  if [[ $phases == *,measure,* ]]; then
    if ! "$bin/$runner" $args > "$out/native.json"; then
      echo "capture_h100_workloads: $name: the runner failed" >&2; failures=$((failures + 1)); return 0
    fi
    run_capture "$name" "$out" timing,stall "$runner" $args $(launches $runner measure) || return 0
  fi
  if [[ $phases == *,counters,* ]]; then
    run_capture "$name" "$out/trace" counters "$runner" $args $(launches $runner trace) || return 0
  fi
  if [[ $phases == *,trace,* ]] && [ -n "$preceding" ]; then
    # The runner's first iteration traced: the preceding kernel's launch, then the kernel's.
    # The count and counters passes count the kernel's launch alone (a count pass counts
    # one launch), which the check sets beside the trace's last kernel.
    selection=(--kernel "($preceding|$kernel)")
    run_capture "$name" "$out/trace" trace "$runner" $args $(launches $runner pair) || return 0
    selection=(--kernel "$kernel" --launch 0)
    run_capture "$name" "$out/trace/alone" count,counters "$runner" $args $(launches $runner pair) || return 0
    for f in count.json counters.json; do
      if [ -f "$out/trace/alone/$f" ]; then mv "$out/trace/alone/$f" "$out/trace/$f"; fi
    done
    rm -rf "$out/trace/alone"
  elif [[ $phases == *,trace,* ]]; then
    run_capture "$name" "$out/trace" count,trace,counters "$runner" $args $(launches $runner trace) || return 0
  fi
  if [[ $phases == *,trace,* ]]; then
    again=()
    if [[ $name =~ $timing_dependent ]]; then
      for n in 1 2; do
        run_capture "$name" "$out/trace/again" count "$runner" $args $(launches $runner trace) || return 0
        mv "$out/trace/again/count.json" "$out/trace/count-again-$n.json"
        rm -rf "$out/trace/again"
        again+=(--count-again "$out/trace/count-again-$n.json")
      done
    fi
    t=$out/trace
    # The launch compared is the trace's last (those before it set the caches it starts with).
    last=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["kernels"]) - 1)' "$t/trace.json")
    verdict=$("$atomsim" trace check "$t/trace.atr" --kernel "$last" --count "$t/count.json" "${again[@]}" --capture "$t/trace.json" \
              --report "$t/faithfulness.json" 2>&1 | tail -1) || true
    echo "capture_h100_workloads: $name: $verdict"
    [[ $verdict == faithful* ]] || failures=$((failures + 1))
    if [[ $phases == *,compare,* ]] && [ -f "$out/timing.json" ]; then
      compare_kernel "$name" "$out" &
      [ "$gpus" -eq 1 ] || wait
    fi
  fi
  touch "$tally/done-$index"
}

selected=()
for entry in "${kernels[@]}"; do
  IFS='|' read -r name _ <<<"$entry"
  [[ $name =~ $filter ]] && selected+=("$entry")
done
tally=$(mktemp -d)
if [ "$gpus" -eq 1 ]; then
  for i in "${!selected[@]}"; do
    IFS='|' read -r name runner kernel args baseline <<<"${selected[$i]}"
    capture_kernel "$i" "$name" "$runner" "$kernel" "$args"
  done
else
  # A kernel per GPU at a time (CUDA_VISIBLE_DEVICES), each job's failures
  # counted in a file of its own.
  declare -A on_gpu=()
  for i in "${!selected[@]}"; do
    IFS='|' read -r name runner kernel args baseline <<<"${selected[$i]}"
    until [ ${#on_gpu[@]} -lt "$gpus" ]; do
      wait -n || true
      for g in "${!on_gpu[@]}"; do kill -0 "${on_gpu[$g]}" 2>/dev/null || unset "on_gpu[$g]"; done
    done
    for ((g = 0; g < gpus; g++)); do [ -z "${on_gpu[$g]:-}" ] && break; done
    (export CUDA_VISIBLE_DEVICES=$g; failures=0; capture_kernel "$i" "$name" "$runner" "$kernel" "$args"
     echo "$failures" > "$tally/failures-$i") &
    on_gpu[$g]=$!
  done
  wait
  for i in "${!selected[@]}"; do  # a job that died without its count failed
    if [ -f "$tally/failures-$i" ]; then failures=$((failures + $(cat "$tally/failures-$i"))); else failures=$((failures + 1)); fi
  done
fi
wait
# The kernels this run took through every phase asked of it.
manifest=()
for i in "${!selected[@]}"; do
  IFS='|' read -r name runner kernel args baseline <<<"${selected[$i]}"
  if [ -f "$tally/done-$i" ] && [ -f "$dest/$name/timing.json" ] && [ -f "$dest/$name/trace/trace.atr" ]; then
    manifest+=("{\"id\": \"$name\", \"capture\": \"$name\"${baseline:+, \"baseline\": \"$baseline\"}}")
  fi
done
rm -rf "$tally"

if [[ $phases == *,compare,* ]] && [ ${#manifest[@]} -gt 0 ]; then
  # This run's kernels are compared together (a variant whose baseline was filtered
  # out without a speedup); DEST/manifest.json keeps the kernels of earlier runs too,
  # for `atomsim compare --manifest DEST/manifest.json --saved`.
  python3 - "$dest/manifest.json" "$dest/manifest-run.json" "${manifest[@]}" <<'EOF'
import json, os, sys
whole, run = sys.argv[1], sys.argv[2]
kernels = [json.loads(k) for k in sys.argv[3:]]
ids = {k["id"] for k in kernels}
earlier = json.load(open(whole))["kernels"] if os.path.exists(whole) else []
merged = [k for k in earlier if k["id"] not in ids] + kernels
with open(whole, "w") as f: json.dump({"kernels": merged}, f, indent=1)
for k in kernels:
    if k.get("baseline") not in ids: k.pop("baseline", None)
with open(run, "w") as f: json.dump({"kernels": kernels}, f, indent=1)
EOF
  # Kernels traced in this run were each compared as soon as they were traced:
  # their saved comparisons make the table, without simulating them again.
  if [[ $phases == *,trace,* ]]; then how=(--saved); else how=(--instructions 8 --jobs "$(nproc)"); fi
  start=$(date +%s)
  if "$atomsim" compare -q --manifest "$dest/manifest-run.json" "${how[@]}" --config "$root/configs/h100.toml" \
       --json "$dest/compare.json" --plot "$dest/compare.svg" > "$dest/compare.txt"; then
    [ "${how[0]}" = --saved ] || echo "compare $(( $(date +%s) - start )) s for ${#manifest[@]} kernels on $(nproc) cores" >> "$times"
    cat "$dest/compare.txt"
  else
    failures=$((failures + 1))
  fi
  rm -f "$dest/manifest-run.json"
fi
if command -v zstd > /dev/null; then
  "$root/tools/capture/pack_dataset.sh" "$dest"
else
  echo "capture_h100_workloads: zstd not found; run tools/capture/pack_dataset.sh $dest before committing"
fi
echo "capture_h100_workloads: done, $failures failed; results in $dest"
[ "$failures" -eq 0 ]
