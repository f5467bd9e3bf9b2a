#!/usr/bin/env bash
# setup_venv.sh BUILD_DIR
#
# Creates BUILD_DIR/pyenv (python3 -m venv) with the pinned nvidia-cutlass wheel, whose
# cutlass_library/source/ holds CUTLASS's include/, tools/util/include/ and examples/; prints the path
# of that source/ directory on stdout (progress goes to stderr). Idempotent: a stamp file naming the
# pinned version makes a second run a no-op. Only the wheel is installed (--no-deps): the corpus needs
# its C++ sources, not its Python dependencies.
#
# CUTLASS_CORPUS_WHEEL=/path/to/nvidia_cutlass-*.whl installs from a local file instead of PyPI.
set -euo pipefail

CUTLASS_VERSION=4.2.0.0   # the version the corpus' captures and mutant patch points are written against

if [[ $# -ne 1 ]]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build_dir=$(mkdir -p "$1" && cd "$1" && pwd)
venv="$build_dir/pyenv"
stamp="$venv/.nvidia-cutlass-$CUTLASS_VERSION.stamp"

source_dir() {
  local d
  d=$(ls -d "$venv"/lib/python3*/site-packages/cutlass_library/source 2>/dev/null | head -n1)
  if [[ -z "$d" || ! -d "$d/include/cutlass" || ! -d "$d/examples" ]]; then
    return 1
  fi
  echo "$d"
}

if [[ -f "$stamp" ]] && d=$(source_dir); then
  echo "$d"
  exit 0
fi

source "$(dirname "$0")/../venv_lib.sh"
venv_create "$venv"
rm -f "$venv"/.nvidia-cutlass-*.stamp
what="nvidia-cutlass==$CUTLASS_VERSION"
[[ -n "${CUTLASS_CORPUS_WHEEL:-}" ]] && what="$CUTLASS_CORPUS_WHEEL"
venv_pip_install "$venv" "CUTLASS_CORPUS_WHEEL=/path/to/the.whl $0 $1" --no-deps "$what"
venv_check_version "$venv" nvidia-cutlass "$CUTLASS_VERSION"
if ! d=$(source_dir); then
  echo "setup_venv: nvidia-cutlass $CUTLASS_VERSION has no cutlass_library/source/{include,examples}" >&2
  exit 1
fi
touch "$stamp"
echo "$d"
