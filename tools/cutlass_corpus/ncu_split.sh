#!/usr/bin/env bash
# Where a corpus GEMM's time goes on the GPU, per SM: Nsight Compute on the bundle's timing programs
# (one launch after five, no clock or cache control: the clocks a benchmark runs at). Per program and
# shape: its own CUDA-event median, the raw counters, and a summary line: the least and the most time
# an SM was active (with one CTA per SM: the CTA with the fewest tiles and the one with the most), the
# SM clock, the tensor pipes' busy share, the L2's hit rate and the bytes it served to the SMs. Compare
# with `pipesim check`'s "CTA ends" and "tensor pipes busy" for the same launch (docs/performance.md).
#   tools/cutlass_corpus/ncu_split.sh DEVICE_DIR [PROGRAM ...]     (needs ncu and an sm_90 GPU)
set -u
dir=${1:?usage: ncu_split.sh DEVICE_DIR [PROGRAM ...]}
shift
programs=("$@")
[[ ${#programs[@]} -gt 0 ]] || programs=(time_49_pingpong time_49_coop time_54_coop time_49_coop_streamk)
command -v ncu >/dev/null || { echo "ncu_split.sh: no ncu on this machine" >&2; exit 2; }
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
M=$M,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,dram__bytes_write.sum
M=$M,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.max
for exe in "${programs[@]}"; do
  for shape in "2048 2048 2048" "2048 2048 256" "4096 4096 4096" "512 512 16384"; do
    echo "== $exe $shape: $("$dir/$exe" $shape 2>&1 | grep -o 'median_us=[0-9.]*')"
    ncu --clock-control none --cache-control none -k regex:device_kernel --launch-skip 5 --launch-count 1 --metrics "$M" \
      "$dir/$exe" --watchdog-s 10 $shape 2>&1 | grep -E '^\s+[a-z_]+__' | tee /tmp/ncu_split.$$ 
    awk '{ v = $NF; gsub(",", "", v); m[$1] = v; unit[$1] = $(NF - 1) }
         END { g = m["sm__cycles_elapsed.avg.per_second"] * (unit["sm__cycles_elapsed.avg.per_second"] == "Mhz" ? 1 : 1e3);  # cycles per us
               if (g > 0) printf "   summary: SM active least %.2f us, most %.2f us; SM clock %.2f GHz; tensor busy %.1f %%; L2 hits %.1f %%, %.1f MB to the SMs\n",
                 m["sm__cycles_active.min"] / g, m["sm__cycles_active.max"] / g, g / 1e3,
                 m["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed"], m["lts__t_sector_hit_rate.pct"],
                 m["lts__t_sectors_srcunit_tex_op_read.sum"] * 32 / 1e6 }' /tmp/ncu_split.$$
  done
done
rm -f /tmp/ncu_split.$$
