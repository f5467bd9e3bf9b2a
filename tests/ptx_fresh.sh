#!/usr/bin/env bash
# Recompiles a committed test kernel's PTX and compares it with the committed file, so that the
# .ptx under tests/data/ptx never drifts from its .cu. Left out of the comparison: comment lines (the
# compiler's banner), .file lines (absolute paths of the machine that compiled it), the names of
# anonymous-namespace symbols, whose mangling carries a hash of the directory compiled in, and the
# debug sections that spell them out.
#   tests/ptx_fresh.sh NVCC SOURCE.cu COMMITTED.ptx ARCH
set -euo pipefail
nvcc="$1" src="$2" committed="$3" arch="$4"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$nvcc" -arch="$arch" -ptx -lineinfo -std=c++17 "$src" -o "$tmp/fresh.ptx"
strip() {
  # The debug sections at the end spell those names out byte by byte: compared up to them.
  awk '/^[[:space:]]*\.section[[:space:]]/ { exit } { print }' "$1" | grep -v -e '^//' -e '^[[:space:]]*\.file[[:space:]]' |
    sed -E 's/[A-Za-z0-9_$]*(_GLOBAL__N__|_INTERNAL_)[A-Za-z0-9_$]*/ANON/g'
}
if ! diff <(strip "$committed") <(strip "$tmp/fresh.ptx") > "$tmp/diff"; then
  echo "$committed is stale: recompile it with"
  echo "  $nvcc -arch=$arch -ptx -lineinfo -std=c++17 $src -o $committed"
  head -20 "$tmp/diff"
  exit 1
fi
echo "$committed matches $src ($arch)"
