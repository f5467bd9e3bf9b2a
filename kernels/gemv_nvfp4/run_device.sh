#!/usr/bin/env bash
# Build (if needed), check and benchmark the NVFP4 GEMV on a machine with a GPU.
#
#   kernels/gemv_nvfp4/run_device.sh [--bin DIR] [--quick] [--sweep] [--timeline] [--samples N]
#                                    [--bench-args "ARGS"] [--no-memset]
#
# --timeline  also print per-CTA %globaltimer stamps of the planned kernel (first stage, CTA ends)
# --bench-args  more gemv_bench switches for the main benchmark (e.g. "--variants --floor")
# --no-memset   skip the second benchmark (L2 flushed by a memset)
#
# --bin DIR  use prebuilt gemv_check / gemv_bench from DIR (e.g. built on a machine without a GPU with
#            `kernels/gemv_nvfp4/run_device.sh --stage DIR`, then carried); libraries found in DIR
#            (libbenchmark) are put on LD_LIBRARY_PATH.
# --stage DIR  build here (plain nvcc, see build_nvcc) and copy the two programs and the Google
#            Benchmark library they link into DIR; runs nothing. The CMake build (kernels/CMakeLists.txt,
#            targets gemv_check and gemv_bench) makes the same programs.
# Without --bin the programs are built on the spot with build_nvcc; the benchmark uses Google Benchmark
# when benchmark/benchmark.h is installed, else its plain driver. Eigen headers are needed for the CPU
# reference (EIGEN_DIR, default /usr/include/eigen3).
# Output: the check's lines, the benchmark table; with $OUT set, full logs are written there too.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="" stage="" quick="" sweep="" samples="" timeline="" bargs="" nomemset=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --stage) stage="$2"; shift 2 ;;
    --quick) quick="--quick"; shift ;;
    --sweep) sweep="--sweep"; shift ;;
    --timeline) timeline="--timeline"; shift ;;
    --samples) samples="--samples $2"; shift 2 ;;
    --bench-args) bargs="$2"; shift 2 ;;
    --no-memset) nomemset=1; shift ;;
    *) echo "usage: $0 [--bin DIR | --stage DIR] [--quick] [--sweep] [--timeline] [--samples N] [--bench-args ARGS] [--no-memset]" >&2; exit 2 ;;
  esac
done

# Plain nvcc build of the two programs (no CMake configure: it needs only this directory, model/arch.cpp,
# model/gemv_plan.cpp and Eigen's headers, so it works on the device machine, which lacks the
# Boost/fmt/CLI11/GTest the full project needs, and here while other parts of the tree are in flux).
build_nvcc() {
  local out="$1"
  mkdir -p "$out"
  local eigen="${EIGEN_DIR:-/usr/include/eigen3}"
  local gencode="-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100a,code=sm_100a"
  local flags="-std=c++20 -O3 -I$root -I$eigen"
  local gb=""
  if echo '#include <benchmark/benchmark.h>' | g++ -std=c++20 -fsyntax-only -x c++ - 2>/dev/null; then
    gb="-DPIPESIM_GBENCH -lbenchmark"
  fi
  echo "== building with nvcc ($(nvcc --version | tail -1)) into $out${gb:+ (with Google Benchmark)}"
  nvcc $flags $gencode -c "$here/gemv_nvfp4.cu" -o "$out/gemv_nvfp4.o" &
  g++ -std=c++20 -O2 -I"$root" -I"$eigen" -c "$here/gemv_host.cpp" -o "$out/gemv_host.o" &
  g++ -std=c++20 -O2 -I"$root" -c "$root/model/gemv_plan.cpp" -o "$out/gemv_plan.o" &
  g++ -std=c++20 -O2 -I"$root" -c "$root/model/arch.cpp" -o "$out/arch.o" &
  wait
  local objs="$out/gemv_nvfp4.o $out/gemv_host.o $out/gemv_plan.o $out/arch.o"
  nvcc $flags $gencode "$here/gemv_check.cu" $objs -o "$out/gemv_check" -lpthread &
  nvcc $flags $gencode "$here/gemv_bench.cu" $objs -o "$out/gemv_bench" -lpthread -ldl $gb &
  wait
  rm -f "$out"/*.o
}

if [[ -n "$stage" ]]; then
  build_nvcc "$stage"
  for lib in $(ldd "$stage/gemv_bench" | awk '/libbenchmark/ {print $3}'); do cp -L "$lib" "$stage/"; done
  ls -la "$stage"
  exit 0
fi

log="${OUT:-/tmp}"
if [[ -z "$bin" ]]; then
  bin="$root/build-gemv-nvcc"
  build_nvcc "$bin"
fi

# cuBLAS for the baseline is loaded at run time; look where CUDA and pip put it.
extra="$bin"
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
         $(python3 -c 'import nvidia.cublas, os; print(os.path.join(list(nvidia.cublas.__path__)[0], "lib"))' 2>/dev/null || true); do
  [[ -e "$d/libcublas.so.13" ]] && extra="$extra:$d"
done
export LD_LIBRARY_PATH="$extra${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
  --format=csv 2>/dev/null || true
echo "== correctness: gemv_check $quick"
set +e
"$bin/gemv_check" $quick 2>&1 | tee "$log/gemv_check.log" | grep -v '^ok ' 
check_rc=${PIPESTATUS[0]}
set -e
echo "gemv_check exit code: $check_rc ($(grep -c '^ok ' "$log/gemv_check.log") ok lines)"
echo "== benchmark: gemv_bench $sweep $bargs $samples (L2 flushed by a read pass)"
"$bin/gemv_bench" $sweep $timeline $bargs $samples --benchmark_out="$log/gemv_bench.json" --benchmark_out_format=json \
  2>&1 | tee "$log/gemv_bench.log" | sed -n '/^== NVFP4 GEMV/,$p;/^cross-check/p;/^timeline/p'
if [[ -z "$quick" && -z "$nomemset" ]]; then
  echo "== benchmark: gemv_bench --flush memset (L2 flushed by a memset, as torch's cache.zero_())"
  "$bin/gemv_bench" --flush memset $samples 2>&1 | tee "$log/gemv_bench_memset.log" | sed -n '/^== NVFP4 GEMV/,$p' |
    grep -v "reference kernel"
fi
exit "$check_rc"
