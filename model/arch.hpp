// Architecture table: every capacity and timing number pipesim uses lives here.
// Capacities come from ../shared/spec/semantics.md; timing constants are the model's
// calibration (docs/calibration.md says where each comes from and how sure we are).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace pipesim::model {

// Per-SM and per-device capacities of one architecture.
struct Capacity {
  int sms = 0;
  int64_t smem_per_sm = 0;          // bytes
  int64_t smem_per_block = 0;       // bytes, opt-in maximum for one CTA
  int64_t regs_per_sm = 0;          // 32-bit registers
  int regs_per_thread_max = 0;
  int threads_per_sm = 0;
  int threads_per_block = 0;
  int blocks_per_sm = 0;
  int cluster_portable = 0;         // 0: clusters not supported
  int cluster_max = 0;              // non-portable maximum
  int tmem_lanes = 0;               // 0: no tensor memory
  int tmem_columns = 0;
};

// Latencies and rates the discrete-event engine charges. Nanoseconds and bytes/ns.
struct Timing {
  double clock_ghz = 0;             // SM clock used to convert cycles
  double hbm_bytes_per_ns = 0;      // device-wide DRAM bandwidth (bytes/ns == GB/s / 1)
  double tma_latency_ns = 0;        // issue to first byte landing, small copies
  double tma_issue_ns = 0;          // cost to the issuing warp
  double sm_copy_bytes_per_ns = 0;  // what one SM takes in from bulk copies (0: no per-SM limit)
  // ... and the time its intake spends per request: a tensor copy's box is fetched row by row, each row
  // of up to 128 bytes one request (wider rows several), so a box of narrow rows takes in fewer bytes
  // per ns. A copy holds the intake for max(bytes / sm_copy_bytes_per_ns, requests x this). 0: none.
  double sm_copy_ns_per_request = 0;
  double tma_copy_min_ns = 0;       // the least time one load holds its issuing SM's TMA unit
  // Loaded DRAM latency: a copy issued while B MiB of copies are in flight device-wide (itself
  // included) lands L = min(dram_loaded_max_ns, dram_loaded_ns_per_mib * max(0, B - dram_loaded_knee_mib))
  // later, less the time sharing the DRAM already held it beyond its own transfer (so a DRAM that
  // is already shared out adds nothing more).
  double dram_loaded_knee_mib = 0;
  double dram_loaded_ns_per_mib = 0;  // 0: latency independent of load
  double dram_loaded_max_ns = 0;
  // Unequal shares of a loaded DRAM: the SMs with copies queued share hbm_bytes_per_ns max-min
  // fairly by weights w_i spread evenly over [1 - s, 1 + s] by SM id (sim/dram.hpp; docs/semantics.md,
  // "Unequal DRAM shares"). 0: equal shares.
  double dram_share_spread = 0;
  // Where the DRAM rather than its intake limits an SM, this share of the SM's rate is spread evenly
  // over all its outstanding copies, the rest going to the oldest (sim/dram.hpp): a burst's first
  // copy lands later than strict issue order would land it. 0: strictly in order. < 1.
  double dram_copy_overlap = 0;
  // The L2 between the SMs and the DRAM (sim/l2.hpp): TMA loads of a global box read recently enough
  // to still be held (LRU over l2_bytes) are served from it at l2_bytes_per_ns device-wide, each SM
  // still no faster than its intake; only misses and stores reach the DRAM. Hits and misses share
  // one queue (sim/dram.hpp, set_hit_rate): beside misses, hits go at the misses' pace. l2_bytes = 0:
  // no L2, every byte from the DRAM.
  double l2_bytes = 0;
  double l2_bytes_per_ns = 0;
  // The H100 serves hits at l2_bytes_per_ns only while the set of lines being read is small: a launch
  // whose footprint in the L2 (boxes read and stored, st.global bytes) passes l2_fast_set_bytes has
  // its hits served at l2_slow_bytes_per_ns device-wide, from its first copy on (a launch among
  // back-to-back launches of itself cycles through all of it; sim::run). The `tmaprobe l2` windows:
  // 8 MiB fast, 9 MiB and up slow; why is not known, and it is not the traffic between the L2's two
  // partitions, which Nsight Compute counts near zero in both.
  // l2_slow_bytes_per_ns = 0: one rate for every hit.
  double l2_fast_set_bytes = 0;
  double l2_slow_bytes_per_ns = 0;
  // Unequal shares of the L2's hits: l2_favoured_sms SMs, spread evenly over the SM ids, each take
  // 1 + l2_favoured_extra times another SM's share (docs/semantics.md, "Unequal shares"). 0: equal.
  double l2_favoured_sms = 0;
  double l2_favoured_extra = 0;
  double tma_straggler_ns = 0;      // interleaving search only: how late a straggling copy may land
  double warp_start_skew_ns = 0;    // interleaving search only: a warp's first op starts up to this late
  double smem_bytes_per_ns = 0;     // per SM, what a bulk store reads out of smem
  double op_issue_ns = 0;           // any other instruction's cost to its warp
  double mbarrier_wake_ns = 0;      // phase flip to waiter resumed
  // How long a try_wait that no loop repeats (a peek: CUTLASS's producer_try_acquire) may hold its warp
  // before it returns false. 0: such a peek answers at once.
  double mbarrier_try_wait_limit_ns = 0;
  double remote_arrive_ns = 0;      // arrive on another CTA's barrier (DSMEM)
  double named_barrier_ns = 0;      // last arrival to release
  double cluster_barrier_ns = 0;    // last arrival to release
  // The tensor pipe of one SM (sim/tensor_pipe.hpp), wgmma and tcgen05.mma alike. An MMA occupies it
  // for its FLOPs over Arch::wgmma_flops_per_clk / mma_flops_per_clk x tensor_clock_ghz: the clock
  // the vendor's dense peak is quoted at (peak / (SMs x FLOP per clock)), not the SM clock above.
  double tensor_clock_ghz = 0;
  // MMAs the pipe holds unfinished, the running one included (a wgmma counts once for its warpgroup);
  // an issue into a full queue waits. 0: unbounded.
  double mma_queue_depth = 0;
  // tcgen05 (zero where the architecture has none)
  double mma_issue_ns = 0;          // cost to the issuing thread of one tcgen05.mma
  double tmem_ld_ns_per_col = 0;    // tcgen05.ld/st: per 32-bit column, whole warp
  double tmem_ld_latency_ns = 0;
  // What a launch timed between CUDA events costs beyond the kernel's body (the predicted duration):
  // the time from the start event to the first CTA's entry. Reports add it to give the time such a
  // benchmark measures. 0: not measured.
  double launch_floor_ns = 0;
  // PTX kernels: clock cycles a warp spends issuing each instruction it executes between synchronising
  // ones (ALU, address arithmetic, loads). Assumed, not measured: one issue per cycle.
  double ptx_instr_cycles = 1.0;
  // PTX kernels: cycles until an instruction's result can be read, by class (verify/ptx/scoreboard.cpp:
  // integer / logic / fp32 arithmetic, float <-> float and int <-> float conversions, the SFU's
  // approximations with .ftz and without, shfl, ld.shared / ldmatrix, ld.global); an instruction
  // waits for its operands. All 0: none.
  double ptx_alu_latency_cycles = 0;
  double ptx_convert_latency_cycles = 0;
  double ptx_int_convert_latency_cycles = 0;
  double ptx_mufu_latency_cycles = 0;
  double ptx_mufu_fixup_latency_cycles = 0;
  double ptx_divide_latency_cycles = 0;  // integer div / rem (an emulated sequence)
  double ptx_mul64_latency_cycles = 0;    // 64-bit integer mul.lo / mad.lo (emulated by 32-bit IMADs)
  double ptx_mulhi64_latency_cycles = 0;  // 64-bit integer mul.hi / mad.hi
  double ptx_shfl_latency_cycles = 0;
  double ptx_shared_load_latency_cycles = 0;
  double ptx_global_load_latency_cycles = 0;
  // PTX kernels: a kernel's parameters are read through its SM's constant cache, which each launch
  // finds cold: the first read of each ptx_param_line_bytes line of the parameter block on an SM
  // waits this many cycles, and so does every warp of that SM that reads the line before it arrives;
  // later reads cost their issue only. 0: free.
  double ptx_param_miss_cycles = 0;
  double ptx_param_line_bytes = 0;
  // ... and an SM's misses queue: each takes its constant cache's miss path this many cycles, so that
  // many warps missing many lines at once (a kernel's start) wait their turn. 0: no queue.
  double ptx_param_miss_interval_cycles = 0;
  // A fence that orders memory beyond the CTA (fence.sc / fence.acq_rel at cluster, gpu or sys scope,
  // membar.gl, and an mbarrier arrival or a store, red or atom released at such a scope): the SM runs
  // a MEMBAR that holds the warp this many cycles, with no write outstanding (fenceprobe.cu).
  double ptx_fence_cycles = 0;
  // PTX kernels: cycles one warp instruction holds its SM sub-partition's issue, by class, where it is
  // more than ptx_instr_cycles: integer, logic, shift, compare and select; conversions between float
  // formats and from integers; the SFU's approximations, float-to-integer conversions and bit counts.
  // 0: ptx_instr_cycles.
  double ptx_int_issue_cycles = 0;
  double ptx_convert_issue_cycles = 0;
  double ptx_xu_issue_cycles = 0;
  // PTX kernels: an SM's path for st.global, in cycles per store instruction and per 32-byte sector
  // it writes whole or in part; a warp waits until the path takes its store. 0: free.
  double ptx_store_issue_cycles = 0;
  double ptx_store_sector_cycles = 0;
  double ptx_store_partial_sector_cycles = 0;
  // ... and the device's: the 32-byte sectors per ns that all SMs' st.global write together, whole or
  // in part; a store waits for the work queued before it. 0: no device-wide limit.
  double ptx_store_device_sectors_per_ns = 0;
  double ptx_store_device_partial_sectors_per_ns = 0;
  // PTX kernels: a warp's ld / st / ldmatrix / stmatrix of shared memory holds its warp (its next
  // instruction waits) at least ptx_shared_access_cycles, and ptx_shared_warp_wavefront_cycles per
  // wavefront (a pass of the 32 banks) where it takes several; the SM's banks serve all its warps a
  // wavefront per 128 bytes of smem_bytes_per_ns, in turn. 0: free.
  double ptx_shared_access_cycles = 0;
  double ptx_shared_warp_wavefront_cycles = 0;
  // ... of which the access holds its SM sub-partition's issue this long (the rest only its warp).
  double ptx_shared_issue_cycles = 0;
};

