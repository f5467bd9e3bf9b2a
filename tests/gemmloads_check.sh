#!/usr/bin/env bash
# kernels/interp/gemmloads.cu (a GEMM's mainloop loads alone) through `pipesim check` from nvcc's own
# PTX: both entries and the launch variants tools/gemmloads_launch.py writes must run to `ok`, and the
# tensor-map entry must move exactly the bytes of the bulk entry (the same boxes, read as 2-D tiles
# with a 128-byte swizzle or as contiguous 16 KiB), split into pieces or not, in a ring or in batches.
#   tests/gemmloads_check.sh PIPESIM NVCC|""     (exit 77, a skip, where there is no nvcc)
set -euo pipefail
pipesim="$1" nvcc="${2:-}"
root="$(cd "$(dirname "$0")/.." && pwd)"
if [[ -z $nvcc || ! -x $nvcc ]]; then
  echo "SKIP: no nvcc: kernels/interp/gemmloads.cu cannot be compiled to PTX here"
  exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$nvcc" -arch=sm_90a -ptx -lineinfo -std=c++20 "$root/kernels/interp/gemmloads.cu" -o "$tmp/gemmloads.ptx"
launch="$root/tools/gemmloads_launch.py"
"$launch" "$tmp" 1024x1024x512 >/dev/null
"$launch" "$tmp" 1024x1024x512 --piece 4096 --sms 16 >/dev/null
"$launch" "$tmp" 1024x1024x512 --poll 2 --sms 33 >/dev/null
"$launch" "$tmp" 1024x1024x512 --stages 2 --batch >/dev/null
# Bytes a run moved: "L2 <hit> MB hit (..), <miss> MB miss" as hit + miss, in the report's units.
moved() {
  sed -n 's/^  L2 \([0-9.]*\) MB hit ([0-9]* %), \([0-9.]*\) MB miss.*/\1 \2/p' "$1" | awk '{ printf "%.1f\n", $1 + $2 }'
}
fail=0
for f in "$tmp"/*.launch.json; do
  name=$(basename "$f" .launch.json)
  if ! "$pipesim" check "$tmp/gemmloads.ptx" --launch "$f" >"$tmp/$name.txt" 2>&1; then
    echo "FAIL $name: pipesim check exited non-zero"; cat "$tmp/$name.txt"; fail=1; continue
  fi
  grep -q ": ok after" "$tmp/$name.txt" || { echo "FAIL $name: not ok"; cat "$tmp/$name.txt"; fail=1; continue; }
  echo "ok   $name: $(grep -o 'ok after [0-9.]* us' "$tmp/$name.txt"), $(moved "$tmp/$name.txt") MB moved"
done
# 64 tiles of 128 x 128, 8 k-blocks of 64: (128 + 128) x 512 x 2 B per tile, 16.8 MB in all, whatever the copies.
want=16.8
for name in gemm_loads_tensor_1024x1024x512 gemm_loads_bulk_1024x1024x512 gemm_loads_bulk_1024x1024x512_g16_p4096 \
            gemm_loads_tensor_1024x1024x512_g33_w2 gemm_loads_bulk_1024x1024x512_s2_batch; do
  got=$(moved "$tmp/$name.txt")
  [[ $got == "$want" ]] || { echo "FAIL $name moved $got MB, not $want"; fail=1; }
done
exit $fail
