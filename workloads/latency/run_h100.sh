#!/usr/bin/env bash
# Builds and runs the latency microbenchmarks on a GPU machine; writes
# OUTDIR/latency.json, loaded.json (memory under load, workloads/latency/loaded.cu) and
# load_spread.json (each load's latency under load, load_spread.cu), shared_banks.json
# (shared memory's bank conflicts and atomics, shared_banks.cu), red_issue.json
# (what limits an SM's REDs and ATOMs, whether a warp's exit waits for them, an
# ATOM's round trip and how long a RED's operands hold its warp, red_issue.cu),
# pending_line.json (an SM's warps loading one line at once, pending_line.cu),
# cta_launch.json (how fast an SM takes in CTAs of each size, cta_launch.cu),
# stores.json (what scattered stores of part of a sector cost, stores.cu) with
# ncu-stores.csv (the L2's and DRAM's counts for each of its points and for the
# radix sort's scatters, keys and pairs, whose stores are of that kind),
# stores-split.json with ncu-stores-split.csv (stores that write a sector in
# eight parts, over windows of 8 MB to 2 GB, with fewer warps, and mixed with
# whole sectors, and the pairs scatter as its timed launches find the L2: what
# the L2 reads and writes back of sectors written in part; `stores_split`,
# which runs these alone) and ncu-stores-split-breakdown.csv (what limits each
# split point); ncu-stores-split-run2..4.csv (`stores_split_again`: DRAM's
# counts of the split points in three more runs of the program),
# dram_mix.json with ncu-dram-mix.csv (DRAM's accesses a nanosecond at mixes of
# random reads and writes of 32, 64 and 128 bytes, from reads alone to writes
# alone, and of REDs to lines no launch touched, dram_mix.cu), and
# dram_mix-32.json with ncu-dram-mix-32.csv (the same with the L2's fetch
# granularity at 32 bytes),
# lds_stores.json (shared loads behind scattered stores, as in a radix sort's
# scatter loop, lds_stores.cu), convergence.json (what WARPSYNC and a divergent
# branch's BSSY/BSYNC add to one warp's loop trip, convergence.cu),
# ncu-match.csv (with latency: the ADU instructions Nsight Compute counts for a
# MATCH.ANY of 1, 2, 8 and 32 distinct values), constants.json (what an SM's
# first reads of a launch's constant bank cost, constants.cu), red_scope.json
# with ncu-red-scope.csv (float REDs of GPU and system scope and Triton's
# acquire-release form, spread, on one line and on one word, in one burst and
# steady, with the L2's counts of each, red_scope.cu),
# the SASS (to check each chain is what it claims) and the clocks. Names after
# OUTDIR run those probes only.
# Usage: workloads/latency/run_h100.sh OUTDIR [PROBE...]
set -euo pipefail
out=${1:?usage: run_h100.sh OUTDIR [PROBE...]}
shift
probes=("$@")
[ ${#probes[@]} -gt 0 ] || probes=(latency loaded load_spread shared_banks red_issue pending_line cta_launch stores lds_stores convergence dram_mix constants red_scope)
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
# Builds a probe, lists its SASS (to check each chain is what it claims) and runs it.
probe() {
  nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$bin/$1" "$here/$1.cu"
  cuobjdump --dump-sass "$bin/$1" > "$out/$1.sass"
  "$bin/$1" | tee "$out/$1.json"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt" 2>&1 || true
for name in "${probes[@]}"; do [[ "$name" == stores_split* ]] || probe "$name"; done
if [[ " ${probes[*]} " == *" pending_line "* ]]; then
  # The L2's read requests from the L1s for each 32-warp point, a metric a run
  # so that one the GPU lacks cannot lose the others.
  for metric in lts__t_requests_srcunit_tex_op_read.sum lts__t_sectors_srcunit_tex_op_read.sum \
                l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_global_op_ld_lookup_miss.sum \
                l1tex__m_xbar2l1tex_read_sectors.sum; do
    ncu --kernel-name regex:pending_loads --csv --metrics "$metric" "$bin/pending_line" ncu | sed -n '/^"ID"/,$p' |
      { [ -s "$out/ncu-pending-line.csv" ] && sed 1d || cat; } >> "$out/ncu-pending-line.csv" || true
  done
fi
if [[ " ${probes[*]} " == *" red_scope "* ]]; then
  # Each point once, after its warm-up launch: how long the busiest slice is
  # busy for its requests, and its atomic unit's input.
  ncu --kernel-name regex:red_scope --csv --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,lts__cycles_elapsed.avg,\
lts__cycles_active.max,lts__cycles_active.avg,lts__t_requests_op_red.max,lts__t_requests_op_red.sum,lts__t_sectors_op_red.max,\
lts__d_atomic_input_cycles_active.max,lts__t_requests_srcunit_ltcfabric.sum "$bin/red_scope" ncu |
    sed -n '/^"ID"/,$p' > "$out/ncu-red-scope.csv" || true
fi
if [[ " ${probes[*]} " == *" stores "* ]]; then
  # Each point launched twice (the second finds the L2 as the first left it, so
  # the caches are not flushed), then the sort's scatters as the capture takes
  # them (the second launch of each, after the histogram).
  stores_metrics=gpu__time_duration.sum,sm__cycles_elapsed.max,lts__cycles_elapsed.avg,lts__cycles_active.avg,lts__cycles_active.max
  stores_metrics+=,lts__t_requests_op_write.sum,lts__t_sectors_op_write.sum,lts__t_requests_op_read.sum,lts__t_sectors_op_read.sum
  stores_metrics+=,lts__t_sectors_lookup_miss.sum,lts__t_requests_srcunit_ltcfabric.sum,dram__sectors_read.sum,dram__sectors_write.sum
  stores_metrics+=,l1tex__m_l1tex2xbar_req_throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sectors.avg.pct_of_peak_sustained_elapsed
  stores_metrics+=,lts__d_sectors.avg.pct_of_peak_sustained_elapsed,lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed
  stores_metrics+=,lts__xbar2lts_cycles_active.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
  nvcc -O3 -std=c++17 -arch=sm_90 -I"$here/../.." -o "$bin/onesweep" "$here/../sort/onesweep.cu"
  { ncu --cache-control none --kernel-name regex:stream_stores --csv --metrics "$stores_metrics" "$bin/stores" ncu | sed -n '/^"ID"/,$p'
    for pairs in 0 1; do
      ncu --kernel-name regex:onesweep_scatter --launch-skip 1 --launch-count 1 --csv --metrics "$stores_metrics" \
        "$bin/onesweep" --keys 5242880 --pairs $pairs --distribution narrow --warmup 1 --repeat 1 | sed -n '/^"ID"/,$p' | sed 1d
    done; } > "$out/ncu-stores.csv" || true
  # What limits the same launches, unit by unit: each metric Nsight Compute's memory throughput is the highest of.
  { ncu --cache-control none --kernel-name regex:stream_stores --csv --metrics breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed \
      "$bin/stores" ncu | sed -n '/^"ID"/,$p'
    ncu --kernel-name regex:onesweep_scatter --launch-skip 1 --launch-count 1 --csv \
      --metrics breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed \
      "$bin/onesweep" --keys 5242880 --pairs 1 --distribution narrow --warmup 1 --repeat 1 | sed -n '/^"ID"/,$p' | sed 1d; } > "$out/ncu-stores-breakdown.csv" || true
fi
if [[ " ${probes[*]} " == *" stores_split "* ]]; then
  [ -x "$bin/stores" ] || nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$bin/stores" "$here/stores.cu"
  cuobjdump --dump-sass "$bin/stores" > "$out/stores-split.sass"
  "$bin/stores" split | tee "$out/stores-split.json"
  # A metric set a run, each small enough for one pass (a replay would find the
  # L2 as the pass before left it): the split points after their clean flush,
  # and the pairs scatter's second launch after its histogram, unflushed, as
  # the timed launches run.
  [ -x "$bin/onesweep" ] || nvcc -O3 -std=c++17 -arch=sm_90 -I"$here/../.." -o "$bin/onesweep" "$here/../sort/onesweep.cu"
  for metrics in gpu__time_duration.sum,sm__cycles_elapsed.max,dram__sectors_read.sum,dram__sectors_write.sum,lts__t_sectors_op_write.sum \
                 lts__t_sectors_op_write_lookup_hit.sum lts__t_sectors_op_write_lookup_miss.sum \
                 lts__t_sectors_op_read_lookup_hit.sum lts__t_sectors_op_read_lookup_miss.sum; do
    ncu --cache-control none --kernel-name regex:split_stores --csv --metrics "$metrics" "$bin/stores" split ncu | sed -n '/^"ID"/,$p' |
      { [ -s "$out/ncu-stores-split.csv" ] && sed 1d || cat; } >> "$out/ncu-stores-split.csv" || true
    ncu --cache-control none --kernel-name regex:onesweep_scatter --launch-skip 1 --launch-count 1 --csv --metrics "$metrics" \
      "$bin/onesweep" --keys 5242880 --pairs 1 --distribution narrow --warmup 1 --repeat 1 | sed -n '/^"ID"/,$p' | sed 1d \
      >> "$out/ncu-stores-split.csv" || true
  done
  # What limits each split point, unit by unit; every pass reruns the whole
  # program, so that each finds the L2 as its flush left it.
  ncu --cache-control none --replay-mode application --kernel-name regex:split_stores --csv \
    --metrics breakdown:gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed "$bin/stores" split ncu |
    sed -n '/^"ID"/,$p' > "$out/ncu-stores-split-breakdown.csv" || true
fi
if [[ " ${probes[*]} " == *" dram_mix "* ]]; then
  # Again with the L2's fetch granularity at 32 bytes (a load that misses reads
  # its sector alone); then DRAM's sectors read and written at each point of
  # both, and the time, for the second launch of each point (after its clean
  # flush, as the timed launches).
  "$bin/dram_mix" 32 | tee "$out/dram_mix-32.json"
  for granularity in "" 32; do
    # A metric set a run, each small enough for one pass (a replay would find
    # the L2 as the pass before left it).
    for metrics in gpu__time_duration.sum,sm__cycles_elapsed.max,dram__sectors_read.sum,dram__sectors_write.sum \
                   lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_srcunit_tex_op_read.sum,l1tex__m_xbar2l1tex_read_sectors.sum; do
      ncu --cache-control none --kernel-name 'regex:mixed_sectors|scattered_reds' --csv --metrics "$metrics" "$bin/dram_mix" ncu $granularity |
        sed -n '/^"ID"/,$p' | { [ -s "$out/ncu-dram-mix${granularity:+-$granularity}.csv" ] && sed 1d || cat; } \
        >> "$out/ncu-dram-mix${granularity:+-$granularity}.csv" || true
    done
  done
fi
if [[ " ${probes[*]} " == *" stores_split_again "* ]]; then
  # The split points' DRAM counts in more runs of the program, each a fresh
  # process whose buffers may lie elsewhere: how far the L2's write-backs near
  # its capacity vary from one run to the next.
  [ -x "$bin/stores" ] || nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$bin/stores" "$here/stores.cu"
  for run in 2 3 4; do
    ncu --cache-control none --kernel-name regex:split_stores --csv \
      --metrics gpu__time_duration.sum,dram__sectors_read.sum,dram__sectors_write.sum,lts__t_sectors_op_write_lookup_miss.sum \
      "$bin/stores" split ncu | sed -n '/^"ID"/,$p' > "$out/ncu-stores-split-run$run.csv" || true
  done
fi
if [[ " ${probes[*]} " == *" latency "* ]]; then
  # What Nsight Compute counts of MATCH.ANY of 1, 2, 8 and 32 distinct values (the
  # chains of one warp and the rate loops of 32): the ADU's instructions, the first
  # launch of each kernel.
  ncu --kernel-name-base mangled --kernel-name regex:'match_chainILi[0-9]+ELi32E|kind_throughputILi5ELi5E' --launch-count 400 \
    --csv --metrics sm__inst_executed_pipe_adu.sum,smsp__inst_executed.sum,sm__mio_pq_read_cycles_active_pipe_adu.sum \
    "$bin/latency" | sed -n '/^"ID"/,$p' |
    awk -F'","' 'NR == 1 || !seen[$5 FS $(NF-2)]++' > "$out/ncu-match.csv" || true
fi
[[ " ${probes[*]} " == *" shared_banks "* ]] || exit 0
# Where part five's REDs go: requests and sectors per L2 slice (Nsight Compute).
ncu --kernel-name regex:red_lines --csv \
  --metrics lts__t_requests_op_red.sum,lts__t_requests_op_red.max,lts__t_requests_op_red.min,lts__t_sectors_op_red.sum,lts__t_sectors_op_red.max,lts__d_atomic_input_cycles_active.max,smsp__inst_executed_op_global_red.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,gpu__time_duration.sum \
  "$bin/shared_banks" | sed -n '/^"ID"/,$p' > "$out/ncu-red-lines.csv"
