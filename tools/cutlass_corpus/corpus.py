#!/usr/bin/env python3
"""The CUTLASS acceptance corpus of pipesim's PTX front end (tools/cutlass_corpus/README.md).

    corpus.py build BUILD_DIR [--no-mutants] [--arch sm_100a] # what build.sh runs (--arch: the Blackwell part)
    corpus.py mutants BUILD_DIR [--only NAME,...]          # what mutants.sh runs (needs the corpus)
    corpus.py device BUILD_DIR [--only EXE,...] [--jobs 2] # the H100 bundle (device_bundle.sh; needs the corpus)
    corpus.py census FILE.ptx... [--out FILE]              # opcode census of PTX files

Everything third-party comes from the nvidia-cutlass wheel installed by setup_venv.sh into
BUILD_DIR/pyenv; the outputs go to BUILD_DIR/cutlass_corpus/:

    <example>/<example>.ptx                              the capture TU compiled for sm_90a (-lineinfo)
    <example>/<example>[_<variant>]_<M>x<N>x<K>.launch.json
    <example>/<example>[_<variant>]_<M>x<N>x<K>.meta.json   stages, tile, schedule, workspace ...
    mutants/<name>.ptx, mutants/<name>.expect          one patched copy of CUTLASS each
    manifest.json, mutants.json, census.txt
    manifest_sm100.json, census_sm100.txt               --arch sm_100a (corpus_sm100.py: examples 70-77)

and the device step's bundle (README "On the H100") to BUILD_DIR/device/:

    time_<NN>_<variant>, mutant_<name>                 sm_90a executables of the same TUs (-DPIPESIM_CORPUS_DEVICE)
    manifest.json, manifest.tsv, run_device.sh
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

EXAMPLES = [
    {
        "name": "48_hopper_warp_specialized_gemm",
        "tu": "capture_48.cu",
        "source": "examples/48_hopper_warp_specialized_gemm/48_hopper_warp_specialized_gemm.cu",
    },
    {
        "name": "49_hopper_gemm_with_collective_builder",
        "tu": "capture_49.cu",
        "source": "examples/49_hopper_gemm_with_collective_builder/49_collective_builder.cu",
        # capture_49.cu's -DCORPUS_VARIANTS bits: a build with one kernel only
        "variant_bits": {"coop": 1, "pingpong": 2, "coop_streamk": 4, "coop_evt": 8},
    },
    {
        "name": "54_hopper_fp8_warp_specialized_gemm",
        "tu": "capture_54.cu",
        "source": "examples/54_hopper_fp8_warp_specialized_gemm/54_hopper_fp8_warp_specialized_gemm.cu",
        "extra_sources": ["examples/54_hopper_fp8_warp_specialized_gemm/hopper_fp8_commandline.hpp"],
    },
]
BY_NAME = {e["name"]: e for e in EXAMPLES}

# (M, N, K): square, skinny N, K-heavy, and a small one whose CTAs still run 2-3 tiles each and wrap
# the 48 mainloop ring (the mutants' launch).
SHAPES = [(4096, 4096, 4096), (4096, 128, 4096), (512, 512, 16384), (2048, 2048, 256)]
MUTANT_SHAPE = (2048, 2048, 256)

SMEM_PER_BLOCK_OPTIN = 232448  # sm_90: 227 KiB

# What `build --arch` produces: the Hopper corpus (the default, the outputs above) or the Blackwell one
# (corpus_sm100.py), into the same BUILD_DIR/cutlass_corpus/ with their own manifest and census.
TARGETS = {
    "sm_90a": {
        "arch": "sm_90a",
        "gencode": "arch=compute_90a,code=compute_90a",
        "sm_count": 132,
        "smem_per_block_optin": SMEM_PER_BLOCK_OPTIN,
        "examples": EXAMPLES,
        "manifest": "manifest.json",
        "census": "census.txt",
        "extra_headers": [],
        "mutants": True,
    },
}
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
from corpus_sm100 import TARGET as SM100_TARGET  # noqa: E402
TARGETS["sm_100a"] = SM100_TARGET
TENSORMAP_TAG = (0x50414D544D495350).to_bytes(8, "little")


def log(msg):
    print(msg, flush=True)


def fail(msg):
    print("cutlass_corpus: error: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def sha256_file(path, h=None):
    h = h or hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h


def find_nvcc():
    for cand in (os.environ.get("NVCC"), os.environ.get("CUDACXX"), shutil.which("nvcc"),
                 "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    fail("nvcc not found (set NVCC=/path/to/nvcc)")


def nvcc_version(nvcc):
    return subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout


def setup_venv(build_dir):
    r = subprocess.run([os.path.join(HERE, "setup_venv.sh"), build_dir], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        fail("setup_venv.sh failed (see above)")
    src = r.stdout.strip().splitlines()[-1]
    if not os.path.isdir(os.path.join(src, "include", "cutlass")):
        fail("setup_venv.sh printed %r, which has no include/cutlass" % src)
    return src


def wheel_record(src):
    """The wheel's RECORD (a hash of every file it installed): stands for all of CUTLASS in cache keys."""
    site = os.path.dirname(os.path.dirname(src))
    for d in sorted(os.listdir(site)):
        if d.startswith("nvidia_cutlass-") and d.endswith(".dist-info"):
            return os.path.join(site, d, "RECORD")
    fail("no nvidia_cutlass-*.dist-info next to " + src)


