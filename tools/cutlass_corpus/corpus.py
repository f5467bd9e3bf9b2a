#!/usr/bin/env python3
"""The CUTLASS acceptance corpus of pipesim's PTX front end (tools/cutlass_corpus/README.md).

    corpus.py build BUILD_DIR [--no-mutants] [--arch sm_100a] # what build.sh runs (--arch: the Blackwell part)
    corpus.py mutants BUILD_DIR [--only NAME,...] [--arch sm_100a]  # what mutants.sh runs (needs the corpus)
    corpus.py device BUILD_DIR [--only EXE,...] [--jobs 2] # the H100 bundle (device_bundle.sh; needs the corpus)
    corpus.py census FILE.ptx... [--out FILE]              # opcode census of PTX files

Everything third-party comes from the nvidia-cutlass wheel installed by setup_venv.sh into
BUILD_DIR/pyenv; the outputs go to BUILD_DIR/cutlass_corpus/:

    <example>/<example>.ptx                              the capture TU compiled for sm_90a (-lineinfo)
    <example>/<example>[_<variant>]_<M>x<N>x<K>.launch.json
    <example>/<example>[_<variant>]_<M>x<N>x<K>.meta.json   stages, tile, schedule, workspace ...
    mutants/<name>.ptx, mutants/<name>.expect          one patched copy of CUTLASS each
    manifest.json, mutants.json, census.txt
    mutants_sm100/<name>.ptx, .expect, mutants_sm100.json   --arch sm_100a (mutants_sm100_spec.py)
    manifest_sm100.json, census_sm100.txt               --arch sm_100a (corpus_sm100.py: examples 70-77)

and the device step's bundle (README "On the H100") to BUILD_DIR/device/:

    time_<NN>_<variant>, mutant_<name>                 sm_90a executables of the same TUs (-DPIPESIM_CORPUS_DEVICE)
    manifest.json, manifest.tsv, run_device.sh
"""

import argparse
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree (set before the sibling imports)

from corpus_common import TARGETS
from corpus_ptx import census_report
from corpus_build import cmd_build
from corpus_mutants import cmd_mutants
from corpus_device import cmd_device


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
    m.add_argument("--arch", choices=sorted(TARGETS), default="sm_90a",
                   help="sm_90a: the Hopper mutants (default); sm_100a: the Blackwell ones (mutants_sm100.json)")
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

