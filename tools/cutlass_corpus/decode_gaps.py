#!/usr/bin/env python3
"""Which instructions of a corpus' kernels `pipesim check` does not decode yet (README.md "Blackwell").

    decode_gaps.py PIPESIM MANIFEST [--out FILE]

pipesim decodes every instruction reachable from the entry before it runs anything, and stops at the
first it does not know ("FILE:LINE:COL: error: unsupported instruction 'OP'", exit 2). So, per kernel
(one launch of each), on a scratch copy of its PTX: check; at such a stop, note OP, turn every
instruction spelled OP (with the same modifiers) into a comment; check again, until pipesim gets past
decoding (any other outcome: a verdict, or another kind of error, which is reported as it is). The
commented copies are never run for a verdict: the list is the worklist of the decoder, nothing more.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

UNSUPPORTED = re.compile(r"^(.*?):(\d+):(\d+): error: unsupported instruction '([^']+)'", re.M)


def opcode_at(line):
    s = line.split("//", 1)[0].strip().lstrip("{").strip()
    s = re.sub(r"^[\w$]+:\s*", "", s)
    s = re.sub(r"^@!?[%\w$]+\s+", "", s)
    return s.split()[0].rstrip(",;") if s.split() else ""


def gaps_of(pipesim, ptx, launch, limit=200):
    """[(opcode, count)] of the instructions pipesim stops at, in the order it meets them (count: the
    instructions of that spelling in the whole module, every entry of it), and the outcome once it gets
    past them (its last line)."""
    with open(ptx) as f:
        lines = f.read().split("\n")
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        scratch = os.path.join(tmp, os.path.basename(ptx))
        for _ in range(limit):
            with open(scratch, "w") as f:
                f.write("\n".join(lines))
            r = subprocess.run([pipesim, "check", scratch, "--launch", launch], capture_output=True, text=True,
                               timeout=600)
            out = r.stdout + r.stderr
            m = UNSUPPORTED.search(out)
            if not m:
                tail = [l for l in out.strip().splitlines() if l.strip()]
                return found, "exit %d: %s" % (r.returncode, tail[-1][:200] if tail else "")
            op = m.group(4)
            count = 0
            for i, line in enumerate(lines):
                if opcode_at(line) == op:
                    lines[i] = "// decode_gaps: " + line
                    count += 1
            if count == 0:
                return found, "pipesim stops at %s, which this script cannot find in the text" % op
            found.append((op, count))
    return found, "more than %d unsupported forms" % limit


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pipesim")
    ap.add_argument("manifest")
    ap.add_argument("--out")
    args = ap.parse_args()
    base = os.path.dirname(os.path.abspath(args.manifest))
    with open(args.manifest) as f:
        manifest = json.load(f)
    seen = set()
    report = []
    union = {}
    for k in manifest["kernels"]:
        key = (k["ptx"], k["entry"])
        if key in seen:
            continue
        seen.add(key)
        found, outcome = gaps_of(args.pipesim, os.path.join(base, k["ptx"]), os.path.join(base, k["launch"]))
        report.append("%s:%s (%s)" % (k["example"], k["variant"], k["launch"]))
        for op, n in found:
            report.append("  %-70s %6d" % (op, n))
            union.setdefault(op, []).append("%s:%s" % (k["example"][:2], k["variant"]))
        report.append("  then (on the commented copy, whose verdict means nothing): " + outcome)
    report.append("")
    report.append("not decoded, over all kernels (%d forms):" % len(union))
    for op in sorted(union):
        report.append("  %-70s %s" % (op, ", ".join(union[op])))
    text = "\n".join(report) + "\n"
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
