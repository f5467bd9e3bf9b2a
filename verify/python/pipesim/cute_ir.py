"""Reading a CuTe DSL compile's host IR (CUTE_DSL_KEEP=ir): the launch configuration, the kernel's
arguments, and every TMA descriptor's cuTensorMapEncodeTiled fields. Tested against
nvidia-cutlass-dsl 4.8.1 (tools/cute_dsl/setup_venv.sh pins it); the IR text is not a stable
interface, so every pattern that does not match is an error naming what was expected.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

DTYPE_BITS = {"f4E2M1FN": 4, "f8E4M3FN": 8, "f8E5M2": 8, "f8E8M0FNU": 8, "i8": 8, "ui8": 8, "f16": 16,
              "bf16": 16, "i16": 16, "f32": 32, "tf32": 32, "i32": 32, "i64": 64}
# tma_format -> (pipesim tensormap type, bits per element)
TMA_FORMATS = {"U4": ("u4", 4), "U8": ("u8", 8), "U16": ("u16", 16), "U32": ("u32", 32), "U64": ("u64", 64),
               "F16_RN": ("f16", 16), "BF16_RN": ("bf16", 16), "F32_RN": ("f32", 32), "TF32_RN": ("tf32", 32)}
SWIZZLES = {"S<1,4,3>": "32b", "S<2,4,3>": "64b", "S<3,4,3>": "128b"}


class IrError(ValueError):
    pass


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside (), <>, [], and quotes."""
    parts, depth, quoted, cur = [], 0, False, []
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "(<[":
            depth += 1
        elif not quoted and ch in ")>]" and not (ch == ">" and cur and cur[-1] == "-"):
            depth -= 1
        if ch == sep and depth == 0 and not quoted:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def parse_tuple(text: str):
    """'(4352,(16,4),1)' -> (4352, (16, 4), 1); leaves stay strings when not integers ('1@1@0')."""
    text = text.strip()
    if text.startswith("(") and text.endswith(")"):
        return tuple(parse_tuple(p) for p in split_top(text[1:-1]))
    return int(text) if re.fullmatch(r"-?\d+", text) else text


def parse_layout(text: str):
    shape, stride = text.split(":", 1) if ":" in text else (text, "1")
    return parse_tuple(shape), parse_tuple(stride)


def leaves(t) -> list:
    return [x for y in t for x in leaves(y)] if isinstance(t, tuple) else [t]


def size(t) -> int:
    n = 1
    for x in leaves(t):
        n *= x
    return n


def at(t, path):
    for i in path:
        t = t[i] if isinstance(t, tuple) else t
    return t


def cosize(shape, stride) -> int:
    top = 0
    for n, s in zip(leaves(shape), leaves(stride)):
        if isinstance(s, int):
            top += (n - 1) * abs(s)
    return top + 1


@dataclass
class TensorMap:
    name: str
    type: str
    dims: list[int]
    strides: list[int]
    box: list[int]
    swizzle: str
    arg: int          # host function argument whose memory it maps

    def to_json(self, buffer: str) -> dict:
        entry = {"name": self.name, "type": self.type, "dims": self.dims}
        if self.strides:
            entry["strides"] = self.strides
        entry.update({"box": self.box, "swizzle": self.swizzle, "buffer": buffer})
        return entry


@dataclass
class HostIr:
    args: list[tuple[str, int]]                 # per host argument: (dtype, bytes)
    grid: list[int]
    block: list[int]
    cluster: list[int]
    dynamic_smem: int
    kernel: str
    params: list[tuple[str, object]] = field(default_factory=list)   # (kind, value) per runtime operand
    tensormaps: list[TensorMap] = field(default_factory=list)


