#!/usr/bin/env bash
# SPIN beside pipesim on the same protocols at growing sizes (issue 20): per size, SPIN's exhaustive
# search of our Promela model (states stored, states/s, time, memory, whether it finds the hang) and
# pipesim on the scenario (the plain check, then --search adversarial: runs, time, memory, whether it
# finds it). pipesim has no exhaustive mode yet: its column is the adversarial search, which is not a
# proof. Run from anywhere; needs spin (tools/install_packages.sh spin), gcc, /usr/bin/time and a
# built pipesim (PIPESIM=path, default build/verify/pipesim).
#   bench/spin/compare.sh [max_k]     # sizes 4, 16, 64, ... up to max_k (default 256)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
pipesim="${PIPESIM:-$root/build/verify/pipesim}"
max_k="${1:-256}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
command -v spin >/dev/null || { echo "compare.sh: spin is not installed (tools/install_packages.sh spin)" >&2; exit 2; }
[[ -x "$pipesim" ]] || { echo "compare.sh: no pipesim at $pipesim (set PIPESIM)" >&2; exit 2; }

# spin MODEL DEFINES...: "states  states/s  seconds  MiB  found"
spin_row() {
  local model="$1"; shift
  (cd "$work" && rm -f pan* && spin -a "$@" "$here/$model" >/dev/null && gcc -O2 -w -DSAFETY -o pan pan.c) || { echo "spin build failed"; return; }
  local out; out="$(cd "$work" && ./pan -m1000000 -w22 2>&1)"
  local states secs mem errs
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -1)
  secs=$(sed -n 's/^pan: elapsed time \([0-9.e+-]*\) seconds.*/\1/p' <<<"$out" | head -1)
  mem=$(sed -n 's/^ *\([0-9.]*\)\s*total actual memory usage.*/\1/p' <<<"$out" | head -1)
  errs=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
  awk -v s="$states" -v t="$secs" -v m="$mem" -v e="$errs" 'BEGIN { r = (t > 0) ? s / t : 0; printf "%10d %12.0f %8.3f %8.1f  %s", s, r, t, m, (e > 0 ? "hang found" : "no hang") }'
}

# pipesim FILE ARGS...: "runs  runs/s  seconds  MiB  verdict"
pipesim_row() {
  local file="$1"; shift
  local t0 t1 out mem
  t0=$(date +%s.%N)
  out="$(/usr/bin/time -f 'MAXRSS %M' "$pipesim" check "$root/$file" "$@" --search adversarial 2>&1)"
  t1=$(date +%s.%N)
  mem=$(sed -n 's/^MAXRSS \([0-9]*\)/\1/p' <<<"$out")
  local runs found
  runs=$(sed -n 's/.*(\([0-9]*\) runs:.*/\1/p' <<<"$out" | head -1)
  if grep -q "^search adversarial: [0-9]* delays\? change" <<<"$out"; then
    found="$(sed -n 's/^search adversarial: .* to `\([^`]*\)`.*/\1/p' <<<"$out" | head -1) under a delay"
  elif ! grep -q "got ok" <<<"$out"; then found="$(sed -n 's/.* got \([a-z_ ]*[a-z]\) .*/\1/p' <<<"$out" | head -1) (plain run)"
  else found="no change"; fi
  awk -v r="${runs:-0}" -v a="$t0" -v b="$t1" -v m="${mem:-0}" -v f="$found" 'BEGIN { t = b - a; printf "%10d %12.0f %8.3f %8.1f  %s", r, (t > 0 ? r / t : 0), t, m / 1024, f }'
}

printf "%-34s | %-58s | %s\n" "protocol, size" "SPIN: states  states/s  s  MiB  verdict" "pipesim --search adversarial: runs  runs/s  s  MiB  verdict"
for ((k = 4; k <= max_k; k *= 4)); do
  printf "%-34s | %s | %s\n" "race c broken, K_TILES=$k" "$(spin_row elected_release.pml -DK_TILES=$k -DFIXED=0)" \
    "$(pipesim_row scenarios/races/c_elected_release_broken.scn -D K_TILES=$k)"
  printf "%-34s | %s | %s\n" "race c fixed, K_TILES=$k" "$(spin_row elected_release.pml -DK_TILES=$k -DFIXED=1)" \
    "$(pipesim_row scenarios/races/c_elected_release_fixed.scn -D K_TILES=$k)"
done
for ((k = 4; k <= max_k; k *= 4)); do
  # ws_gemm at one cluster of 2 CTAs, one tile per cluster (M = N = 128), K_TILES = K / 64 k-blocks.
  printf "%-34s | %s | %s\n" "ws pipeline, 1 tile x K_TILES=$k" "$(spin_row ws_pipeline.pml -DTILES=1 -DK_TILES=$k)" \
    "$(pipesim_row scenarios/hopper/ws_gemm.scn -D M=128 -D N=128 -D K=$((k * 64)))"
done
