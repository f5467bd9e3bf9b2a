#include "model/arch.hpp"

#include <array>

namespace pipesim::model {
namespace {

// Hopper timing: first-order values, to be replaced by H100 calibration (docs/calibration.md).
constexpr Timing kHopperTiming{
    .clock_ghz = 1.98,
    .hbm_bytes_per_ns = 3000.0,  // ~3.0 TB/s measured copy bandwidth
    .tma_latency_ns = 600.0,
    .tma_issue_ns = 10.0,
    .smem_bytes_per_ns = 128.0 * 1.98,
    .op_issue_ns = 2.0,
    .mbarrier_wake_ns = 20.0,
    .remote_arrive_ns = 150.0,
    .named_barrier_ns = 15.0,
    .cluster_barrier_ns = 200.0,
};

constexpr Timing kBlackwellTiming{
    .clock_ghz = 1.965,
    .hbm_bytes_per_ns = 7670.0,
    .tma_latency_ns = 600.0,
    .tma_issue_ns = 10.0,
    .smem_bytes_per_ns = 128.0 * 1.965,
    .op_issue_ns = 2.0,
    .mbarrier_wake_ns = 20.0,
    .remote_arrive_ns = 150.0,
    .named_barrier_ns = 15.0,
    .cluster_barrier_ns = 200.0,
};

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
    Arch{"sm_90a", "H100 SXM", kDatacenter, kHopperTiming, false, false, "",
         // CUTLASS SMEM_CAPACITY_MAP["sm_90"] = (228 - 1) * 1024
         232448},
    Arch{"sm_100a", "B200", with_blackwell(kDatacenter, 148), kBlackwellTiming, true, false, "",
         // CUTLASS SMEM_CAPACITY_MAP["sm_100"] = (228 - 1) * 1024
         232448},
    // B300: same SM count and capacities as B200 in public material; unconfirmed.
    Arch{"sm_103a", "B300", with_blackwell(kDatacenter, 148), kBlackwellTiming, true, true,
         "B300 capacities assumed equal to B200 (SM count, shared memory, TMEM); not confirmed on silicon",
         // CUTLASS SMEM_CAPACITY_MAP["sm_103"] = (228 - 1) * 1024
         232448},
    Arch{"sm_120a", "RTX PRO 6000", kConsumerBlackwell,
         Timing{.clock_ghz = 2.4, .hbm_bytes_per_ns = 1800.0, .tma_latency_ns = 600.0,
                .tma_issue_ns = 10.0, .smem_bytes_per_ns = 128.0 * 2.4, .op_issue_ns = 2.0,
                .mbarrier_wake_ns = 20.0, .remote_arrive_ns = 150.0, .named_barrier_ns = 15.0,
                .cluster_barrier_ns = 200.0},
         false, true,
         "RTX PRO 6000 rows (SM count, shared memory, threads per SM) are public vendor figures, "
         "not confirmed on silicon",
         // CUTLASS SMEM_CAPACITY_MAP["sm_120"] = (100 - 1) * 1024
         101376},
};

}  // namespace

std::span<const Arch> all_archs() { return kArchs; }

const Arch* find_arch(std::string_view name) {
  for (const Arch& a : kArchs)
    if (a.name == name) return &a;
  return nullptr;
}

}  // namespace pipesim::model
