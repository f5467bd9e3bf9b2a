// Budget of the NVFP4 GEMV kernel (kernels/gemv_nvfp4/) for one shape on one architecture: the
// shared-memory layout model/gemv_plan.cpp gives the kernel, buffer by buffer, against the per-block
// limit; how many stages of the plan's size would fit; registers and CTAs per SM. `pipesim budget
// --gemv MxKxL` prints it; a scenario with `config gemv = M x K x L` is checked against it
// (verify/scenario_budget.hpp). docs/budget.md, "The GEMV".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/budget.hpp"
#include "model/gemv_plan.hpp"

namespace pipesim::model {

struct GemvBudgetConfig {
  GemvShape shape;
  std::string arch = "sm_100a";
  int stages = 0;            // A + SFA ring stages the kernel is built with; 0: the plan's choice
  int64_t stage_bytes = 0;   // A bytes of one stage (multiple of 512); 0: the plan's choice
  int regs_per_thread = 0;   // the compiler's count; 0: unknown
};

// Sets one field from its `pipesim budget` flag name ("gemv", "arch", "ab-stages", "stage-bytes",
// "regs"). Returns an error sentence, or "" when accepted.
std::string set_gemv_field(GemvBudgetConfig& cfg, std::string_view key, std::string_view value);

struct GemvBudget {
  GemvBudgetConfig config;
  std::string arch_name;
  std::string arch_note;        // the table row's uncertainty, if any
  Capacity cap;
  bool device_capacity = false; // limits came from the GPU present, not the table
  bool valid = false;           // the configuration could be evaluated
  bool bad_input = false;       // invalid shape or configuration (exit 2)
  GemvPlan plan;                // the layout the kernel uses (stages / stage bytes fixed when given)
  int max_stages = 0;           // the most stages of plan.stage_a_bytes that fit the per-block limit
  int vector_elem_bytes = 0;    // decoded b: 1 (int8, sm_90a) or 2 (f16, sm_100a and later)
  int64_t stage_tx_bytes = 0;   // a full stage's transaction: A bytes + one scale byte per 8
  int64_t vector_tx_bytes = 0;  // one batch's b and sfb: k/2 + k/16
  std::vector<BufferLine> buffers;  // `allocated`: the bytes the layout gives it (128-byte aligned)
  int64_t total = 0;            // dynamic shared memory the launch requests
  int64_t capacity = 0;         // per-block limit
  int64_t headroom = 0;
  double percent = 0;
  RegisterReport regs;
  OccupancyLimits occupancy;
  std::vector<Finding> findings;

  bool has(Severity s) const;
  // 0: fits; 1: warnings; 2: bad input or a launch that would fail.
  int exit_code() const;
};

GemvBudget check_gemv_budget(const GemvBudgetConfig& cfg, const Capacity* device = nullptr);

std::string format_gemv_budget(const GemvBudget& b);

}  // namespace pipesim::model
