// Budgets of a scenario: its `config` and `estimate` declarations (sim::BudgetDecls) run through the
// budget model (model/budget.hpp), and what the scenario itself declares — `launch smem`, each
// pipeline's `stages` — compared with the derived numbers. `pipesim check` turns the outcome into
// findings (smem_over_capacity, budget_mismatch, stages_lost); `pipesim budget FILE` prints it.
// docs/budget.md, "Scenarios", states the rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/budget.hpp"
#include "model/gemv_budget.hpp"
#include "sim/engine.hpp"
#include "sim/program.hpp"

namespace pipesim::verify {

// The solver buffer a pipeline holds, told by its kind and name: the one `tma -> umma` /
// `tma -> threads` pipeline not named lora* holds A/B (num_ab_stage), the one named lora* the LoRA
// operands, the `tma_store` pipeline C (num_c_stage), the `umma -> threads` one the accumulator.
// In a GEMV scenario the pipeline named vec* holds the vector slots, the other `tma -> threads` one
// the A + SFA stages (ab).
enum class BudgetPipe : uint8_t { ab, c, acc, lora, vec };

struct PipelineStages {
  std::string pipeline;      // the pipeline's name
  BudgetPipe holds = BudgetPipe::ab;
  std::string counter;       // "num_ab_stage", "num_c_stage", "num_acc_stage", "num_lora_stage"
  int64_t declared = 0;      // the pipeline's `stages`
  int64_t expected = 0;      // the solver's choice with the derived footprints, or the config's fixed count
  bool from_solver = true;   // false: the config fixes the count (ab_stages, epilogue_stages, ...)
  sim::SourceLoc loc;
};

struct ScenarioBudget {
  bool present = false;          // the scenario has a `config` line
  bool bad_input = false;        // the model rejects the configuration: `diagnostic` says why (exit 2)
  std::string diagnostic;
  model::GemmConfig config;      // config + kernel arch + launch cluster, cta_group, threads, regs + estimates
  model::BudgetReport report;    // check_budget(config): the estimates against the derived footprints
  model::BudgetReport derived;   // without the estimates: the solver's choice with the true numbers
  model::BudgetReport declared;  // with the scenario's pipeline stages fixed: what the kernel allocates
  // A `config gemv = M x K x L` scenario (the NVFP4 GEMV kernel): the plan's own choice, and the
  // layout with the scenario's ring stages (what the kernel as written allocates). `report`,
  // `derived` and `declared` stay empty then.
  std::optional<model::GemvBudget> gemv_derived, gemv_declared;
  int64_t launch_smem = 0;       // the launch's smem (0: not given)
  std::vector<PipelineStages> stages;
  // Fatal first. Sites are appended to kernel.sites (the config, estimate, launch, pipeline lines).
  std::vector<sim::Finding> findings;

  // 2: bad input or a fatal finding or a model error; 1: warnings; 0: all agree.
  int exit_code() const;
};

// Runs the budget checks of `k` (nothing when it has no `config`). `device`: the GPU's real limits
// instead of the architecture table's.
ScenarioBudget check_scenario_budget(sim::Kernel& k, const model::Capacity* device = nullptr);

// The "scenario against derived numbers" section of `pipesim budget FILE`, findings included.
std::string format_scenario_budget(const sim::Kernel& k, const ScenarioBudget& b);

// The same as JSON: {launch_smem, declared_total, capacity, pipelines[], estimates[], findings[]}.
nlohmann::json scenario_budget_to_json(const sim::Kernel& k, const ScenarioBudget& b);

}  // namespace pipesim::verify
