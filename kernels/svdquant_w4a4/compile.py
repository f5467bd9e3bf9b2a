"""Compile the SVDQuant W4A4 v2_fa4 kernel to sm_100a PTX with its pipesim launch file, with no GPU.

    python kernels/svdquant_w4a4/compile.py --out DIR [--shape 4352x3840x3072_r128]... [--bugs FLAG,...] [--mutants]
    python -m pipesim.cute compile:spec -D shape=4352x3840x3072_r128 [-D bugs=FLAG,...] --out DIR

(the second form with kernels/svdquant_w4a4 and verify/python on PYTHONPATH). Writes, per shape,
DIR/v2_fa4_<shape>[_<bugs>].ptx and .launch.json, and prints the compile time and stage counts.
--mutants also compiles every single SeedBugs flag at the first shape (one process: cutlass is
imported once). The PTX carries `.loc` lines, so pipesim's reports name kernel_v2_fa4.py lines.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "verify", "python"))
os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")

import pipesim.cute  # noqa: E402,F401  (before cutlass: it sets CuTe DSL's dump settings)
from config import PRODUCTION_SHAPES, SeedBugs, Shape  # noqa: E402

BUFFER_NAMES = ["act", "wgt", "ascales", "wscales", "lora_act_in", "lora_up", "wcscale", "bias", "out"]


def parse_shape(text: str) -> Shape:
    """'4352x3840x3072_r128' (M x K x N, LoRA rank R)."""
    try:
        mkn, r = text.split("_r")
        m, k, n = (int(v) for v in mkn.split("x"))
        return Shape(m, k, n, int(r))
    except ValueError:
        raise ValueError(f"shape {text!r} is not MxKxN_rR (e.g. 4352x3840x3072_r128)") from None


def fake_args(shape: Shape):
    """Fake tensors with static shapes (so grid and tiles are compile-time constants)."""
    import cutlass
    import cutlass.cute as cute
    fake = cute.runtime.make_fake_tensor

    def k_major(dtype, rows, cols):
        return fake(dtype, (rows, cols), stride=(cols, 1), assumed_align=32)

    def vector(dtype, n):
        return fake(dtype, (n,), stride=(1,), assumed_align=32)

    fp4, e4m3, f16 = cutlass.Float4E2M1FN, cutlass.Float8E4M3FN, cutlass.Float16
    # Scale factors: one e4m3 per 16 K elements, in 128x4 atoms (M and K/16 are multiples of 128 and 4
    # at every production shape), so M * K / 16 bytes.
    return [k_major(fp4, shape.m, shape.k), k_major(fp4, shape.n, shape.k),
            vector(e4m3, shape.m * shape.k // 16), vector(e4m3, shape.n * shape.k // 16),
            k_major(f16, shape.m, shape.r), k_major(f16, shape.n, shape.r),
            vector(f16, shape.n), vector(f16, shape.n), k_major(f16, shape.m, shape.n)]


def spec(shape: str = PRODUCTION_SHAPES[0].name, bugs: str = ""):
    """For pipesim.cute: (jit callable, fake args, buffer names)."""
    from kernel_v2_fa4 import SvdquantW4A4V2FA4
    s = parse_shape(shape)
    return SvdquantW4A4V2FA4(s, SeedBugs.parse(bugs)), fake_args(s), BUFFER_NAMES


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--shape", action="append", help="MxKxN_rR; default: the four production shapes")
    ap.add_argument("--bugs", default="", help=f"comma-separated seed bugs: {', '.join(SeedBugs.names())}")
    ap.add_argument("--mutants", action="store_true", help="also each seed bug alone at the first shape")
    a = ap.parse_args(argv)
    from pipesim.cute import capture
    try:
        shapes = [parse_shape(t) for t in a.shape] if a.shape else list(PRODUCTION_SHAPES)
        SeedBugs.parse(a.bugs)      # a bad flag is exit 2 before any compile
    except ValueError as e:
        print(f"compile.py: {e}", file=sys.stderr)
        return 2
    jobs = [(s, a.bugs) for s in shapes] + ([(shapes[0], flag) for flag in SeedBugs.names()] if a.mutants else [])
    for s, bug_text in jobs:
        kernel, args, names = spec(s.name, bug_text)
        tag = SeedBugs.parse(bug_text).tag()
        stem = f"v2_fa4_{s.name}" + ("" if tag == "fixed" else "_" + tag)
        cap = capture(kernel, *args, out_dir=a.out, name=stem, names=names)
        st = kernel.stages
        print(f"{stem}: compiled in {cap.seconds:.1f} s; ab stages {st.num_ab_stage}, c stages {st.num_c_stage}, "
              f"lora stages {st.num_lora_stage}; {cap.ptx}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
