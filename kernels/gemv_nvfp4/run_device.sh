#!/usr/bin/env bash
# Build (if needed), check and benchmark the NVFP4 GEMV on a machine with a GPU.
#
#   kernels/gemv_nvfp4/run_device.sh [--bin DIR] [--quick] [--sweep] [--samples N]
#
# --bin DIR  use prebuilt gemv_check / gemv_bench from DIR (e.g. built on a machine without a GPU with
#            `kernels/gemv_nvfp4/run_device.sh --stage DIR`, then carried); libraries found in DIR
#            (libbenchmark) are put on LD_LIBRARY_PATH.
# --stage DIR  build here with CMake (build-gemv) and copy the two programs and the Google Benchmark
#            library they need into DIR; runs nothing.
# Without --bin the programs are built with plain nvcc commands (no CMake configure: the device machine
# lacks Boost/fmt/CLI11/GTest that the full project needs); the benchmark then uses its plain driver
# unless benchmark/benchmark.h is installed. Eigen headers are needed for the CPU reference
# (EIGEN_DIR, default /usr/include/eigen3).
# Output: the check's lines, the benchmark table; with $OUT set, full logs are written there too.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="" stage="" quick="" sweep="" samples=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --stage) stage="$2"; shift 2 ;;
    --quick) quick="--quick"; shift ;;
    --sweep) sweep="--sweep"; shift ;;
    --samples) samples="--samples $2"; shift 2 ;;
    *) echo "usage: $0 [--bin DIR | --stage DIR] [--quick] [--sweep] [--samples N]" >&2; exit 2 ;;
  esac
done

if [[ -n "$stage" ]]; then
  cmake -S "$root" -B "$root/build-gemv" -G Ninja >/dev/null
  ninja -C "$root/build-gemv" gemv_check gemv_bench test_gemv_host
  mkdir -p "$stage"
  cp "$root/build-gemv/kernels/gemv_check" "$root/build-gemv/kernels/gemv_bench" "$stage/"
  for lib in $(ldd "$stage/gemv_bench" | awk '/libbenchmark/ {print $3}'); do cp -L "$lib" "$stage/"; done
  ls -la "$stage"
  exit 0
fi

log="${OUT:-/tmp}"
if [[ -z "$bin" ]]; then
  bin="$root/build-gemv-nvcc"
  mkdir -p "$bin"
  eigen="${EIGEN_DIR:-/usr/include/eigen3}"
  gencode="-gencode arch=compute_90a,code=sm_90a -gencode arch=compute_100a,code=sm_100a"
  flags="-std=c++20 -O3 -I$root -I$eigen"
  gb=""
  if echo '#include <benchmark/benchmark.h>' | g++ -std=c++20 -fsyntax-only -x c++ - 2>/dev/null; then
    gb="-DPIPESIM_GBENCH -lbenchmark"
  fi
  echo "== building with nvcc ($(nvcc --version | tail -1)) into $bin"
  nvcc $flags $gencode -c "$here/gemv_nvfp4.cu" -o "$bin/gemv_nvfp4.o" &
  g++ -std=c++20 -O2 -I"$root" -I"$eigen" -c "$here/gemv_host.cpp" -o "$bin/gemv_host.o" &
  g++ -std=c++20 -O2 -I"$root" -c "$root/model/gemv_plan.cpp" -o "$bin/gemv_plan.o" &
  g++ -std=c++20 -O2 -I"$root" -c "$root/model/arch.cpp" -o "$bin/arch.o" &
  wait
  objs="$bin/gemv_nvfp4.o $bin/gemv_host.o $bin/gemv_plan.o $bin/arch.o"
  nvcc $flags $gencode "$here/gemv_check.cu" $objs -o "$bin/gemv_check" -lpthread &
  nvcc $flags $gencode "$here/gemv_bench.cu" $objs -o "$bin/gemv_bench" -lpthread -ldl $gb &
  wait
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
echo "== benchmark: gemv_bench $sweep $samples"
"$bin/gemv_bench" $sweep $samples --benchmark_out="$log/gemv_bench.json" --benchmark_out_format=json \
  2>&1 | tee "$log/gemv_bench.log" | sed -n '/^== NVFP4 GEMV/,$p;/^cross-check/p'
exit "$check_rc"
