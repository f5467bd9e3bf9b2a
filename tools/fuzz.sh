#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz: clang, ASan + UBSan) and runs each for a bounded time,
# seeded with the project's scenarios, PTX and launch files. Installs clang and its fuzzer runtime
# from Debian where missing. The whole fuzz build tree is instrumented (the targets link the
# project's own libraries). docs/fuzzing.md: what the targets check, the long runs, what they found.
#   tools/fuzz.sh [SECONDS [TARGET...]]   (default 30 s per target: the four take 2 minutes, plus the build)
# A crash leaves its input as build-fuzz/crash-*: copy it to tests/fuzz/regressions/TARGET/ once fixed
# (the CTest fuzz_regressions replays them in every build).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-30}"
shift || true
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(fuzz_ptx_parser fuzz_scenario fuzz_ptx_launch fuzz_ptx_kernel)
tools/install_packages.sh clang libclang-rt-dev
build=build-fuzz
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPIPESIM_FUZZ=ON \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -Wno-unknown-warning-option" \
  -DPIPESIM_CUDA=OFF -DPIPESIM_BENCH=OFF >/dev/null
cmake --build "$build" --target "${targets[@]}" -j"$(nproc)" >/dev/null
# Seeds: the committed inputs, and whatever the corpus build left (never committed: third-party PTX).
seeds="$build/fuzz-seeds"
mkdir -p "$seeds"/{fuzz_ptx_parser,fuzz_scenario,fuzz_ptx_launch,fuzz_ptx_kernel}
cp tests/data/ptx/*.ptx "$seeds/fuzz_ptx_parser/"
cp tests/data/ptx/*.ptx "$seeds/fuzz_ptx_kernel/"
cp tests/data/ptx/*.launch.json "$seeds/fuzz_ptx_launch/"
find scenarios -name '*.scn' | while read -r f; do cp "$f" "$seeds/fuzz_scenario/$(echo "$f" | tr / _)"; done
for f in build/cutlass_corpus/*/*.ptx; do [[ -f "$f" ]] && head -c 65536 "$f" > "$seeds/fuzz_ptx_parser/$(basename "$f")"; done
for t in "${targets[@]}"; do
  corpus="$build/fuzz-corpus/$t"
  mkdir -p "$corpus"
  echo "== $t for ${seconds} s"
  # -timeout: one input running past 10 s is a finding (pipesim hanging), as is a crash.
  (cd "$build" && "tests/fuzz/$t" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=10 \
    -print_final_stats=1 "fuzz-corpus/$t" "fuzz-seeds/$t" 2>&1 | grep -E "^#|stat::|ERROR|SUMMARY|Done|Test unit written" | tail -14)
done
