#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz: clang, ASan + UBSan) and runs each for a bounded time,
# seeded with the project's PTX. Installs clang and its fuzzer runtime from Debian where missing.
#   tools/fuzz.sh [SECONDS]      (default 60 per target)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
tools/install_packages.sh clang libclang-rt-dev
build=build-fuzz
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPESIM_FUZZ=ON \
  -DPIPESIM_CUDA=OFF -DPIPESIM_BENCH=OFF >/dev/null
cmake --build "$build" --target fuzz_ptx_parser -j"$(nproc)" >/dev/null
# Seeds: the committed PTX and whatever the corpus build left (never committed: third-party PTX).
seeds="$build/fuzz-seeds"
mkdir -p "$build/fuzz-corpus"
mkdir -p "$seeds"
cp tests/data/ptx/*.ptx "$seeds/"
for f in build/cutlass_corpus/*/*.ptx; do [[ -f "$f" ]] && head -c 65536 "$f" > "$seeds/$(basename "$f")"; done
echo "== fuzz_ptx_parser for ${seconds} s"
"$build/tests/fuzz/fuzz_ptx_parser" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 \
  -print_final_stats=1 "$build/fuzz-corpus" "$seeds" 2>&1 | grep -E "^#|stat::|ERROR|SUMMARY|Done" | tail -12
