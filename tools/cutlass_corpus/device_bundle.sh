#!/usr/bin/env bash
# device_bundle.sh BUILD_DIR [--only EXE,...] [--jobs N]
#
# Builds the corpus' device bundle into BUILD_DIR/device/ (README "On the H100"): the capture TUs
# compiled for a real sm_90a GPU (-DPIPESIM_CORPUS_DEVICE), one timing executable per kernel variant and
# one watchdog executable per mutant, a manifest and run_device.sh; checks that each executable's kernel
# is the corpus' PTX kernel and that it starts here and stops cleanly without a GPU. Cached like
# build.sh; 2 nvcc runs at a time. Needs the corpus (build.sh BUILD_DIR).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [--only EXE,...] [--jobs N]" >&2
  exit 2
fi
exec python3 "$here/corpus.py" device "$@"
