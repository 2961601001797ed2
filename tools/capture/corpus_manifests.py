#!/usr/bin/env python3
"""Writes the corpus's manifests for `atomsim compare --manifest` from
workloads/corpus/corpus.json and the captures present under DATASET
(default traces/datasets/h200/corpus): fit.json and check.json, the kernels
of each half of the family split, and manifest.json, all of them. Each
kernel's baseline is the first captured case of its family and kernel, so
that the table's speedups are those between one kernel's input patterns. Checks that the
committed split is the one its seeded rule gives.

  tools/capture/corpus_manifests.py [--check] [DATASET]

--check writes nothing and fails where a committed manifest differs from
what it would write.
"""
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def half_of(seed, family):
    return "fit" if hashlib.sha256(f"{seed}:{family}".encode()).digest()[0] % 2 == 0 else "check"


def main():
    args = sys.argv[1:]
    check = "--check" in args
    args = [a for a in args if a != "--check"]
    dataset = Path(args[0]) if args else ROOT / "traces/datasets/h200/corpus"
    corpus = json.loads((ROOT / "workloads/corpus/corpus.json").read_text())
    split = corpus["split"]
    for case in corpus["cases"]:
        expected = half_of(split["seed"], case["family"])
        if split["halves"].get(case["family"]) != expected:
            sys.exit(f"corpus_manifests: workloads/corpus/corpus.json: family {case['family']} is in "
                     f"{split['halves'].get(case['family'])}, but its seeded rule puts it in {expected}")
    halves = {"fit": [], "check": []}
    first_of_family = {}
    for case in corpus["cases"]:
        if not any((dataset / case["id"] / f).is_file() for f in ("timing.json", "timing.json.zst")):
            continue
        entry = {"id": case["id"], "capture": case["id"]}
        baseline = first_of_family.setdefault((case["family"], case["kernel"]), case["id"])
        if baseline != case["id"]:
            entry["baseline"] = baseline
        halves[split["halves"][case["family"]]].append(entry)

    stale = []

    def write(name, kernels):
        lines = ",\n".join(" " + json.dumps(k) for k in kernels)
        text = '{"kernels": [\n' + lines + "\n]}\n"
        if not check:
            (dataset / name).write_text(text)
        elif not (dataset / name).is_file() or (dataset / name).read_text() != text:
            stale.append(name)

    write("fit.json", halves["fit"])
    write("check.json", halves["check"])
    write("manifest.json", halves["fit"] + halves["check"])
    if stale:
        sys.exit(f"corpus_manifests: {', '.join(stale)} in {dataset} differ from the captures there "
                 "(run tools/capture/corpus_manifests.py)")
    print(f"corpus_manifests: {len(halves['fit'])} fit and {len(halves['check'])} check kernels in {dataset}")


if __name__ == "__main__":
    main()