def _tensormap(defn: str, sig: list[str], aliases: dict, defs: dict, index: int) -> TensorMap:
    m = re.search(r'tma_gbasis = <"([^"]+)">, tma_format = (\w+)', defn)
    if not m:
        raise IrError(f"TMA atom without tma_gbasis / tma_format: {defn[:160]}")
    gshape, gbasis = parse_layout(m.group(1))
    if m.group(2) not in TMA_FORMATS:
        raise IrError(f"unknown tma_format {m.group(2)}")
    tma_type, tma_bits = TMA_FORMATS[m.group(2)]
    gmem = aliases.get(sig[0], sig[0])
    g = re.match(r'!cute.memref<(\w+), gmem, [^"]*"([^"]+)">', gmem)
    if not g:
        raise IrError(f"TMA atom's first operand is not a gmem tensor: {gmem[:160]}")
    dtype, (lshape, lstride) = g.group(1), parse_layout(g.group(2))
    gbits = DTYPE_BITS[dtype]
    if tma_type == "u4" and dtype == "f4E2M1FN":
        tma_type = "e2m1"
    swizzle = next((v for k, v in SWIZZLES.items() if k in aliases.get(sig[1], sig[1])), "none")
    # The tensor the view was made from: %view = cute.make_view(%iter, ...), %iter = cute.get_iter(%argN).
    operand = re.search(r"make_non_exec_tiled_tma_\w+\((%[\w.]+)", defn).group(1)
    for _ in range(4):
        if operand.startswith("%arg"):
            break
        src = defs.get(operand, "")
        nxt = re.search(r"(?:make_view|get_iter)\((%[\w.]+)", src)
        if not nxt:
            raise IrError(f"cannot follow {operand} back to a kernel argument")
        operand = nxt.group(1)
    arg = int(operand[4:])
    dims, strides, box = [], [], []
    for mode_shape, mode_basis in zip(gshape, gbasis):
        if isinstance(mode_shape, tuple):       # a nested mode: one dense block of the TMA type
            box.append(size(mode_shape))
            dims.append(size(mode_shape))
            if dims[:-1]:
                raise IrError("a nested TMA mode that is not the innermost one")
            continue
        path = [int(p) for p in reversed(mode_basis.split("@")[1:])]   # '1@a@b' is mode (b, a)
        extent, stride = at(lshape, path), at(lstride, path)
        extent, stride = size(extent), leaves(stride)[0]
        box.append(mode_shape)
        dims.append(extent * gbits // tma_bits if not dims else extent)
        if dims[:-1]:
            strides.append(stride * gbits // 8)
    # A multicast atom's CTAs each copy a 1/n slice of the tile, split along its outermost mode
    # that divides (CuTe's TMA partitioning); each instruction's box is that slice.
    mcast = re.search(r"num_multicast = (\d+)", defn)
    n = int(mcast.group(1)) if mcast else 1
    if n > 1:
        split = next((i for i in reversed(range(len(box))) if box[i] % n == 0 and box[i] > 1), None)
        if split is None:
            raise IrError(f"a multicast TMA box {box} that no mode of splits {n} ways")
        box[split] //= n
    return TensorMap(f"tma{index}", tma_type, dims, strides, box, swizzle, arg)


def parse_host_ir(text: str) -> HostIr:
    aliases = dict(re.findall(r"^(!\S+) = (.*)$", text, re.M))
    consts = {k: int(v) for k, v in re.findall(r"(%c\w*) = arith.constant (-?\d+) :", text)}
    defs = {}
    for line in text.splitlines():
        m = re.match(r"\s*(%[\w.]+)(?:, (%[\w.]+))? = (.*)", line)
        if m:
            defs[m.group(1)] = m.group(3)
            if m.group(2):
                defs[m.group(2)] = m.group(3)
    host = re.search(r"func.func @(\w+)\(([^)]*)\)", text)
    if not host:
        raise IrError("no host func.func in the IR")
    args = []
    for a in split_top(host.group(2)):
        t = aliases.get(a.split(":", 1)[1].strip(), a.split(":", 1)[1].strip())
        mm = re.match(r'!cute.memref<(\w+), gmem, [^"]*"([^"]+)">', t)
        args.append((mm.group(1), cosize(*parse_layout(mm.group(2))) * DTYPE_BITS[mm.group(1)] // 8)
                    if mm else (t, 0))

    def value(name: str) -> int:
        if name not in consts:
            raise IrError(f"launch value {name} is not a constant (a dynamic grid or shape?)")
        return consts[name]

    cfg = re.search(r"blockDim = \(([^)]*)\), dynamicSmemBytes = (%\w+), gridDim = \(([^)]*)\)", text)
    if not cfg:
        raise IrError("no cuda.launch_cfg.create in the IR")
    block = [value(v.strip()) for v in cfg.group(1).split(",")]
    grid = [value(v.strip()) for v in cfg.group(3).split(",")]
    cl = re.search(r"cluster_dim\[[^\]]*\] \(([^)]*)\)", text)
    cluster = [value(v.strip()) for v in cl.group(1).split(",")] if cl else [1, 1, 1]
    launch = re.search(r"cuda.launch_ex @\w+::@(\w+)<[^>]*> \(([^)]*)\) \{[^}]*\} : [^,]+, \((.*)\) -> ", text)
    if not launch:
        raise IrError("no cuda.launch_ex in the IR")
    ir = HostIr(args, grid, block, cluster, value(cfg.group(2)), launch.group(1))
    operands, types = split_top(launch.group(2)), split_top(launch.group(3))
    for op, ty in zip(operands, types):
        ty_full = aliases.get(ty, ty)
        if "non_exec_tiled_tma" in ty:
            sig = split_top(re.search(r":\s*\((.*)\)\s*->", defs[op]).group(1))
            tm = _tensormap(defs[op], sig, aliases, defs, len(ir.tensormaps))
            ir.tensormaps.append(tm)
            ir.params.append(("tensormap", tm.name))
        elif ty.startswith("!mma_") or "tiled_mma" in ty_full:
            ir.params.append(("mma", None))     # atom runtime fields (accumulate, negate, SF TMEM): 0 at launch
        elif ty_full.startswith("!cute.memref<") and ", gmem" in ty_full:
            if not op.startswith("%arg"):
                raise IrError(f"a gmem tensor operand {op} that is not a kernel argument")
            ir.params.append(("pointer", int(op[4:])))
        elif "fast_divmod_divisor" in ty:
            d = re.search(r"create_divisor\((%\w+)\)", defs[op])
            ir.params.append(("divisor", value(d.group(1))))
        # layouts, tiles, coordinate tensors: static, not kernel parameters
    return ir


def fast_divmod(divisor: int) -> tuple[int, int, int]:
    """(multiplier, shift1, shift2) as the kernel reads them: q = (hi + ((n - hi) >> s1)) >> s2."""
    log2 = (divisor - 1).bit_length()
    multiplier = ((1 << 32) * ((1 << log2) - divisor)) // divisor + 1
    return multiplier & 0xFFFFFFFF, min(log2, 1), max(log2 - 1, 0)
