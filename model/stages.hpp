// The stage solver: how many pipeline stages of each buffer fit in shared memory.
//
// Reproduces CUTLASS's `_compute_stages` (CuTe DSL Blackwell dense and block-scaled persistent GEMMs)
// and the seed-001 kernel's variant, which first subtracts its extra buffers (LoRA, per-column
// vectors) from the capacity. docs/budget.md states the rule; tests/test_budget.cpp checks it.
#pragma once

#include <cstdint>
#include <string>

namespace pipesim::model {

enum class SolverFlavor {
  cutlass,  // CUTLASS _compute_stages (dense_[blockscaled_]gemm_persistent.py)
  seed,     // seed 001 (kernel_v2_fa4.py): capacity minus extra bytes, then the CUTLASS rule
};

struct StageInputs {
  SolverFlavor flavor = SolverFlavor::cutlass;
  int64_t smem_capacity = 0;      // CUTLASS get_smem_capacity_in_bytes (232448 on sm_100)
  int occupancy = 1;              // target CTAs per SM
  int64_t ab_bytes_per_stage = 0; // A + B + SFA + SFB per CTA, one stage
  int64_t c_bytes_per_stage = 0;  // one epilogue staging buffer; 0 with no TMA-store epilogue
  int64_t mbar_helpers_bytes = 1024;  // CUTLASS mbar_helpers_bytes
  int initial_c_stages = 2;       // CUTLASS "Default C stages" (0 without a TMA store)
  int64_t extra_bytes = 0;        // seed flavour: LoRA bytes (all stages) + per-column vectors
  int mma_n = 0;                  // for num_acc_stage (block-scaled rule: 1 if N == 256 else 2)
  bool block_scaled = true;       // dense kernels always use 2 accumulator stages
  int min_ab_stages = 2;          // fewer is an error (the seed asserts num_ab ≥ 2)
};

struct StageResult {
  bool ok = false;
  std::string error;           // set when !ok: a sentence, never an assert
  int num_acc_stage = 0;
  int num_ab_stage = 0;
  int num_c_stage = 0;
  int64_t capacity_for_solver = 0;  // smem_capacity − extra_bytes (seed) or smem_capacity
  int64_t solver_total = 0;    // what the solver believes one CTA uses:
                               // ab·num_ab + c·num_c + mbar_helpers + extra
};

// Python floor division (the solver's `//`), correct for negative numerators.
constexpr int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

StageResult compute_stages(const StageInputs& in);

}  // namespace pipesim::model
