#!/usr/bin/env bash
# One-call probe of the native microbenchmark on a GPU machine: builds it for sm_90,
# saves its SASS, times a grid of configurations (warm-up + median of repeats) and
# collects Nsight Compute counters that calibrate the atomic path.
# Usage: workloads/microbench/h100_probe.sh OUTDIR
set -euo pipefail
out=${1:?usage: h100_probe.sh OUTDIR}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
bin=$out/microbench
nvcc -O3 -arch=sm_90 -lineinfo -I"$here/../.." -o "$bin" "$here/microbench.cu"
cuobjdump --dump-sass "$bin" > "$out/microbench.sass"
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } > "$out/device.txt" 2>&1 || true

common="--blocks 528 --warps-per-block 8 --iterations 64 --params 9 --primitives 65536"
: > "$out/timing.jsonl"
for lpp in 32 8 1; do
  for af in 1.0 0.5 0.25; do
    for v in baseline swb sws; do
      "$bin" $common --variant $v --lanes-per-primitive $lpp --active-fraction $af --threshold 8 >> "$out/timing.jsonl"
    done
  done
done
for thr in 0 4 8 16 24 32; do
  "$bin" $common --variant sws --lanes-per-primitive 32 --active-fraction 0.5 --threshold $thr >> "$out/timing.jsonl"
done

metrics=smsp__inst_executed.sum,smsp__inst_executed_op_global_red.sum,lts__t_requests_op_red.sum,lts__t_sectors_op_red.sum,lts__t_requests_srcunit_tex_op_red.sum,lts__cycles_elapsed.sum,lts__cycles_elapsed.avg,lts__cycles_elapsed.avg.per_second,sm__cycles_elapsed.avg,sm__cycles_elapsed.avg.per_second,dram__cycles_elapsed.avg.per_second,lts__t_sectors.sum,l1tex__t_requests_pipe_lsu_mem_global_op_red.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_red.sum,l1tex__m_xbar2l1tex_read_sectors.sum,smsp__cycles_active.avg
: > "$out/ncu.csv"
for lpp in 32 1; do
  for v in baseline swb sws; do
    ncu --clock-control none --metrics $metrics --section WarpStateStats --csv --page raw \
      "$bin" $common --variant $v --lanes-per-primitive $lpp --active-fraction 1.0 --threshold 8 --warmup 0 --repeat 1 \
      2>/dev/null | grep -v '^==' | sed "s/^/$v,$lpp,/" >> "$out/ncu.csv" || echo "ncu failed for $v $lpp" >> "$out/ncu.csv"
  done
done
echo "probe done"; tail -n +1 "$out/device.txt"
python3 - "$out/timing.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    d=json.loads(l); print(f"{d['variant']:8} lpp={d['lanes_per_primitive']:2} af={d['active_fraction']:<4} thr={d['threshold']:2} {d['median_ms']:.4f} ms ok={d['correct']}")
PY
