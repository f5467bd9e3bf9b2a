#!/usr/bin/env bash
# test_compile.sh BUILD_DIR
#
# CTest fixture (tests/CMakeLists.txt, svdquant_cute_compile): builds the CuTe DSL venv
# (tools/cute_dsl/setup_venv.sh, cached by its stamp), compiles the v2_fa4 kernel at the four
# production shapes and every seed-bug mutant at 4352x3840x3072 r128 into BUILD_DIR/svdquant_w4a4/
# (compile.py --mutants, one process), and checks that every PTX names an sm_100a entry, has the
# block-scaled MMA and carries Python line info. The verdicts are the svdquant_cute_verdict_* tests
# (check_verdict.py), which read these files.
set -euo pipefail
build_dir=$1
here=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
python=$("$here/../../tools/cute_dsl/setup_venv.sh" "$build_dir")
venv_done=$(date +%s)
out="$build_dir/svdquant_w4a4"
rm -rf "$out"
"$python" "$here/compile.py" --out "$out" --mutants
echo "venv $((venv_done - start)) s, compile $(( $(date +%s) - venv_done )) s"
count=0
for launch in "$out"/*.launch.json; do
  ptx=${launch%.launch.json}.ptx
  [[ -s "$ptx" ]] || { echo "missing $ptx"; exit 1; }
  grep -q '^\.target sm_100a' "$ptx" || { echo "$ptx: no .target sm_100a"; exit 1; }
  grep -q 'tcgen05.mma.cta_group::2.kind::mxf4nvf4.block_scale' "$ptx" || { echo "$ptx: no block-scaled MMA"; exit 1; }
  grep -q '^\s*\.file\s.*kernel_v2_fa4\.py"' "$ptx" || { echo "$ptx: no .file naming kernel_v2_fa4.py"; exit 1; }
  count=$((count + 1))
done
[[ $count -eq 11 ]] || { echo "expected 11 kernels (4 shapes + 7 mutants), found $count"; exit 1; }
echo "total $(( $(date +%s) - start )) s"
