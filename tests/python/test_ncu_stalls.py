#!/usr/bin/env python3
"""tools/cutlass_corpus/ncu_stalls.py on a per-instruction page of our own in Nsight Compute's
`--page source --csv --print-source cuda,sass` format: each SASS instruction counted once though the
page lists it under every source line inlined into it, the stall shares, a parameter load's wait per
execution (its constant-cache samples x warp-cycles per sample / its executions, a sample standing for
instructions executed / samples of an issuing warp), SASS per opcode, and a page with no instructions
refused."""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools/cutlass_corpus/ncu_stalls.py"

HEADER = ('"Line No","Source","Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed",'
          '"stall_imc","stall_selected","stall_wait","stall_imc (Not Issued)"')


def row(addr, sass, samples, executed, imc, selected, wait):
    return f'"","","{addr}","      {sass}","{samples}","{executed}","{imc}","{selected}","{wait}","0"'


# Three SASS instructions; the ULDC appears under two source files (inlined), as Nsight Compute writes it.
PAGE = "\n".join([
    '"File Path","/x/a.hpp"', '"Function Name","k"', HEADER,
    '"10","<src>","-","-","0","0","0","0","0","0"',
    row("0x100", "ULDC.64 UR4, c[0x0][0x598]", 40, 100, 36, 0, 4),
    row("0x110", "IADD3 R1, R2, R3, RZ", 30, 800, 0, 20, 10),
    '"File Path","/x/b.hpp"', '"Function Name","k"', HEADER,
    '"20","<src>","-","-","0","0","0","0","0","0"',
    row("0x100", "ULDC.64 UR4, c[0x0][0x598]", 40, 100, 36, 0, 4),
    row("0x120", "@P0 BRA 0x100", 30, 100, 0, 10, 20),
])


def run(page_text, *args):
    with tempfile.TemporaryDirectory() as d:
        page = Path(d) / "page.csv"
        page.write_text(page_text + "\n")
        return subprocess.run([sys.executable, str(TOOL), str(page), *args], capture_output=True, text=True)


def main():
    p = run(PAGE, "--opcodes")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    # Counted once: 3 instructions, 1000 executed, 100 samples (not 140).
    assert "3 SASS instructions, 1000 executed, 100 samples" in out, out
    # 30 samples of an issuing warp for 1000 instructions: a sample is ~33 warp-cycles.
    assert "one sample ~ 33 warp-cycles" in out, out
    # Shares over the 100 samples: imc 36 %, wait 34 %, selected 30 %.
    assert re.search(r"imc 36\.0 %.*wait 34\.0 %.*selected 30\.0 %", out), out
    # The ULDC: 36 samples x 33.3 cycles / 100 executions = 12 cycles each.
    m = re.search(r"ULDC\.64 UR4, c\[0x0\]\[0x598\]\s+executed\s+100\s+imc samples\s+36\s+~\s*(\d+) cycles each", out)
    assert m and m.group(1) == "12", out
    assert "SASS executed per opcode: IADD3 800, ULDC 100, BRA 100" in out, out
    # A page with no per-instruction rows is refused with the file named, not read as empty.
    bad = run('"File Path","/x/a.hpp"\n"Function Name","k"')
    assert bad.returncode != 0 and "no per-instruction rows" in bad.stderr, bad.stderr
    print("ok")


if __name__ == "__main__":
    main()
