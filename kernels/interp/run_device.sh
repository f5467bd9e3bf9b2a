#!/usr/bin/env bash
# Device runs of issue 5 in one go: the h100-probes.md rows, the shipped rule / bug / Hopper scenarios,
# the calibration micro-scenarios, ws_gemm predicted vs measured (with a two-timeline trace) and a batch
# of random protocols from `pipesim generate`, all through `pipesim crosscheck`.
#
#   kernels/interp/run_device.sh --stage DIR      # here (no GPU needed): build pipesim with CUDA into
#                                                 # build-xc and copy it (+ libfmt) into DIR
#   kernels/interp/run_device.sh [--bin DIR] [--random N] [--seed S] [--quick] [--calib]   # on the GPU machine
#     --seed: the random batch's `pipesim generate --seed` (default 1; batches of different seeds share
#     no protocol since 2026-11-21 session 5: before, seed S + 1 was seed S shifted by one)
#     --quick: no random batch, no rule/bug scenarios; --calib: calibration and ws_gemm only (and the
#     interpreter's SASS when cuobjdump is there)
#
# The device machine lacks Boost/fmt/CLI11/GTest, so pipesim is built here and carried (DIR is git-ignored,
# e.g. .xc-bin via .git/info/exclude); there, plain nvcc only re-compiles the interpreter as a build check.
# Output: a log on stdout; with $OUT set, results.md (every crosscheck table), calibration.txt (raw
# calibration runs), ws_gemm.txt, ws_gemm_trace.json, random.log and disagreements.tar.gz, and every
# device run of the crosscheck sections in saved/ and saved-random/ (re-judge with --from-device), all in
# $OUT/everything.tgz.
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="$root/.xc-bin" stage="" random=1000 seed=1 quick="" calib=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --stage) stage="$2"; shift 2 ;;
    --random) random="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --calib) calib=1; quick=1; shift ;;
    *) echo "usage: $0 [--stage DIR | --bin DIR] [--random N] [--seed S] [--quick] [--calib]" >&2; exit 2 ;;
  esac
done

if [[ -n "$stage" ]]; then
  cmake -S "$root" -B "$root/build-xc" -DPIPESIM_BENCH=OFF >/dev/null && cmake --build "$root/build-xc" -j"$(nproc)" --target pipesim || exit 1
  mkdir -p "$stage"
  cp "$root/build-xc/verify/pipesim" "$stage/"
  strip "$stage/pipesim"
  for lib in $(ldd "$stage/pipesim" | awk '/libfmt/ {print $3}'); do cp -L "$lib" "$stage/"; done
  ls -la "$stage"
  exit 0
fi

# Everything is written to a work folder; with $OUT set (the device tool returns at most 8 files), it
# ends up packed as $OUT/everything.tgz beside results.md and calibration.txt.
out=/tmp/pipesim-xc
rm -rf "$out"
mkdir -p "$out"
export LD_LIBRARY_PATH="$bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
px="$bin/pipesim"
cd "$root" || exit 1
md="$out/results.md"
: >"$md"

echo "== $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv 2>&1 | tee "$out/gpu.txt"

if command -v nvcc >/dev/null; then
  echo "== build check: nvcc $(nvcc --version | tail -1) compiles the interpreter for sm_90a and sm_100a"
  t0=$(date +%s)
  nvcc -std=c++20 -O3 -I"$root" -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100a,code=sm_100a \
    -Xptxas -v -c "$here/interp.cu" -o /tmp/interp_check.o 2>"$out/ptxas.txt" && echo "   ok ($(($(date +%s) - t0)) s)" || echo "   FAILED"
  grep -E "registers|stack frame" "$out/ptxas.txt" | sort | uniq -c | sed 's/^/   /'
