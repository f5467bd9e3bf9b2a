#include "model/registers.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace pipesim::model {

RegisterReport check_registers(const RegisterConfig& cfg, const Capacity& cap) {
  RegisterReport r;
  auto error = [&](std::string s) {
    r.ok = false;
    r.errors.push_back(std::move(s));
  };
  if (cfg.threads <= 0 || cfg.threads % 32 != 0) {
    error(fmt::format("threads per CTA must be a positive multiple of 32, got {}", cfg.threads));
    return r;
  }
  if (cfg.threads > cap.threads_per_block) {
    error(fmt::format("{} threads per CTA exceed the limit of {}", cfg.threads,
                      cap.threads_per_block));
    return r;
  }
  r.warps = cfg.threads / 32;
  const int occ = std::max(cfg.occupancy, 1);
  // Largest R with occ · warps · roundup(32·R, 256) ≤ regs_per_sm, capped at the per-thread limit.
  {
    const long per_warp = cap.regs_per_sm / (long{occ} * r.warps);
    const long units = per_warp / kRegAllocUnitPerWarp;
    r.max_regs_for_occupancy =
        static_cast<int>(std::min<long>(units * kRegAllocUnitPerWarp / 32, cap.regs_per_thread_max));
  }
  if (cfg.regs_per_thread > 0) {
    if (cfg.regs_per_thread > cap.regs_per_thread_max)
      error(fmt::format("{} registers per thread exceed the limit of {}", cfg.regs_per_thread,
                        cap.regs_per_thread_max));
    const long per_warp =
        (long{cfg.regs_per_thread} * 32 + kRegAllocUnitPerWarp - 1) / kRegAllocUnitPerWarp *
        kRegAllocUnitPerWarp;
    r.regs_per_thread_alloc = static_cast<int>(per_warp / 32);
    r.regs_per_cta = per_warp * r.warps;
    // One CTA's registers must fit the SM's file (64K, the per-block limit is the same).
    if (r.regs_per_cta > cap.regs_per_sm)
      error(fmt::format("the launch would fail: {} registers per CTA ({} threads × {}), {} available",
                        r.regs_per_cta, cfg.threads, r.regs_per_thread_alloc, cap.regs_per_sm));
    r.max_ctas_by_regs = r.regs_per_cta > 0 ? static_cast<int>(cap.regs_per_sm / r.regs_per_cta) : 0;
    if (r.max_ctas_by_regs < occ && r.regs_per_cta <= cap.regs_per_sm)
      r.warnings.push_back(fmt::format(
          "registers allow {} CTA(s) per SM, the configuration wants {}: {} threads × {} registers = "
          "{} per CTA (at most {} registers per thread for occupancy {})",
          r.max_ctas_by_regs, occ, cfg.threads, r.regs_per_thread_alloc, r.regs_per_cta,
          r.max_regs_for_occupancy, occ));
  }
  if (!cfg.setmaxnreg.empty()) {
    if (cfg.threads % kWarpgroupThreads != 0) {
      error(fmt::format("setmaxnreg works per warpgroup: {} threads are not whole warpgroups of 128",
                        cfg.threads));
      return r;
    }
    const int groups = cfg.threads / kWarpgroupThreads;
    if (static_cast<int>(cfg.setmaxnreg.size()) != groups) {
      error(fmt::format("setmaxnreg lists {} warpgroups, the CTA has {}", cfg.setmaxnreg.size(),
                        groups));
      return r;
    }
    long total = 0;
    for (size_t i = 0; i < cfg.setmaxnreg.size(); ++i) {
      const int v = cfg.setmaxnreg[i];
      if (v < kSetmaxnregMin || v > kSetmaxnregMax || v % 8 != 0)
        error(fmt::format("setmaxnreg {} for warpgroup {}: must be a multiple of 8 in [{}, {}]", v,
                          i, kSetmaxnregMin, kSetmaxnregMax));
      total += long{v} * kWarpgroupThreads;
    }
    r.regs_after_setmaxnreg = total;
    // An increase blocks until other warpgroups of the CTA released enough: the redistributed total
    // must fit in what the CTA was given at launch, else the increasing warps wait forever.
    if (r.regs_per_cta > 0 && total > r.regs_per_cta)
      error(fmt::format(
          "setmaxnreg asks for {} registers in total, the CTA holds {} ({} threads × {}): "
          "the increasing warpgroup would wait forever",
          total, r.regs_per_cta, cfg.threads, r.regs_per_thread_alloc));
    if (total * occ > cap.regs_per_sm)
      error(fmt::format("setmaxnreg totals {} registers per CTA; {} CTA(s) need {} of {} per SM",
                        total, occ, total * occ, cap.regs_per_sm));
  }
  return r;
}

}  // namespace pipesim::model
