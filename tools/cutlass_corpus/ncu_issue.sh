#!/usr/bin/env bash
# What a corpus GEMM's warps issue on the GPU: Nsight Compute's instruction and shared-memory counters
# (SASS instructions executed, issue slots used, shared loads/stores and the wavefronts and bank
# conflicts they took, global loads), then a per-instruction page of warp-stall samples for one launch.
# Compare the instruction count with `pipesim check`'s "PTX instructions" (a PTX instruction is one
# or more SASS ones) and the stall page with the trace's per-line time (docs/performance.md).
#   tools/cutlass_corpus/ncu_issue.sh DEVICE_DIR OUT_DIR PROGRAM:M,N,K ...   (needs ncu and an sm_90 GPU)
set -u
dir=${1:?usage: ncu_issue.sh DEVICE_DIR OUT_DIR PROGRAM:M,N,K ...}
out=${2:?usage: ncu_issue.sh DEVICE_DIR OUT_DIR PROGRAM:M,N,K ...}
shift 2
command -v ncu >/dev/null || { echo "ncu_issue.sh: no ncu on this machine" >&2; exit 2; }
mkdir -p "$out"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_active.avg,sm__cycles_active.min,sm__cycles_active.max
M=$M,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.avg.per_cycle_active
M=$M,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
M=$M,smsp__inst_executed_op_global_ld.sum,smsp__inst_executed_op_ldsm.sum,smsp__inst_executed_op_stsm.sum
for spec in "$@"; do
  exe=${spec%%:*}
  shape=${spec#*:}
  shape=${shape//,/ }
  tag=${exe}_${shape// /x}
  echo "== $exe $shape: $("$dir/$exe" --watchdog-s 10 $shape 2>&1 | grep -o 'median_us=[0-9.]*')"
  ncu --clock-control none --cache-control none -k regex:device_kernel --launch-skip 5 --launch-count 1 --metrics "$M" \
    "$dir/$exe" --watchdog-s 10 $shape 2>&1 | grep -E '^\s+[a-z0-9_]+__'
  # Stall samples per SASS instruction (with -lineinfo: per CUTLASS source line too).
  ncu --clock-control none --cache-control none -k regex:device_kernel --launch-skip 5 --launch-count 1 \
    --warp-sampling-interval 0 --section SourceCounters --section WarpStateStats -f -o "$out/$tag" \
    "$dir/$exe" --watchdog-s 10 $shape >/dev/null 2>&1
  for src in cuda,sass sass; do
    ncu -i "$out/$tag.ncu-rep" --page source --csv --print-source $src >"$out/$tag.csv" 2>"$out/$tag.err" && break
    echo "   (no source page with --print-source $src: $(head -c 300 "$out/$tag.err"))"
  done
  ncu -i "$out/$tag.ncu-rep" --page details --section WarpStateStats 2>&1 | grep -E '^\s+(Warp Cycles|Avg\.|Stall|[A-Z][a-z ]+ +cycle)' | head -20
done
