#!/usr/bin/env bash
# What a corpus GEMM moves through the L2 and the DRAM on the GPU (Nsight Compute): bytes read from and
# written to the DRAM, the DRAM's throughput against its peak, the L2's sectors and hit rate, and the
# kernel's time. Compare with `pipesim check`'s "L2 ... hit, ... miss; DRAM ... read, ... written" and
# "DRAM busy" lines (docs/performance.md); and its shared-memory accesses, wavefronts and bank conflicts.
#   tools/cutlass_corpus/ncu_memory.sh DEVICE_DIR PROGRAM:M,N,K ...   (needs ncu and an sm_90 GPU)
set -u
dir=${1:?usage: ncu_memory.sh DEVICE_DIR PROGRAM:M,N,K ...}
shift
command -v ncu >/dev/null || { echo "ncu_memory.sh: no ncu on this machine" >&2; exit 2; }
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_active.avg,sm__cycles_active.max
M=$M,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed
M=$M,dram__cycles_elapsed.avg.per_second,lts__t_sectors_op_read.sum,lts__t_sectors_op_write.sum,lts__t_sectors_op_atom.sum
M=$M,lts__t_sectors_op_red.sum,lts__t_sector_op_read_hit_rate.pct,lts__t_sector_hit_rate.pct,lts__throughput.avg.pct_of_peak_sustained_elapsed
# Shared memory: warp-level ld/st instructions, the wavefronts they took and the bank conflicts among
# them (compare with `pipesim check --json`'s shared_accesses / shared_wavefronts).
M=$M,smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
for spec in "$@"; do
  exe=${spec%%:*}
  shape=${spec#*:}
  shape=${shape//,/ }
  echo "== $exe $shape: $("$dir/$exe" --watchdog-s 10 $shape 2>&1 | grep -o 'median_us=[0-9.]*')"
  # --cache-control none: the L2 holds what the previous launches left, as between CUDA events.
  ncu --clock-control none --cache-control none -k regex:device_kernel --launch-skip 5 --launch-count 1 --metrics "$M" \
    "$dir/$exe" --watchdog-s 10 $shape 2>&1 | grep -E '^\s+[a-z0-9_]+__'
done
