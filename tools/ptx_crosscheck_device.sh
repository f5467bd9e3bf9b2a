#!/usr/bin/env bash
# ptx_crosscheck_device.sh: `pipesim crosscheck KERNEL.ptx --launch L.json` (the model beside the real
# GPU run; docs/ptx.md, "Crosscheck on a GPU") over the project's PTX kernels, on a machine with an H100.
#
#   here (no GPU):  tools/ptx_crosscheck_device.sh --bundle build-xptx build-corpus/cutlass_corpus
#                   -> build-xptx/device/: the pipesim binary (stripped) and the corpus files it needs,
#                      packed small enough to carry to the device machine
#   there:          tools/ptx_crosscheck_device.sh [build-xptx/device]   (log under $OUT, else ./out)
#                   env JOBS=N (default 6) crosschecks at once, ONLY=REGEX those whose names match
#
# Runs: tests/data/ptx/pipeline.ptx with pipeline.launch.json, every entry (the correct pipeline and
# its planted bugs, with the -D values tests/test_ptx_check.cpp gives them); the CUTLASS corpus'
# 2048x2048x256 and 4096x4096x4096 launches of examples 48, 49 and 54 (manifest.json); every mutant at
# its own launch (mutants.json); kernels/interp/gemmloads.cu at the launches the bundle wrote. Every
# timing row (CUTLASS, gemmloads) is timed --back-to-back, as a benchmark times it. Each
# crosscheck is its own pipesim process (at most JOBS at once: the model runs in parallel, the GPU runs
# take turns through pipesim's GPU lock, so no timing sees another kernel). Prints a summary table
# last; the full blocks go to OUT/ptx-crosscheck.log.
set -uo pipefail