// The Timing fields by name ("tma_latency_ns" ...), for what-if runs and calibration experiments
// (`pipesim check --timing NAME=VALUE`): nullptr when the name is unknown.
using TimingField = double Timing::*;
TimingField find_timing_field(std::string_view name);
std::span<const std::string_view> timing_field_names();
// The exclusive upper bound of a field's values (every field is >= 0): 1 for dram_share_spread,
// whose weights 1 +- s must stay positive, and dram_copy_overlap, a share; 65536 for the counts;
// infinity for the others.
double timing_field_bound(TimingField field);
// Fields that count things (mma_queue_depth, ptx_param_line_bytes, l2_favoured_sms) take whole
// numbers only: the engine uses them as integers.
bool timing_field_is_count(TimingField field);

// The same timing with the SM clocked at `ghz` instead of clock_ghz (a GPU whose clocks are locked, as
// Nsight Compute locks them to base by default, or held down by its power limit): what runs on the SM's
// clock scales with it (the instruction latencies in cycles, the barrier and issue costs, the TMA unit's
// intake and per-copy minimum, shared memory, TMEM loads, the tensor pipe's clock); the memory system's
// figures (the TMA round trip, L2, DRAM, the device-wide store rates, the launch floor) stay. Which side
// the round trip is on is **assumed** (docs/calibration.md).
Timing at_sm_clock(Timing t, double ghz);