def include_flags(src, include_dir=None, ex=None):
    return ["-I" + HERE,
            "-I" + (include_dir or os.path.join(src, "include")),
            "-I" + os.path.join(src, "tools", "util", "include"),
            "-I" + os.path.join(src, "examples", "common"),
            "-I" + os.path.join(src, "examples")] + [
            "-I" + os.path.join(src, d) for d in (ex or {}).get("include_dirs", [])]


# Flags of every compile: a release build (NDEBUG: no device asserts or pipeline brkpt checks), line
# info for reports, CUTLASS calling cuTensorMapEncodeTiled directly (the capture defines it).
COMMON_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-lineinfo", "-DNDEBUG",
                "-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1", "-Xcompiler=-Wno-psabi"]


def run_timed(cmd, what, log_path):
    t0 = time.time()
    with open(log_path, "w") as lf:
        lf.write(" ".join(cmd) + "\n\n")
        lf.flush()
        r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT)
    dt = time.time() - t0
    if r.returncode != 0:
        with open(log_path) as lf:
            tail = lf.read()[-6000:]
        fail("%s failed (exit %d) after %.1f s; log %s:\n%s" % (what, r.returncode, dt, log_path, tail))
    return dt


def nice_prefix():
    return ["nice", "-n", "10"] if shutil.which("nice") else []


def shape_name(shape):
    return "x".join(str(v) for v in shape)


def launch_stem(example, variant, variants, shape, label=None):
    name = label.format(*shape) if label else shape_name(shape)
    if len(variants) == 1:
        return "%s_%s" % (example, name)
    return "%s_%s_%s" % (example, variant, name)


def write_if_changed(path, data):
    if isinstance(data, str):
        data = data.encode()
    if os.path.exists(path):
        with open(path, "rb") as f:
            if f.read() == data:
                return
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------------
# PTX helpers


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


# ---------------------------------------------------------------------------------------------------
# Build


def example_key(nvcc_ver, src, ex, flags, target=None):
    h = hashlib.sha256()
    h.update(nvcc_ver.encode())
    h.update(json.dumps(flags).encode())
    headers = [os.path.join(HERE, f) for f in (target or TARGETS["sm_90a"])["extra_headers"]]
    for p in [os.path.join(HERE, ex["tu"]), os.path.join(HERE, "capture_common.hpp")] + headers + [wheel_record(src)]:
        sha256_file(p, h)
    for rel in [ex["source"]] + ex.get("extra_sources", []):
        sha256_file(os.path.join(src, rel), h)
    return h.hexdigest()


def compile_example(nvcc, nvcc_ver, src, ex, work, target):
    """One nvcc run: the host capture binary, keeping the PTX it embeds (the same as -arch=sm_90a -ptx,
    or sm_100a)."""
    os.makedirs(work, exist_ok=True)
    stem = os.path.splitext(ex["tu"])[0]
    binary = os.path.join(work, stem)
    ptx = os.path.join(work, "keep", stem + ".ptx")
    flags = COMMON_FLAGS + ["-gencode", target["gencode"], "-cudart", "shared", "-lpthread"]
    key = example_key(nvcc_ver, src, ex, flags, target)
    key_file = os.path.join(work, "key")
    if os.path.exists(key_file) and open(key_file).read() == key and os.path.exists(binary) and os.path.exists(ptx):
        return binary, ptx, None
    if os.path.exists(key_file):
        os.remove(key_file)
    keep = os.path.join(work, "keep")
    shutil.rmtree(keep, ignore_errors=True)
    os.makedirs(keep)
    cmd = nice_prefix() + [nvcc] + flags + include_flags(src, ex=ex) + ["-keep", "-keep-dir", keep, "-o", binary,
                                                                        os.path.join(HERE, ex["tu"])]
    dt = run_timed(cmd, "compiling " + ex["tu"], os.path.join(work, "compile.log"))
    if not os.path.exists(ptx):
        fail("nvcc kept no %s" % ptx)
    # The intermediates other than the PTX are large and never read again.
    for f in os.listdir(keep):
        if not f.endswith(".ptx"):
            os.remove(os.path.join(keep, f))
    with open(key_file, "w") as f:
        f.write(key)
    return binary, ptx, dt


def launch_json(launch):
    """The launch file as the capture prints it: one line per buffer and tensor map."""
    out = ["{"]
    for k in ("entry", "arch", "grid", "block", "cluster", "dynamic_smem"):
        out.append("  %s: %s," % (json.dumps(k), json.dumps(launch[k])))
    # CUTLASS's ClusterLauncher::init sets cudaFuncAttributeNonPortableClusterSizeAllowed on every
    # cluster launch; the launch file says so where it matters (clusters above 8 CTAs: 73's and 74's 4x4).
    if launch["cluster"][0] * launch["cluster"][1] * launch["cluster"][2] > 8:
        out.append("  \"non_portable_cluster_size\": true,")
    for k in ("buffers", "tensormaps"):
        items = [json.dumps(x) for x in launch[k]]
        out.append("  %s: [%s%s%s]," % (json.dumps(k), "\n    " if items else "", ",\n    ".join(items),
                                         "\n  " if items else ""))
    out.append("  \"params\": [%s]" % ", ".join(json.dumps(p) for p in launch["params"]))
    out.append("}")
    return "\n".join(out) + "\n"


