#!/usr/bin/env bash
# Builds bench/bench_engine in Release and prints the engine figures that docs/performance.md
# records: a Markdown table (median of the repetitions), the machine and the command.
#
#   bench/run.sh                      # 5 repetitions of every benchmark
#   REPS=10 bench/run.sh --benchmark_filter=large
#
# Environment: PIPESIM_BENCH_BUILD (build directory, default build-bench), REPS (default 5),
# JOBS (build parallelism, default nproc), CPU (core to pin to with taskset, default 0; "" = no pin),
# BUILD_TYPE (default Release), CMAKE_ARGS (extra configure arguments, word-split; default
# -DCMAKE_CXX_FLAGS=-Wno-error=restrict, see below).
# Extra arguments go to bench_engine (Google Benchmark flags).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PIPESIM_BENCH_BUILD:-$root/build-bench}
reps=${REPS:-5}
jobs=${JOBS:-$(nproc)}
cpu=${CPU-0}

# GCC 12 at -O3 reports a false -Wrestrict inside std::string::replace (GCC PR 105329), which
# -Werror turns into a build failure; the Release build used for timing downgrades only that one.
extra=${CMAKE_ARGS--DCMAKE_CXX_FLAGS=-Wno-error=restrict}
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DPIPESIM_CUDA=OFF -DPIPESIM_BENCH=ON \
  $extra >/dev/null
cmake --build "$build" --target bench_engine -j "$jobs" >/dev/null

pin=()
if [[ -n "$cpu" ]] && command -v taskset >/dev/null; then pin=(taskset -c "$cpu"); fi
out=$(mktemp --suffix=.json)
trap 'rm -f "$out"' EXIT
cmd=("${pin[@]}" "$build/bench/bench_engine" --benchmark_repetitions="$reps"
     --benchmark_report_aggregates_only=true --benchmark_out="$out" --benchmark_out_format=json "$@")
"${cmd[@]}" >&2

echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "command: ${cmd[*]/#$root\//}" | sed "s|$out|OUT.json|"
echo
python3 - "$out" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
rows = {}
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median" and b.get("run_type") == "aggregate":
        continue
    name = b.get("run_name", b["name"])
    rows[name] = b
what = {"BM_EngineRun": "engine run (sim::run)", "BM_CheckText": "end to end (verify::check_text)",
        "BM_Parse": "parse only", "BM_RunWithTrace": "run + Perfetto trace"}
scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
print("| benchmark | scenario | wall ms | CPU ms | events | M events/s (CPU) |")
print("|---|---|---:|---:|---:|---:|")
for name, b in rows.items():
    base = name.split("/")[0]
    k = scale[b.get("time_unit", "ns")]
    ev = b.get("events")
    rate = b.get("events/s")
    print(f"| {what.get(base, base)} | {b.get('label', '')} | {b['real_time'] * k:.3f} | {b['cpu_time'] * k:.3f} | "
          f"{'' if ev is None else f'{ev / 1e6:.2f} M'} | {'' if rate is None else f'{rate / 1e6:.2f}'} |")
EOF
