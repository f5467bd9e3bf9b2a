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
# Bytes a run moved: the TMA loads' bytes, L2 hits and misses (the JSON report's, exact).
moved() {
  python3 -c 'import json, sys; m = json.load(open(sys.argv[1]))["results"][0]["memory"]; print(m["l2_hit_bytes"] + m["l2_miss_bytes"])' "$1"
}
fail=0
for f in "$tmp"/*.launch.json; do
  name=$(basename "$f" .launch.json)
  if ! "$pipesim" check "$tmp/gemmloads.ptx" --launch "$f" --json >"$tmp/$name.json" 2>"$tmp/$name.err"; then
    echo "FAIL $name: pipesim check exited non-zero"; cat "$tmp/$name.err"; fail=1; continue
  fi
  verdict=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["results"][0]["verdict"])' "$tmp/$name.json")
  [[ $verdict == ok ]] || { echo "FAIL $name: $verdict, not ok"; fail=1; continue; }
  echo "ok   $name: $(moved "$tmp/$name.json") B moved"
done
# 64 tiles of 128 x 128, 8 k-blocks of 64: (128 + 128) x 512 x 2 B per tile, 16 MiB in all, whatever the copies
# (a tensor map's 256-byte L2 promotion changes which reads hit, not what they ask for).
want=$((64 * 256 * 512 * 2))
for name in gemm_loads_tensor_1024x1024x512 gemm_loads_bulk_1024x1024x512 gemm_loads_bulk_1024x1024x512_g16_p4096 \
            gemm_loads_tensor_1024x1024x512_g33_w2 gemm_loads_bulk_1024x1024x512_s2_batch; do
  got=$(moved "$tmp/$name.json")
  [[ $got == "$want" ]] || { echo "FAIL $name moved $got B, not $want"; fail=1; }
done
exit $fail
