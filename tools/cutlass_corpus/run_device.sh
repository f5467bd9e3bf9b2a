#!/usr/bin/env bash
# run_device.sh DEVICE_DIR [--out DIR] [--budget SECONDS] [--only NAME,...]
#
# Runs the CUTLASS corpus' device bundle (corpus.py device / device_bundle.sh; README "On the H100") on
# a machine with an sm_90 GPU: every timing executable at each of its shapes (timeout 60 s each), then
# every mutant at its launch shape (timeout 20 s each; the program's own watchdog gives up after 5 s),
# each in its own process. Prints every RESULT line and writes them to OUT/device_results.txt (OUT:
# --out, else $OUT, else the current directory), the programs' other output to OUT/device_log.txt.
# A run that prints no RESULT line gets one made here: killed by the timeout -> verdict=hang, any other
# exit -> verdict=error kind=exit_<status>. Runs that would end past --budget (default 450 s) are
# skipped (verdict=skipped). Needs bash, coreutils' timeout, and nvidia-smi for the clock lines.
set -uo pipefail

usage() { echo "usage: $0 DEVICE_DIR [--out DIR] [--budget SECONDS] [--only NAME,...]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
dir=$(cd "$1" && pwd) || usage
shift
out=${OUT:-.}
budget=450
only=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --only) only=",$2,"; shift 2 ;;
    *) usage ;;
  esac
done
[[ -f $dir/manifest.tsv ]] || { echo "$0: no $dir/manifest.tsv (build it with device_bundle.sh)" >&2; exit 2; }
mkdir -p "$out"
results=$out/device_results.txt
logfile=$out/device_log.txt
: >"$results"
: >"$logfile"

TIMING_TIMEOUT=60
MUTANT_TIMEOUT=20
MUTANT_WATCHDOG=5
TIMING_WATCHDOG=10

emit() {  # a line for both the terminal and the results file
  echo "$1"
  echo "$1" >>"$results"
}

gpu_info() {  # label
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv 2>&1 | sed "s/^/# nvidia-smi ($1): /" |
      while IFS= read -r l; do emit "$l"; done
  else
    emit "# nvidia-smi ($1): not found"
  fi
}

emit "# run_device.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n) ($(uname -r)); $(ldd --version 2>/dev/null | head -1)"
emit "# bundle $dir"
gpu_info "before"
if command -v nvidia-smi >/dev/null; then
  emit "# nvidia-smi: $(nvidia-smi --query-gpu=driver_version,memory.total,persistence_mode --format=csv,noheader 2>&1 | head -1) (driver, memory, persistence)"
fi

# run_one NAME TIMEOUT HEADER -- ARGS...: runs DIR/NAME ARGS under timeout -s KILL; prints its RESULT line
# or makes one (HEADER is the start of that line: "kernel=... variant=... shape=..." or "mutant=...").
run_one() {
  local name=$1 limit=$2 header=$3 kind=$4
  shift 5
  local left=$((budget - SECONDS))
  if ((left < 5)); then
    emit "$(made_line "$kind" "$header" "verdict=skipped reason=budget")"
    return
  fi
  ((limit > left)) && limit=$left
  local exe=$dir/$name
  [[ -x $exe ]] || chmod +x "$exe" 2>/dev/null
  local tmp
  tmp=$(mktemp)
  local t0=$SECONDS
  timeout -s KILL "$limit" "$exe" "$@" </dev/null >"$tmp" 2>&1
  local rc=$?
  {
    echo "=== $name $* (exit $rc, $((SECONDS - t0)) s)"
    grep -v '^RESULT ' "$tmp"
  } >>"$logfile"
  local line
  line=$(grep -m1 '^RESULT ' "$tmp")
  rm -f "$tmp"
  if [[ -z $line ]]; then
    if ((rc == 137 || rc == 124)); then
      line=$(made_line "$kind" "$header" "verdict=hang reason=timeout_${limit}s")
    else
      line=$(made_line "$kind" "$header" "verdict=error kind=exit_$rc")
    fi
  fi
  LAST_LINE="$line exit=$rc"
}