fi
if command -v nvcc >/dev/null; then
  # Native costs of the operations the calibration scenarios repeat (no interpreter): kernels/interp/opcost.cu.
  echo "== native operation costs (kernels/interp/opcost.cu)"
  nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a "$here/opcost.cu" -o /tmp/opcost && /tmp/opcost | tee "$out/opcost.txt"
  # Native TMA probes (one SM's copy queue, every SM streaming, bursts, delivery in parts; ~5 s):
  # tools/fit_tma_probe.py fits the per-copy constants of model/arch.cpp to case 1 of this output.
  echo "== native TMA probes (kernels/interp/tmaprobe.cu)"
  nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a "$here/tmaprobe.cu" -o /tmp/tmaprobe && /tmp/tmaprobe | tee "$out/tmaprobe.txt"
  # Which SM a copy's ~74 ns belongs to, its issuer's or its receivers' (multicast bursts; ~1 s).
  echo "== native multicast probe (kernels/interp/mcastprobe.cu)"
  nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a "$here/mcastprobe.cu" -o /tmp/mcastprobe && /tmp/mcastprobe | tee "$out/mcastprobe.txt"
fi
if command -v cuobjdump >/dev/null; then
  # The interpreter's machine code (sm_90a), for reading its dispatch loop.
  cuobjdump -sass -arch sm_90a "$px" 2>/dev/null | awk '/Function : .*interp_kernel_gILi1/{f=1} /Function : .*interp_kernel_gILi2/{f=0} f' >"$out/interp_sm90a.sass"
  echo "== SASS: $(grep -cE '^ +/\*[0-9a-f]{4}\*/' "$out/interp_sm90a.sass") instructions in interp_kernel_g<1> (interp_sm90a.sass)"
fi

section() {  # title, then crosscheck arguments
  local title="$1"; shift
  echo "== $title"
  echo "### $title" >>"$md"
  "$px" crosscheck --markdown "$md" --save-device "$out/saved" "$@" 2>&1 | tee -a "$out/crosscheck.log" | grep -E "^== |verdict|DISAGREE|hang points|end phases|scenario\(s\)|error" 
}

[[ -z "$calib" ]] && section "h100-probes.md rows (scenarios/probes)" scenarios/probes
[[ -z "$calib" ]] && section "our probes and the regression scenarios of past disagreements (scenarios/crosscheck)" scenarios/crosscheck

# Calibration: each micro-scenario at two loop counts; the slope per iteration cancels launch and start-up.
echo "== calibration (per-iteration slope between N=100 and N=1100, fastest of 5 launches, no per-op timestamps)"
cal="$out/calibration.txt"
: >"$cal"
calrun() {  # name file extra-defines...
  local name="$1" file="$2"; shift 2
  local m1 d1 m2 d2
  for n in 100 1100; do
    local line
    line=$("$px" crosscheck --repeats 5 --no-timestamps -D N=$n "$@" "$file" 2>&1 | tee -a "$out/crosscheck.log" | grep "time      kernel")
    local m d
    m=$(echo "$line" | sed -E 's/.*model ([0-9.]+) us.*/\1/')
    d=$(echo "$line" | sed -E 's/.*device ([0-9.]+) us.*/\1/')
    if [[ $n == 100 ]]; then m1=$m d1=$d; else m2=$m d2=$d; fi
  done
  python3 - "$name" "$m1" "$d1" "$m2" "$d2" "$*" <<'EOF' | tee -a "$cal"
import sys
name, m1, d1, m2, d2, extra = sys.argv[1], *map(float, sys.argv[2:6]), sys.argv[6]
ms, ds = (m2 - m1) / 1000 * 1e3, (d2 - d1) / 1000 * 1e3
print(f"{name:<28} {extra:<24} per iteration: model {ms:9.1f} ns  device {ds:9.1f} ns  ({(ms-ds)/ds*100 if ds else 0:+6.1f} %)   N=100: {m1:.2f}/{d1:.2f} us  N=1100: {m2:.2f}/{d2:.2f} us")
EOF
}
calrun op_issue scenarios/calibration/op_issue.scn
for b in 256 1024 4096 16384 65536; do calrun tma_latency scenarios/calibration/tma_latency.scn -D BYTES=$b; done
for b in 8192 32768; do calrun tma_bandwidth scenarios/calibration/tma_bandwidth.scn -D BYTES=$b; done
calrun arrive_wake scenarios/calibration/arrive_wake.scn
calrun named_barrier scenarios/calibration/named_barrier.scn
calrun cluster_barrier_2 scenarios/calibration/cluster_barrier.scn -D CLUSTER=2
calrun cluster_barrier_4 scenarios/calibration/cluster_barrier.scn -D CLUSTER=4
calrun remote_arrive scenarios/calibration/remote_arrive.scn
for b in 4096 16384; do calrun multicast scenarios/calibration/multicast.scn -D BYTES=$b; done

