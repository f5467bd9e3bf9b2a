#include "model/gemv_budget.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "model/text_table.hpp"

namespace pipesim::model {
namespace {

// "sm_90a" → 9, "sm_100a" → 10, "sm_120a" → 12.
int compute_major(std::string_view arch) {
  int n = 0;
  for (char c : arch.substr(std::min<size_t>(3, arch.size())))
    if (c >= '0' && c <= '9') n = n * 10 + (c - '0');
    else break;
  return n / 10;
}

// The kernel is compiled for these (kernels/gemv_nvfp4/run_device.sh, tests/test_kernel_resources.cpp).
bool kernel_built_for(std::string_view arch) { return arch == "sm_90a" || arch == "sm_100a"; }

GemvHints hints_for(const GemvBudgetConfig& c, int elem_bytes, int max_stages) {
  GemvHints h;
  h.vector_elem_bytes = elem_bytes;
  h.stage_a_bytes = c.stage_bytes;
  h.max_stages = max_stages;
  return h;
}

// The plan's layout with exactly `stages` stages of its stage size, whatever the capacity.
GemvPlan layout_with(const GemvShape& s, Capacity cap, const GemvBudgetConfig& c, int elem_bytes, int stages) {
  cap.smem_per_block = std::numeric_limits<int64_t>::max() / 4;
  return plan_gemv(s, cap, hints_for(c, elem_bytes, stages));
}

}  // namespace

std::string set_gemv_field(GemvBudgetConfig& cfg, std::string_view key, std::string_view value) {
  if (key == "gemv") {
    auto d = parse_dims(value);
    if (!d || d->size() != 3)
      return fmt::format("gemv: expected the shape MxKxL (rows, reduction length, batch), got '{}'", value);
    const int64_t m = (*d)[0], k = (*d)[1], l = (*d)[2];
    if (m < 1 || l < 1 || k < 1) return fmt::format("gemv: m, k and l must be at least 1, got '{}'", value);
    if (k % 64 != 0) return fmt::format("gemv: k must be a multiple of 64 (the kernel's 64-element steps), got {}", k);
    if (m > (int64_t{1} << 31) || k > (int64_t{1} << 31) || l > (int64_t{1} << 20))
      return fmt::format("gemv: shape too large, got '{}'", value);
    cfg.shape = {m, k, l};
    return {};
  }
  if (key == "arch") {
    GemmConfig scratch;
    if (std::string e = set_config_field(scratch, key, value); !e.empty()) return e;
    cfg.arch = scratch.arch;
    return {};
  }
  auto int_field = [&](auto& field, int64_t lo, int64_t hi, std::string_view what) -> std::string {
    if (value == "auto") {
      field = 0;
      return {};
    }
    auto v = parse_int(value);
    if (!v || *v < lo || *v > hi) return fmt::format("{}: expected {} in [{}, {}], got '{}'", key, what, lo, hi, value);
    field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
    return {};
  };
  if (key == "ab-stages") return int_field(cfg.stages, 2, 64, "auto or a stage count");
  if (key == "stage-bytes") {
    if (std::string e = int_field(cfg.stage_bytes, 512, int64_t{1} << 20, "A bytes per stage"); !e.empty()) return e;
    if (cfg.stage_bytes % 512 != 0)
      return fmt::format("stage-bytes: must be a multiple of 512 (the consumers' 512-byte steps), got {}", cfg.stage_bytes);
    return {};
  }
  if (key == "regs") return int_field(cfg.regs_per_thread, 0, 1024, "a register count");
  return fmt::format("'{}' does not apply to the GEMV (its settings: gemv, arch, ab-stages, stage-bytes, regs)", key);
}

bool GemvBudget::has(Severity s) const { return has_severity(findings, s); }

int GemvBudget::exit_code() const { return exit_code_of(bad_input, findings); }

GemvBudget check_gemv_budget(const GemvBudgetConfig& cfg, const Capacity* device) {
  GemvBudget b;
  b.config = cfg;
  auto add = [&](Severity s, std::string m) { b.findings.push_back({s, std::move(m)}); };
  const Arch* arch = find_arch(cfg.arch);
  if (!arch) {
    b.bad_input = true;
    add(Severity::error, fmt::format("arch: unknown '{}'", cfg.arch));
    return b;
  }
  b.arch_name = std::string(arch->name);
  if (arch->uncertain) b.arch_note = std::string(arch->uncertain_note);
  b.cap = device ? *device : arch->cap;
  b.device_capacity = device != nullptr;
  b.capacity = b.cap.smem_per_block;
  b.vector_elem_bytes = gemv_vector_elem_bytes(compute_major(arch->name));
  const GemvShape& s = cfg.shape;
  if (s.m < 1 || s.k < 1 || s.l < 1) {
    b.bad_input = true;
    add(Severity::error, "no GEMV shape: give it as --gemv MxKxL (or 'config gemv = M x K x L')");
    return b;
  }

  // The plan as the kernel runs it, or with the stage count the kernel was built with.
  b.plan = cfg.stages > 0 ? layout_with(s, b.cap, cfg, b.vector_elem_bytes, cfg.stages)
                          : plan_gemv(s, b.cap, hints_for(cfg, b.vector_elem_bytes, 0));
  if (!b.plan.ok) {
    b.bad_input = true;
    add(Severity::error, fmt::format("no plan for {}x{}x{} on {}: {}", s.m, s.k, s.l, b.arch_name, b.plan.why));
    return b;
  }
  const GemvPlan& p = b.plan;
  b.stage_tx_bytes = p.stage_a_bytes + p.stage_a_bytes / 8;
  b.vector_tx_bytes = s.k / 2 + s.k / 16;
  b.total = p.smem_bytes;
  b.headroom = b.capacity - b.total;
  b.percent = b.capacity > 0 ? 100.0 * static_cast<double>(b.total) / static_cast<double>(b.capacity) : 0;
  for (int st = 2; st <= 64; ++st) {
    GemvBudgetConfig c = cfg;
    c.stage_bytes = p.stage_a_bytes;
    const GemvPlan q = layout_with(s, b.cap, c, b.vector_elem_bytes, st);
    if (!q.ok || q.smem_bytes > b.capacity) break;
    b.max_stages = st;
  }

  // --- buffers, in the layout's order ---
  const int64_t mbarriers = 2 * int64_t{p.stages} + 4 + 2 * int64_t{p.claims_ahead} + 1;
  // Every buffer is 128-byte aligned already: what it holds is what it is given.
  auto add_buf = [&](std::string name, std::string what, int64_t per, int count) {
    b.buffers.push_back({std::move(name), std::move(what), per, count, per * count, per * count});
  };
  add_buf("barriers",
          fmt::format("{} mbarriers × 8 B, {} headers × 16 B, flag, {} done counter{}", mbarriers,
                      p.stages + p.claims_ahead, p.areas + 1, p.areas + 1 == 1 ? "" : "s"),
          p.off_ring, 1);
  add_buf("A + SFA", fmt::format("A {} B + SFA {} B (A/8 + 32 B of room), 128-aligned", p.stage_a_bytes, p.stage_sf_bytes),
          p.stage_stride, p.stages);
  add_buf("b decoded",
          fmt::format("k × {} B ({}) + k/16 × 4 B (sfb as f32)", b.vector_elem_bytes,
                      b.vector_elem_bytes == 1 ? "int8" : "f16"),
          p.b_buffer_bytes, p.b_buffers);
  add_buf("b raw", "k/2 + k/16 + 32 B (TMA target)", p.vraw_bytes, p.b_buffers);
  const int64_t rowsums = p.smem_bytes - 128 - p.off_rowsum;
  add_buf("row sums",
          p.areas > 0 ? fmt::format("{} warps × ({} + {} × {} rows) × 4 B", p.consumer_warps, p.area0_rows, p.areas,
                                    p.area1_rows)
                      : fmt::format("{} warps × {} rows × 4 B", p.consumer_warps, p.area0_rows),
          rowsums, 1);
  add_buf("alignment", "dynamic base rounded up to 128 B", 128, 1);

  // --- findings ---
  if (b.total > b.capacity)
    add(Severity::error, fmt::format("the launch would fail: {} B of shared memory requested, {} B available ({} "
                                     "stages of {} B; at most {} fit)",
                                     b.total, b.capacity, p.stages, p.stage_stride, b.max_stages));
  else if (cfg.stages == 0 && b.max_stages > p.stages)
    add(Severity::note, fmt::format("{} stages fit; the plan stops at {} (more measured no faster on the H100, "
                                    "docs/gemv.md)",
                                    b.max_stages, p.stages));
  if (cfg.stage_bytes > 0 && p.stage_a_bytes != cfg.stage_bytes)
    add(Severity::note, fmt::format("stage of {} A bytes asked, {} used: a stage is never larger than a CTA's rows",
                                    cfg.stage_bytes, p.stage_a_bytes));
  if (!kernel_built_for(b.arch_name))
    add(Severity::warning, fmt::format("kernels/gemv_nvfp4 is compiled for sm_90a and sm_100a, not {}", b.arch_name));

  RegisterConfig rc;
  rc.threads = p.threads;
  rc.regs_per_thread = cfg.regs_per_thread;
  rc.occupancy = 1;
  b.regs = register_findings(rc, b.cap, b.findings);
  b.occupancy = occupancy_limits(*arch, b.cap, p.threads, b.total, b.capacity, b.regs, 0, 1, b.findings);
  if (b.cap.sms > 0 && p.grid > int64_t{b.cap.sms} * std::max(b.occupancy.achieved, 1))
    add(Severity::note, fmt::format("{} CTAs on {} SMs × {} per SM: more than one wave", p.grid, b.cap.sms,
                                    b.occupancy.achieved));
  b.valid = true;
  return b;
}

std::string format_gemv_budget(const GemvBudget& b) {
  std::string out;
  const GemvShape& s = b.config.shape;
  if (!b.valid) {
    out += "budget: GEMV configuration rejected\n";
    for (const Finding& f : b.findings) out += fmt::format("  {}: {}\n", severity_name(f.severity), f.message);
    return out;
  }
  const GemvPlan& p = b.plan;
  out += fmt::format("budget: {} NVFP4 GEMV m {} k {} l {} (kernels/gemv_nvfp4, plan model/gemv_plan.cpp)\n",
                     b.arch_name, s.m, s.k, s.l);
  if (!b.arch_note.empty()) out += fmt::format("  uncertain: {}\n", b.arch_note);
  out += fmt::format("  launch: {} CTAs × {} threads (producer warp, {} consumer warps, scheduler warp)\n", p.grid,
                     p.threads, p.consumer_warps);
  out += fmt::format("  stages: {} of {} A bytes{}, {} vector slot{}; {} stages per CTA at most\n", p.stages,
                     p.stage_a_bytes, b.config.stages > 0 ? " (fixed)" : "", p.b_buffers, p.b_buffers == 1 ? "" : "s",
                     p.stages_per_cta);

  out += "\nshared memory (per CTA, all dynamic)\n";
  std::vector<std::vector<std::string>> rows{{"buffer", "derived from", "B/stage", "stages", "bytes", "% cap"}};
  for (const BufferLine& l : b.buffers)
    rows.push_back({l.name, l.what, std::to_string(l.bytes_per_stage), std::to_string(l.stages),
                    std::to_string(l.allocated), percent_of(l.allocated, b.capacity)});
  rows.push_back({"total", "128-byte aligned buffers", "", "", std::to_string(b.total), percent_of(b.total, b.capacity)});
  out += text_table(rows, {false, false, true, true, true, true});
  out += fmt::format("  capacity {} B per block{}; headroom {} B; {} stages of {} B would fit\n", b.capacity,
                     b.device_capacity ? " (GPU present)" : fmt::format(" ({} table)", b.arch_name), b.headroom,
                     b.max_stages, p.stage_stride);

  out += "\ntensor memory: none (the GEMV uses no tcgen05)\n";
  out += "\nregisters and occupancy\n";
  if (b.config.regs_per_thread > 0)
    out += fmt::format("  {} threads × {} registers (allocated {}) = {} per CTA of {} per SM\n", p.threads,
                       b.config.regs_per_thread, b.regs.regs_per_thread_alloc, b.regs.regs_per_cta, b.cap.regs_per_sm);
  else
    out += fmt::format("  {} threads; registers per thread not given (at most {} for one CTA per SM)\n", p.threads,
                       b.regs.max_regs_for_occupancy);
  const OccupancyLimits& o = b.occupancy;
  out += fmt::format("  CTAs per SM: threads {}, blocks {}, shared memory {}, registers {} → {}\n", o.by_threads,
                     o.by_blocks, o.by_smem, o.by_regs > 0 ? std::to_string(o.by_regs) : "?", o.achieved);
  if (!b.findings.empty()) out += "\n";
  for (const Finding& f : b.findings) out += fmt::format("{}: {}\n", severity_name(f.severity), f.message);
  return out;
}

}  // namespace pipesim::model
