#!/usr/bin/env python3
"""The model's side of `l2mixprobe mix` (kernels/interp/l2mixprobe.cu): runs
scenarios/calibration/l2_mix.scn at the probe's mixes of hot and cold CTAs and prints each group's
GB/s beside the H100's.

  tools/l2mix_model.py --pipesim build/verify/pipesim [--probe docs/runs/l2mixprobe-h100-2026-11-28.txt]

A group's rate is the bytes its copies landed between a quarter and all of the time to the first CTA's
last landing (both groups still run there; the hot window's first pass, its misses, is over), over that
span: the probe's measure (each group's bytes over a common 40 us) read from the model's trace."""
import argparse
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "..", "scenarios", "calibration", "l2_mix.scn")


def group_rates(pipesim, hot, cold, window_boxes):
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "t.json")
        cmd = [pipesim, "check", SCENARIO, "-D", f"HOT={hot}", "-D", f"COLD={cold}", "-D", f"WINDOW={window_boxes}", "--trace", trace]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"l2mix_model: {' '.join(cmd)} failed:\n{p.stdout}{p.stderr}")
        with open(trace) as f:
            t = json.load(f)
    events = t["traceEvents"] if isinstance(t, dict) else t
    lands = collections.defaultdict(list)  # CTA -> (landing us, bytes)
    for e in events:
        m = re.match(r"tma (\d+) B", e.get("name", ""))
        if e.get("ph") == "X" and m:
            lands[e["pid"]].append((e["ts"] + e["dur"], int(m.group(1))))
    end = min(max(x for x, _ in v) for v in lands.values())
    t0, t1 = 0.25 * end, end
    rate = {"hot": 0.0, "cold": 0.0}
    for cta, v in lands.items():
        kind = "hot" if cta - 1 < hot else "cold"  # trace pid: CTA + 1
        rate[kind] += sum(b for x, b in v if t0 < x <= t1) / ((t1 - t0) * 1e3)  # B/ns = GB/s
    return rate["hot"], rate["cold"]


def probe_rows(path):
    """(window MiB, hot, cold) -> (hot, cold) GB/s of the probe's mix table, no hints."""
    rows = {}
    if not path or not os.path.exists(path):
        return rows
    for line in open(path):
        f = line.split()
        if len(f) == 7 and f[1] == "0" and all(re.fullmatch(r"[\d.]+", x) for x in f):
            rows[(int(f[0]), int(f[2]), int(f[3]))] = (float(f[4]), float(f[5]))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pipesim", required=True)
    ap.add_argument("--probe", default=os.path.join(HERE, "..", "docs", "runs", "l2mixprobe-h100-2026-11-28.txt"))
    ap.add_argument("--window", type=int, default=10, help="MiB (the probe: 10, 16, 24)")
    a = ap.parse_args()
    if not (os.path.isfile(a.pipesim) and os.access(a.pipesim, os.X_OK)):
        sys.exit(f"l2mix_model: --pipesim {a.pipesim}: not an executable file (build it: tools/test.sh)")
    probe = probe_rows(a.probe)
    sms = 132
    mixes = [(sms, 0), (sms // 2, 0), (0, sms), (0, sms // 2), (sms // 2, sms // 2), (sms * 3 // 4, sms - sms * 3 // 4), (sms // 4, sms - sms // 4)]
    print(f"# l2_mix.scn against l2mixprobe mix, a {a.window} MiB window: GB/s of each group (model / H100)")
    print(f"{'hot':>5} {'cold':>5} {'hot model':>10} {'hot H100':>9} {'cold model':>11} {'cold H100':>10} {'sum model':>10} {'sum H100':>9}")
    for hot, cold in mixes:
        h, c = group_rates(a.pipesim, hot, cold, (a.window << 20) // 32768)
        ph, pc = probe.get((a.window, hot, cold), (float("nan"), float("nan")))
        print(f"{hot:5d} {cold:5d} {h:10.0f} {ph:9.0f} {c:11.0f} {pc:10.0f} {h + c:10.0f} {ph + pc:9.0f}")


if __name__ == "__main__":
    main()
