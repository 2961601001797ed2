#!/usr/bin/env bash
# Installs the Debian 12 packages atomsim builds with, skipping those present.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libsystemc-dev libfmt-dev
          libcli11-dev libtoml11-dev libzstd-dev nlohmann-json3-dev catch2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
