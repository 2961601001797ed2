#!/usr/bin/env bash
# tools/capture/capture_h100_workloads.sh end to end without a GPU: a stand-in
# for atomsim-capture "captures" the committed PyTorch scatter-add for two
# kernels of the dataset (a baseline and its variant). Checks that each is
# checked faithful and compared as soon as traced, that the run's table comes
# from those saved comparisons with the variant's speedup, and that the
# dataset's manifest keeps the kernels of earlier runs.
# Usage: capture_workloads_pipeline.sh SOURCE_DIR ATOMSIM
set -euo pipefail
root=$1 atomsim=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$root/traces/h100/regressions/pytorch/scatter-add-random
mkdir -p "$work/cap" "$work/bin"
cat > "$work/cap/atomsim-capture" <<STANDIN
#!/usr/bin/env bash
while [ \$# -gt 0 ]; do case \$1 in --pass) pass=\$2; shift 2;; --out) out=\$2; shift 2;; --) break;; *) shift;; esac; done
mkdir -p "\$out"
zstd -dcq "$src/trace/count.json.zst" > "\$out/count.json"
[[ \$pass == *trace* ]] && cp "$src/trace/trace.atr" "$src/trace/trace.json" "\$out/"
echo "atomsim-capture: \${pass%%,*} pass -> \$out (1.0 s)" >&2
STANDIN
chmod +x "$work/cap/atomsim-capture"
ln -s "$atomsim" "$work/cap/atomsim"
dest=$work/dest
for k in baseline warp; do
  mkdir -p "$dest/sparse/$k/restrict"
  cp "$src/timing.json" "$src/stall.json" "$dest/sparse/$k/restrict/"
done
echo '{"kernels": [{"id": "earlier/kernel", "capture": "earlier/kernel"}]}' > "$dest/manifest.json"
WORKLOADS_BIN=$work/bin "$root/tools/capture/capture_h100_workloads.sh" "$work/cap" "$dest" '^sparse/.*/restrict' trace,compare > "$work/log" 2>&1 ||
  { cat "$work/log"; echo "FAIL: the capture script failed"; exit 1; }
fail() { cat "$work/log"; echo "FAIL: $1"; exit 1; }
for k in baseline warp; do
  grep -q "sparse/$k/restrict: faithful" "$work/log" || fail "sparse/$k/restrict not checked faithful"
  [ -f "$dest/sparse/$k/restrict/compare.json" ] || fail "sparse/$k/restrict not compared on its own"
done
grep -q "not simulated now" "$dest/compare.txt" || fail "the run's table was simulated again"
python3 - "$dest" <<'PY' || fail "table or manifest wrong"
import json, sys
dest = sys.argv[1]
rows = {k["id"]: k for k in json.load(open(f"{dest}/compare.json"))["kernels"]}
own = json.load(open(f"{dest}/sparse/warp/restrict/compare.json"))["kernels"][0]
assert rows["sparse/warp/restrict"]["simulated"]["cycles"] == own["simulated"]["cycles"]
assert abs(rows["sparse/warp/restrict"]["measured"]["speedup"] - 1.0) < 1e-9  # the same capture twice
ids = [k["id"] for k in json.load(open(f"{dest}/manifest.json"))["kernels"]]
assert ids == ["earlier/kernel", "sparse/baseline/restrict", "sparse/warp/restrict"], ids
PY
[ ! -e "$dest/manifest-run.json" ] || fail "the run's manifest was left behind"
echo "capture pipeline: traced, checked, compared and tabled without re-simulating"
