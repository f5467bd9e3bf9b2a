#!/usr/bin/env python3
"""Predicted vs measured for the CUTLASS corpus on the H100 (docs/performance.md, issue 21).

  tools/score_cutlass.py --pipesim build/verify/pipesim [--corpus build-corpus/cutlass_corpus]
      [--measured RESULTS.txt] [--shape MxNxK]... [--timing NAME=VALUE]... [-j 2] [--body]

Runs `pipesim check KERNEL.ptx --launch LAUNCH --json` for every kernel of the corpus's manifest,
takes its predicted_ns, and prints a Markdown table against the measured medians (the RESULT lines of
run_device.sh: --measured, e.g. the device_results.txt a run brought back; rows it has no timing for show
"?" and are counted apart), with the mean absolute percentage error and the largest error, over all rows
and per shape (--shape: those shapes only). The measured medians
are CUDA-event times of each launch, so the prediction compared is predicted_event_ns (the body plus the
architecture's launch floor); --body compares the body alone. --timing is passed to pipesim (e.g.
l2_bytes=0: the model without its L2)."""
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
        if f.get("verdict") == "ok" and "median_us" in f:  # a hang, error or skipped run timed nothing
            out[(f["kernel"], f["variant"], f["shape"])] = float(f["median_us"])
    return out


def predict(args, corpus, k):
    # No wall-clock budget: on a loaded machine the largest kernels take over a minute, and a stopped run
    # predicts nothing.
    cmd = [args.pipesim, "check", str(corpus / k["ptx"]), "--launch", str(corpus / k["launch"]), "--json",
           "--max-seconds", "0"]
    for t in args.timing:
        cmd += ["--timing", t]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 2:
        raise SystemExit(f"{' '.join(cmd)}: {p.stderr.strip()}")
    j = json.loads(p.stdout)
    r = j["results"][0] if "results" in j else j
    # The H100 times each launch between CUDA events: the prediction that compares is the body plus the
    # launch floor (predicted_event_ns; docs/calibration.md), unless --body asks for the body alone.
    ns = r["predicted_ns"] if args.body or r.get("predicted_event_ns") is None else r["predicted_event_ns"]
    return ns / 1000.0, r.get("verdict", "?")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pipesim", required=True)
    ap.add_argument("--corpus", default="build-corpus/cutlass_corpus")
    ap.add_argument("--measured", default="docs/runs/cutlass-h100-2026-11-25.txt")
    ap.add_argument("--shape", action="append", default=[], help="MxNxK: only these shapes (default: all)")
    ap.add_argument("--timing", action="append", default=[])
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--body", action="store_true",
                    help="compare the predicted body (predicted_ns) without the launch floor")
    args = ap.parse_args()
    corpus = Path(args.corpus)
    kernels = json.loads((corpus / "manifest.json").read_text())["kernels"]
    if args.shape:
        kernels = [k for k in kernels if "x".join(str(v) for v in k["shape"]) in args.shape]
        if not kernels:
            ap.error(f"no kernel of {corpus / 'manifest.json'} has shape {', '.join(args.shape)}")  # exit 2
    meas = measured(args.measured)
    with ThreadPoolExecutor(args.j) as ex:
        preds = list(ex.map(lambda k: predict(args, corpus, k), kernels))
    print("| kernel | M×N×K | predicted µs | H100 µs | error |")
    print("|---|---|---:|---:|---:|")
    errs = []
    by_shape = {}
    for k, (pred, verdict) in zip(kernels, preds):
        shape = "x".join(str(v) for v in k["shape"])
        m = meas.get((k["example"], k["variant"], shape))
        err = (pred / m - 1) * 100 if m else None
        by_shape.setdefault(shape, [])
        if err is not None:
            errs.append(abs(err))
            by_shape[shape].append(err)
        name = f'{k["example"][:2]} {k["variant"].replace("_", "-")}'
        print(f'| {name} | {shape.replace("x", "×")} | {pred:.1f} | {m if m else "?"} | '
              f'{"?" if err is None else f"{err:+.0f} %"} |' + ("" if verdict == "ok" else f" ({verdict})"))
    print()
    for shape, es in by_shape.items():  # signed mean too: a shape that is all fast or all slow shows
        if es:
            a = [abs(e) for e in es]
            print(f"{shape.replace('x', '×')}: MAPE {sum(a) / len(a):.1f} %, mean {sum(es) / len(es):+.1f} %, "
                  f"max |error| {max(a):.0f} % over {len(es)} kernel(s)")
        else:
            print(f"{shape.replace('x', '×')}: not measured in {args.measured}")
    if errs:
        within = sum(e <= 10 for e in errs)
        print(f"\nMAPE {sum(errs) / len(errs):.1f} %, max |error| {max(errs):.0f} %, within 10 %: {within} of {len(errs)}")
    missing = len(kernels) - len(errs)
    if missing:
        print(f"{missing} of {len(kernels)} rows have no measurement in {args.measured}")


if __name__ == "__main__":
    main()
