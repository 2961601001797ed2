#!/usr/bin/env bash
# One-call probe on a GPU machine: the red_requests patterns from every SM as
# ATOMs (old values summed) and as REDs under Nsight Compute, with the
# counters of each link a request and its reply take: the SMs' ports
# (l1tex__m_l1tex2xbar_req), the crossbar into and out of the slices
# (lts__xbar2lts, lts__lts2xbar), the GPC-side request coalescers (lrc__),
# the link between the partitions into a slice and into an LTC (two slices:
# lts__ltcfabric2lts, lts__ltcfabric2ltc) and the slices' atomic units.
# Writes OUTDIR/ncu-path-atom.csv, ncu-path-red.csv, patterns.json, device.txt.
# Usage: workloads/microbench/red_requests_path.sh OUTDIR [BLOCKS] [THREADS]
set -euo pipefail
out=${1:?usage: red_requests_path.sh OUTDIR [BLOCKS] [THREADS]}
blocks=${2:-528}
threads=${3:-256}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
nvcc -O3 -arch=sm_90 -I"$here/../.." -o "$out/red_requests" "$here/red_requests.cu"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv > "$out/device.txt"
metrics=lts__cycles_elapsed.avg,sm__cycles_elapsed.avg,lts__t_requests_srcunit_ltcfabric.sum,l1tex__m_xbar2l1tex_read_sectors.sum,l1tex__m_xbar2l1tex_read_bytes_mem_global_op_atom.sum,l1tex__lsu_writeback_active.avg
for m in lts__lts2xbar_cycles_active lts__xbar2lts_cycles_active lts__ltcfabric2lts_cycles_active lts__ltcfabric2lts_cycles_stalled \
         lts__ltcfabric2ltc_cycles_active l1tex__m_l1tex2xbar_req_cycles_active l1tex__m_l1tex2xbar_req_cycles_stalled \
         lrc__xbar2lrc_cycles_active lrc__lrc2xbar_cycles_active lts__d_atomic_input_cycles_active; do
  metrics+=",$m.avg,$m.max"
done
for op in atom red; do
  ncu --clock-control none --metrics "$metrics" --csv --page raw "$out/red_requests" --blocks "$blocks" --threads "$threads" --op "$op" 2>&1 |
    grep -v '^==' > "$out/ncu-path-$op.csv"
done
"$out/red_requests" --blocks "$blocks" --threads "$threads" --op atom > "$out/patterns.json"
echo "probe done"