made_line() {  # kind header verdict...: a RESULT line in the programs' own layout
  if [[ $1 == mutant ]]; then
    local m=${2%% *} rest=${2#* }
    echo "RESULT $m $3 $rest made_by=run_device.sh"
  else
    echo "RESULT $2 $3 made_by=run_device.sh"
  fi
}

selected() { [[ -z $only || $only == *",$1,"* ]]; }

# Timing runs.
declare -A base_checksum
while IFS=$'\t' read -r kind exe example variant shapes expect; do
  [[ $kind == timing ]] || continue
  selected "$exe" || continue
  IFS=, read -ra list <<<"$shapes"
  for s in "${list[@]}"; do
    IFS=x read -r m n k <<<"$s"
    LAST_LINE=""
    run_one "$exe" "$TIMING_TIMEOUT" "kernel=$example variant=$variant shape=$s" timing -- \
      --watchdog-s "$TIMING_WATCHDOG" "$m" "$n" "$k"
    [[ -n $LAST_LINE ]] && emit "$LAST_LINE"
    c=$(grep -o 'd_checksum=[0-9a-f]*' <<<"$LAST_LINE" | head -1)
    [[ -n $c ]] && base_checksum["$example/$variant/$s"]=${c#d_checksum=}
  done
done < <(grep -v '^#' "$dir/manifest.tsv")
gpu_info "after the timing runs"

# Mutants: expect what the corpus expects of pipesim; d_vs_base compares D with the unpatched kernel's
# (same inputs, same shape): a kernel that completes with a different D computed something else.
summary=()
while IFS=$'\t' read -r kind exe example variant shapes expect; do
  [[ $kind == mutant ]] || continue
  selected "$exe" || continue
  s=${shapes%%,*}
  IFS=x read -r m n k <<<"$s"
  LAST_LINE=""
  run_one "$exe" "$MUTANT_TIMEOUT" "mutant=${exe#mutant_} kernel=$example variant=$variant shape=$s" mutant -- \
    --watchdog-s "$MUTANT_WATCHDOG" "$m" "$n" "$k"
  [[ -n $LAST_LINE ]] || continue
  c=$(grep -o 'd_checksum=[0-9a-f]*' <<<"$LAST_LINE" | head -1)
  c=${c#d_checksum=}
  b=${base_checksum["$example/$variant/$s"]:-}
  if [[ -z $c || -z $b ]]; then vs=n/a; elif [[ $c == "$b" ]]; then vs=same; else vs=differs; fi
  emit "$LAST_LINE expect=\"$expect\" d_vs_base=$vs"
  verdict=$(grep -o 'verdict=[a-z]*' <<<"$LAST_LINE" | head -1)
  verdict=${verdict#verdict=}
  ekind=$(grep -o ' kind=[A-Za-z0-9_]*' <<<"$LAST_LINE" | head -1)
  ekind=${ekind# kind=}
  # errors of the set-up, not of the kernel: the mutant did not run
  [[ $verdict == error && ! $ekind =~ ^cudaError ]] && verdict="not_run"
  case "$expect/$verdict/$vs" in
    */not_run/*) how="not run ($ekind)" ;;
    */skipped/*) how="not run (budget)" ;;
    hang/hang/*) how="match" ;;
    hang/*) how="MISMATCH (expected a hang)" ;;
    error*/error/*) how="match (a CUDA error)" ;;
    error*/hang/*) how="hang (pipesim expects an error; on the GPU it hangs)" ;;
    error*/ok/differs) how="consistent (completes with a wrong D: the race is real, no fault)" ;;
    error*/ok/*) how="not observed on this run (completes, D as the unpatched kernel's)" ;;
    *) how="?" ;;
  esac
  summary+=("# mutant ${exe#mutant_}: expect $expect, GPU $verdict (d_vs_base=$vs): $how")
done < <(grep -v '^#' "$dir/manifest.tsv")

for l in "${summary[@]}"; do emit "$l"; done
emit "# $(grep -c '^RESULT .*verdict=ok' "$results") ok, $(grep -c '^RESULT .*verdict=hang' "$results") hang, $(grep -c '^RESULT .*verdict=error' "$results") error, $(grep -c '^RESULT .*verdict=skipped' "$results") skipped; ${SECONDS} s in all"
echo "results: $results; log: $logfile" >&2
