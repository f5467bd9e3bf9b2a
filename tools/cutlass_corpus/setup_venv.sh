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

if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup_venv: creating $venv" >&2
  # Debian's python3 needs python3-venv for this (installed where missing, as tools/setup.sh does).
  if ! python3 -m venv "$venv" >&2; then
    rm -rf "$venv"
    "$(dirname "$0")/../install_packages.sh" python3-venv
    if ! python3 -m venv "$venv" >&2; then
      echo "setup_venv: 'python3 -m venv' failed even with python3-venv installed" >&2
      exit 1
    fi
  fi
fi

rm -f "$venv"/.nvidia-cutlass-*.stamp
what="nvidia-cutlass==$CUTLASS_VERSION"
[[ -n "${CUTLASS_CORPUS_WHEEL:-}" ]] && what="$CUTLASS_CORPUS_WHEEL"
echo "setup_venv: pip install --no-deps $what" >&2
log="$venv/pip-install.log"
if ! "$venv/bin/python" -m pip install --disable-pip-version-check --no-deps --timeout 30 --retries 2 \
      "$what" >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  if grep -qiE "connection|resolve|network|timed out|Temporary failure|No matching distribution" "$log"; then
    echo "setup_venv: cannot fetch $what from PyPI (is https://pypi.org reachable? a proxy set in" \
         "PIP_INDEX_URL / HTTPS_PROXY?). Offline: CUTLASS_CORPUS_WHEEL=/path/to/the.whl $0 $1" >&2
  else
    echo "setup_venv: pip install $what failed (log: $log)" >&2
  fi
  exit 1
fi

installed=$("$venv/bin/python" -m pip show nvidia-cutlass 2>/dev/null | sed -n 's/^Version: //p')
if [[ "$installed" != "$CUTLASS_VERSION" ]]; then
  echo "setup_venv: installed nvidia-cutlass is '$installed', expected $CUTLASS_VERSION" >&2
  exit 1
fi
if ! d=$(source_dir); then
  echo "setup_venv: nvidia-cutlass $CUTLASS_VERSION has no cutlass_library/source/{include,examples}" >&2
  exit 1
fi
touch "$stamp"
echo "$d"
