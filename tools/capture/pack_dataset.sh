#!/usr/bin/env bash
# Compresses a captured dataset's count passes (count.json, count-again-N.json:
# every instruction's counts, the bulk of a capture's JSON) and saved join
# inputs to FILE.zst, removing FILE, so that datasets stay small enough to
# commit. Every atomsim reader given FILE reads FILE.zst (docs/capture.md).
# Usage: tools/capture/pack_dataset.sh DIR...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 DIR..." >&2; exit 2; }
command -v zstd > /dev/null || { echo "pack_dataset: zstd not found (apt install zstd)" >&2; exit 1; }
for dir in "$@"; do
  [ -d "$dir" ] || { echo "pack_dataset: $dir: not a directory" >&2; exit 1; }
  find "$dir" -type f \( -name count.json -o -name 'count-again-*.json' -o -name 'join-input*.json' \) -print0 |
    xargs -0 -r zstd -q -19 --rm -f
done
