"""PTX helpers of corpus.py: entries, launch checks against the PTX, and the opcode census."""

import re

from corpus_common import TARGETS, TENSORMAP_TAG

ENTRY_RE = re.compile(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+([A-Za-z_$][\w$]*)\s*\(", re.M)


def ptx_entries(text):
    return ENTRY_RE.findall(text)


def entry_block(text, name):
    """(header, body) of one .entry: the header is the parameter list and the directives before '{'."""
    m = re.search(r"^\s*(?:\.visible\s+|\.weak\s+)?\.entry\s+" + re.escape(name) + r"\s*\(", text, re.M)
    if not m:
        return None, None
    start = m.start()
    brace = text.index("\n{", start)
    header = text[start:brace]
    # The body ends where its braces balance (inline asm blocks put '}' in column 0 too).
    depth = 0
    pos = brace + 1
    while True:
        nl = text.find("\n", pos)
        line = text[pos:] if nl < 0 else text[pos:nl]
        code = line.split("//", 1)[0]
        depth += code.count("{") - code.count("}")
        if depth <= 0 or nl < 0:
            return header, text[brace:(len(text) if nl < 0 else nl + 1)]
        pos = nl + 1


def entry_params(header):
    return re.findall(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)(?:\[(\d+)\])?", header)


def normalized_body(body):
    out = []
    for line in body.splitlines():
        s = line.strip()
        if not s or s.startswith(".loc") or s.startswith(".file") or s.startswith("//"):
            continue
        # names numbered per module: string constants, basic-block labels of the n-th function
        s = re.sub(r"\$str(\$\d+)?", "$str", s)
        out.append(re.sub(r"\$L__BB\d+_", "$L__BB_", s))
    return "\n".join(out)


def check_launch(launch, ptx_text, where, target=None):
    """The consistency checks every launch file gets; returns a list of problems."""
    target = target or TARGETS["sm_90a"]
    problems = []
    name = launch["entry"]
    header, body = entry_block(ptx_text, name)
    if header is None:
        return ["%s: entry %s... not in the PTX" % (where, name[:60])]
    params = entry_params(header)
    hexbytes = launch["params"][0]["hex"]
    if len(params) != 1:
        problems.append("%s: the entry has %d params, the capture gives 1" % (where, len(params)))
    else:
        align, typ, pname, count = params[0]
        if typ != "b8" or not count:
            problems.append("%s: param 0 is .%s, not a .b8 array" % (where, typ))
        elif int(count) != len(hexbytes) // 2:
            problems.append("%s: param 0 is %s bytes in the PTX, sizeof(Params) is %d" %
                            (where, count, len(hexbytes) // 2))
    m = re.search(r"\.maxntid\s+(\d+),\s*(\d+),\s*(\d+)", header)
    threads = launch["block"][0] * launch["block"][1] * launch["block"][2]
    if m and threads > int(m.group(1)) * int(m.group(2)) * int(m.group(3)):
        problems.append("%s: block %s exceeds .maxntid" % (where, launch["block"]))
    m = re.search(r"\.reqntid\s+(\d+),\s*(\d+),\s*(\d+)", header)
    if m and [int(m.group(i)) for i in (1, 2, 3)] != launch["block"]:
        problems.append("%s: block %s differs from .reqntid" % (where, launch["block"]))
    for g, c in zip(launch["grid"], launch["cluster"]):
        if c <= 0 or g % c:
            problems.append("%s: grid %s is not a multiple of cluster %s" % (where, launch["grid"], launch["cluster"]))
            break
    if launch["arch"] != target["arch"]:
        problems.append("%s: arch %s, the corpus is %s" % (where, launch["arch"], target["arch"]))
    if launch["dynamic_smem"] > target["smem_per_block_optin"]:
        problems.append("%s: dynamic_smem %d above %s's %d" % (where, launch["dynamic_smem"], target["arch"],
                                                                target["smem_per_block_optin"]))
    raw = bytes.fromhex(hexbytes)
    found = []
    for off in range(0, len(raw) - 127, 64):
        if raw[off:off + 8] == TENSORMAP_TAG:
            found.append(int.from_bytes(raw[off + 8:off + 12], "little"))
    if sorted(found) != list(range(len(launch["tensormaps"]))):
        problems.append("%s: tensor-map tags in the params %s, tensormaps %d" % (where, found, len(launch["tensormaps"])))
    addrs = {int(b["address"], 16): b for b in launch["buffers"]}
    for t in launch["tensormaps"]:
        a = int(t["address"], 16)
        if not any(b0 <= a < b0 + b["bytes"] for b0, b in addrs.items()):
            problems.append("%s: %s points outside every buffer" % (where, t["name"]))
    return problems


# ---------------------------------------------------------------------------------------------------
# Census


SYNC_PREFIXES = ("mbarrier", "cp.async", "cp.reduce.async", "bar.", "barrier", "wgmma", "fence", "membar",
                 "elect", "griddepcontrol", "setmaxnreg", "red.", "atom.", "st.async", "red.async",
                 "prefetch.tensormap", "prefetch", "mapa", "getctarank", "shfl.sync", "vote.sync", "match.sync",
                 "redux.sync", "nanosleep", "trap", "brkpt", "exit", "tensormap", "stmatrix", "ldmatrix",
                 "multimem", "activemask")


def is_sync_async(op):
    if op.startswith(SYNC_PREFIXES):
        return True
    # loads/stores with memory-model qualifiers (stream-K's flags, scheduler handshakes)
    return (op.startswith("ld.") or op.startswith("st.")) and re.search(
        r"\.(acquire|release|relaxed|volatile|weak)\b", op) is not None


def census_text(text):
    """{opcode-with-modifiers: count} over every instruction of the module, inline asm included."""
    counts = {}
    depth = 0
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line:
            continue
        inside = depth > 0
        depth += line.count("{") - line.count("}")   # vector operands balance within their line
        if not inside:
            continue
        for stmt in line.split(";"):               # inline asm may put several on a line
            s = stmt.strip().lstrip("{}").strip()
            if re.match(r"^[\w$]+:", s):              # label
                s = re.sub(r"^[\w$]+:\s*", "", s)
            if not s or s.startswith("."):         # .reg / .loc / .pragma / .shared ...
                continue
            if s.startswith("@"):
                s = re.sub(r"^@!?[%\w$]+\s+", "", s)
            parts = s.split()
            op = parts[0].rstrip(",") if parts else ""
            if not re.match(r"^[a-z]", op):
                continue
            counts[op] = counts.get(op, 0) + 1
    return counts


def reg_summary(body):
    regs = re.findall(r"\.reg\s+\.(\w+)\s+%(\w+)<(\d+)>", body)
    total = sum(int(n) for _, _, n in regs)
    return total, ", ".join("%s %s" % (t, n) for t, _, n in regs)


def census_report(ptx_paths, labels=None):
    """Per PTX file and per entry: size, parameters, registers, opcode counts; then the matrix of the
    sync / async opcodes over the CUTLASS kernels (cutlass::device_kernel entries). labels: entry ->
    short name (from the manifest)."""
    labels = labels or {}
    lines = []
    kernels = []   # (label, counts)
    for path in ptx_paths:
        with open(path) as f:
            text = f.read()
        lines.append("=" * 110)
        lines.append("%s  (%d bytes, %d lines, %d entries)" % (path, len(text), text.count("\n"), len(ptx_entries(text))))
        for e in ptx_entries(text):
            header, body = entry_block(text, e)
            params = entry_params(header)
            ptxt = "; ".join(".param%s .%s %s%s" % (" .align " + a if a else "", t, "..." + n[-10:],
                                                   "[%s]" % c if c else "") for a, t, n, c in params)
            total, detail = reg_summary(body)
            dirs = " ".join(d.strip() for d in re.findall(
                r"\.(?:maxntid|reqntid|minnctapersm|maxnreg|reqnctapercluster|explicitcluster)[^\n]*", header))
            counts = census_text(body)
            is_kernel = "device_kernel" in e
            label = labels.get(e) or ("device_kernel#%d" % len(kernels) if is_kernel else "")
            lines.append("-" * 110)
            lines.append("entry %s%s" % (e if len(e) < 110 else e[:90] + "... (%d chars)" % len(e),
                                          "  [%s]" % label if label else ""))
            lines.append("  body: %d bytes, %d instructions; params: %s" % (len(body), sum(counts.values()), ptxt))
            lines.append("  registers declared: %d (%s)" % (total, detail))
            if dirs:
                lines.append("  directives: %s" % dirs)
            if not is_kernel:
                lines.append("  (not a CUTLASS kernel: the example's reference / init code; opcodes not listed)")
                continue
            kernels.append((label, counts))
            for op in sorted(counts):
                lines.append("  %s%-92s %7d" % ("* " if is_sync_async(op) else "  ", op, counts[op]))
    lines.append("=" * 110)
    lines.append("sync / async opcodes (marked * above) per kernel:")
    ops = sorted({op for _, c in kernels for op in c if is_sync_async(op)})
    width = max([len(op) for op in ops] + [10])
    lines.append("  %-*s %s" % (width, "", " ".join("%12s" % l[:12] for l, _ in kernels)))
    for op in ops:
        lines.append("  %-*s %s" % (width, op, " ".join("%12s" % (c.get(op, "")) for _, c in kernels)))
    lines.append("  kernels: " + ", ".join(l for l, _ in kernels))
    return "\n".join(lines) + "\n"
