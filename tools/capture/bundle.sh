#!/usr/bin/env bash
# Packs the capture tool so that it runs where it is unpacked on a GPU machine
# that has only a driver and a CUDA toolkit: atomsim-capture, its injection
# libraries, the trace pass's patches, the simulator (atomsim, with configs/,
# so that captures too large to carry away are compared where they were made),
# and every shared library they need that is not the C library, libstdc++, the
# CUDA driver or part of the toolkit. They find each other through RUNPATH $ORIGIN.
#
# Usage: tools/capture/bundle.sh BUILD_DIR OUT.tar.gz
set -euo pipefail
build=${1:?usage: bundle.sh BUILD_DIR OUT.tar.gz}
out=${2:?usage: bundle.sh BUILD_DIR OUT.tar.gz}
root=$(cd "$(dirname "$0")/../.." && pwd)
for f in atomsim-capture libatomsim_capture_cupti.so; do
  [ -f "$build/$f" ] || { echo "bundle: $build/$f not built (the CUDA toolkit with CUPTI is needed to build it)" >&2; exit 1; }
done
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
name=atomsim-capture
mkdir "$stage/$name"
files=(atomsim-capture libatomsim_capture_cupti.so)
if [ -f "$build/libatomsim_capture_sanitizer.so" ]; then
  files+=(libatomsim_capture_sanitizer.so atomsim_trace_patches.fatbin)
else
  echo "bundle: the trace pass was not built (no Compute Sanitizer headers); the bundle has the timing, stall and count passes"
fi
files+=(atomsim)
for f in "${files[@]}"; do cp "$build/$f" "$stage/$name/"; done
cp "$root/docs/capture.md" "$stage/$name/README.md"
cp -r "$root/configs" "$stage/$name/configs"

# What the target machine provides: the C library, the C++ runtime, the driver, the toolkit.
provided='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libutil|libresolv|libgcc_s|libstdc\+\+|libcuda|libnvidia-|libcupti|libcudart|libnvrtc|libsanitizer-public)\.'
copy_needs() {  # every library an ELF file needs that is not provided, copied beside it
  ldd "$1" | while read -r lib arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [[ $lib =~ $provided ]] && continue
    [ "$path" = "not" ] && { echo "bundle: $1 needs $lib, which is not installed here" >&2; exit 1; }
    [ -f "$stage/$name/$lib" ] && continue
    cp -L "$path" "$stage/$name/$lib"
    copy_needs "$stage/$name/$lib"
  done
}
for f in "$stage/$name"/*; do
  [ -f "$f" ] || continue
  if [ "$(head -c 4 "$f" | tail -c 3)" = ELF ]; then copy_needs "$f"; fi
done
tmp="$out.partial"
tar czf "$tmp" -C "$stage" "$name"
mv "$tmp" "$out"
echo "bundle: $out ($(ls "$stage/$name" | wc -l) files: $(ls "$stage/$name" | tr '\n' ' '))"