// What the device interpreter (kernels/interp) adds to the ops it runs, on the device it runs on.
// A native kernel pays none of it; `pipesim crosscheck` adds it to the model's run so that both
// sides time the same program (docs/calibration.md: measured with the calibration scenarios, which
// are not the scenarios it is judged on).
struct InterpreterCost {
  double op_ns = 0;          // fetch, decode and dispatch of one op (any kind not listed below)
  double wait_ns = 0;        // mbarrier try_wait loop entry (whole warp polls)
  double compute_ns = 0;     // a timed compute step (clock64 spin), on top of its duration
  double init_ns = 0;        // mbarrier.init / inval / fence.mbarrier_init, test_wait, complete_tx
  double named_ns = 0;       // bar.sync / bar.arrive (all 32 lanes, "blocked at" record stores)
  double cluster_ns = 0;     // barrier.cluster.arrive / wait
  double copy_ns = 0;        // TMA load, bulk store (a divergent lane-0 section)
  double wake_ns = 0;        // leaving a blocked mbarrier wait (on top of the hardware wake)
  // The interpreter is instruction-bound: warps of one SM sub-partition (warp % 4) share its issue
  // slot. Added per op for every other warp of the CTA in the same sub-partition that is running
  // (dispatching, computing), and `poll_share` of that for each one polling an mbarrier.
  double contention_ns = 0;
  double poll_share = 0;
  double start_ns = 0;       // from the CTA's launch to its warps' first op
  double timestamp_ns = 0;   // per op, when per-op timestamps are recorded
};

