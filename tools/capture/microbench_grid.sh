# Sourced by the microbenchmark capture scripts: the native build, the grid of configurations and
# the dataset manifest, shared so that the timed dataset and the captured
# traces cover the same configurations.
#
# microbench_grid BLOCKS WARPS ITERATIONS PARAMS PRIMITIVES
#   sets `shape` (the runner's shape options) and `configs` ("variant lpp af threshold"):
#   3 active fractions x 2 lanes-per-primitive x 3 variants, plus an SW-S threshold sweep.
# build_microbench SCRIPT OUT BUILD: checks that BUILD holds atomsim-capture
#   (sets `capture`), creates OUT and compiles the native microbenchmark into
#   OUT/.microbench (sets `bin`).
build_microbench() {
  capture=$3/atomsim-capture
  [ -x "$capture" ] || { echo "$1: $capture not found (build the project first)" >&2; exit 1; }
  mkdir -p "$2"
  bin=$2/.microbench
  nvcc -O3 -arch=sm_90 -lineinfo -I"$root" -o "$bin" "$root/workloads/microbench/microbench.cu"
}

microbench_grid() {
  blocks=$1 warps=$2 iterations=$3 params=$4 primitives=$5
  shape="--blocks $blocks --warps-per-block $warps --iterations $iterations --params $params --primitives $primitives"
  configs=()
  local lpp af v thr
  for lpp in 32 1; do
    for af in 1.0 0.5 0.25; do
      for v in baseline swb sws; do configs+=("$v $lpp $af 8"); done
    done
  done
  for thr in 0 4 16 24 32; do configs+=("sws 32 0.5 $thr"); done
}

# write_manifest FILE EXTRA ENTRY...: the manifest of `microbench_grid`'s shape,
# EXTRA a JSON fragment ending in a comma (may be empty), one entry per configuration.
write_manifest() {
  local file=$1 extra=$2
  shift 2
  {
    echo "{\"schema\":\"atomsim.dataset/1\",\"workload\":\"microbench\",$extra"
    echo " \"shape\":{\"blocks\":$blocks,\"warps_per_block\":$warps,\"iterations\":$iterations,\"params\":$params,\"primitives\":$primitives},"
    echo " \"configurations\":["
    (IFS=,; echo "  $*" | sed 's/},{/},\n  {/g')
    echo " ]}"
  } > "$file"
}
