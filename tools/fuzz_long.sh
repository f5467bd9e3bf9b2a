#!/usr/bin/env bash
# Long fuzzing runs on a machine with many cores and no clang (the device host): the libFuzzer
# targets built here by tools/fuzz.sh travel as a bundle (stripped binaries, the shared libraries
# they need, seeds and the corpus so far) and run there, several workers a target.
#   tools/fuzz_long.sh pack [BUILD]               -> BUILD/fuzz-bundle (default build-fuzz; run tools/fuzz.sh 1 first)
#   tools/fuzz_long.sh run BUNDLE SECONDS WORKERS OUT [TARGET...]   the four targets (or those named) at once,
#                                                 WORKERS processes each;
#                                                 OUT gets each target's log, grown corpus and any crash
# docs/fuzzing.md records the runs.
set -euo pipefail
targets=(fuzz_ptx_parser fuzz_scenario fuzz_ptx_launch fuzz_ptx_kernel)

pack() {
  local build="${1:-build-fuzz}" b
  b="$build/fuzz-bundle"
  rm -rf "$b" && mkdir -p "$b/bin" "$b/lib"
  for t in "${targets[@]}"; do
    [[ -x "$build/tests/fuzz/$t" ]] || { echo "fuzz_long.sh: $build/tests/fuzz/$t is missing: run tools/fuzz.sh first" >&2; exit 2; }
    strip -o "$b/bin/$t" "$build/tests/fuzz/$t"
  done
  # The non-libc libraries the targets link (libstdc++, libfmt, libgcc_s): the other host may lack them.
  ldd "$build/tests/fuzz/fuzz_scenario" | awk '/=> \// {print $3}' | grep -Ev '/lib(c|m|dl|pthread|rt)\.so' |
    while read -r so; do cp -L "$so" "$b/lib/"; done
  for t in "${targets[@]}"; do
    mkdir -p "$b/corpus/$t"
    for d in "$build/fuzz-seeds/$t" "$build/fuzz-corpus/$t"; do
      [[ -d "$d" ]] && find "$d" -maxdepth 1 -type f -size -65k -exec cp {} "$b/corpus/$t/" \;
    done
  done
  cp "$0" "$b/fuzz_long.sh"
  tar -C "$build" -cJf "$build/fuzz-bundle.tar.xz" fuzz-bundle
  du -h "$build/fuzz-bundle.tar.xz"
}

run() {
  local bundle="$1" seconds="$2" workers="$3" out="$4" t
  shift 4
  [[ $# -eq 0 ]] || targets=("$@")
  mkdir -p "$out"
  export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  for t in "${targets[@]}"; do
    mkdir -p "$out/$t/corpus" "$out/$t/crashes"
    cp -r "$bundle/corpus/$t/." "$out/$t/corpus/"
    # Independent workers sharing one corpus directory (-jobs): no fork-mode merges, so every core
    # stays on the target. Same limits as tools/fuzz.sh: an input past 10 s is a finding.
    (cd "$out/$t" && "$bundle/bin/$t" -jobs="$workers" -workers="$workers" -max_total_time="$seconds" -max_len=65536 \
      -rss_limit_mb=4096 -timeout=10 -print_final_stats=1 -artifact_prefix=crashes/ corpus > driver.txt 2>&1) &
  done
  wait
  for t in "${targets[@]}"; do
    # Each worker ends with "Done N runs in T second(s)"; a worker that found a crash ends early.
    local runs
    runs=$(cat "$out/$t"/fuzz-*.log 2>/dev/null | awk '/^Done [0-9]+ runs/ {n += $2} END {print n + 0}')
    echo "== $t: $runs executions by $workers workers in ${seconds} s; crash files: $(find "$out/$t/crashes" -type f | wc -l); corpus $(ls "$out/$t/corpus" | wc -l)"
    cat "$out/$t"/fuzz-*.log 2>/dev/null | grep -E "^#[0-9]+.*(DONE|cov:)" | tail -1 || true
    cat "$out/$t"/fuzz-*.log 2>/dev/null | grep -E "ERROR|SUMMARY|stat::peak_rss" | sort | uniq -c | sort -rn | head -4 || true
  done
}

case "${1:-}" in
  pack) shift; pack "$@" ;;
  run) shift; [[ $# -ge 4 ]] || { echo "usage: fuzz_long.sh run BUNDLE SECONDS WORKERS OUT [TARGET...]" >&2; exit 2; }; run "$@" ;;
  *) echo "usage: fuzz_long.sh pack [BUILD] | run BUNDLE SECONDS WORKERS OUT [TARGET...]" >&2; exit 2 ;;
esac
