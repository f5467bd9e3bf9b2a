#!/usr/bin/env python3
"""Where a kernel's warps stall, from Nsight Compute's per-instruction page (ncu_issue.sh writes it:
`ncu -i REPORT --page source --csv --print-source cuda,sass`).

  tools/cutlass_corpus/ncu_stalls.py PAGE.csv [--top N] [--opcodes]

Prints the share of warp-stall samples per reason over the kernel's SASS instructions (each counted
once: the page repeats an instruction under every source line inlined into it), then the instructions
that stalled on the immediate constant cache ("imc": a parameter read, c[0x0][offset]) with an
estimate of each one's wait per execution in cycles: its imc samples x the warp-cycles one sample
stands for / its executions. A sample stands for (instructions executed / samples of a warp issuing)
warp-cycles, since a warp issues one instruction on each cycle it is sampled "selected".
--opcodes adds the SASS instructions executed per opcode (what a PTX instruction count compares with).
"""
import argparse
import collections
import csv
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def read_page(path):
    """The page's SASS rows by address, and its header."""
    header, rows = None, {}
    with open(path, newline="") as f:
        for r in csv.reader(f):
            if not r or r[0] in ("File Path", "Function Name"):
                continue
            if r[0] == "Line No":
                header = r
            elif r[0] == "" and len(r) > 3 and r[2].startswith("0x"):
                rows[r[2]] = r
    if header is None or not rows:
        sys.exit(f"ncu_stalls.py: {path}: no per-instruction rows (expected --page source --csv --print-source cuda,sass)")
    return header, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--opcodes", action="store_true")
    args = ap.parse_args()
    header, rows = read_page(args.page)
    col = {h: i for i, h in enumerate(header)}

    def get(r, name):
        v = r[col[name]]
        return int(v) if v not in ("", "-") else 0

    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    samples = sum(get(r, SAMPLES) for r in rows.values())
    executed = sum(get(r, EXECUTED) for r in rows.values())
    by_reason = collections.Counter()
    for r in rows.values():
        for h in reasons:
            by_reason[h[len("stall_"):]] += get(r, h)
    selected = by_reason["selected"]
    per_sample = executed / selected if selected else 0
    print(f"{len(rows)} SASS instructions, {executed} executed, {samples} samples; "
          f"one sample ~ {per_sample:.0f} warp-cycles")
    print("stall reasons: " + ", ".join(f"{k} {100 * v / samples:.1f} %" for k, v in by_reason.most_common(12)))
    imc = sorted((r for r in rows.values() if get(r, "stall_imc")), key=lambda r: -get(r, "stall_imc"))
    print(f"immediate-constant-cache stalls at {len(imc)} instructions:")
    for r in imc[: args.top]:
        n = get(r, EXECUTED)
        wait = get(r, "stall_imc") * per_sample / n if n else 0
        print(f"  {r[3].strip()[:48]:48s} executed {n:7d}  imc samples {get(r, 'stall_imc'):5d}  ~{wait:5.0f} cycles each")
    if args.opcodes:
        by_opcode = collections.Counter()
        for r in rows.values():
            words = r[3].split()
            opcode = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
            by_opcode[opcode.split(".")[0]] += get(r, EXECUTED)
        print("SASS executed per opcode: " + ", ".join(f"{k} {v}" for k, v in by_opcode.most_common(args.top)))


if __name__ == "__main__":
    main()
