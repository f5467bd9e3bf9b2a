#!/usr/bin/env python3
"""Predicted vs measured for the CUTLASS corpus on the H100 (docs/performance.md, issue 21).

  tools/score_cutlass.py --pipesim build/verify/pipesim [--corpus build-corpus/cutlass_corpus]
      [--measured docs/runs/cutlass-h100-2026-11-25.txt] [--timing NAME=VALUE]... [-j 2]

Runs `pipesim check KERNEL.ptx --launch LAUNCH --json` for every kernel of the corpus's manifest,
takes its predicted_ns, and prints a Markdown table against the measured medians (the RESULT lines of
run_device.sh), with the mean absolute percentage error and the largest error. --timing is passed to
pipesim (e.g. l2_bytes=0: the model without its L2)."""
import argparse
import json
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def measured(path):
    out = {}
    for line in Path(path).read_text().splitlines():
        if not line.startswith("RESULT kernel="):
            continue
        f = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
        out[(f["kernel"], f["variant"], f["shape"])] = float(f["median_us"])
    return out


def predict(args, corpus, k):
    cmd = [args.pipesim, "check", str(corpus / k["ptx"]), "--launch", str(corpus / k["launch"]), "--json"]
    for t in args.timing:
        cmd += ["--timing", t]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 2:
        raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    j = json.loads(p.stdout)
    r = j["results"][0] if "results" in j else j
    return r["predicted_ns"] / 1000.0, r.get("verdict", "?")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pipesim", required=True)
    ap.add_argument("--corpus", default="build-corpus/cutlass_corpus")
    ap.add_argument("--measured", default="docs/runs/cutlass-h100-2026-11-25.txt")
    ap.add_argument("--timing", action="append", default=[])
    ap.add_argument("-j", type=int, default=2)
    args = ap.parse_args()
    corpus = Path(args.corpus)
    kernels = json.loads((corpus / "manifest.json").read_text())["kernels"]
    meas = measured(args.measured)
    with ThreadPoolExecutor(args.j) as ex:
        preds = list(ex.map(lambda k: predict(args, corpus, k), kernels))
    print("| kernel | M×N×K | predicted µs | H100 µs | error |")
    print("|---|---|---:|---:|---:|")
    errs = []
    for k, (pred, verdict) in zip(kernels, preds):
        shape = "x".join(str(v) for v in k["shape"])
        m = meas.get((k["example"], k["variant"], shape))
        err = (pred / m - 1) * 100 if m else None
        if err is not None:
            errs.append(abs(err))
        name = f'{k["example"][:2]} {k["variant"].replace("_", "-")}'
        print(f'| {name} | {shape.replace("x", "×")} | {pred:.1f} | {m if m else "?"} | '
              f'{"?" if err is None else f"{err:+.0f} %"} |' + ("" if verdict == "ok" else f" ({verdict})"))
    if errs:
        within = sum(e <= 10 for e in errs)
        print(f"\nMAPE {sum(errs) / len(errs):.1f} %, max |error| {max(errs):.0f} %, within 10 %: {within} of {len(errs)}")


if __name__ == "__main__":
    main()
