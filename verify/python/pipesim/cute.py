"""Compile a CuTe DSL kernel with no GPU and check it with pipesim.

    from pipesim.cute import capture, check
    cap = capture(my_jit_fn, fake_tensor_a, fake_tensor_b, out_dir="out", names=["a", "b"])
    check(cap)                       # runs `pipesim check out/<name>.ptx --launch out/<name>.launch.json`

    python -m pipesim.cute MODULE:FUNCTION --out DIR [--check] [-D key=value]...

FUNCTION(**defines) returns (jit_callable, args) or (jit_callable, args, names): what cute.compile
takes (fake tensors from cute.runtime.make_fake_tensor, with static shapes so that the grid is a
constant) and one buffer name per argument. `capture` compiles with CUTE_DSL_ARCH (default sm_100a),
CUTE_DSL_KEEP=ptx,ir and CUTE_DSL_DUMP_DIR, and writes into out_dir:
  <name>.ptx          the PTX the compile produced
  <name>.launch.json  pipesim's launch file (docs/ptx.md): entry, grid, block, cluster and dynamic
                      shared memory from the host IR's launch, one buffer per argument, one tensor map
                      per TMA descriptor (cuTensorMapEncodeTiled's fields), every PTX parameter
The pipesim binary is $PIPESIM_BIN, else `pipesim` on PATH (pipesim.binary).
"""
from __future__ import annotations

import argparse
import glob
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from pipesim.binary import binary
from pipesim.cute_ir import HostIr, IrError, fast_divmod, parse_host_ir

# CuTe DSL reads its settings once, when cutlass is imported: this module must come first.
_DUMP_DIR = os.environ.get("PIPESIM_CUTE_DUMP_DIR") or tempfile.mkdtemp(prefix="pipesim-cute-")
if "cutlass" not in sys.modules:
    os.environ.setdefault("CUTE_DSL_ARCH", "sm_100a")
    os.environ["CUTE_DSL_KEEP"] = "ptx,ir"
    os.environ["CUTE_DSL_DUMP_DIR"] = _DUMP_DIR

