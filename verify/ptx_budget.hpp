// Budgets from a PTX kernel's own run (docs/ptx.md, "Budget from the run"): the shared memory it
// declares and touches against the architecture's capacity, its TMA rings and store buffers as the
// run used them (verify/ptx/run_use.hpp infers them), its TMEM, and the stage solver on those
// footprints. A ring with room for one more stage in what is left is `stages_lost` (a warning, the
// rule the scenario budgets use), so a hand-written estimate that cost stages is found in the kernel
// that has it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/engine.hpp"
#include "sim/program.hpp"
#include "verify/ptx/run_use.hpp"

namespace pipesim::verify {

struct PtxBudget {
  int64_t smem_static = 0, smem_dynamic = 0;
  int64_t smem_declared = 0;     // static + dynamic: what the launch requests
  int64_t smem_touched = 0;      // the highest byte any warp used, + 1
  int64_t ctas_per_sm = 1;       // CTAs an SM holds at once: the launch's limit, at most the grid's CTAs per SM
  int64_t capacity = 0;          // shared memory one CTA may hold at that residency (model::smem_per_cta)
  int64_t left = 0;              // capacity − declared
  std::vector<ptx::TmaRing> rings;
  std::vector<int64_t> more_stages;   // per ring: stages of it that fit in `left`
  std::optional<ptx::StoreRing> stores;
  int64_t tmem_columns = 0;      // the most one CTA held
  int tmem_capacity = 0;
  bool tmem_cta_group2 = false;
  // The stage solver (model/stages.hpp, CUTLASS's rule: A/B stages first, then at least two store
  // buffers take the rest) on the mainloop ring — the one completing the most phases — with the
  // store buffers and everything else the kernel declares as fixed bytes.
  struct Solver {
    size_t ring = 0;
    int num_ab_stage = 0, num_c_stage = 0;
    int64_t other_bytes = 0;     // declared − the ring's stages − the store buffers
  };
  std::optional<Solver> solver;
  std::vector<sim::Finding> findings;  // stages_lost, at each ring's first mbarrier.init
};

// The budget of a PTX kernel after its run: `smem_static` / `smem_dynamic` from its launch.
PtxBudget ptx_budget(const sim::Kernel& k, int64_t smem_static, int64_t smem_dynamic, const ptx::RunUse& use,
                     const sim::RunResult& result);

// The report's "budget:" section.
std::string format_ptx_budget(const PtxBudget& b);

// `--json`'s "budget" object (docs/json-report.md).
nlohmann::json ptx_budget_json(const sim::Kernel& k, const PtxBudget& b);

}  // namespace pipesim::verify
