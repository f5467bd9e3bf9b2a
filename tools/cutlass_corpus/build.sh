#!/usr/bin/env bash
# build.sh BUILD_DIR [--no-mutants] [--only EXAMPLE,...]
#
# Builds the CUTLASS acceptance corpus of pipesim's PTX front end into BUILD_DIR/cutlass_corpus/:
# installs the pinned nvidia-cutlass wheel (setup_venv.sh), compiles each capture TU once (cached by a
# hash of its inputs; nice'd, one at a time), captures the launch files of every kernel and shape,
# checks them against the PTX, builds the mutants and the opcode census. See README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [--no-mutants] [--only EXAMPLE,...]" >&2
  exit 2
fi
exec python3 "$here/corpus.py" build "$@"
