"""Shared pieces of corpus.py (tools/cutlass_corpus/README.md): the examples, shapes and targets,
logging, nvcc and the venv, and small file helpers."""

import hashlib
import json
import os
import shutil
import subprocess
import sys
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

# (M, N, K): square, skinny N, K-heavy, a small one whose CTAs still run 2-3 tiles each and wrap the 48
# mainloop ring (the mutants' launch); skinny M with a long K (64 tiles of 128x128 on 132 SMs: half the
# machine idle, the mainloop's steady state); a mid square whose A and B (16 MiB at F16) fit in one
# half of the H100's L2 where 4096^3's (64 MiB) do not. Each adds a check of ~1/8 of 4096^3's work.
SHAPES = [(4096, 4096, 4096), (4096, 128, 4096), (512, 512, 16384), (2048, 2048, 256),
          (256, 4096, 8192), (2048, 2048, 2048)]
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
        # the spec module listing the mutants, their directory and records file under cutlass_corpus/
        "mutants": {"spec": "mutants_spec", "dir": "mutants", "records": "mutants.json"},
    },
}
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


# The cache key of an example's compile (build, mutants and device reuse outputs by it).
def work_dir(out, *parts):
    """Where compiled capture binaries and their PTX are kept, keyed by example_key: BUILD_DIR/cutlass_corpus/.work,
    or $PIPESIM_CORPUS_CACHE when set (CI keeps it across clean clones: a key that matches skips nvcc)."""
    root = os.environ.get("PIPESIM_CORPUS_CACHE") or os.path.join(out, ".work")
    return os.path.join(root, *parts)


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
