"""`corpus.py device`: the same TUs built for a real sm_90a GPU, the H100 bundle (README "On the H100")."""

import concurrent.futures
import hashlib
import json
import os
import shutil
import subprocess
import time

from corpus_common import (
    BY_NAME, EXAMPLES, HERE, MUTANT_SHAPE, SHAPES, example_key, fail, find_nvcc, include_flags, log,
    nice_prefix, nvcc_version, run_timed, setup_venv, sha256_file, shape_name, work_dir, write_if_changed)
from corpus_ptx import entry_block, entry_params, normalized_body
from mutants_spec import MUTANTS
from corpus_mutants import make_mutant_tree

# As COMMON_FLAGS (the same CUTLASS host code: CUTLASS_ENABLE_DIRECT_CUDA_DRIVER_CALL, whose one driver
# call device_common.hpp forwards through the runtime), optimised, SASS for sm_90a only, cudart static
# (no libcuda, no libcudart.so needed to start), unused sections dropped, stripped.
DEVICE_FLAGS = ["-std=c++17", "--expt-relaxed-constexpr", "-O3", "-DNDEBUG", "-lineinfo",
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
    work_root = work_dir(out, "device")
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
