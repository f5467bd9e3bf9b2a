#!/usr/bin/env bash
# SPIN beside pipesim on the same protocols at growing sizes (issue 20): per size, SPIN's exhaustive
# search of our Promela model (states stored, states/s, time, memory, whether it finds the hang) and
# pipesim's `--search exhaustive` on the scenario, with its partial-order reduction (sleep sets and
# persistent sets, the default) and without it (--search-por off). Run from anywhere; needs spin
# (tools/install_packages.sh spin), gcc and a built pipesim (PIPESIM=path, default build/verify/pipesim).
#   bench/spin/compare.sh [max_k] [max_tiles] [max_ws]
#     race (c) at K_TILES 4, 16, 64, ... up to max_k (default 256);
#     the ws pipeline protocol at SPIN's granularity (bench/spin/ws_pipeline.{pml,scn}: one CTA, a
#     process per warpgroup) at TILES 1, 4, 16, ... up to max_tiles (default 256) x K_TILES 4;
#     scenarios/hopper/ws_gemm.scn itself at one cluster (2 CTAs, 18 warps; pipesim only: the
#     Promela model has no such granularity) at K_TILES 1, 2, 4, ... up to max_ws (default 4)
#   SEARCH_SECONDS=60 (default): pipesim's bound per search
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
pipesim="${PIPESIM:-$root/build/verify/pipesim}"
max_k="${1:-256}"
max_tiles="${2:-256}"
max_ws="${3:-4}"
seconds="${SEARCH_SECONDS:-60}"
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

# pipesim FILE ARGS...: "states  states/s  seconds  MiB  verdict" of `--search exhaustive` (pass
# --search-por off for every order, without the partial-order reduction)
pipesim_row() {
  local file="$1"; shift
  local out line
  out="$("$pipesim" check "$root/$file" "$@" --search exhaustive --search-seconds "$seconds" 2>&1)"
  line="$(grep -m1 '^search exhaustive:' <<<"$out")"
  local states secs rate mem found
  states=$(sed -n 's/.*[(]\([0-9]*\) states, .*/\1/p' <<<"$line")
  secs=$(sed -n 's/.* \([0-9.]*\) s, [0-9]* states\/s.*/\1/p' <<<"$line")
  rate=$(sed -n 's/.* \([0-9]*\) states\/s.*/\1/p' <<<"$line")
  mem=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' <<<"$line")
  local base; base="$(sed -n 's/.*the verdict `\([^`]*\)`.*/\1/p' <<<"$line")"
  if grep -q "every interleaving of synchronising actions explored" <<<"$line"; then found="$base in every order (proof)"
  elif grep -q "stopped by the" <<<"$line"; then found="stopped by the $(sed -n 's/.*stopped by the \([a-z]*\) bound.*/\1/p' <<<"$line") bound"
  elif grep -q "a schedule of" <<<"$line"; then
    found="$(sed -n 's/.* to `\([^`]*\)`.*/\1/p' <<<"$line") found, trail of $(sed -n 's/.*a schedule of \([0-9]*\) choices.*/\1/p' <<<"$line")"
  else found="not run: $(head -c 80 <<<"$out")"; fi
  printf "%10s %9s %8s %6s  %s" "${states:-?}" "${rate:-?}" "${secs:-?}" "${mem:-?}" "$found"
}

printf "%-30s | %-54s | %-58s | %s\n" "protocol, size" "SPIN: states  states/s  s  MiB  verdict" \
  "pipesim exhaustive: states  states/s  s  MiB  verdict" "same with --search-por off"
row() {  # LABEL SPIN_MODEL "SPIN_DEFINES" SCENARIO PIPESIM_ARGS...
  local label="$1" model="$2" defines="$3" file="$4"; shift 4
  # shellcheck disable=SC2086
  printf "%-30s | %s | %s | %s\n" "$label" "$(spin_row "$model" $defines)" "$(pipesim_row "$file" "$@")" \
    "$(pipesim_row "$file" "$@" --search-por off)"
}
for ((k = 4; k <= max_k; k *= 4)); do
  row "race c broken, K_TILES=$k" elected_release.pml "-DK_TILES=$k -DFIXED=0" scenarios/races/c_elected_release_broken.scn -D K_TILES=$k
  row "race c fixed, K_TILES=$k" elected_release.pml "-DK_TILES=$k -DFIXED=1" scenarios/races/c_elected_release_fixed.scn -D K_TILES=$k
done
for ((t = 1; t <= max_tiles; t *= 4)); do
  row "ws protocol, $t tiles x K_TILES=4" ws_pipeline.pml "-DTILES=$t -DK_TILES=4" bench/spin/ws_pipeline.scn -D TILES=$t -D K_TILES=4
done
row "ws protocol bug, 1 tile" ws_pipeline.pml "-DTILES=1 -DK_TILES=4 -DBUG_PRODUCER_PHASE0=1" bench/spin/ws_pipeline.scn -D TILES=1 -D PRODUCER_PHASE=0
for ((k = 1; k <= max_ws; k *= 2)); do
  # ws_gemm at one cluster of 2 CTAs, one tile per cluster (M = N = 128), K_TILES = K / 64 k-blocks.
  printf "%-30s | %-54s | %s | %s\n" "ws_gemm.scn, 1 cluster x K_TILES=$k" "(no Promela model at this granularity)" \
    "$(pipesim_row scenarios/hopper/ws_gemm.scn -D M=128 -D N=128 -D K=$((k * 64)))" \
    "$(pipesim_row scenarios/hopper/ws_gemm.scn -D M=128 -D N=128 -D K=$((k * 64)) --search-por off)"
done
