#!/usr/bin/env python3
"""The model's side of `pipesim crosscheck --stamps`: per PTX line, when the warps first and last pass it.

  pipesim check KERNEL.ptx --launch L.json --trace TRACE.json
  tools/trace_sites.py TRACE.json LINE[,LINE...] [--passes N]
  tools/trace_sites.py STAMPS.csv LINE[,LINE...] [--passes N]   # the GPU's side, from --stamps FILE.csv

With --passes N: the medians of each of the first N passes instead of the first and the last (a
pipeline's stages one by one).

For each line, over the warps that have a span there (a wait, a barrier, a wgmma wait ...), the
medians of the end of their first and of their last pass (the line's issue and, where the warp
blocked, the wait after it), in microseconds from the warp's first span: the same measure as the stamps report's `first` and `last` columns, so the two
tables read side by side (docs/ptx.md, "The kernel's own timeline"). Asynchronous spans (copies,
MMAs) are left out: they are not the warp's."""
import argparse
import csv
import json
import re
import statistics
import sys
from collections import defaultdict


def read_stamps(path, wanted):
    """The GPU's stamps (crosscheck --stamps FILE.csv: cta,warp,site,ptx_line,what,ns): per warp, its
    first stamp and each pass of the wanted lines, in microseconds."""
    start: dict = {}
    passes: dict = defaultdict(dict)
    try:
        with open(path) as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print(f"trace_sites.py: {path}: {e}", file=sys.stderr)
        return None, None
    for r in rows:
        try:
            warp, line, t = (int(r["cta"]), int(r["warp"])), int(r["ptx_line"]), int(r["ns"]) / 1000.0
        except (KeyError, ValueError):
            print(f"trace_sites.py: {path}: not a stamps file (cta,warp,site,ptx_line,what,ns)", file=sys.stderr)
            return None, None
        start[warp] = min(start.get(warp, t), t)
        if line in wanted:
            passes[warp].setdefault(line, []).append(t)
    for p in passes.values():
        for ends in p.values():
            ends.sort()
    return start, passes


def read_trace(path, wanted):
    """The model's trace: per warp, its first span and the end of each pass of the wanted lines."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"trace_sites.py: {path}: {e}", file=sys.stderr)
        return None, None
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    start: dict = {}
    spans: dict = defaultdict(list)  # warp -> (start, end, line, is the issue) at the wanted lines
    for e in events:
        if e.get("ph") != "X" or e.get("cat") == "async":
            continue
        warp = (e["pid"], e["tid"])
        t = e["ts"]
        start[warp] = min(start.get(warp, t), t)
        m = re.search(r"\.ptx:(\d+):", e.get("args", {}).get("site", ""))
        if m and int(m.group(1)) in wanted:
            spans[warp].append((t, t + e.get("dur", 0), int(m.group(1)), e.get("name") == "compute"))
    # A pass of a line is its issue (a compute span) and, where the warp blocked, the wait span that
    # follows it at the same line: the pass ends where the last of them does.
    passes: dict = defaultdict(dict)  # warp -> line -> the end of each pass
    for warp, ss in spans.items():
        ss.sort()
        for t, end, line, issue in ss:
            ends = passes[warp].setdefault(line, [])
            if not issue and ends and t <= ends[-1] + 1e-6:
                ends[-1] = end  # the wait after this pass's issue
            else:
                ends.append(end)
    return start, passes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace", help="a Perfetto trace from pipesim check --trace")
    ap.add_argument("lines", help="PTX line numbers, comma-separated (the stamps report's .ptx:LINE)")
    ap.add_argument("--passes", type=int, default=0, help="print each of the first N passes' medians")
    a = ap.parse_args()
    try:
        wanted = {int(x) for x in a.lines.split(",") if x}
    except ValueError:
        print(f"trace_sites.py: lines must be numbers: {a.lines}", file=sys.stderr)
        return 2
    if a.trace.endswith(".csv"):
        start, passes = read_stamps(a.trace, wanted)
    else:
        start, passes = read_trace(a.trace, wanted)
    if start is None:
        return 2
    if a.passes > 0:
        print(f"{'line':>6} {'warps':>6} " + " ".join(f"{'pass ' + str(k + 1):>8}" for k in range(a.passes)) +
              "   (us from each warp's first span, medians)")
        for line in sorted(wanted):
            cols = []
            for k in range(a.passes):
                v = [p[line][k] - start[w] for w, p in passes.items() if len(p.get(line, [])) > k]
                cols.append(f"{statistics.median(v):>8.2f}" if v else f"{'-':>8}")
            print(f"{line:>6} {sum(1 for p in passes.values() if line in p):>6} " + " ".join(cols))
        return 0
    print(f"{'line':>6} {'warps':>6} {'first':>8} {'last':>8}   (us from each warp's first span, medians)")
    for line in sorted(wanted):
        f = [p[line][0] - start[w] for w, p in passes.items() if line in p]
        l = [p[line][-1] - start[w] for w, p in passes.items() if line in p]
        if not f:
            print(f"{line:>6} {0:>6}        -        -")
            continue
        print(f"{line:>6} {len(f):>6} {statistics.median(f):>8.2f} {statistics.median(l):>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
