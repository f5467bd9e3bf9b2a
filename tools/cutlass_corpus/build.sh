#!/usr/bin/env bash
# build.sh BUILD_DIR [--no-mutants] [--only EXAMPLE,...] [--arch sm_90a|sm_100a]
#
# Builds the CUTLASS acceptance corpus of pipesim's PTX front end into BUILD_DIR/cutlass_corpus/
# (--arch sm_100a: the Blackwell part, manifest_sm100.json; the Hopper outputs are left as they are):
# installs the pinned nvidia-cutlass wheel (setup_venv.sh), compiles each capture TU once (cached by a
# hash of its inputs; nice'd, one at a time), captures the launch files of every kernel and shape,
# checks them against the PTX, builds the mutants and the opcode census. See README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [--no-mutants] [--only EXAMPLE,...] [--arch sm_90a|sm_100a]" >&2
  exit 2
fi
exec python3 "$here/corpus.py" build "$@"
