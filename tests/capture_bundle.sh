#!/usr/bin/env bash
# The capture bundle needs nothing outside itself but the C library, the C++
# runtime, the CUDA driver and the toolkit: every library its files name is
# either in the bundle (and found there through $ORIGIN) or one of those.
# Usage: capture_bundle.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1 build=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$src/tools/capture/bundle.sh" "$build" "$work/bundle.tar.gz" >/dev/null
mkdir "$work/unpacked"
tar xzf "$work/bundle.tar.gz" -C "$work/unpacked"
dir=$work/unpacked/atomsim-capture
provided='^(libc|libm|libdl|libpthread|librt|libutil|libresolv|libgcc_s|libstdc\+\+|libcuda|libcupti|ld-linux-x86-64)\.so'
status=0
for f in "$dir"/*; do
  [ -f "$f" ] || continue
  [ "$(head -c 4 "$f" | tail -c 3)" = ELF ] || continue
  for lib in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    if [ -f "$dir/$lib" ]; then
      # Found in the bundle, not where the build found it.
      resolved=$(env -u LD_LIBRARY_PATH ldd "$f" | awk -v l="$lib" '$1 == l {print $3}')
      [ "$resolved" = "$dir/$lib" ] || { echo "FAIL: $(basename "$f") resolves $lib to $resolved, not the bundle's copy"; status=1; }
    elif ! [[ $lib =~ $provided ]]; then
      echo "FAIL: $(basename "$f") needs $lib, which is neither in the bundle nor provided by the GPU machine"
      status=1
    fi
  done
done
# An injection library is loaded into the program with nothing of the
# project's beside it: a symbol of the project's it needs but lacks would keep
# it from loading, and every pass would find no CUDA work.
for f in "$dir"/libatomsim_capture_*.so; do
  missing=$(nm -D --undefined-only "$f" | c++filt | grep -o 'atomsim::[^(]*' | sort -u | tr '\n' ' ' || true)
  [ -z "$missing" ] || { echo "FAIL: $(basename "$f") needs the project's $missing, which it does not contain"; status=1; }
done
[ -x "$dir/atomsim-capture" ] || { echo "FAIL: no atomsim-capture in the bundle"; exit 1; }
env -u LD_LIBRARY_PATH "$dir/atomsim-capture" --help >/dev/null || { echo "FAIL: the bundled atomsim-capture does not run"; status=1; }
[ -x "$dir/atomsim" ] || { echo "FAIL: no atomsim in the bundle"; exit 1; }
env -u LD_LIBRARY_PATH "$dir/atomsim" config describe --config "$dir/configs/h100.toml" >/dev/null ||
  { echo "FAIL: the bundled atomsim does not run"; status=1; }
# A bundled name resolves to the bundle's own configs/, wherever it is unpacked
# (marked here by a changed SM count), not to the tree it was built from.
sed -i 's/^sms = [0-9]*/sms = 7/' "$dir/configs/h100.toml"
"$dir/atomsim" gen microbench --out "$work/tiny.trace" --variant baseline --blocks 1 --warps-per-block 1 --iterations 1 >/dev/null
(cd "$work" && env -u LD_LIBRARY_PATH "$dir/atomsim" run --config h100 --trace tiny.trace --no-check --json run.json >/dev/null) ||
  { echo "FAIL: the bundled atomsim cannot run --config h100"; status=1; }
grep -q '"sms": 7' "$work/run.json" ||
  { echo "FAIL: the bundled atomsim's --config h100 did not read the bundle's configs/h100.toml"; status=1; }
[ $status -eq 0 ] && echo "capture bundle: $(ls "$dir" | wc -l) files, self-contained"
exit $status