ENTRY_PARAM = re.compile(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+(\w+)(?:\[(\d+)\])?")
TYPE_BYTES = {"b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "b32": 4, "u32": 4, "s32": 4, "f32": 4,
              "b64": 8, "u64": 8, "s64": 8, "f64": 8}


@dataclass
class Capture:
    ptx: str            # paths of what capture wrote
    launch: str
    entry: str
    seconds: float      # cute.compile wall time


def entry_params(ptx: str, entry: str) -> list[tuple[str, int]]:
    """(name, bytes) of each parameter of `.entry entry(...)`, in order."""
    m = re.search(r"\.entry\s+" + re.escape(entry) + r"\s*\((.*?)\)", ptx, re.S)
    if not m:
        raise IrError(f"the PTX has no .entry {entry}")
    params = []
    for p in ENTRY_PARAM.finditer(m.group(1)):
        count = int(p.group(4)) if p.group(4) else 1
        params.append((p.group(3), TYPE_BYTES[p.group(2)] * count))
    return params


def launch_json(ir: HostIr, ptx: str, names: list[str], arch: str) -> dict:
    params = entry_params(ptx, ir.kernel)
    if len(params) != len(ir.params):
        raise IrError(f"the PTX entry has {len(params)} parameters, the host IR passes {len(ir.params)} "
                      f"runtime operands ({', '.join(k for k, _ in ir.params)})")
    values = []
    for index, ((pname, nbytes), (kind, v)) in enumerate(zip(params, ir.params)):
        item = {"index": index}
        if kind == "tensormap":
            item["tensormap"] = v
        elif kind == "pointer":
            item.update({"hex": "00" * nbytes, "fields": [{"offset": 0, "pointer": names[v]}]})
        elif kind == "divisor":
            mult, s1, s2 = fast_divmod(v)
            item.update({"hex": "00" * nbytes, "fields": [{"offset": 0, "u32": v}, {"offset": 4, "u32": mult},
                                                          {"offset": 8, "u8": s1}, {"offset": 9, "u8": s2}]})
        else:   # an MMA atom's runtime fields, false / 0 when the host launches (see cute_ir)
            item["hex"] = "00" * nbytes
        values.append(item)
    return {
        "entry": ir.kernel, "arch": arch, "grid": ir.grid, "block": ir.block, "cluster": ir.cluster,
        "dynamic_smem": ir.dynamic_smem,
        "buffers": [{"name": names[i], "bytes": max(nbytes, 1)} for i, (_, nbytes) in enumerate(ir.args)],
        "tensormaps": [t.to_json(names[t.arg]) for t in ir.tensormaps],
        "params": values,
    }


def capture(fn, *args, out_dir: str, name: str = "kernel", names: list[str] | None = None) -> Capture:
    """cute.compile(fn, *args) for $CUTE_DSL_ARCH (default sm_100a) with no GPU; write <name>.ptx and <name>.launch.json."""
    import time
    if os.environ.get("CUTE_DSL_DUMP_DIR") != _DUMP_DIR or "ir" not in os.environ.get("CUTE_DSL_KEEP", ""):
        raise IrError("import pipesim.cute before cutlass (CuTe DSL reads CUTE_DSL_KEEP / _DUMP_DIR at import)")
    arch = os.environ["CUTE_DSL_ARCH"]
    names = names or [f"arg{i}" for i in range(len(args))]
    os.makedirs(out_dir, exist_ok=True)
    for old in glob.glob(os.path.join(_DUMP_DIR, "*")):
        os.remove(old)
    import cutlass.cute as cute
    start = time.monotonic()
    # .loc / .file in the PTX, so pipesim's reports name the Python source line (nvcc's -lineinfo).
    compiled = cute.compile[cute.GenerateLineInfo(True)](fn, *args)
    seconds = time.monotonic() - start
    ptx = statement_lines_only(compiled.artifacts.PTX)
    irs = glob.glob(os.path.join(_DUMP_DIR, "*.mlir"))
    if not ptx or not irs:
        raise IrError(f"the compile kept no PTX or IR in {_DUMP_DIR}")
    ir = parse_host_ir(open(max(irs, key=os.path.getmtime)).read())
    if len(names) != len(ir.args):
        raise IrError(f"{len(names)} buffer names for {len(ir.args)} kernel arguments")
    ptx_path = os.path.join(out_dir, name + ".ptx")
    launch_path = os.path.join(out_dir, name + ".launch.json")
    with open(ptx_path, "w") as f:
        f.write(ptx)
    with open(launch_path, "w") as f:
        json.dump(launch_json(ir, ptx, names, arch), f, indent=1)
        f.write("\n")
    return Capture(ptx_path, launch_path, ir.kernel, seconds)


def statement_lines_only(ptx: str) -> str:
    """The PTX without the `.loc`s inside inline asm blocks. With line info, LLVM tags each line of an
    inline asm template with the statement's line plus that line's offset in the template (a
    `cute.arch.mbarrier_wait` at line L gets `.loc` L+2, L+3, L+5 around its try_wait), which would name
    unrelated Python lines; the `.loc` before `// begin inline asm` is the statement's own."""
    kept, inside = [], False
    for line in ptx.splitlines(keepends=True):
        text = line.strip()
        if text == "// begin inline asm":
            inside = True
        elif text == "// end inline asm":
            inside = False
        elif inside and text.startswith(".loc"):
            continue
        kept.append(line)
    return "".join(kept)


def check(cap: Capture, *extra: str) -> int:
    """`pipesim check PTX --launch LAUNCH [extra...]`; returns its exit status (0 ok, 1 mismatch, 2 bad input)."""
    return subprocess.call([binary(), "check", cap.ptx, "--launch", cap.launch, *extra])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pipesim.cute", description=__doc__.split("\n\n")[0])
    ap.add_argument("target", help="MODULE:FUNCTION returning (jit_callable, args[, names])")
    ap.add_argument("--out", required=True, help="directory for <name>.ptx and <name>.launch.json")
    ap.add_argument("--name", default=None, help="file name stem (default: FUNCTION)")
    ap.add_argument("--check", action="store_true", help="run pipesim check on the result")
    ap.add_argument("-D", dest="defines", action="append", default=[], metavar="KEY=VALUE",
                    help="keyword argument for FUNCTION (a string)")
    a, rest = ap.parse_known_args(argv)
    module_name, _, func_name = a.target.partition(":")
    if not func_name:
        ap.error("target must be MODULE:FUNCTION")
    defines = dict(d.split("=", 1) for d in a.defines)
    spec = getattr(importlib.import_module(module_name), func_name)(**defines)
    fn, args, names = spec if len(spec) == 3 else (*spec, None)
    cap = capture(fn, *args, out_dir=a.out, name=a.name or func_name, names=names)
    print(f"{cap.ptx}\n{cap.launch}\ncompiled in {cap.seconds:.1f} s")
    return check(cap, *rest) if a.check else 0


if __name__ == "__main__":
    sys.exit(main())