def drop_unused_tensormaps(launch):
    """Keep the tensor maps whose tag is in the params, renumbered in order (and renamed: tma_<buffer>,
    _1, _2 ... for more of one buffer). Example 77's to_underlying_arguments encodes maps it then
    replaces (9 calls, 4 in Params); every map of the GEMMs is in their Params (nothing changes)."""
    raw = bytearray.fromhex(launch["params"][0]["hex"])
    used = []
    for off in range(0, len(raw) - 127, 64):
        if raw[off:off + 8] == TENSORMAP_TAG:
            used.append((int.from_bytes(raw[off + 8:off + 12], "little"), off))
    keep = sorted({i for i, _ in used})
    if keep == list(range(len(launch["tensormaps"]))) or any(i >= len(launch["tensormaps"]) for i in keep):
        return launch  # all used (or a tag without a map: check_launch reports it)
    renumber = {old: new for new, old in enumerate(keep)}
    for old, off in used:
        raw[off + 8:off + 12] = renumber[old].to_bytes(4, "little")
    launch["params"][0]["hex"] = raw.hex()
    maps = [launch["tensormaps"][i] for i in keep]
    seen = {}
    for t in maps:
        base = re.sub(r"_\d+$", "", t["name"]) if not t["name"].startswith("tma_unknown") else "tma_unknown"
        n = seen.get(base, 0)
        seen[base] = n + 1
        t["name"] = base if n == 0 else "%s_%d" % (base, n)
    launch["tensormaps"] = maps
    return launch


def capture(binary, variant, ptx, shape, meta_path):
    cmd = [binary, "--variant", variant, "--ptx", ptx, "--meta", meta_path] + [str(v) for v in shape]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s failed (exit %d):\n%s" % (" ".join(cmd), r.returncode, r.stderr[-4000:]))
    try:
        return r.stdout, drop_unused_tensormaps(json.loads(r.stdout))
    except json.JSONDecodeError as e:
        fail("%s printed no JSON: %s" % (" ".join(cmd), e))


def variants_of(binary):
    r = subprocess.run([binary, "--list"], capture_output=True, text=True)
    if r.returncode != 0:
        fail("%s --list failed: %s" % (binary, r.stderr))
    return r.stdout.split()


