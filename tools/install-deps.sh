#!/usr/bin/env bash
# Installs what atomsim builds with, skipping what is present: Debian 12
# packages, and the npm package `bunny` (the scanned mesh the 3D Gaussian
# splatting workload trains on) into workloads/splat3d/data/node_modules.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
packages=(build-essential cmake ninja-build pkg-config libsystemc-dev libfmt-dev
          libcli11-dev libtoml11-dev libzstd-dev nlohmann-json3-dev catch2)
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
if [ ! -f "$root/workloads/splat3d/data/node_modules/bunny/index.js" ]; then
  echo "installing: npm package bunny"
  npm install --prefix "$root/workloads/splat3d/data" --no-audit --no-fund --silent >/dev/null
fi
