#!/usr/bin/env bash
# Installs what atomsim builds with, skipping what is present: Debian 12
# packages (clang for the fuzz targets, Slurm and munge for the sweep's Slurm backend and its test), and the npm package `bunny` (the scanned mesh the 3D Gaussian
# splatting workload trains on) into workloads/splat3d/data/node_modules.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
packages=(build-essential cmake ninja-build pkg-config libsystemc-dev libfmt-dev
          libcli11-dev libtoml11-dev libzstd-dev zstd liblzma-dev nlohmann-json3-dev catch2
          libboost-dev libboost-filesystem-dev libxxhash-dev
          clang libclang-rt-14-dev)  # clang and libFuzzer: `make fuzz`
# Slurm's Debian packages recommend dozens of plugins that a single-node test
# cluster does not need.
lean_packages=(slurmctld slurmd slurm-client munge)
command -v npm >/dev/null || packages+=(npm)
missing_of() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
mapfile -t missing_lean < <(missing_of "${lean_packages[@]}")
if [ ${#missing[@]} -gt 0 ] || [ ${#missing_lean[@]} -gt 0 ]; then
  echo "installing: ${missing[*]} ${missing_lean[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  [ ${#missing[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
  [ ${#missing_lean[@]} -eq 0 ] ||
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing_lean[@]}" >/dev/null
fi
if [ ! -f "$root/workloads/splat3d/data/node_modules/bunny/index.js" ]; then
  echo "installing: npm package bunny"
  npm install --prefix "$root/workloads/splat3d/data" --no-audit --no-fund --silent >/dev/null
fi
