"""`corpus.py build`: compiles the capture TUs, captures their launches, writes the manifest."""

import json
import os
import re
import shutil
import subprocess
import time

from corpus_common import (
    COMMON_FLAGS, HERE, SHAPES, TARGETS, TENSORMAP_TAG, example_key, fail, find_nvcc, include_flags,
    launch_stem, log, nice_prefix, nvcc_version, run_timed, setup_venv, shape_name, wheel_record,
    work_dir, write_if_changed)
from corpus_ptx import census_report, check_launch
from corpus_mutants import run_mutants

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
    work_root = work_dir(out)
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
        timings += run_mutants(build_dir, src, nvcc, nvcc_ver, None, target)
    total = time.time() - t_start
    log("cutlass_corpus: %d launch files, %d compiles (%.1f s compiling), %.1f s in all -> %s" %
        (len(manifest["kernels"]), len(timings), sum(t for _, t in timings), total, out))