def cmd_build(args):
    t_start = time.time()
    build_dir = os.path.abspath(args.build_dir)
    src = setup_venv(build_dir)
    nvcc = find_nvcc()
    nvcc_ver = nvcc_version(nvcc)
    out = os.path.join(build_dir, "cutlass_corpus")
    work_root = os.path.join(out, ".work")
    os.makedirs(work_root, exist_ok=True)
    log("cutlass_corpus: CUTLASS sources %s" % src)
    log("cutlass_corpus: %s" % nvcc_ver.strip().splitlines()[-1])

    target = TARGETS[args.arch]
    examples = target["examples"]
    if args.only:
        unknown = args.only - {e["name"] for e in examples}
        if unknown:
            fail("--only: no %s example named %s" % (target["arch"], ", ".join(sorted(unknown))))
    manifest = {"cutlass": os.path.basename(os.path.dirname(wheel_record(src))), "arch": target["arch"],
                "sm_count": target["sm_count"], "kernels": []}
    timings = []
    all_ptx = []
    problems = []
    for ex in examples:
        if args.only and ex["name"] not in args.only:
            continue
        work = os.path.join(work_root, ex["name"])
        binary, kept_ptx, dt = compile_example(nvcc, nvcc_ver, src, ex, work, target)
        if dt is None:
            log("  %-45s cached" % ex["tu"])
        else:
            log("  %-45s compiled in %6.1f s" % (ex["tu"], dt))
            timings.append((ex["tu"], dt))
        kdir = os.path.join(out, ex["name"])
        os.makedirs(kdir, exist_ok=True)
        ptx_path = os.path.join(kdir, ex["name"] + ".ptx")
        with open(kept_ptx, "rb") as f:
            ptx_bytes = f.read()
        write_if_changed(ptx_path, ptx_bytes)
        ptx_text = ptx_bytes.decode()
        all_ptx.append(ptx_path)
        variants = variants_of(binary)
        for variant in variants:
            # Every shape, twice. Bytes of Params that the construction takes from uninitialised memory
            # (padding, empty members) are found by the capture (its passes differ there) and written
            # as 0; the union over all shapes and both runs is zeroed in every launch of the kernel, so
            # a byte the passes of one capture happened to agree on cannot make the files differ.
            runs = []
            mask = set()
            for shape in ex.get("shapes", SHAPES):
                stem = launch_stem(ex["name"], variant, variants, shape, ex.get("shape_label"))
                meta_path = os.path.join(kdir, stem + ".meta.json")
                pair = []
                for _ in range(2):
                    _, launch = capture(binary, variant, ptx_path, shape, meta_path)
                    with open(meta_path) as f:
                        meta = json.load(f)
                    mask.update(meta["indeterminate"])
                    pair.append(launch)
                a, b = (bytes.fromhex(l["params"][0]["hex"]) for l in pair)
                if len(a) != len(b) or {k: v for k, v in pair[0].items() if k != "params"} != \
                        {k: v for k, v in pair[1].items() if k != "params"}:
                    problems.append("%s %s %s: two captures differ beyond the params" %
                                    (ex["name"], variant, shape_name(shape)))
                mask.update(i for i in range(len(a)) if a[i] != b[i])
                runs.append((shape, stem, meta_path, pair[0], meta))
            for shape, stem, meta_path, launch, meta in runs:
                raw = bytearray.fromhex(launch["params"][0]["hex"])
                for i in mask:
                    raw[i] = 0
                launch["params"][0]["hex"] = raw.hex()
                meta["indeterminate"] = sorted(mask)
                meta["indeterminate_bytes"] = len(mask)
                write_if_changed(meta_path, json.dumps(meta) + "\n")
                launch_path = os.path.join(kdir, stem + ".launch.json")
                write_if_changed(launch_path, launch_json(launch))
                problems += check_launch(launch, ptx_text, os.path.relpath(launch_path, out), target)
                manifest["kernels"].append({
                    "example": ex["name"], "variant": variant, "shape": list(shape),
                    "ptx": os.path.relpath(ptx_path, out), "launch": os.path.relpath(launch_path, out),
                    "meta": os.path.relpath(meta_path, out), "entry": launch["entry"],
                    "grid": launch["grid"], "block": launch["block"], "cluster": launch["cluster"],
                    "dynamic_smem": launch["dynamic_smem"], "schedule": meta["schedule"],
                    "tile_scheduler": meta["tile_scheduler"], "stages": meta["stages"], "tile": meta["tile"],
                    "workspace_bytes": meta["workspace_bytes"], "expect": "ok",
                })
                if "cluster_fallback" in meta:
                    manifest["kernels"][-1]["cluster_fallback"] = meta["cluster_fallback"]
        log("  %-45s %d variant(s) x %d shapes captured" % (ex["name"], len(variants), len(ex.get("shapes", SHAPES))))
    if problems:
        fail("launch checks:\n  " + "\n  ".join(problems))
    manifest_path = os.path.join(out, target["manifest"])
    if args.only and os.path.exists(manifest_path):
        # keep the other examples' entries and PTX of an earlier full build
        with open(manifest_path) as f:
            old = json.load(f)
        manifest["kernels"] = [k for k in old["kernels"] if k["example"] not in args.only] + manifest["kernels"]
        manifest["kernels"].sort(key=lambda k: [e["name"] for e in examples].index(k["example"]))
        all_ptx = sorted({os.path.join(out, k["ptx"]) for k in manifest["kernels"]},
                         key=lambda p: [e["name"] for e in examples].index(os.path.basename(os.path.dirname(p))))
    write_if_changed(manifest_path, json.dumps(manifest, indent=1) + "\n")
    labels = {}
    for k in manifest["kernels"]:
        labels[k["entry"]] = "%s:%s" % (k["example"][:2], k["variant"])
    write_if_changed(os.path.join(out, target["census"]), census_report(all_ptx, labels))
    if target["mutants"] and not args.no_mutants and not args.only:
        timings += run_mutants(build_dir, src, nvcc, nvcc_ver, None)
    total = time.time() - t_start
    log("cutlass_corpus: %d launch files, %d compiles (%.1f s compiling), %.1f s in all -> %s" %
        (len(manifest["kernels"]), len(timings), sum(t for _, t in timings), total, out))


# ---------------------------------------------------------------------------------------------------
# Mutants

from mutants_spec import MUTANTS  # noqa: E402  (the patch list lives in its own file)


def apply_patches(tree, mutant):
    """Patch the files of a mutant in the symlinked include tree; return [(file, line)] touched."""
    touched = []
    for edit in mutant["edits"]:
        rel = edit["file"]
        path = os.path.join(tree, rel)
        with open(path) as f:
            text = f.read()
        n = text.count(edit["old"])
        want = edit.get("count", 1)
        if n != want:
            fail("mutant %s: %s contains the pattern %d times, expected %d (has CUTLASS changed?):\n%s" %
                 (mutant["name"], rel, n, want, edit["old"]))
        line = text[:text.index(edit["old"])].count("\n") + 1 + edit.get("line_offset", 0)
        text = text.replace(edit["old"], edit["new"])
        os.remove(path)  # a symlink into the wheel: replace it, never write through it
        with open(path, "w") as f:
            f.write(text)
        touched.append((rel, line))
    return touched


def make_mutant_tree(src, mutant, tree):
    """A tree of symlinks to the wheel's include/ with the patched files as real files: includes relative
    to the including file ("sm90_epilogue_tma_warpspecialized.hpp") find them too. Returns touched."""
    shutil.copytree(os.path.join(src, "include"), tree, symlinks=True,
                    copy_function=lambda s, d: os.symlink(os.path.abspath(s), d))
    return apply_patches(tree, mutant)