// The interpreter's cost on `device_arch` ("sm_90a"), nullptr where it was never measured.
const InterpreterCost* interpreter_cost(std::string_view device_arch);

// tcgen05.mma instruction kinds (PTX .kind), in this order everywhere.
enum class MmaKind : uint8_t { F16, TF32, F8F6F4, I8, MxF8F6F4, MxF4, MxF4NvF4 };
inline constexpr int kNumMmaKinds = 7;
std::string_view mma_kind_name(MmaKind k);
std::optional<MmaKind> mma_kind_from_name(std::string_view name);

// Why a tcgen05.mma shape is illegal for (kind, cta_group), or empty when it is legal
// (semantics.md: per-kind M, N, K rules; mxf4nvf4 M=128 only under cta_group::1).
std::string mma_shape_error(MmaKind kind, int m, int n, int k, int cta_group);
// Why a Hopper wgmma.mma_async shape is illegal for its kind (PTX ISA "Matrix shape": m64nNkK, N a
// multiple of 8 up to 256, K 32 bytes of the input type, 64 for .sp), or empty when it is legal.
std::string wgmma_shape_error(MmaKind kind, int m, int n, int k);

struct Arch {
  std::string_view name;            // "sm_90a"
  std::string_view product;         // "H100 SXM"
  Capacity cap;
  Timing time;
  bool has_tcgen05 = false;
  bool has_clc = false;             // clusterlaunchcontrol.try_cancel / query_cancel (PTX ISA: sm_100 and later)
  bool uncertain = false;           // capacities not confirmed on silicon
  // What is uncertain about this row, in words ("" when nothing is); reports print it.
  std::string_view uncertain_note = {};
  // The shared-memory capacity CUTLASS's stage solvers use for this family
  // (cutlass.utils.get_smem_capacity_in_bytes: (228-1) KiB on sm_90/100/103, (100-1) KiB on sm_120).
  // Equal to cap.smem_per_block on every row today; kept apart because the solver's constant and the
  // device's opt-in limit are different facts (bug-catalog item 9).
  int64_t solver_smem_capacity = 0;
  // Shared memory the driver reserves per resident CTA (CUDA programming guide, compute capability
  // 8.0+: 1 KiB per block; it is also smem_per_sm - smem_per_block in semantics.md's table).
  int64_t smem_reserved_per_block = 1024;
  // Dense tcgen05 rate of one SM in FLOP/clock per MmaKind (all zero without tcgen05).
  std::array<double, kNumMmaKinds> mma_flops_per_clk{};
  // Dense Hopper wgmma rate of one SM in FLOP/clock per operand kind (F16 covers bf16; zero where
  // the architecture has no wgmma).
  std::array<double, kNumMmaKinds> wgmma_flops_per_clk{};
  bool has_wgmma() const {
    for (double f : wgmma_flops_per_clk)
      if (f > 0) return true;
    return false;
  }
};

// CTAs of `threads` threads, `smem` bytes of shared memory and `regs` registers per thread (0: not
// known, no limit) that one SM holds at once: the blocks, threads, shared-memory (with the driver's
// per-block reservation) and register-file limits. 0: not even one fits (the launch would fail).
int64_t resident_ctas(const Arch& arch, int64_t threads, int64_t smem, int64_t regs);
// Shared memory one CTA may hold while `ctas_per_sm` of them stay resident on an SM: the per-block
// limit, or the SM's share less the driver's per-block reservation, whichever is smaller.
int64_t smem_per_cta(const Arch& arch, int64_t ctas_per_sm);
// Registers per thread as the SM allocates them (units of 8 per thread).
inline int64_t allocated_regs(int64_t regs) { return (regs + 7) / 8 * 8; }

// All architectures pipesim knows, in a fixed order.
std::span<const Arch> all_archs();

// nullptr when the name is unknown.
const Arch* find_arch(std::string_view name);

}  // namespace pipesim::model
