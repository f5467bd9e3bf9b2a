"""`corpus.py mutants`: one patched copy of CUTLASS per mutant, compiled to PTX: the Hopper corpus'
(mutants_spec.py) or, with --arch sm_100a, the Blackwell one's (mutants_sm100_spec.py)."""

import concurrent.futures
import hashlib
import importlib
import json
import os
import shutil
import time

from corpus_common import (
    COMMON_FLAGS, HERE, MUTANT_SHAPE, TARGETS, example_key, fail, find_nvcc, include_flags, log,
    nice_prefix, nvcc_version, run_timed, setup_venv, shape_name, work_dir, write_if_changed)
from corpus_ptx import entry_block, entry_params, normalized_body


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


def mutant_key(nvcc_ver, src, ex, mutant, flags, target=None):
    h = hashlib.sha256(example_key(nvcc_ver, src, ex, flags, target).encode())
    h.update(json.dumps(mutant, sort_keys=True).encode())
    return h.hexdigest()


def mutant_target_list(target):
    """The mutants of a target (its "mutants" entry names the spec module): the spec's list."""
    return importlib.import_module(target["mutants"]["spec"]).MUTANTS


def compile_mutant(nvcc, src, ex, mutant, flags, work, base_text, entry):
    """One nvcc -ptx run against a patched tree; checks the entry against the unpatched build's.
    Returns (touched, seconds, ptx path in work)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    tree = os.path.join(work, "include")
    touched = make_mutant_tree(src, mutant, tree)
    tmp_ptx = os.path.join(work, mutant["name"] + ".ptx")
    cmd = nice_prefix() + [nvcc] + flags + include_flags(src, tree, ex) + ["-o", tmp_ptx, os.path.join(HERE, ex["tu"])]
    dt = run_timed(cmd, "compiling mutant " + mutant["name"], os.path.join(work, "compile.log"))
    with open(tmp_ptx) as f:
        mtext = f.read()
    mh, mb = entry_block(mtext, entry)
    bh, bb = entry_block(base_text, entry)
    if mh is None:
        fail("mutant %s: its PTX has no entry %s..." % (mutant["name"], entry[:60]))
    if entry_params(mh) != entry_params(bh):
        fail("mutant %s: the entry's parameters changed (%s vs %s): the base launch does not apply" %
             (mutant["name"], entry_params(mh), entry_params(bh)))
    if normalized_body(mb) == normalized_body(bb):
        fail("mutant %s: the patch did not change the kernel's code (is the patched file really "
             "the one compiled?)" % mutant["name"])
    shutil.rmtree(tree)
    return touched, dt, tmp_ptx


def run_mutants(build_dir, src, nvcc, nvcc_ver, only, target=None, jobs=2):
    """Builds the mutants of `target` (the Hopper corpus' by default): compiles those whose key changed,
    `jobs` nvcc runs at a time, then writes their .expect files and the records file."""
    target = target or TARGETS["sm_90a"]
    cfg = target["mutants"]
    mutants = mutant_target_list(target)
    by_name = {e["name"]: e for e in target["examples"]}
    out = os.path.join(build_dir, "cutlass_corpus")
    mdir = os.path.join(out, cfg["dir"])
    work_root = work_dir(out, cfg["dir"])
    os.makedirs(mdir, exist_ok=True)
    os.makedirs(work_root, exist_ok=True)
    with open(os.path.join(out, target["manifest"])) as f:
        manifest = json.load(f)
    names = set()
    plan = []  # (mutant, ex, base, flags, key, work)
    for mutant in mutants:
        if mutant["name"] in names:
            fail("two mutants named " + mutant["name"])
        names.add(mutant["name"])
        if only and mutant["name"] not in only:
            continue
        ex = by_name[mutant["example"]]
        base = [k for k in manifest["kernels"] if k["example"] == ex["name"] and k["variant"] == mutant["variant"]
                and tuple(k["shape"]) == MUTANT_SHAPE]
        if len(base) != 1:
            fail("mutant %s: no base launch for %s/%s %s (run build first)" %
                 (mutant["name"], ex["name"], mutant["variant"], shape_name(MUTANT_SHAPE)))
        defines = ["-D%s" % d for d in mutant.get("defines", [])]
        flags = COMMON_FLAGS + ["-arch=" + target["arch"], "-ptx"] + defines
        key = mutant_key(nvcc_ver, src, ex, mutant, flags, target)
        plan.append((mutant, ex, base[0], flags, key, os.path.join(work_root, mutant["name"])))

    def cached(p):
        mutant, _, _, _, key, work = p
        key_file = os.path.join(work, "key")
        return (os.path.exists(key_file) and open(key_file).read() == key and
                os.path.exists(os.path.join(mdir, mutant["name"] + ".ptx")) and os.path.exists(os.path.join(work, "touched.json")))

    def build(p):
        mutant, ex, base, flags, key, work = p
        with open(os.path.join(out, base["ptx"])) as f:
            base_text = f.read()
        touched, dt, tmp_ptx = compile_mutant(nvcc, src, ex, mutant, flags, work, base_text, base["entry"])
        os.replace(tmp_ptx, os.path.join(mdir, mutant["name"] + ".ptx"))
        with open(os.path.join(work, "touched.json"), "w") as f:
            json.dump(touched, f)
        with open(os.path.join(work, "key"), "w") as f:
            f.write(key)
        return dt

    timings = []
    todo = [p for p in plan if not cached(p)]
    for p in plan:
        if p not in todo:
            log("  mutant %-40s cached" % p[0]["name"])
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for p, dt in zip(todo, pool.map(build, todo)):
            timings.append(("mutant " + p[0]["name"], dt))
            log("  mutant %-40s compiled in %6.1f s" % (p[0]["name"], dt))

    records = []
    for mutant, ex, base, _, _, work in plan:
        with open(os.path.join(work, "touched.json")) as f:
            touched = [tuple(t) for t in json.load(f)]
        source = ", ".join("%s:%d" % t for t in touched)
        rel = "%s/%s" % (cfg["dir"], mutant["name"])
        expect_lines = [
            "# pipesim acceptance mutant %s (tools/cutlass_corpus/%s.py): %s" % (mutant["name"], cfg["spec"], mutant["class"]),
            "expect %s" % mutant["expect"],
            "ptx %s.ptx" % rel,
            "launch %s" % base["launch"],
            "kernel %s %s" % (ex["name"], mutant["variant"]),
            "source %s" % source,
            "confidence %s" % mutant["confidence"],
        ]
        expect_lines += ["# " + l for l in mutant["why"].strip().splitlines()]
        write_if_changed(os.path.join(mdir, mutant["name"] + ".expect"), "\n".join(expect_lines) + "\n")
        records.append({"name": mutant["name"], "class": mutant["class"], "expect": mutant["expect"],
                        "confidence": mutant["confidence"], "ptx": rel + ".ptx",
                        "launch": base["launch"], "example": ex["name"], "variant": mutant["variant"],
                        "source": ["%s:%d" % t for t in touched],
                        "expect_file": rel + ".expect"})
    if not only:
        write_if_changed(os.path.join(out, cfg["records"]), json.dumps(records, indent=1) + "\n")
        # files of mutants no longer in the spec
        for f in os.listdir(mdir):
            if os.path.splitext(f)[0] not in names:
                os.remove(os.path.join(mdir, f))
    return timings


def cmd_mutants(args):
    build_dir = os.path.abspath(args.build_dir)
    target = TARGETS[args.arch]
    if not target["mutants"]:
        fail("the %s corpus has no mutants" % target["arch"])
    src = setup_venv(build_dir)
    nvcc = find_nvcc()
    if not os.path.exists(os.path.join(build_dir, "cutlass_corpus", target["manifest"])):
        fail("no %s corpus in %s: run tools/cutlass_corpus/build.sh %s%s first" %
             (target["arch"], build_dir, build_dir, "" if args.arch == "sm_90a" else " --arch " + args.arch))
    t0 = time.time()
    timings = run_mutants(build_dir, src, nvcc, nvcc_version(nvcc), set(args.only.split(",")) if args.only else None,
                          target)
    log("cutlass_corpus: mutants done, %d compiled (%.1f s), %.1f s in all" %
        (len(timings), sum(t for _, t in timings), time.time() - t0))
