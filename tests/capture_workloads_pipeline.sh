#!/usr/bin/env bash
# tools/capture/capture_h100_workloads.sh end to end without a GPU: a stand-in
# for atomsim-capture "captures" the committed PyTorch scatter-add for two
# kernels of the dataset (a baseline and its variant). Checks that each is
# checked faithful and compared as soon as traced (the restriction with the
# write launch before it in its trace), that the run's table comes
# from those saved comparisons with the variant's speedup, and that the
# dataset's manifest keeps the kernels of earlier runs; then the same with
# GPUS=2 (each kernel on a GPU of its own), and with one kernel's capture
# failing (counted, and left out of the run's table); each kernel compared
# again with COMPARE_ALSO's overrides; and a kernel named with template
# arguments traced alone.
# Usage: capture_workloads_pipeline.sh SOURCE_DIR ATOMSIM
set -euo pipefail
root=$1 atomsim=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
src=$root/traces/datasets/h100/regressions/pytorch/scatter-add-random
mkdir -p "$work/cap" "$work/bin"
# The stand-in notes which GPU each pass was given, and fails where FAIL_KERNEL names its folder.
cat > "$work/cap/atomsim-capture" <<STANDIN
#!/usr/bin/env bash
while [ \$# -gt 0 ]; do case \$1 in --pass) pass=\$2; shift 2;; --out) out=\$2; shift 2;; --kernel) kernel=\$2; shift 2;; --) break;; *) shift;; esac; done
mkdir -p "\$out"
echo "\$pass \${CUDA_VISIBLE_DEVICES:-none}" >> "\$out/gpus.txt"
echo "\$pass \$kernel" >> "\$out/kernels.txt"
if [ -n "\${FAIL_KERNEL:-}" ] && [[ \$out == *\$FAIL_KERNEL* ]]; then echo "atomsim-capture: stand-in failure" >&2; exit 1; fi
zstd -dcq "$src/trace/count.json.zst" > "\$out/count.json"
[[ \$pass == *trace* ]] && cp "$src/trace/trace.atr" "$src/trace/trace.json" "\$out/"
echo "atomsim-capture: \${pass%%,*} pass -> \$out (1.0 s)" >&2
STANDIN
chmod +x "$work/cap/atomsim-capture"
ln -s "$atomsim" "$work/cap/atomsim"

run_pipeline() {  # DEST; the environment (GPUS, FAIL_KERNEL) passes on; exit status of the script
  local dest=$1
  for k in baseline warp; do
    mkdir -p "$dest/sparse/$k/restrict"
    cp "$src/timing.json" "$src/stall.json" "$dest/sparse/$k/restrict/"
  done
  echo '{"kernels": [{"id": "earlier/kernel", "capture": "earlier/kernel"}]}' > "$dest/manifest.json"
  WORKLOADS_BIN=$work/bin "$root/tools/capture/capture_h100_workloads.sh" "$work/cap" "$dest" '^sparse/.*/restrict' trace,compare \
    > "$work/log" 2>&1
}
fail() { cat "$work/log"; echo "FAIL: $1"; exit 1; }
check_table() {  # DEST: both kernels traced, checked, compared on their own and tabled from those comparisons
  local dest=$1
  for k in baseline warp; do
    grep -q "sparse/$k/restrict: faithful" "$work/log" || fail "sparse/$k/restrict not checked faithful"
    [ -f "$dest/sparse/$k/restrict/compare.json" ] || fail "sparse/$k/restrict not compared on its own"
    # The restriction is traced after the write launch before it, in one trace.
    grep -qx "trace (sparse_write|sparse_restrict)" "$dest/sparse/$k/restrict/trace/kernels.txt" ||
      fail "sparse/$k/restrict not traced with the write before it"
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
}

COMPARE_ALSO="lookahead-2=gpu.lookahead_cycles=2 two-sets=gpu.lookahead_cycles=2,mio.passing_a_match=16" run_pipeline "$work/one" ||
  fail "the capture script failed"
check_table "$work/one"
grep -q " none$" "$work/one/sparse/warp/restrict/trace/gpus.txt" || fail "one GPU: a capture was pinned to a GPU"
# Each COMPARE_ALSO entry is one more comparison of each kernel, with its overrides.
python3 - "$work/one" <<'PY' || fail "COMPARE_ALSO's comparisons missing or without their overrides"
import json, sys
dest = sys.argv[1]
for k in ("baseline", "warp"):
    for label, sets in (("lookahead-2", ["gpu.lookahead_cycles=2"]),
                        ("two-sets", ["gpu.lookahead_cycles=2", "mio.passing_a_match=16"])):
        doc = json.load(open(f"{dest}/sparse/{k}/restrict/compare-{label}.json"))
        assert doc["overrides"] == sets, (k, label, doc["overrides"])
PY

GPUS=2 run_pipeline "$work/two" || fail "the capture script failed with GPUS=2"
check_table "$work/two"
gpus=$(for k in baseline warp; do sort -u "$work/two/sparse/$k/restrict/trace/gpus.txt" | awk '{print $2}'; done | sort | tr '\n' ' ')
[ "$gpus" = "0 1 " ] || fail "GPUS=2: the two kernels' passes ran on GPUs '$gpus', not one each on 0 and 1"

if FAIL_KERNEL=warp/restrict/trace GPUS=2 run_pipeline "$work/failing"; then fail "a failed capture left the script's status 0"; fi
grep -q "done, 1 failed" "$work/log" || fail "the failed capture was not counted once"
python3 - "$work/failing" <<'PY' || fail "the failed kernel is in the run's table or lost from the manifest"
import json, sys
dest = sys.argv[1]
assert [k["id"] for k in json.load(open(f"{dest}/compare.json"))["kernels"]] == ["sparse/baseline/restrict"]
ids = [k["id"] for k in json.load(open(f"{dest}/manifest.json"))["kernels"]]
assert ids == ["earlier/kernel", "sparse/baseline/restrict"], ids
PY
# A COMPARE_ALSO entry that is not LABEL=KEY=VALUE is refused before anything is captured.
if COMPARE_ALSO="no-value=gpu.lookahead_cycles" run_pipeline "$work/bad-also"; then fail "a malformed COMPARE_ALSO was accepted"; fi
grep -qx "capture_h100_workloads: COMPARE_ALSO entry 'no-value=gpu.lookahead_cycles' is not LABEL=KEY=VALUE\[,KEY=VALUE...\]" "$work/log" ||
  fail "a malformed COMPARE_ALSO was not named in one line"
[ ! -e "$work/bad-also/sparse/baseline/restrict/trace" ] || fail "a malformed COMPARE_ALSO let a capture start"

# A kernel named with template arguments (whose '>' is no preceding kernel's mark) is traced alone, by its name.
mkdir -p "$work/template/mpm/2d-baseline/p2g"
cp "$src/timing.json" "$src/stall.json" "$work/template/mpm/2d-baseline/p2g/"
WORKLOADS_BIN=$work/bin "$root/tools/capture/capture_h100_workloads.sh" "$work/cap" "$work/template" '^mpm/2d-baseline/p2g$' trace \
  > "$work/log" 2>&1 || fail "the capture script failed on a kernel named with template arguments"
grep -qx "count,trace,counters mpm_p2g<2,.false>" "$work/template/mpm/2d-baseline/p2g/trace/kernels.txt" ||
  fail "mpm_p2g<2,.false> was not traced alone by its name"
echo "capture pipeline: traced, checked, compared and tabled without re-simulating, on one GPU and a kernel per GPU"
