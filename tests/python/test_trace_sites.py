#!/usr/bin/env python3
"""tools/trace_sites.py on files of our own: a stamps CSV (pipesim crosscheck --stamps) and a Perfetto
trace (pipesim check --trace) of the same two warps read the same way, first and last passes and,
with --passes N, each pass; a wait after a line's issue ends that pass; a file that is neither is
refused with exit 2."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools/trace_sites.py"

# Two warps; line 10 three times each, line 20 once (warp 1 only). Times in ns from 1000.
STAMPS = "\n".join([
    "cta,warp,site,ptx_line,what,ns",
    "0,0,0,0,warp start,1000", "0,0,3,10,mbarrier.try_wait,1200", "0,0,3,10,mbarrier.try_wait,1500",
    "0,0,3,10,mbarrier.try_wait,1900",
    "0,1,0,0,warp start,1000", "0,1,3,10,mbarrier.try_wait,1400", "0,1,3,10,mbarrier.try_wait,1700",
    "0,1,3,10,mbarrier.try_wait,2100", "0,1,4,20,bar.sync,2500",
]) + "\n"


def span(tid, ts, dur, line, name):
    return {"ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "name": name, "args": {"site": f"k.ptx:{line}:1"}}


# The same passes in microseconds; warp 0's second pass at line 10 is an issue then a wait that ends it.
TRACE = {"traceEvents": [
    span(0, 1.0, 0.0, 0, "compute"), span(0, 1.2, 0.0, 10, "compute"), span(0, 1.4, 0.0, 10, "compute"),
    span(0, 1.4, 0.1, 10, "wait"), span(0, 1.9, 0.0, 10, "compute"),
    span(1, 1.0, 0.0, 0, "compute"), span(1, 1.4, 0.0, 10, "compute"), span(1, 1.7, 0.0, 10, "compute"),
    span(1, 2.1, 0.0, 10, "compute"), span(1, 2.5, 0.0, 20, "compute"),
    {"ph": "X", "pid": 1, "tid": 9, "ts": 1.1, "dur": 5.0, "name": "tma", "cat": "async", "args": {"site": "k.ptx:10:1"}},
]}


def run(path, *args):
    return subprocess.run([sys.executable, str(TOOL), str(path), *args], capture_output=True, text=True)


def rows(out):
    return {int(l.split()[0]): l.split()[1:] for l in out.splitlines()[1:]}


def main():
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    with tempfile.TemporaryDirectory() as d:
        csv, trace, bad = Path(d) / "s.csv", Path(d) / "t.json", Path(d) / "bad.csv"
        csv.write_text(STAMPS)
        trace.write_text(json.dumps(TRACE))
        bad.write_text("a,b\n1,2\n")
        r = run(csv, "10,20")
        check(r.returncode == 0, f"csv: exit {r.returncode}: {r.stderr}")
        got = rows(r.stdout)
        # line 10: first passes 0.2 and 0.4 us (the median of two is their mean), last 0.9 and 1.1
        check(got.get(10) == ["2", "0.30", "1.00"], f"csv line 10: {got.get(10)}")
        check(got.get(20) == ["1", "1.50", "1.50"], f"csv line 20: {got.get(20)}")
        r = run(csv, "10", "--passes", "3")
        check(rows(r.stdout).get(10) == ["2", "0.30", "0.60", "1.00"], f"csv passes: {r.stdout}")
        r = run(trace, "10,20", "--passes", "3")
        check(r.returncode == 0, f"trace: exit {r.returncode}: {r.stderr}")
        got = rows(r.stdout)
        # warp 0's second pass ends with its wait (1.5): passes 0.2/0.5/0.9 and 0.4/0.7/1.1
        check(got.get(10) == ["2", "0.30", "0.60", "1.00"], f"trace passes line 10: {got.get(10)}")
        check(got.get(20) == ["1", "1.50", "-", "-"], f"trace passes line 20: {got.get(20)}")
        r = run(bad, "10")
        check(r.returncode == 2 and "not a stamps file" in r.stderr, f"bad csv: exit {r.returncode}: {r.stderr}")
    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
