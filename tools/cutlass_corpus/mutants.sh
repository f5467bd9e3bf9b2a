#!/usr/bin/env bash
# mutants.sh BUILD_DIR [--only NAME,...] [--arch sm_90a|sm_100a]
#
# (Re)builds the corpus' mutants (mutants_spec.py) in BUILD_DIR/cutlass_corpus/mutants/ (--arch sm_100a:
# mutants_sm100_spec.py into mutants_sm100/): each one a copy of the wheel's CUTLASS with one patch,
# compiled to PTX, with a NAME.expect file. Needs the corpus (build.sh BUILD_DIR [--arch sm_100a], which
# also runs this step unless --no-mutants).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 1 ]]; then
  echo "usage: $0 BUILD_DIR [--only NAME,...] [--arch sm_90a|sm_100a]" >&2
  exit 2
fi
exec python3 "$here/corpus.py" mutants "$@"
