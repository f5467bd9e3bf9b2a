// Register budget: threads × registers per thread against the SM's register file, `setmaxnreg`
// redistribution by warpgroup, and the occupancy registers allow.
#pragma once

#include <string>
#include <vector>

#include "model/arch.hpp"

namespace pipesim::model {

// Registers are allocated per warp in units of 256 (CUDA occupancy calculator: "register allocation
// unit size 256, granularity warp"), i.e. registers per thread round up to a multiple of 8.
constexpr int kRegAllocUnitPerWarp = 256;
// setmaxnreg (PTX ISA, sm_90a+): the new count is in [24, 256] and a multiple of 8; all warps of a
// warpgroup (4 warps, 128 threads) execute it together.
constexpr int kSetmaxnregMin = 24;
constexpr int kSetmaxnregMax = 256;
constexpr int kWarpgroupThreads = 128;

struct RegisterConfig {
  int threads = 0;              // threads per CTA
  int regs_per_thread = 0;      // at launch (compiler's count or __launch_bounds__ cap); 0: unknown
  std::vector<int> setmaxnreg;  // per warpgroup after redistribution; empty: not used
  int occupancy = 1;            // CTAs per SM the configuration wants
};

struct RegisterReport {
  bool ok = true;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  int warps = 0;
  int regs_per_thread_alloc = 0;  // rounded to the allocation unit
  long regs_per_cta = 0;          // allocated at launch
  long regs_after_setmaxnreg = 0; // Σ warpgroup threads × setmaxnreg (0 when not used)
  int max_ctas_by_regs = 0;       // 0 when regs_per_thread unknown
  int max_regs_for_occupancy = 0; // the most registers per thread that still allow `occupancy`
};

RegisterReport check_registers(const RegisterConfig& cfg, const Capacity& cap);

}  // namespace pipesim::model