def mutant_key(nvcc_ver, src, ex, mutant, flags):
    h = hashlib.sha256(example_key(nvcc_ver, src, ex, flags).encode())
    h.update(json.dumps(mutant, sort_keys=True).encode())
    return h.hexdigest()


def run_mutants(build_dir, src, nvcc, nvcc_ver, only):
    out = os.path.join(build_dir, "cutlass_corpus")
    mdir = os.path.join(out, "mutants")
    work_root = os.path.join(out, ".work", "mutants")
    os.makedirs(mdir, exist_ok=True)
    os.makedirs(work_root, exist_ok=True)
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    timings = []
    records = []
    names = set()
    for mutant in MUTANTS:
        if mutant["name"] in names:
            fail("two mutants named " + mutant["name"])
        names.add(mutant["name"])
        if only and mutant["name"] not in only:
            continue
        ex = BY_NAME[mutant["example"]]
        base = [k for k in manifest["kernels"] if k["example"] == ex["name"] and k["variant"] == mutant["variant"]
                and tuple(k["shape"]) == MUTANT_SHAPE]
        if len(base) != 1:
            fail("mutant %s: no base launch for %s/%s %s (run build first)" %
                 (mutant["name"], ex["name"], mutant["variant"], shape_name(MUTANT_SHAPE)))
        base = base[0]
        defines = ["-D%s" % d for d in mutant.get("defines", [])]
        flags = COMMON_FLAGS + ["-arch=sm_90a", "-ptx"] + defines
        key = mutant_key(nvcc_ver, src, ex, mutant, flags)
        work = os.path.join(work_root, mutant["name"])
        ptx_out = os.path.join(mdir, mutant["name"] + ".ptx")
        key_file = os.path.join(work, "key")
        touched_file = os.path.join(work, "touched.json")
        if (os.path.exists(key_file) and open(key_file).read() == key and os.path.exists(ptx_out)
                and os.path.exists(touched_file)):
            with open(touched_file) as f:
                touched = [tuple(t) for t in json.load(f)]
            log("  mutant %-40s cached" % mutant["name"])
        else:
            shutil.rmtree(work, ignore_errors=True)
            os.makedirs(work)
            tree = os.path.join(work, "include")
            touched = make_mutant_tree(src, mutant, tree)
            tmp_ptx = os.path.join(work, mutant["name"] + ".ptx")
            cmd = nice_prefix() + [nvcc] + flags + include_flags(src, tree) + ["-o", tmp_ptx, os.path.join(HERE, ex["tu"])]
            dt = run_timed(cmd, "compiling mutant " + mutant["name"], os.path.join(work, "compile.log"))
            timings.append(("mutant " + mutant["name"], dt))
            log("  mutant %-40s compiled in %6.1f s" % (mutant["name"], dt))
            with open(tmp_ptx) as f:
                mtext = f.read()
            with open(os.path.join(out, base["ptx"])) as f:
                btext = f.read()
            mh, mb = entry_block(mtext, base["entry"])
            bh, bb = entry_block(btext, base["entry"])
            if mh is None:
                fail("mutant %s: its PTX has no entry %s..." % (mutant["name"], base["entry"][:60]))
            if entry_params(mh) != entry_params(bh):
                fail("mutant %s: the entry's parameters changed (%s vs %s): the base launch does not apply" %
                     (mutant["name"], entry_params(mh), entry_params(bh)))
            if normalized_body(mb) == normalized_body(bb):
                fail("mutant %s: the patch did not change the kernel's code (is the patched file really "
                     "the one compiled?)" % mutant["name"])
            # Only the mutated kernel: the module may hold others of the example.
            os.replace(tmp_ptx, ptx_out)
            shutil.rmtree(tree)
            with open(touched_file, "w") as f:
                json.dump(touched, f)
            with open(key_file, "w") as f:
                f.write(key)
        source = ", ".join("%s:%d" % t for t in touched)
        expect_lines = [
            "# pipesim acceptance mutant %s (tools/cutlass_corpus/mutants_spec.py): %s" % (mutant["name"], mutant["class"]),
            "expect %s" % mutant["expect"],
            "ptx mutants/%s.ptx" % mutant["name"],
            "launch %s" % base["launch"],
            "kernel %s %s" % (ex["name"], mutant["variant"]),
            "source %s" % source,
            "confidence %s" % mutant["confidence"],
        ]
        expect_lines += ["# " + l for l in mutant["why"].strip().splitlines()]
        write_if_changed(os.path.join(mdir, mutant["name"] + ".expect"), "\n".join(expect_lines) + "\n")
        records.append({"name": mutant["name"], "class": mutant["class"], "expect": mutant["expect"],
                        "confidence": mutant["confidence"], "ptx": "mutants/%s.ptx" % mutant["name"],
                        "launch": base["launch"], "example": ex["name"], "variant": mutant["variant"],
                        "source": ["%s:%d" % t for t in touched],
                        "expect_file": "mutants/%s.expect" % mutant["name"]})
    if not only:
        write_if_changed(os.path.join(out, "mutants.json"), json.dumps(records, indent=1) + "\n")
        # files of mutants no longer in the spec
        for f in os.listdir(mdir):
            if os.path.splitext(f)[0] not in names:
                os.remove(os.path.join(mdir, f))
    return timings


