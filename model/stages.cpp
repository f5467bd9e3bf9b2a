#include "model/stages.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace pipesim::model {

StageResult compute_stages(const StageInputs& in) {
  StageResult r;
  if (in.occupancy < 1) {
    r.error = fmt::format("occupancy must be at least 1, got {}", in.occupancy);
    return r;
  }
  if (in.ab_bytes_per_stage <= 0) {
    r.error = "A/B stage bytes must be positive";
    return r;
  }
  // Accumulator stages. Block-scaled (dense_blockscaled_gemm_persistent.py):
  // 1 if mma tile N == 256 else 2 (two 256-column buffers plus SF columns exceed 512).
  // Dense (dense_gemm_persistent.py): always 2.
  r.num_acc_stage = (in.block_scaled && in.mma_n == 256) ? 1 : 2;

  // Seed 001: cap' = capacity − lora_bytes − wcscale/bias bytes, then the same arithmetic at
  // occupancy 1 (seed-kernels.md §1). CUTLASS: the capacity itself.
  const int64_t cap = in.flavor == SolverFlavor::seed ? in.smem_capacity - in.extra_bytes
                                                      : in.smem_capacity;
  r.capacity_for_solver = cap;
  const int occ = in.occupancy;
  const int64_t c_stage = in.c_bytes_per_stage;
  const int64_t c_bytes = c_stage * in.initial_c_stages;
  const int64_t reserved = in.mbar_helpers_bytes + c_bytes;

  // num_ab_stage = (capacity // occupancy − (mbar_helpers_bytes + c_bytes)) // ab_bytes_per_stage
  const int64_t ab = floor_div(floor_div(cap, occ) - reserved, in.ab_bytes_per_stage);
  // num_c_stage += (capacity − occ·ab_bytes·num_ab − occ·(mbar_helpers + c_bytes)) // (occ·c_stage)
  // (skipped without a TMA-store epilogue: c_stage == 0, as dense_gemm_persistent does).
  int64_t c = in.initial_c_stages;
  if (c_stage > 0 && ab >= 0)
    c += floor_div(cap - occ * in.ab_bytes_per_stage * ab - occ * reserved, occ * c_stage);
  r.num_ab_stage = static_cast<int>(ab);
  r.num_c_stage = static_cast<int>(c);
  r.solver_total = in.ab_bytes_per_stage * std::max<int64_t>(ab, 0) +
                   c_stage * std::max<int64_t>(c, 0) + in.mbar_helpers_bytes +
                   (in.flavor == SolverFlavor::seed ? in.extra_bytes : 0);

  if (ab < in.min_ab_stages) {
    const int64_t left = floor_div(cap, occ) - reserved;
    r.error = fmt::format(
        "fewer than {} K stages fit: num_ab_stage = {} ({} B per stage; {} B left after "
        "{} B of barriers and {} epilogue buffers of {} B{})",
        in.min_ab_stages, ab, in.ab_bytes_per_stage, std::max<int64_t>(left, 0),
        in.mbar_helpers_bytes, in.initial_c_stages, c_stage,
        in.flavor == SolverFlavor::seed && in.extra_bytes > 0
            ? fmt::format(", and {} B of extra buffers", in.extra_bytes)
            : std::string());
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace pipesim::model