if [[ ${1:-} == --bundle ]]; then
  build=${2:?usage: $0 --bundle BUILD_DIR CORPUS_DIR}
  corpus=${3:?usage: $0 --bundle BUILD_DIR CORPUS_DIR}
  dest=$build/device
  rm -rf "$dest" && mkdir -p "$dest"
  strip -o "$dest/pipesim" "$build/verify/pipesim" || exit 2
  # Shared libraries the device machine may not have (fmt ...): beside the binary (LD_LIBRARY_PATH there).
  ldd "$build/verify/pipesim" | awk '$3 ~ /^\// {print $3}' | grep -Ev '/(libc|libm|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so' |
    while read -r lib; do cp -L "$lib" "$dest/"; done
  # Only what the runs below read: the three kernels, their two shapes, the mutants.
  (cd "$corpus" && tar -cJf - manifest.json mutants.json mutants/*.ptx \
      48_*/*.ptx 49_*/*.ptx 54_*/*.ptx \
      */*_2048x2048x256.launch.json */*_4096x4096x4096.launch.json) >"$dest/corpus.tar.xz" || exit 2
  # kernels/interp/gemmloads.cu (a GEMM's loads alone) at the shapes and variants of docs/performance.md.
  root=$(cd "$(dirname "$0")/.." && pwd)
  mkdir -p "$dest/gemmloads"
  "${NVCC:-nvcc}" -arch=sm_90a -ptx -lineinfo -std=c++20 "$root/kernels/interp/gemmloads.cu" -o "$dest/gemmloads/gemmloads.ptx" || exit 2
  launch="$root/tools/gemmloads_launch.py"
  { "$launch" "$dest/gemmloads" 2048x2048x256 2048x2048x512 2048x2048x1024 2048x2048x1536 2048x2048x2048 2048x2048x4096 \
        4096x4096x1024 4096x4096x4096 &&
    "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 16 && "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 33 &&
    "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 1 &&
    "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 16 --piece 4096 &&
    "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 16 --piece 8192 &&
    "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 16 --stages 1 && "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 16 --stages 2 &&
    "$launch" "$dest/gemmloads" 2048x2048x1024 --sms 16 --batch; } >/dev/null || exit 2
  du -sh "$dest"/*
  exit 0
fi

root=$(cd "$(dirname "$0")/.." && pwd)
bundle=$(cd "${1:-$root/build-xptx/device}" && pwd) || exit 2
out=${OUT:-$root/out}
jobs=${JOBS:-6}
mkdir -p "$out"
log=$out/ptx-crosscheck.log
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pipesim=$bundle/pipesim
export LD_LIBRARY_PATH=$bundle${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
corpus=$work/corpus
mkdir -p "$corpus" && tar -xJf "$bundle/corpus.tar.xz" -C "$corpus" || exit 2

{
  echo "# ptx_crosscheck_device.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
  command -v nvidia-smi >/dev/null &&
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | sed 's/^/# nvidia-smi: /'
} | tee "$log"

# The list of crosschecks: NAME<TAB>PTX<TAB>LAUNCH<TAB>-D arguments.
list=$work/list.tsv
data=$root/tests/data/ptx
for entry in pipeline_ok pipeline_producer_phase_zero pipeline_expect_one_tile_more pipeline_named_count_off \
             pipeline_skip_last_release pipeline_peeled_first_wait pipeline_read_past_source; do
  printf '%s\t%s\t%s\t%s\n' "$entry" "$data/pipeline.ptx" "$data/pipeline.launch.json" "-D entry=$entry" >>"$list"
done
printf '%s\t%s\t%s\t%s\n' pipeline_cluster_sync_one_warp "$data/pipeline.ptx" "$data/pipeline.launch.json" \
  "-D entry=pipeline_cluster_sync_one_warp -D cluster=2 -D grid=4" >>"$list"
python3 - "$corpus" >>"$list" <<'EOF'
import json, sys
c = sys.argv[1]
for k in json.load(open(f"{c}/manifest.json"))["kernels"]:
    if k["shape"] in ([2048, 2048, 256], [4096, 4096, 4096]):
        name = "{}_{}_{}".format(k["example"].split("_")[0], k["variant"], "x".join(map(str, k["shape"])))
        print(f"{name}\t{c}/{k['ptx']}\t{c}/{k['launch']}\t--back-to-back")
for m in json.load(open(f"{c}/mutants.json")):
    print(f"mutant_{m['name']}\t{c}/{m['ptx']}\t{c}/{m['launch']}\t")
EOF
for l in "$bundle"/gemmloads/*.launch.json; do
  [[ -e $l ]] && printf '%s\t%s\t%s\t%s\n' "$(basename "$l" .launch.json)" "$bundle/gemmloads/gemmloads.ptx" "$l" --back-to-back >>"$list"
done
# ONLY=REGEX runs the crosschecks whose names match.
if [[ -n ${ONLY:-} ]]; then grep -E "^[^	]*(${ONLY})" "$list" >"$list.only"; mv "$list.only" "$list"; fi
echo "# $(wc -l <"$list") crosschecks, $jobs at a time" | tee -a "$log"

# One crosscheck: its block into NAME.txt, its exit code into NAME.rc.
run_one() {
  local name=$1 ptx=$2 launch=$3 defines=$4
  local t0=$SECONDS
  # shellcheck disable=SC2086
  timeout 280 "$pipesim" crosscheck "$ptx" --launch "$launch" $defines --runs 10 >"$work/$name.txt" 2>&1
  echo $? >"$work/$name.rc"
  echo "# $name: exit $(cat "$work/$name.rc") after $((SECONDS - t0)) s" >>"$work/$name.txt"
}
export -f run_one
export pipesim work
tr '\t' '\037' <"$list" | xargs -d '\n' -P "$jobs" -I{} bash -c 'IFS=$'"'"'\037'"'"' read -r n p l d <<<"{}"; run_one "$n" "$p" "$l" "$d"'

# The blocks in list order, then the summary.
summary=$work/summary.txt
printf '%-52s %-4s %-28s %-46s %-9s %s\n' crosscheck exit model GPU verdicts "time error" >"$summary"
while IFS=$'\t' read -r name _; do
  { echo; echo "## $name"; cat "$work/$name.txt"; } >>"$log"
  rc=$(cat "$work/$name.rc" 2>/dev/null || echo '?')
  model=$(sed -n 's/^  model: *\([^ ].*[^ ]\)  *\(predicted\|at\) [0-9].*/\1/p' "$work/$name.txt" | head -1)
  hw=$(sed -n 's/^  model, on past .*: \([a-z]*\) *at .*/\1/p' "$work/$name.txt" | head -1)
  [[ -n $hw ]] && model="$model -> $hw"
  gpu=$(sed -n 's/^  GPU:   //p' "$work/$name.txt" | head -1 | cut -c1-46)
  agree=$(sed -n 's/^  verdicts \([A-Za-z]*\):.*/\1/p' "$work/$name.txt" | head -1)
  terr=$(sed -n 's/^  time: .*: \([-+0-9.]* %\)$/\1/p' "$work/$name.txt" | head -1)
  [[ $rc == 2 ]] && gpu=$(head -1 "$work/$name.txt" | cut -c1-46)  # bad input or no GPU: its sentence
  printf '%-52s %-4s %-28s %-46s %-9s %s\n' "$name" "$rc" "$model" "$gpu" "$agree" "$terr" >>"$summary"
done <"$list"
{ echo; echo "# summary"; cat "$summary"; } >>"$log"
cat "$summary"