echo "== ws_gemm: predicted vs measured"
{
  "$px" crosscheck --repeats 5 --trace "$out/ws_gemm_trace.json" scenarios/hopper/ws_gemm.scn
  "$px" crosscheck --repeats 3 --no-timestamps -D M=4096 -D N=4096 -D K=4096 scenarios/hopper/ws_gemm.scn
  "$px" crosscheck --repeats 3 --no-timestamps --l2-sources scenarios/hopper/ws_gemm.scn
} 2>&1 | tee "$out/ws_gemm.txt" | grep -E "^== |verdict|time |role "
# Run-to-run scatter of the scenario whose device time moves most (bug 11: a 16 MiB burst from 128 CTAs)
# and of ws_gemm: five back-to-back crosschecks each, so a prediction is judged against the spread.
echo "== timing scatter: five back-to-back runs each"
for i in 1 2 3 4 5; do
  for f in scenarios/bugs/11_zero_tile_cta_fixed.scn scenarios/hopper/ws_gemm.scn; do
    "$px" crosscheck --repeats 3 --no-timestamps "$f" 2>&1 | grep "time      kernel" | sed "s|^|$f run $i: |"
  done
done | tee "$out/timing-scatter.txt"
# The shipped Hopper scenarios that finish, timed without per-op timestamps (predicted vs measured table).
section "shipped Hopper scenarios, no per-op timestamps (timing)" --repeats 3 --no-timestamps scenarios/hopper \
  $(ls scenarios/bugs/*_fixed.scn | xargs grep -l "on sm_90a")

if [[ -z "$quick" && "$random" -gt 0 ]] && "$px" generate --help >/dev/null 2>&1; then
  echo "== $random random protocols (pipesim generate --seed $seed --mistake-rate 0.2), 50 ms wait bound"
  rm -rf /tmp/xc-gen && "$px" generate --count "$random" --seed "$seed" --mistake-rate 0.2 --out /tmp/xc-gen >/dev/null
  echo "### $random random protocols (pipesim generate --seed $seed --count $random --mistake-rate 0.2)" >>"$md"
  t0=$(date +%s)
  # Per-op timestamps on: a disagreement is replayed in the model in the device's order of events.
  "$px" crosscheck --timeout-ms 50 --repeats 1 --warmup-ms 0 --markdown "$out/random.md" --save-device "$out/saved-random" /tmp/xc-gen >"$out/random.log" 2>&1
  echo "   exit $? after $(($(date +%s) - t0)) s"
  tail -1 "$out/random.log" | tee -a "$md"
  # Keep every disagreement (scenario + its block) for regression scenarios.
  awk '/^== /{f=$2} /DISAGREE/{print f}' "$out/random.log" | sort -u >/tmp/xc-disagree.txt
  echo "   disagreements: $(wc -l </tmp/xc-disagree.txt)"
  if [[ -s /tmp/xc-disagree.txt ]]; then tar czf "$out/disagreements.tar.gz" -T /tmp/xc-disagree.txt 2>/dev/null; fi
  grep -A12 DISAGREE "$out/random.log" | head -60
fi
[[ -z "$quick" ]] && section "rule and bug scenarios (scenarios/rules, scenarios/bugs)" scenarios/rules scenarios/bugs
echo "== results"
grep -E "scenario\(s\) on" "$md"
cat "$cal"
if [[ -n "${OUT:-}" ]]; then
  rm -f "$out/ws_gemm_trace.json.gz"; gzip -f "$out/ws_gemm_trace.json" 2>/dev/null
  tar czf "$OUT/everything.tgz" -C "$out" . && cp "$md" "$cal" "$OUT/" && echo "== packed into \$OUT/everything.tgz"
fi
