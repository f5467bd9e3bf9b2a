#!/usr/bin/env python3
"""tools/score_b200.py --mainloop on a small file of our own in the public sweep's format: the rows it
skips (CUTLASS's automatic stage count, failed builds), its predicted TFLOPS against `pipesim check` of the
same scenario at the sweep's SM clock (1.3 GHz), its errors, and which rows it counts as having set a B200
constant."""
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIPESIM = os.environ["PIPESIM_BIN"]
SCN = ROOT / "scenarios/blackwell/dense_gemm_1sm_mainloop.scn"

CSV = """M,N,K,TILE_M,TILE_N,TILE_K,STAGES,dtype,time_ms,TFLOPS
128,256,131072,128,256,64,0,BF16,0.8,10.7
128,256,131072,128,256,64,2,BF16,1.5,5.6
128,256,131072,128,256,64,4,BF16,0.8,10.5
128,64,131072,128,64,128,3,FP8_E4M3,0.5,8.3
# BUILD_FAILED: 128,256,128,3,0
"""


def predicted_tflops(fp8, tm, tn, tk, stages):
    d = [f"FP8={fp8}", f"TILE_M={tm}", f"TILE_N={tn}", f"TILE_K={tk}", f"STAGES={stages}", "K=131072"]
    out = subprocess.run([PIPESIM, "check", str(SCN), "--json", "--max-seconds", "0", "--sm-clock", "1.3",
                          *[a for x in d for a in ("-D", x)]],
                         capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    r = j["results"][0] if "results" in j else j
    return 2.0 * tm * tn * 131072 / r["predicted_ns"] / 1000.0


def main():
    with tempfile.TemporaryDirectory() as d:
        csv = Path(d) / "results.csv"
        csv.write_text(CSV)
        p = subprocess.run([sys.executable, str(ROOT / "tools/score_b200.py"), "--pipesim", PIPESIM, "--mainloop", str(csv)],
                           capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    tiles = [l for l in lines if l.startswith("| BF16") or l.startswith("| FP8")]
    assert len(tiles) == 2, p.stdout  # one line per tile shape
    bf16 = next(l for l in tiles if "128x256x64" in l)
    assert "(stages 2-4)" in bf16, bf16  # the STAGES 0 row is left out
    cells = [c.strip() for c in bf16.split("|")]
    assert cells[3] == "5.6 10.5", cells
    want = [predicted_tflops(0, 128, 256, 64, s) for s in (2, 4)]
    assert cells[4] == " ".join(f"{w:.1f}" for w in want), (cells, want)
    errs = [f"{100 * (w / m - 1):+.0f}" for w, m in zip(want, (5.6, 10.5))]
    assert cells[5] == " ".join(errs) + " %", (cells, errs)
    # Three rows scored; only the FP8 128x64 tile (N <= 64) set a constant: the BF16 tile's A and B are
    # 96 MiB, past the 48 MiB the round trip was read off.
    summary = {m.group(1): int(m.group(2)) for m in re.finditer(r"^(All|Rows that set no constant|Rows the B200[^:]*): (\d+) rows", p.stdout, re.M)}
    assert summary == {"All": 3, "Rows that set no constant": 2, "Rows the B200 intake and round trip were read off": 1}, summary
    # A file with nothing to score says so and fails, instead of dividing by zero.
    with tempfile.TemporaryDirectory() as d:
        empty = Path(d) / "empty.csv"
        empty.write_text(CSV.splitlines()[0] + "\n")
        q = subprocess.run([sys.executable, str(ROOT / "tools/score_b200.py"), "--pipesim", PIPESIM, "--mainloop", str(empty)],
                           capture_output=True, text=True, cwd=ROOT)
    assert q.returncode != 0 and "no rows" in q.stderr, (q.returncode, q.stderr)
    print("ok")


if __name__ == "__main__":
    main()
