#include "model/arch.hpp"

#include <algorithm>
#include <array>
#include <limits>

namespace pipesim::model {
namespace {

// Hopper timing (docs/calibration.md). The DRAM (bandwidth, loaded latency, unequal shares) and the
// per-copy TMA constants are fitted through the model to native probes (kernels/interp/tmaprobe.cu);
// the wake, arrive and barrier costs come from kernels/interp/opcost.cu.
constexpr Timing kHopperTiming{
    .clock_ghz = 1.98,
    // The DRAM serves the SMs side by side (sim/dram.hpp). Fitted with the share spread and the copy
    // overlap below to the native probe's rings (case 2a), bursts (2b) and cold starts (2c, session
    // 9): tools/fit_tma_probe.py --dram, mean |model/device - 1| 3.7 / 3.0 / 3.7 %. (3180, measured
    // through the interpreter's stream when the DRAM was one first-come queue: cold starts 15.8 %.)
    .hbm_bytes_per_ns = 3060.0,
    // A copy enters the memory system when its issuing SM's TMA unit takes it, at most one every
    // tma_copy_min_ns (native probe kernels/interp/mcastprobe.cu, 2026-11-26: four SMs that each
    // multicast 8 copies to all four fill each with 32 copies in 0.9-1.0 us, so the ~74 ns a copy
    // that one SM alone shows is its issuer's, not its receiver's); its destination SM takes its
    // copies in one after another at sm_copy_bytes_per_ns; it lands T0 after. Fitted through this
    // model (tools/fit_tma_probe.py) to the native probe kernels/interp/tmaprobe.cu case 1 (H100,
    // 2026-11-21): one SM alone, 1..8 copies of 1..96 KiB, round trips 474 ns (1 KiB) .. 931 ns
    // (96 KiB), back-to-back small copies ~74 ns apart: mean |model/device - 1| 3.6 % over the 23
    // rows (with the minimum at the receiver, 420 ns / 180 B/ns / 70 ns: 5.4 %).
    .tma_latency_ns = 460.0,
    // The issuing lane's cost of a copy: tmaprobe case 1's issue column, expect_tx and copy pairs back
    // to back, 37 - 46 ns a pair for every size up to 96 KiB, less the arrive's op_issue_ns (4). It
    // overlaps the copy (sim/engine_ops.cpp, do_tma): added to the landing as well, case 1 would go
    // from 3.8 to 6.2 %. In a ring of stages a copy costs the lane more (69 - 170 ns, ringprobe): not
    // modelled.
    .tma_issue_ns = 38.0,
    .sm_copy_bytes_per_ns = 195.0,
    // Native probe kernels/interp/tmaboxprobe.cu (docs/runs/tmaboxprobe-h100-2026-11-27.txt): one SM's
    // bursts of 12 tensor copies from the L2 land 85.5 ns apart for boxes of 256 rows of 16, 32 or 64
    // bytes alike (0.33 ns a row), where boxes of 128 rows or fewer land as fast as the waiting warp
    // sees them (39 ns). Binds only for rows under 64 bytes; CUTLASS's boxes have 128-byte rows.
    .sm_copy_ns_per_request = 0.33,
    .tma_copy_min_ns = 75.0,
    // Loaded latency: with 132 SMs streaming (native probe case 2a, 45 rings of 33..132 SMs x 1..12
    // copies of 4..32 KiB) the round trip grows with the bytes in flight device-wide long before the
    // DRAM saturates (838 ns at 2 MiB against 550 ns alone). Fitted through the model with
    // tools/fit_tma_probe.py --ring: mean |GB/s model/device - 1| 4.1 % (10.6 % without the term),
    // 3.9 % (10.1 %) on the probe's second run; the burst rows (case 2b) are unchanged.
    .dram_loaded_knee_mib = 0.6,
    .dram_loaded_ns_per_mib = 225.0,
    .dram_loaded_max_ns = 1000.0,
    // Unequal shares of a loaded DRAM: SMs that compete for it are not served equally (native probe:
    // in a cold start of 132 SMs the first 32 KiB copy lands 1.7..3.3 us after issue; ring CTA ends
    // 40.9..44.0 us with 8 MiB in flight). Fitted with the bandwidth (--dram; flat over 0.1..0.3).
    .dram_share_spread = 0.2,
    // An SM's outstanding copies are served partly side by side: in a cold start of 128 SMs x 4 x
    // 32 KiB the first copies land after 2.15 us (median), where in order they would after 1.76.
    // Fitted with the bandwidth (--dram): cold starts 7.6 % -> 3.7 %, rings and bursts unchanged.
    .dram_copy_overlap = 0.3,
    // L2: 50 MB (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022). Hit bandwidth: native probe
    // (kernels/interp/tmaprobe.cu case 4, `tmaprobe l2`, H100 SXM 2026-11-25, docs/runs/tmaprobe-l2-h100-
    // 2026-11-25.txt): 132 SMs, each a ring of 3 x 64 KiB copies out of an 8 MiB window, 21.4-22.2 TB/s,
    // i.e. each SM at its own intake (~170 B/ns, sm_copy_bytes_per_ns): the L2 was not the limit, so this
    // is a lower bound. The same rings spread over a window of 9 MiB or more get 7.3-9.3 TB/s (7.7-7.8
    // from 20 MiB on), at depths 2 to 6 and copies of 32 or 64 KiB alike, and so do rings that each
    // read only their own 1/132 of a 12-32 MiB window: what sets the rate is how many distinct lines
    // are read, not each SM's span (docs/runs/tmaprobe-l2-h100-2026-11-26.txt). That probe divides a
    // launch's bytes by its whole span, ramp and tail included (its SMs do not share evenly, so some
    // finish early); kernels/interp/l2mixprobe.cu keeps every SM streaming for a fixed 40 us and reads
    // 8.32-8.39 TB/s from 10-24 MiB windows (docs/runs/l2mixprobe-h100-2026-11-28.txt): the slow rate.
    // The same probe: hits and misses share it (sim/dram.hpp, set_hit_rate). Not fitted to any GEMM
    // row. Not modelled: 33 or more SMs reading the same lines in lockstep get 10-22 TB/s (a copy
    // apart, 8.2-8.8; groups of 16 or fewer, 8.1-9.7: the same probe's `together`).
    .l2_bytes = 50e6,
    .l2_bytes_per_ns = 22200.0,
    .l2_fast_set_bytes = 8.0 * 1024 * 1024,
    .l2_slow_bytes_per_ns = 8350.0,
    // The same probe's `shares`: of 132 SMs streaming hits, most take 0.89-0.93 of the mean rate and a
    // group 1.37-1.38 of it (between 5 and 25 % of the SMs; session 42's device trace showed a stable
    // fast group of 26): 26 SMs at 1.45 times the others' share (1.41 from the mean, 1.48 from the
    // quantiles). The DRAM's misses keep dram_share_spread, fitted with its loaded latency (the
    // probe's cold SMs show the same fast group and a wider slow tail, 0.83-0.94).
    .l2_favoured_sms = 26.0,
    .l2_favoured_extra = 0.45,
    // Copies do not land in issue order: in bug 11's device trace one CTA's four copies land 1.4-2 us
    // apart, a straggler up to 5 us late; the native burst probe (case 2b) spreads CTA ends by 1 us.
    .tma_straggler_ns = 2000.0,
    // The warps of one CTA do not start together: in the interpreter's device stamps (seed-7 batch,
    // 171 CTAs) the first ops of one CTA's warps spread over 36 ns (median) to 490 ns, a warp's
    // offset from its CTA's first under 263 ns in 99 %. Native kernels' roles run different
    // prologues (descriptor prefetch, setmaxnreg), so their first barrier ops are no more aligned.
    .warp_start_skew_ns = 250.0,
    .smem_bytes_per_ns = 128.0 * 1.98,
    .op_issue_ns = 4.0,          // native mbarrier.arrive loop: 3.4 - 5.9 ns
    .mbarrier_wake_ns = 55.0,    // native hand-over, whole-warp try_wait: 58.6 ns - issue (lane-0 waits: 203 ns)
    // Native probe kernels/interp/peekprobe.cu (docs/runs/peekprobe-h100-2026-11-27.txt): one try_wait on a
    // phase that does not complete returns false after 4.0 - 4.1 us, with no time hint or with hints of
    // 100 ns to 100 us alike; on one that completes 0.2 or 2 us later it returns true then.
    .mbarrier_try_wait_limit_ns = 4000.0,
    .remote_arrive_ns = 12.0,    // native remote hand-over 214.6 ns - local 203.1 ns (both lane-0 waits)
    .named_barrier_ns = 11.0,    // native bar.sync of 4 warps: 11.2 ns per round
    .cluster_barrier_ns = 380.0, // native barrier.cluster.arrive (release) + wait, cluster of 2: 384-391 ns
    // Probe kernels/interp/mmaprobe.cu (docs/runs/mmaprobe-h100-2026-11-25.txt): under sustained wgmma on
    // all 132 SMs the pipe does exactly wgmma_flops_per_clk per SM clock, and that clock sits at 1.70 -
    // 1.80 GHz (median 1.74 over six cases), not the 1.98 GHz of light loads. (The datasheet's dense
    // peaks imply 1.83.)
    .tensor_clock_ghz = 1.75,
    // Same probe: one warpgroup issues 8 wgmma m64n128k16 back to back, 12 cycles apart; the 9th waits
    // for the first to finish (64 cycles each from then on): 8 warpgroup MMAs, one queue entry each
    // (the engine runs a warpgroup's wgmma as one MMA once its four warps issued it).
    .mma_queue_depth = 8,
    // Native probe `gemv_bench --floor` (docs/runs/gemv-h100-2026-11-21-s10.txt, s8, s9): an empty kernel
    // between CUDA events costs 4.00 us (median of 200; p10 3.65, p90 4.45), whatever its grid, block or
    // shared memory, all of it before the first CTA enters (timeline stamps: 4.10 us gap).
    .launch_floor_ns = 4000.0,
    // Native probe kernels/interp/latprobe.cu (docs/runs/latprobe-h100-2026-11-26.txt): one warp, chains
    // of 2048 dependent instructions, SM cycles per link: mad.lo.s32, fma.rn.f32, mul.wide.s32,
    // prmt.b32, setp + selp 4.0-4.1 (add.s32 + xor.b32 5.0, add.s64 3.1); cvt f32 <-> f16 5.0; cvt
    // s32 <-> f32 11.5; ex2.approx.ftz.f32 17.0; rcp.approx.f32 41.1; shfl.sync.idx 26.0; ld.shared
    // 23.0; ld.global.cg from the L2 282 (ld.global.ca from the L1: 34; not used, the model keeps no L1).
    // Integer division (docs/runs/latprobe-div-h100-2026-11-27.txt, each link less its add.s32): div.s32
    // 67, rem.s32 65, div.u32 58. 64-bit multiplies (docs/runs/latprobe-mul64-h100-2026-11-27.txt):
    // mul.lo.u64 17.1, mul.hi.u64 37.2 (its link 40.3 less an add.s64).
    .ptx_alu_latency_cycles = 4.0,
    .ptx_convert_latency_cycles = 5.0,
    .ptx_int_convert_latency_cycles = 11.5,
    .ptx_mufu_latency_cycles = 17.0,
    .ptx_mufu_fixup_latency_cycles = 41.0,
    .ptx_divide_latency_cycles = 65.0,
    .ptx_mul64_latency_cycles = 17.0,
    .ptx_mulhi64_latency_cycles = 37.0,
    .ptx_shfl_latency_cycles = 26.0,
    .ptx_shared_load_latency_cycles = 23.0,
    .ptx_global_load_latency_cycles = 282.0,
    // Native probe kernels/interp/uldcprobe.cu (docs/runs/uldcprobe-h100-2026-11-28.txt): a warp's
    // parameter reads of distinct lines wait ~85-105 cycles a line, one after another (8 issued
    // together: 657 cycles on 1 SM, 717 on 132); 8 warps each reading 8 lines of its own on every SM at
    // once: the slowest 2,882 cycles, an SM's misses queued one every ~44. A load at 0x598 and one at
    // 0x5d8 miss separately in Nsight Compute (docs/runs/ncu-issue-h100-2026-11-27.txt): lines of 64
    // bytes or fewer. Not fitted to any GEMM row's time.
    .ptx_param_miss_cycles = 90.0,
    .ptx_param_line_bytes = 64.0,
    .ptx_param_miss_interval_cycles = 44.0,
    // Native probe kernels/interp/fenceprobe.cu (docs/runs/fenceprobe-h100-2026-11-28.txt): one warp, a
    // loop of one fence, SM cycles per iteration less the empty loop's: fence.acq_rel.cluster, .gpu and
    // fence.sc.gpu 677 (SASS MEMBAR.ALL.GPU + ERRBAR + CCTL.IVALL), an mbarrier.arrive.release.cluster
    // 674, 670 with 132 SMs x 4 warps doing the same; fence.acq_rel.cta 11, fence.proxy.async 9-22, an
    // arrival at the default (CTA) scope 6. Not fitted to any GEMM row's time.
    .ptx_fence_cycles = 677.0,
    // Native probe kernels/interp/tputprobe.cu (docs/runs/tputprobe-h100-2026-11-27.txt): one CTA of 8,
    // 16 or 32 warps, 8 independent chains per thread, SM cycles per warp instruction per sub-partition:
    // shl, lop3, prmt, mad.lo.s32, setp + selp, min.s32 2.0; add.f32, fma.rn.f32, fma.rn.f16x2 1.0;
    // cvt.rn.f16x2.f32, cvt.rn.f16x2.e4m3x2, cvt.f32.f16, cvt.rn.f32.s32 2.0 (cvt.rn.satfinite.e4m3x2.f32
    // 4.0 with the PRMT that packs the probe's result: one F2FP); cvt.rzi.s32.f32, popc.b32, ex2.approx.ftz.f32
    // 8.0. The integer pipe's 2.0
    // is per SASS instruction, and ptxas folds PTX integer instructions into fewer (LOP3, IADD3, PRMT, an
    // address into a load): CUTLASS 54 executes about as many integer-pipe SASS as PTX integer
    // instructions, our GEMV's FP4 unpacking far fewer (its PTX came out 21-39 % slow at 2.0). Left at
    // one issue, like moves and fp32 arithmetic; conversions and the SFU's go one PTX to one SASS.
    .ptx_int_issue_cycles = 0.0,
    .ptx_convert_issue_cycles = 2.0,
    .ptx_xu_issue_cycles = 8.0,
    // Native probe kernels/interp/gstprobe.cu (docs/runs/gstprobe-h100-2026-11-26.txt): one SM, 8 warps
    // storing a wgmma accumulator tile element by element: per warp store instruction 0.72 ns + 0.46 ns
    // per sector written whole + ~0.92 ns per sector written in part (v4 16 whole 8.1 ns, f32 M-major
    // 4 whole 2.6, u16 M-major 4 partial 4.1, u16 / u32 / f32 row-major 8 partial 8.0-8.7).
    .ptx_store_issue_cycles = 1.4,
    .ptx_store_sector_cycles = 0.9,
    .ptx_store_partial_sector_cycles = 1.8,
    // The same probe with all 132 SMs storing, each one 128 x 128 tile of a 2048 x 2048 M-major D per
    // pass, as CUTLASS 49's and 48's epilogues do (`gstprobe burst`, 1 to 8 passes): per store
    // instruction 6.8-7.2 ns (u16, 4 sectors in part) and 4.6-5.1 ns (f32, 4 whole), where one SM
    // alone takes 3.8-4.3 and 2.6-3.4: 132 x 4 sectors over those, ~75 in part and ~110 whole per ns
    // across the device.
    .ptx_store_device_sectors_per_ns = 110.0,
    .ptx_store_device_partial_sectors_per_ns = 75.0,
    // Native probe kernels/interp/smemprobe.cu (docs/runs/smemprobe-h100-2026-11-28.txt): one CTA of 1 to
    // 32 warps, each a stream of st.shared of one pattern: one warp alone stores every 4.2 cycles, and
    // 2 cycles a wavefront where a store takes several (a 32-way conflicted one 62.8 cycles); from 4
    // warps on, the SM takes 1.00 wavefront a cycle, whatever the pattern (smem_bytes_per_ns: 128
    // bytes a cycle). Loads are taken to be alike (assumed where the probe's loads do not say).
    .ptx_shared_access_cycles = 4.2,
    .ptx_shared_warp_wavefront_cycles = 2.0,
    // The same probe's mix (each access followed by independent fmas): one warp a sub-partition takes
    // the access's 4.2 cycles plus the fmas' issue (the warp waits out its access: 4 fmas 9.1, 8 fmas
    // 12.8), four and eight warps a sub-partition the fmas' issue plus 2.4 and 1.6-2.2 cycles an access:
    // its dispatch holds the sub-partition 2 cycles.
    .ptx_shared_issue_cycles = 2.0,
};

// tcgen05 dense rates per SM per clock. B200's vendor peaks (bf16 2.25 PF, fp8 4.5 PF, fp4 9 PF)
// over 148 SMs at 1.965 GHz give 7737 / 15474 / 30949: the power-of-two rates 8192 / 16384 /
// 32768 FLOP/clk/SM at the ~1.86 GHz the peaks imply. Order: F16, TF32, F8F6F4, I8, MxF8F6F4,
// MxF4, MxF4NvF4.
constexpr std::array<double, kNumMmaKinds> kBlackwellMma{8192, 4096, 16384, 16384, 16384, 32768, 32768};

// wgmma dense rates per SM per clock: H100 SXM's vendor peaks (dense bf16 989 TF, fp8 / int8 1979 TF)
// over 132 SMs at the 1.83 GHz boost clock they are quoted at give 4096 / 8192 (tf32 494 TF: 2048).
// Order as MmaKind: F16, TF32, F8F6F4, I8; the block-scaled kinds do not exist on Hopper.
constexpr std::array<double, kNumMmaKinds> kHopperWgmma{4096, 2048, 8192, 8192, 0, 0, 0};

// B200. No Blackwell GPU exists for this project, so nothing here is measured on Blackwell. Its row is
// the H100's measured SM-side costs, which no public Blackwell figure replaces (the nearest silicon
// measured beats a guess: docs/calibration.md), with the public B200 figures and Blackwell's own units
// over them. Kept from the H100: the mbarrier, named and cluster barrier costs (opcost.cu), the TMA
// issue cost, round trip and per-SM intake (tmaprobe.cu; the public B200 TMA round trips of 4-16 KiB
// boxes, SemiAnalysis microbench-blackwell tma2d_latency, medians 250-600 ns, bracket the 460), the
// PTX instruction latencies in cycles (latprobe.cu), the constant cache's parameter misses (Nsight
// Compute's stall samples) and one SM's st.global path (gstprobe.cu).
constexpr Timing blackwell_timing(Timing t) {
  t.clock_ghz = 1.965;
  t.hbm_bytes_per_ns = 7670.0;
  // One SM's intake, from SemiAnalysis's public sweep of CUTLASS's 1-SM mainloop on one CTA
  // (microbench-blackwell cutlass_gemm_mainloop; scenarios/blackwell/dense_gemm_1sm_mainloop.scn), which
  // ran at an SM clock of 1.3 GHz (its authors' figure; its K tiles that the tensor pipe limits take
  // umma_throughput's cycles at 1.26 - 1.3 GHz). Where more stages stop helping and the MMAs are small
  // (M 128, N 16 - 64), a K tile takes 0.77 - 0.79 ns per box row for rows of 32 and 64 bytes alike (one
  // request a cycle) and 0.81 - 0.88 ns for 128-byte rows (145 - 158 B/ns, ~119 B a cycle). The TMA unit
  // is the SM's: taken per cycle of its clock (assumed), so at this row's clock.
  constexpr double kSweepGhz = 1.3;
  t.sm_copy_bytes_per_ns = 155.0 / kSweepGhz * t.clock_ghz;
  t.sm_copy_ns_per_request = 0.78 * kSweepGhz / t.clock_ghz;
  // The same sweep's round trip: its 171 rows at 2 and 3 stages whose A and B fit in 48 MiB (read from
  // the L2 across the sweep's back-to-back launches; past 64 MiB the round trip grows), scored through
  // this model at the sweep's clock (tools/score_b200.py --mainloop, --timing tma_latency_ns=200 ...
  // 460): MAPE 7.1 % at 250 ns, 7.3 % at 230 and 260, 18.3 % at the H100's 460
  // (docs/runs/b200-mainloop-2026-11-27.txt). Taken to be the memory system's, not the SM's clock's
  // (at_sm_clock). Public single-box round trips (microbench-blackwell tma2d_latency): 250 - 600 ns.
  t.tma_latency_ns = 250.0;
  // Not kept: the H100's least time per load on its SM's TMA unit (75 ns). The seed's B200 figure for
  // v2_fa4 at 4352 x 3840 x 15360 (100.2 us) is below what it would allow: the busiest CTA issues
  // 28 tiles x 15 K tiles x 4 copies, 126 us at 75 ns each. No per-copy minimum instead.
  t.tma_copy_min_ns = 0.0;
  // Nor the H100's issue cost (38 ns a copy, measured there): with it our W4A4 kernel's PTX, which
  // issues many copies a stage, comes out 10-37 % slow on three of the seed's five shapes (MAPE 10.2 ->
  // 14.1 %). The earlier assumption, 10 ns.
  t.tma_issue_ns = 10.0;
  // The DRAM's loaded latency, unequal shares and copy overlap are fits to the H100's DRAM: none here.
  t.dram_loaded_knee_mib = 0.0;
  t.dram_loaded_ns_per_mib = 0.0;
  t.dram_loaded_max_ns = 0.0;
  t.dram_share_spread = 0.0;
  t.dram_copy_overlap = 0.0;
  // L2: 126 MB over the two dies (Chips and Cheese, "Nvidia's B200: Keeping the CUDA Juggernaut Rolling",
  // 2025). Hit bandwidth not measured: assumed the H100's measured 22.2 TB/s scaled by SMs and clock
  // (148 / 132 x 1.965 / 1.98), as that figure is the SMs' intake rather than the L2's own limit.
  t.l2_bytes = 126e6;
  t.l2_bytes_per_ns = 24700.0;
  t.l2_fast_set_bytes = 0.0;
  t.l2_slow_bytes_per_ns = 0.0;  // not measured on Blackwell (two dies, no device): one rate
  t.l2_favoured_sms = 0.0;       // nor its shares: equal
  t.l2_favoured_extra = 0.0;
  t.tma_straggler_ns = 0.0;      // search only; bug 11's device trace is the H100's
  t.smem_bytes_per_ns = 128.0 * 1.965;
  // B200's dense peaks (bf16 2.25, fp8 4.5, fp4 9 PFLOPS) over 148 SMs x kBlackwellMma: 1.856 GHz.
  t.tensor_clock_ghz = 1.856;
  // Assumed, not measured (no public figure): 8 tcgen05.mma, two K stages of CUTLASS's 4 atoms.
  t.mma_queue_depth = 8;
  t.mma_issue_ns = 2.0;
  t.tmem_ld_ns_per_col = 0.5;
  t.tmem_ld_latency_ns = 100.0;
  t.launch_floor_ns = 0.0;  // the seed's B200 figures are ncu kernel durations
  // The device-wide st.global rates are the H100's memory system's: none here.
  t.ptx_store_device_sectors_per_ns = 0.0;
  t.ptx_store_device_partial_sectors_per_ns = 0.0;
  return t;
}

constexpr Timing kBlackwellTiming = blackwell_timing(kHopperTiming);

constexpr Capacity kDatacenter{
    .sms = 132,
    .smem_per_sm = 233472,
    .smem_per_block = 232448,
    .regs_per_sm = 65536,
    .regs_per_thread_max = 255,
    .threads_per_sm = 2048,
    .threads_per_block = 1024,
    .blocks_per_sm = 32,
    .cluster_portable = 8,
    .cluster_max = 16,
    .tmem_lanes = 0,
    .tmem_columns = 0,
};

constexpr Capacity with_blackwell(Capacity c, int sms) {
  c.sms = sms;
  c.tmem_lanes = 128;
  c.tmem_columns = 512;
  return c;
}

constexpr Capacity kConsumerBlackwell{
    .sms = 188,
    .smem_per_sm = 102400,
    .smem_per_block = 101376,
    .regs_per_sm = 65536,
    .regs_per_thread_max = 255,
    .threads_per_sm = 1536,
    .threads_per_block = 1024,
    .blocks_per_sm = 32,
    .cluster_portable = 0,
    .cluster_max = 0,
    .tmem_lanes = 0,
    .tmem_columns = 0,
};

constexpr std::array kArchs{
    Arch{"sm_90a", "H100 SXM", kDatacenter, kHopperTiming, false, false, false, "",
         // CUTLASS SMEM_CAPACITY_MAP["sm_90"] = (228 - 1) * 1024
         232448, 1024, {}, kHopperWgmma},
    Arch{"sm_100a", "B200", with_blackwell(kDatacenter, 148), kBlackwellTiming, true, true, false, "",
         // CUTLASS SMEM_CAPACITY_MAP["sm_100"] = (228 - 1) * 1024
         232448, 1024, kBlackwellMma},
    // B300: same SM count and capacities as B200 in public material; unconfirmed.
    Arch{"sm_103a", "B300", with_blackwell(kDatacenter, 148), kBlackwellTiming, true, true, true,
         "B300 capacities assumed equal to B200 (SM count, shared memory, TMEM); not confirmed on silicon",
         // CUTLASS SMEM_CAPACITY_MAP["sm_103"] = (228 - 1) * 1024
         232448, 1024, kBlackwellMma},
    Arch{"sm_120a", "RTX PRO 6000", kConsumerBlackwell,
         Timing{.clock_ghz = 2.4, .hbm_bytes_per_ns = 1800.0, .tma_latency_ns = 600.0,
                .tma_issue_ns = 10.0, .smem_bytes_per_ns = 128.0 * 2.4, .op_issue_ns = 2.0,
                .mbarrier_wake_ns = 20.0, .remote_arrive_ns = 150.0, .named_barrier_ns = 15.0,
                .cluster_barrier_ns = 200.0},
         false, true, true,
         "RTX PRO 6000 rows (SM count, shared memory, threads per SM) are public vendor figures, "
         "not confirmed on silicon",
         // CUTLASS SMEM_CAPACITY_MAP["sm_120"] = (100 - 1) * 1024
         101376},
};

}  // namespace

int64_t resident_ctas(const Arch& arch, int64_t threads, int64_t smem, int64_t regs) {
  const Capacity& cap = arch.cap;
  int64_t n = cap.blocks_per_sm;
  if (threads > 0) n = std::min<int64_t>(n, cap.threads_per_sm / threads);
  if (smem > 0) n = std::min(n, cap.smem_per_sm / (smem + arch.smem_reserved_per_block));
  if (regs > 0 && threads > 0) n = std::min(n, cap.regs_per_sm / (allocated_regs(regs) * threads));
  return n;
}

int64_t smem_per_cta(const Arch& arch, int64_t ctas_per_sm) {
  const int64_t n = std::max<int64_t>(1, ctas_per_sm);
  return std::min(arch.cap.smem_per_block, arch.cap.smem_per_sm / n - arch.smem_reserved_per_block);
}

std::span<const Arch> all_archs() { return kArchs; }

std::string_view mma_kind_name(MmaKind k) {
  switch (k) {
    case MmaKind::F16: return "f16";
    case MmaKind::TF32: return "tf32";
    case MmaKind::F8F6F4: return "f8f6f4";
    case MmaKind::I8: return "i8";
    case MmaKind::MxF8F6F4: return "mxf8f6f4";
    case MmaKind::MxF4: return "mxf4";
    case MmaKind::MxF4NvF4: return "mxf4nvf4";
  }
  return "?";
}

std::optional<MmaKind> mma_kind_from_name(std::string_view name) {
  for (int i = 0; i < kNumMmaKinds; ++i)
    if (mma_kind_name(static_cast<MmaKind>(i)) == name) return static_cast<MmaKind>(i);
  return std::nullopt;
}

std::string mma_shape_error(MmaKind kind, int m, int n, int k, int cta_group) {
  const bool scaled4 = kind == MmaKind::MxF4 || kind == MmaKind::MxF4NvF4;
  const int want_k = kind == MmaKind::F16 ? 16 : kind == MmaKind::TF32 ? 8 : scaled4 ? 64 : 32;
  if (cta_group != 1 && cta_group != 2) return "cta_group must be 1 or 2";
  if (k != want_k)
    return "K must be " + std::to_string(want_k) + " for kind::" + std::string(mma_kind_name(kind)) + ", got " + std::to_string(k);
  if (cta_group == 1) {
    if (scaled4 && m != 128) return "kind::" + std::string(mma_kind_name(kind)) + " under cta_group::1 needs M = 128, got " + std::to_string(m);
    if (m != 64 && m != 128) return "M must be 64 or 128 under cta_group::1, got " + std::to_string(m);
    if (n < 8 || n > 256 || n % 8 != 0) return "N must be 8..256 in steps of 8 under cta_group::1, got " + std::to_string(n);
  } else {
    if (m != 128 && m != 256) return "M must be 128 or 256 under cta_group::2, got " + std::to_string(m);
    if (n < 16 || n > 256 || n % 16 != 0) return "N must be 16..256 in steps of 16 under cta_group::2, got " + std::to_string(n);
  }
  return {};
}

std::string wgmma_shape_error(MmaKind kind, int m, int n, int k) {
  if (kind != MmaKind::F16 && kind != MmaKind::TF32 && kind != MmaKind::F8F6F4 && kind != MmaKind::I8)
    return "wgmma has no kind " + std::string(mma_kind_name(kind)) + " (f16, tf32, f8f6f4 or i8)";
  const int want_k = kind == MmaKind::F16 ? 16 : kind == MmaKind::TF32 ? 8 : 32;
  if (m != 64) return "M must be 64, got " + std::to_string(m);
  if (n < 8 || n > 256 || n % 8 != 0) return "N must be 8..256 in steps of 8, got " + std::to_string(n);
  if (k != want_k && k != 2 * want_k)  // twice for the sparse form (wgmma.mma_async.sp)
    return "K must be " + std::to_string(want_k) + " for " + std::string(mma_kind_name(kind)) + " (" + std::to_string(2 * want_k) +
           " sparse), got " + std::to_string(k);
  return {};
}

namespace {
struct NamedTimingField {
  std::string_view name;
  TimingField field;
};
constexpr NamedTimingField kTimingFields[] = {
    {"clock_ghz", &Timing::clock_ghz},
    {"hbm_bytes_per_ns", &Timing::hbm_bytes_per_ns},
    {"tma_latency_ns", &Timing::tma_latency_ns},
    {"tma_issue_ns", &Timing::tma_issue_ns},
    {"sm_copy_bytes_per_ns", &Timing::sm_copy_bytes_per_ns},
    {"sm_copy_ns_per_request", &Timing::sm_copy_ns_per_request},
    {"tma_copy_min_ns", &Timing::tma_copy_min_ns},
    {"dram_loaded_knee_mib", &Timing::dram_loaded_knee_mib},
    {"dram_loaded_ns_per_mib", &Timing::dram_loaded_ns_per_mib},
    {"dram_loaded_max_ns", &Timing::dram_loaded_max_ns},
    {"dram_share_spread", &Timing::dram_share_spread},
    {"dram_copy_overlap", &Timing::dram_copy_overlap},
    {"l2_bytes", &Timing::l2_bytes},
    {"l2_bytes_per_ns", &Timing::l2_bytes_per_ns},
    {"l2_fast_set_bytes", &Timing::l2_fast_set_bytes},
    {"l2_slow_bytes_per_ns", &Timing::l2_slow_bytes_per_ns},
    {"l2_favoured_sms", &Timing::l2_favoured_sms},
    {"l2_favoured_extra", &Timing::l2_favoured_extra},
    {"tma_straggler_ns", &Timing::tma_straggler_ns},
    {"warp_start_skew_ns", &Timing::warp_start_skew_ns},
    {"smem_bytes_per_ns", &Timing::smem_bytes_per_ns},
    {"op_issue_ns", &Timing::op_issue_ns},
    {"mbarrier_wake_ns", &Timing::mbarrier_wake_ns},
    {"mbarrier_try_wait_limit_ns", &Timing::mbarrier_try_wait_limit_ns},
    {"remote_arrive_ns", &Timing::remote_arrive_ns},
    {"named_barrier_ns", &Timing::named_barrier_ns},
    {"cluster_barrier_ns", &Timing::cluster_barrier_ns},
    {"tensor_clock_ghz", &Timing::tensor_clock_ghz},
    {"mma_queue_depth", &Timing::mma_queue_depth},
    {"mma_issue_ns", &Timing::mma_issue_ns},
    {"tmem_ld_ns_per_col", &Timing::tmem_ld_ns_per_col},
    {"tmem_ld_latency_ns", &Timing::tmem_ld_latency_ns},
    {"launch_floor_ns", &Timing::launch_floor_ns},
    {"ptx_instr_cycles", &Timing::ptx_instr_cycles},
    {"ptx_alu_latency_cycles", &Timing::ptx_alu_latency_cycles},
    {"ptx_convert_latency_cycles", &Timing::ptx_convert_latency_cycles},
    {"ptx_int_convert_latency_cycles", &Timing::ptx_int_convert_latency_cycles},
    {"ptx_mufu_latency_cycles", &Timing::ptx_mufu_latency_cycles},
    {"ptx_mufu_fixup_latency_cycles", &Timing::ptx_mufu_fixup_latency_cycles},
    {"ptx_divide_latency_cycles", &Timing::ptx_divide_latency_cycles},
    {"ptx_mul64_latency_cycles", &Timing::ptx_mul64_latency_cycles},
    {"ptx_mulhi64_latency_cycles", &Timing::ptx_mulhi64_latency_cycles},
    {"ptx_shfl_latency_cycles", &Timing::ptx_shfl_latency_cycles},
    {"ptx_shared_load_latency_cycles", &Timing::ptx_shared_load_latency_cycles},
    {"ptx_global_load_latency_cycles", &Timing::ptx_global_load_latency_cycles},
    {"ptx_param_miss_cycles", &Timing::ptx_param_miss_cycles},
    {"ptx_param_line_bytes", &Timing::ptx_param_line_bytes},
    {"ptx_param_miss_interval_cycles", &Timing::ptx_param_miss_interval_cycles},
    {"ptx_fence_cycles", &Timing::ptx_fence_cycles},
    {"ptx_int_issue_cycles", &Timing::ptx_int_issue_cycles},
    {"ptx_convert_issue_cycles", &Timing::ptx_convert_issue_cycles},
    {"ptx_xu_issue_cycles", &Timing::ptx_xu_issue_cycles},
    {"ptx_store_issue_cycles", &Timing::ptx_store_issue_cycles},
    {"ptx_store_sector_cycles", &Timing::ptx_store_sector_cycles},
    {"ptx_store_partial_sector_cycles", &Timing::ptx_store_partial_sector_cycles},
    {"ptx_store_device_sectors_per_ns", &Timing::ptx_store_device_sectors_per_ns},
    {"ptx_store_device_partial_sectors_per_ns", &Timing::ptx_store_device_partial_sectors_per_ns},
    {"ptx_shared_access_cycles", &Timing::ptx_shared_access_cycles},
    {"ptx_shared_warp_wavefront_cycles", &Timing::ptx_shared_warp_wavefront_cycles},
    {"ptx_shared_issue_cycles", &Timing::ptx_shared_issue_cycles},
};
constexpr auto kTimingFieldNames = [] {
  std::array<std::string_view, std::size(kTimingFields)> n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = kTimingFields[i].name;
  return n;
}();
}  // namespace

TimingField find_timing_field(std::string_view name) {
  for (const NamedTimingField& f : kTimingFields)
    if (f.name == name) return f.field;
  return nullptr;
}

std::span<const std::string_view> timing_field_names() { return kTimingFieldNames; }

Timing at_sm_clock(Timing t, double ghz) {
  const double r = ghz / t.clock_ghz;  // > 1: faster
  t.clock_ghz = ghz;
  t.tensor_clock_ghz *= r;
  t.smem_bytes_per_ns *= r;
  t.sm_copy_bytes_per_ns *= r;
  for (TimingField f : {&Timing::sm_copy_ns_per_request, &Timing::tma_copy_min_ns, &Timing::tma_issue_ns, &Timing::op_issue_ns,
                        &Timing::mbarrier_wake_ns, &Timing::remote_arrive_ns, &Timing::named_barrier_ns, &Timing::cluster_barrier_ns,
                        &Timing::mma_issue_ns, &Timing::tmem_ld_ns_per_col, &Timing::tmem_ld_latency_ns})
    t.*f /= r;
  return t;
}

double timing_field_bound(TimingField field) {
  if (field == &Timing::dram_share_spread || field == &Timing::dram_copy_overlap) return 1.0;
  if (timing_field_is_count(field)) return 65536.0;
  return std::numeric_limits<double>::infinity();
}

bool timing_field_is_count(TimingField field) {
  return field == &Timing::mma_queue_depth || field == &Timing::ptx_param_line_bytes || field == &Timing::l2_favoured_sms;
}

const Arch* find_arch(std::string_view name) {
  for (const Arch& a : kArchs)
    if (a.name == name) return &a;
  return nullptr;
}

// kernels/interp on the H100 (sm_90a): fitted by `pipesim calibrate` (docs/calibration.md) to 2533
// device runs (three runs of the 1000 random protocols, two with per-op timestamps and one without,
// and the calibration micro-scenarios), 2026-11-21; refitted in session 4 after the per-copy TMA
// constants were taken from the native probe (kernels/interp/tmaprobe.cu). The shipped scenarios and
// the probes of two device runs (203 runs) were held out to judge it.
constexpr InterpreterCost kHopperInterpreter{
    .op_ns = 111.2,
    .wait_ns = 163.2,
    .compute_ns = 153.5,
    .init_ns = 325.0,
    .named_ns = 267.0,
    .cluster_ns = 452.5,
    // Fitted as 382.5 on top of the native tma_issue_ns of 10; that moved to the measured 38
    // (2026-11-28), so the interpreter's own part is 28 ns less and the fitted sum stays.
    .copy_ns = 354.5,
    .wake_ns = 20.0,
    .contention_ns = 14.4,
    .poll_share = 0.00,
    .start_ns = 1105.7,
    .timestamp_ns = 41.9,
};

const InterpreterCost* interpreter_cost(std::string_view device_arch) {
  return device_arch.starts_with("sm_90") ? &kHopperInterpreter : nullptr;
}

}  // namespace pipesim::model
