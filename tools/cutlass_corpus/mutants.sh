#!/usr/bin/env bash
# mutants.sh BUILD_DIR [--only NAME,...]
#
# (Re)builds the corpus' mutants (mutants_spec.py) in BUILD_DIR/cutlass_corpus/mutants/: each one a
# copy of the wheel's CUTLASS with one patch, compiled to PTX, with a NAME.expect file. Needs the corpus
# (build.sh BUILD_DIR, which also runs this step unless --no-mutants).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [--only NAME,...]" >&2
  exit 2
fi
exec python3 "$here/corpus.py" mutants "$@"