def cmd_mutants(args):
    build_dir = os.path.abspath(args.build_dir)
    src = setup_venv(build_dir)
    nvcc = find_nvcc()
    if not os.path.exists(os.path.join(build_dir, "cutlass_corpus", "manifest.json")):
        fail("no corpus in %s: run tools/cutlass_corpus/build.sh %s first" % (build_dir, build_dir))
    t0 = time.time()
    timings = run_mutants(build_dir, src, nvcc, nvcc_version(nvcc), set(args.only.split(",")) if args.only else None)
    log("cutlass_corpus: mutants done, %d compiled (%.1f s), %.1f s in all" %
        (len(timings), sum(t for _, t in timings), time.time() - t0))


# ---------------------------------------------------------------------------------------------------
# Device bundle (README "On the H100"): the same TUs built for a real sm_90a GPU


# As COMMON_FLAGS (the same CUTLASS host code: CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL, whose one driver
# call device_common.hpp forwards through the runtime), optimised, SASS for sm_90a only, cudart static
# (no libcuda, no libcudart.so needed to start), unused sections dropped, stripped.
DEVICE_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-O3", "-DNDEBUG",
                "-DCUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL=1", "-Xcompiler=-Wno-psabi", "-DPIPESIM_CORPUS_DEVICE",
                "-gencode", "arch=compute_90a,code=sm_90a", "-cudart", "static",
                "-Xcompiler", "-ffunction-sections", "-Xcompiler", "-fdata-sections",
                "-Xlinker", "--gc-sections", "-Xlinker", "-s", "-lpthread"]
DEVICE_BUNDLE_LIMIT = 60 << 20   # the bundle travels to the GPU machine


def device_jobs(out, manifest, mutant_records):
    """One executable per kernel variant of the manifest (timing) and one per mutant (watchdog)."""
    jobs = []
    seen = []
    for k in manifest["kernels"]:
        if (k["example"], k["variant"]) in seen:
            continue
        seen.append((k["example"], k["variant"]))
        ex = BY_NAME[k["example"]]
        defines = ["PIPESIM_CORPUS_KERNEL=" + ex["name"], "PIPESIM_CORPUS_VARIANT=" + k["variant"]]
        if "variant_bits" in ex:
            defines.append("CORPUS_VARIANTS=%d" % ex["variant_bits"][k["variant"]])
        jobs.append({"kind": "timing", "name": "time_%s_%s" % (ex["name"][:2], k["variant"]), "ex": ex,
                     "variant": k["variant"], "defines": defines, "entry": k["entry"],
                     "ref_ptx": os.path.join(out, k["ptx"]), "mutant": None, "expect": "ok", "confidence": "",
                     "shapes": [tuple(k2["shape"]) for k2 in manifest["kernels"]
                                if (k2["example"], k2["variant"]) == (k["example"], k["variant"])]})
    spec = {m["name"]: m for m in MUTANTS}
    for r in mutant_records:
        m = spec.get(r["name"])
        if m is None:
            fail("mutants.json names %s, which mutants_spec.py does not (run mutants.sh)" % r["name"])
        ex = BY_NAME[m["example"]]
        base = [k for k in manifest["kernels"] if k["example"] == ex["name"] and k["variant"] == m["variant"]
                and tuple(k["shape"]) == MUTANT_SHAPE]
        if len(base) != 1 or base[0]["launch"] != r["launch"]:
            fail("mutant %s: its launch %s is not the manifest's %s %s at %s" %
                 (m["name"], r["launch"], ex["name"], m["variant"], shape_name(MUTANT_SHAPE)))
        defines = ["PIPESIM_CORPUS_KERNEL=" + ex["name"], "PIPESIM_CORPUS_VARIANT=" + m["variant"],
                   "PIPESIM_CORPUS_MUTANT=" + m["name"]] + m.get("defines", [])
        jobs.append({"kind": "mutant", "name": "mutant_" + m["name"], "ex": ex, "variant": m["variant"],
                     "defines": defines, "entry": base[0]["entry"], "ref_ptx": os.path.join(out, r["ptx"]),
                     "mutant": m, "expect": r["expect"], "confidence": r["confidence"], "shapes": [MUTANT_SHAPE]})
    names = [j["name"] for j in jobs]
    if len(set(names)) != len(names):
        fail("two device executables with one name: %s" % names)
    return jobs


def device_key(nvcc_ver, src, job, flags):
    h = hashlib.sha256(example_key(nvcc_ver, src, job["ex"], flags).encode())
    sha256_file(os.path.join(HERE, "device_common.hpp"), h)
    h.update(json.dumps(job["mutant"], sort_keys=True).encode())
    return h.hexdigest()


def check_same_kernel(got_path, ref_path, entry, what):
    """The kernel of the device build is the corpus' kernel: same parameters, same code (normalised: no
    .loc, numbering of labels and strings) as the PTX that pipesim checks."""
    with open(got_path) as f:
        got = f.read()
    with open(ref_path) as f:
        ref = f.read()
    gh, gb = entry_block(got, entry)
    rh, rb = entry_block(ref, entry)
    if rh is None:
        fail("%s: %s has no entry %s..." % (what, ref_path, entry[:60]))
    if gh is None:
        fail("%s: the device build's PTX has no entry %s... (a different kernel?)" % (what, entry[:60]))
    if entry_params(gh) != entry_params(rh):
        fail("%s: the device build's kernel parameters differ from %s" % (what, ref_path))
    if normalized_body(gb) != normalized_body(rb):
        fail("%s: the device build's kernel code differs from %s's (normalised); it would not run the "
             "kernel pipesim checks" % (what, ref_path))


