// `pipesim budget`: the budget checker (model/budget.hpp) as a command.
//
//   pipesim budget --arch sm_100a --tile 256x128x256 --cluster 2 --cta-group 2 --ab nvfp4 --c f16
//       --sf e4m3 --sf-vec 16 --lora-rank 128 --lora-stages 2 --epilogue-stages auto --occupancy 1
//       [--json] [--hand LU=32768,LA=32768 ...]
//   pipesim budget --gemv 7168x2048x4 --arch sm_90a [--ab-stages N] [--stage-bytes B] [--regs R]
//       (the NVFP4 GEMV kernel, model/gemv_budget.hpp)
//
// Exit codes: 0 the configuration fits and every hand-written count matches; 1 warnings (a hand-written
// count disagrees with the derived footprint, stages lost, occupancy not reached, TMEM contention);
// 2 bad input, or a configuration that cannot launch or run (over capacity, < 2 K stages, TMEM or
// registers exceeded). docs/budget.md has the rules.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "model/budget.hpp"
#include "model/gemv_budget.hpp"

namespace pipesim::verify {

// Registers the `budget` subcommand on `app`; when it is parsed, `action` is set to the function that
// runs it and returns the exit code.
CLI::App* add_budget_command(CLI::App& app, std::function<int()>& action);

// The report as JSON (what --json prints).
nlohmann::json budget_to_json(const model::BudgetReport& r);

// The GEMV kernel's budget as JSON: {exit_code, ok, valid, kernel: "gemv_nvfp4", arch, shape, launch,
// stages, smem{buffers, total, capacity, headroom, percent, max_stages}, registers, occupancy, findings}.
nlohmann::json gemv_budget_to_json(const model::GemvBudget& b);

}  // namespace pipesim::verify
