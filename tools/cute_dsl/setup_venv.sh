#!/usr/bin/env bash
# setup_venv.sh BUILD_DIR
#
# Creates BUILD_DIR/cute-venv (python3 -m venv) with the pinned CuTe DSL (nvidia-cutlass-dsl) from
# PyPI, and prints the venv's python on stdout (progress goes to stderr). Idempotent: a stamp file
# naming the pinned version makes a second run a no-op. CuTe DSL compiles to PTX with no GPU, no CUDA
# driver and no nvcc (kernels/svdquant_w4a4/README.md has the recipe).
#
# CUTE_DSL_WHEELHOUSE=DIR installs from local wheels (pip --no-index --find-links DIR) instead of PyPI.
set -euo pipefail

CUTE_DSL_VERSION=4.8.1   # the version kernels/svdquant_w4a4 is written and checked against

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$(mkdir -p "$1" && cd "$1" && pwd)
venv="$build_dir/cute-venv"
stamp="$venv/.nvidia-cutlass-dsl-$CUTE_DSL_VERSION.stamp"

if [[ -f "$stamp" && -x "$venv/bin/python" ]]; then
  echo "$venv/bin/python"
  exit 0
fi

source "$(dirname "$0")/../venv_lib.sh"
venv_create "$venv"
rm -f "$venv"/.nvidia-cutlass-dsl-*.stamp
source_args=()
[[ -n "${CUTE_DSL_WHEELHOUSE:-}" ]] && source_args=(--no-index --find-links "$CUTE_DSL_WHEELHOUSE")
venv_pip_install "$venv" "CUTE_DSL_WHEELHOUSE=/dir/of/wheels $0 $1" "${source_args[@]}" "nvidia-cutlass-dsl==$CUTE_DSL_VERSION"
venv_check_version "$venv" nvidia-cutlass-dsl "$CUTE_DSL_VERSION"
touch "$stamp"
echo "$venv/bin/python"