def smoke_test(exe, job):
    """Here, with no GPU visible (CUDA_VISIBLE_DEVICES empty even where one exists: nothing is ever
    launched here): the program starts, lists its variant, and stops cleanly with kind=no_device."""
    r = subprocess.run([exe, "--list"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or job["variant"] not in r.stdout.split():
        fail("%s --list: exit %d, %r (expected %s)" % (exe, r.returncode, r.stdout + r.stderr, job["variant"]))
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    shape = [str(v) for v in job["shapes"][-1]]
    r = subprocess.run([exe] + shape, capture_output=True, text=True, timeout=60, env=env)
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    want = "kernel=%s variant=%s shape=%s" % (job["ex"]["name"], job["variant"], "x".join(shape))
    if r.returncode != 2 or len(lines) != 1 or "verdict=error kind=no_device" not in lines[0] or want not in lines[0]:
        fail("%s without a GPU: exit %d, stdout %r, stderr %r (expected exit 2 and one RESULT line with %s "
             "verdict=error kind=no_device)" % (exe, r.returncode, r.stdout, r.stderr, want))
    if job["kind"] == "mutant" and not lines[0].startswith("RESULT mutant=%s verdict=" % job["mutant"]["name"]):
        fail("%s: its RESULT line does not start with mutant=%s: %s" % (exe, job["mutant"]["name"], lines[0]))


def device_compile(nvcc, nvcc_ver, src, job, work_root):
    """Build (or find cached) one executable; returns (path, seconds or None if cached)."""
    work = os.path.join(work_root, job["name"])
    flags = DEVICE_FLAGS + ["-D" + d for d in job["defines"]]
    key = device_key(nvcc_ver, src, job, flags)
    exe = os.path.join(work, job["name"])
    key_file = os.path.join(work, "key")
    ptx = os.path.join(work, "keep", os.path.splitext(job["ex"]["tu"])[0] + ".ptx")
    if os.path.exists(key_file) and open(key_file).read() == key and os.path.exists(exe) and os.path.exists(ptx):
        check_same_kernel(ptx, job["ref_ptx"], job["entry"], job["name"])  # against the corpus as it is now
        return exe, None
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    include_dir = None
    if job["mutant"]:
        include_dir = os.path.join(work, "include")
        make_mutant_tree(src, job["mutant"], include_dir)
    keep = os.path.join(work, "keep")
    os.makedirs(keep)
    cmd = nice_prefix() + [nvcc] + flags + include_flags(src, include_dir) + [
        "-keep", "-keep-dir", keep, "-o", exe, os.path.join(HERE, job["ex"]["tu"])]
    dt = run_timed(cmd, "compiling " + job["name"], os.path.join(work, "compile.log"))
    if not os.path.exists(ptx):
        fail("nvcc kept no %s" % ptx)
    check_same_kernel(ptx, job["ref_ptx"], job["entry"], job["name"])
    for f in os.listdir(keep):
        if not f.endswith(".ptx"):
            os.remove(os.path.join(keep, f))
    if include_dir:
        shutil.rmtree(include_dir)
    with open(key_file, "w") as f:
        f.write(key)
    return exe, dt


def cmd_device(args):
    t_start = time.time()
    build_dir = os.path.abspath(args.build_dir)
    out = os.path.join(build_dir, "cutlass_corpus")
    for f in ("manifest.json", "mutants.json"):
        if not os.path.exists(os.path.join(out, f)):
            fail("no %s in %s: run tools/cutlass_corpus/build.sh %s first" % (f, out, build_dir))
    src = setup_venv(build_dir)
    nvcc = find_nvcc()
    nvcc_ver = nvcc_version(nvcc)
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    with open(os.path.join(out, "mutants.json")) as f:
        mutant_records = json.load(f)
    jobs = device_jobs(out, manifest, mutant_records)
    only = set(args.only.split(",")) if args.only else None
    if only:
        unknown = only - {j["name"] for j in jobs}
        if unknown:
            fail("--only: no executable named %s (there are %s)" % (", ".join(sorted(unknown)),
                                                                   ", ".join(j["name"] for j in jobs)))
        jobs = [j for j in jobs if j["name"] in only]
    bundle = os.path.join(build_dir, "device")
    work_root = os.path.join(out, ".work", "device")
    os.makedirs(bundle, exist_ok=True)
    os.makedirs(work_root, exist_ok=True)
    log("cutlass_corpus device: %d executables -> %s (%d compile jobs at most)" % (len(jobs), bundle, args.jobs))

    # The 49 builds are the slowest: start them first.
    order = sorted(jobs, key=lambda j: (j["ex"]["name"] != EXAMPLES[1]["name"], jobs.index(j)))
    timings = []
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(device_compile, nvcc, nvcc_ver, src, j, work_root): j for j in order}
        for fut in concurrent.futures.as_completed(futures):
            j = futures[fut]
            exe, dt = fut.result()
            results[j["name"]] = exe
            if dt is None:
                log("  %-45s cached" % j["name"])
            else:
                timings.append((j["name"], dt))
                log("  %-45s compiled in %6.1f s (kernel = the corpus' PTX)" % (j["name"], dt))

    entries = []
    for j in jobs:
        dst = os.path.join(bundle, j["name"])
        with open(results[j["name"]], "rb") as f:
            data = f.read()
        write_if_changed(dst, data)
        os.chmod(dst, 0o755)
        smoke_test(dst, j)
        entries.append({"name": j["name"], "kind": j["kind"], "example": j["ex"]["name"], "variant": j["variant"],
                        "mutant": j["mutant"]["name"] if j["mutant"] else None,
                        "shapes": [shape_name(s) for s in j["shapes"]], "expect": j["expect"],
                        "confidence": j["confidence"], "entry": j["entry"],
                        "ptx": os.path.relpath(j["ref_ptx"], out), "bytes": len(data),
                        "sha256": hashlib.sha256(data).hexdigest()})
    log("  smoke test here (no GPU visible): every executable starts, lists its variant, exits 2 with "
        "verdict=error kind=no_device")
    if only:
        log("cutlass_corpus device: --only: %d built and checked; manifest not rewritten" % len(jobs))
        return

    with open(os.path.join(HERE, "run_device.sh"), "rb") as f:
        write_if_changed(os.path.join(bundle, "run_device.sh"), f.read())
    os.chmod(os.path.join(bundle, "run_device.sh"), 0o755)
    dmanifest = {
        "cutlass": manifest["cutlass"], "arch": "sm_90a", "nvcc": nvcc_ver.strip().splitlines()[-1],
        "flags": DEVICE_FLAGS, "capture_sm_count": manifest["sm_count"],
        "shapes": [shape_name(s) for s in SHAPES], "mutant_shape": shape_name(MUTANT_SHAPE),
        "executables": entries,
    }
    tsv = ["# kind\texecutable\texample\tvariant\tshapes\texpect (corpus.py device; run_device.sh reads this)"]
    for e in entries:
        tsv.append("\t".join([e["kind"], e["name"], e["example"], e["variant"], ",".join(e["shapes"]), e["expect"]]))
    keep_files = {e["name"] for e in entries} | {"manifest.json", "manifest.tsv", "run_device.sh"}
    for f in os.listdir(bundle):
        if f not in keep_files:
            p = os.path.join(bundle, f)
            shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.remove(p)
    write_if_changed(os.path.join(bundle, "manifest.tsv"), "\n".join(tsv) + "\n")
    dmanifest["executables_bytes"] = sum(e["bytes"] for e in entries)
    write_if_changed(os.path.join(bundle, "manifest.json"), json.dumps(dmanifest, indent=1) + "\n")
    total = sum(os.path.getsize(os.path.join(bundle, f)) for f in os.listdir(bundle))
    if total > DEVICE_BUNDLE_LIMIT:
        fail("the device bundle is %.1f MiB, over its %.0f MiB limit" % (total / 2**20, DEVICE_BUNDLE_LIMIT / 2**20))
    log("cutlass_corpus device: %d executables (%d timing, %d mutants), %d compiles (%.1f s compiling), "
        "bundle %.1f MiB, %.1f s in all -> %s" %
        (len(entries), sum(e["kind"] == "timing" for e in entries), sum(e["kind"] == "mutant" for e in entries),
         len(timings), sum(t for _, t in timings), total / 2**20, time.time() - t_start, bundle))


def cmd_census(args):
    labels = {}
    if args.manifest:
        with open(args.manifest) as f:
            for k in json.load(f)["kernels"]:
                labels[k["entry"]] = "%s:%s" % (k["example"][:2], k["variant"])
    text = census_report(args.ptx, labels)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("build_dir")
    b.add_argument("--no-mutants", action="store_true")
    b.add_argument("--only", help="comma-separated example names (no mutants then)")
    b.add_argument("--arch", choices=sorted(TARGETS), default="sm_90a",
                   help="sm_90a: the Hopper corpus (default); sm_100a: the Blackwell one (manifest_sm100.json)")
    m = sub.add_parser("mutants")
    m.add_argument("build_dir")
    m.add_argument("--only", help="comma-separated mutant names")
    d = sub.add_parser("device")
    d.add_argument("build_dir")
    d.add_argument("--only", help="comma-separated executable names (time_49_coop, mutant_NAME, ...)")
    d.add_argument("--jobs", type=int, default=2, help="concurrent nvcc runs (default 2)")
    c = sub.add_parser("census")
    c.add_argument("ptx", nargs="+")
    c.add_argument("--out")
    c.add_argument("--manifest", help="the corpus' manifest.json, to name the kernels")
    args = ap.parse_args()
    if args.cmd == "build":
        args.only = set(args.only.split(",")) if args.only else None
        cmd_build(args)
    elif args.cmd == "mutants":
        cmd_mutants(args)
    elif args.cmd == "device":
        cmd_device(args)
    else:
        cmd_census(args)


if __name__ == "__main__":
    main()
