#include "verify/ptx_budget.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "model/arch.hpp"
#include "model/stages.hpp"

namespace pipesim::verify {
namespace {

// "full[0] (shared 0x10)" -> "full[0]".
std::string bare(const std::string& name) {
  const size_t p = name.rfind(" (shared ");
  return p == std::string::npos ? name : name.substr(0, p);
}

// The ring's barriers as one name: "full[0..3]", "mbarriers at dynamic shared +0x0..+0x18".
std::string ring_label(const ptx::TmaRing& r) {
  const std::string f = bare(r.first), l = bare(r.last);
  if (r.stages() == 1) return f;
  const size_t fb = f.rfind('['), lb = l.rfind('[');
  if (fb != std::string::npos && lb != std::string::npos && f.compare(0, fb, l, 0, lb) == 0 && f.back() == ']' && l.back() == ']')
    return f.substr(0, f.size() - 1) + ".." + l.substr(lb + 1);
  const size_t fp = f.rfind('+'), lp = l.rfind('+');
  if (fp != std::string::npos && lp != std::string::npos && f.compare(0, fp, l, 0, lp) == 0) {
    std::string head = f.substr(0, fp);
    if (head.rfind("mbarrier at ", 0) == 0) head.insert(8, "s");
    return head + f.substr(fp) + ".." + l.substr(lp);
  }
  return f + " .. " + l;
}

std::string hex(uint64_t v) { return fmt::format("0x{:x}", v); }

std::string plural(int64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string stage_note(const ptx::TmaRing& r, bool pair) {
  std::string s = fmt::format("a stage is {} B of TMA copies in one CTA's shared memory (they land in {}..{}, {} B over {})",
                              r.stage_bytes, hex(r.buffer_lo), hex(r.buffer_hi), r.buffer_bytes, plural(r.stages(), "stage", "stages"));
  if (r.expected_bytes > 0) {
    s += fmt::format("; each phase expects {} B", r.expected_bytes);
    if (pair && r.expected_bytes == 2 * r.stage_bytes) s += " (both CTAs of the pair)";
  }
  return s;
}

}  // namespace

PtxBudget ptx_budget(const sim::Kernel& k, int64_t smem_static, int64_t smem_dynamic, const ptx::RunUse& use,
                     const sim::RunResult& result) {
  PtxBudget b;
  b.smem_static = smem_static;
  b.smem_dynamic = smem_dynamic;
  b.smem_declared = smem_static + smem_dynamic;
  b.smem_touched = static_cast<int64_t>(use.smem_touched);
  // The CTAs an SM holds at once: the launch's limit (threads, shared memory, registers), but no more
  // than the grid gives each SM (a persistent grid of one CTA per SM may use the whole SM).
  const int64_t per_sm_from_grid = (k.launch.ctas + k.arch->cap.sms - 1) / std::max(1, k.arch->cap.sms);
  b.ctas_per_sm = std::max<int64_t>(1, std::min<int64_t>(k.launch.ctas_per_sm, per_sm_from_grid));
  b.capacity = model::smem_per_cta(*k.arch, b.ctas_per_sm);
  b.left = std::max<int64_t>(0, b.capacity - b.smem_declared);
  b.rings = ptx::tma_rings(use, result);
  b.stores = ptx::store_ring(use);
  b.tmem_columns = use.tmem_columns;
  b.tmem_capacity = k.arch->cap.tmem_columns;
  b.tmem_cta_group2 = use.tmem_cta_group2;
  for (const ptx::TmaRing& r : b.rings) b.more_stages.push_back(r.stage_bytes > 0 ? b.left / r.stage_bytes : 0);

  // The mainloop ring turns over most often; the solver gives it the room the store buffers above
  // CUTLASS's two do not need.
  size_t main = b.rings.size();
  for (size_t i = 0; i < b.rings.size(); ++i) {
    if (b.rings[i].stage_bytes <= 0) continue;
    if (main == b.rings.size() || std::pair(b.rings[i].phases, b.rings[i].stage_bytes) > std::pair(b.rings[main].phases, b.rings[main].stage_bytes))
      main = i;
  }
  if (main < b.rings.size()) {
    const ptx::TmaRing& r = b.rings[main];
    const int buffers = b.stores ? b.stores->buffers : 0;
    const int64_t c_bytes = b.stores ? b.stores->bytes : 0;
    model::StageInputs in;
    in.flavor = model::SolverFlavor::seed;  // the capacity less everything that is not the ring or C
    in.smem_capacity = b.capacity;
    in.ab_bytes_per_stage = r.stage_bytes;
    in.c_bytes_per_stage = c_bytes;
    in.mbar_helpers_bytes = 0;  // the kernel's barriers are in extra_bytes
    in.initial_c_stages = std::min(buffers, 2);
    in.extra_bytes = b.smem_declared - r.stage_bytes * r.stages() - c_bytes * buffers;
    in.block_scaled = false;
    in.min_ab_stages = 1;
    if (const model::StageResult s = model::compute_stages(in); s.ok && in.extra_bytes >= 0)
      b.solver = PtxBudget::Solver{main, s.num_ab_stage, buffers > 0 ? s.num_c_stage : 0, in.extra_bytes};
  }

  const std::string smem_note =
      fmt::format("shared memory: {} B declared ({} static + {} dynamic), {} B touched, of {} B a CTA may hold at {} per SM on {}",
                  b.smem_declared, b.smem_static, b.smem_dynamic, b.smem_touched, b.capacity, plural(b.ctas_per_sm, "CTA", "CTAs"),
                  k.arch->name);
  for (size_t i = 0; i < b.rings.size(); ++i) {
    const ptx::TmaRing& r = b.rings[i];
    const int64_t more = b.more_stages[i];
    if (more < 1) continue;
    sim::Finding f;
    f.kind = "stages_lost";
    f.fatal = false;
    f.site = r.site;
    f.message = fmt::format("ring {} has {} of {} B; {} more {} in the {} B left", ring_label(r), plural(r.stages(), "stage", "stages"),
                            r.stage_bytes, more, more == 1 ? "fits" : "fit", b.left);
    f.notes.push_back(stage_note(r, result.cta_group == 2));
    f.notes.push_back(smem_note);
    if (b.solver && b.solver->ring == i && b.solver->num_ab_stage > r.stages()) {
      const PtxBudget::Solver& s = *b.solver;
      std::string note = fmt::format("the stage solver on these footprints (A/B stages first, then the store buffers, at least 2; "
                                     "{} B of other buffers): num_ab_stage {} → {}: {} lost",
                                     s.other_bytes, r.stages(), s.num_ab_stage, plural(s.num_ab_stage - r.stages(), "stage", "stages"));
      if (b.stores && b.stores->buffers != s.num_c_stage)
        note += fmt::format("; num_c_stage {} → {} (the kernel's {} store buffers of {} B)", b.stores->buffers, s.num_c_stage,
                            b.stores->buffers, b.stores->bytes);
      f.notes.push_back(note);
    }
    b.findings.push_back(std::move(f));
  }
  return b;
}

std::string format_ptx_budget(const PtxBudget& b) {
  std::string out = fmt::format("budget: shared memory {} B declared ({} static + {} dynamic), {} B touched, of {} B a CTA may hold "
                                "at {} per SM: {} B left\n",
                                b.smem_declared, b.smem_static, b.smem_dynamic, b.smem_touched, b.capacity,
                                plural(b.ctas_per_sm, "CTA", "CTAs"), b.left);
  for (size_t i = 0; i < b.rings.size(); ++i) {
    const ptx::TmaRing& r = b.rings[i];
    out += fmt::format("  TMA ring {}: {} of {} B per CTA", ring_label(r), plural(r.stages(), "stage", "stages"), r.stage_bytes);
    if (r.expected_bytes > 0 && r.expected_bytes != r.stage_bytes) out += fmt::format(" ({} B expected per phase)", r.expected_bytes);
    out += fmt::format(", copies land in {}..{}", hex(r.buffer_lo), hex(r.buffer_hi));
    if (b.more_stages[i] > 0) out += fmt::format("; {} more {}", b.more_stages[i], b.more_stages[i] == 1 ? "fits" : "fit");
    out += "\n";
  }
  if (b.stores)
    out += fmt::format("  store buffers: {} of {} B (bulk store sources {}..{})\n", b.stores->buffers, b.stores->bytes, hex(b.stores->lo),
                       hex(b.stores->hi));
  if (b.solver && b.solver->ring < b.rings.size()) {
    out += fmt::format("  stage solver: num_ab_stage {} for ring {}", b.solver->num_ab_stage, ring_label(b.rings[b.solver->ring]));
    if (b.stores) out += fmt::format(", num_c_stage {}", b.solver->num_c_stage);
    out += "\n";
  }
  if (b.tmem_columns > 0)
    out += fmt::format("  TMEM: {} of {} columns per CTA{}\n", b.tmem_columns, b.tmem_capacity, b.tmem_cta_group2 ? " (cta_group::2)" : "");
  return out;
}

nlohmann::json ptx_budget_json(const sim::Kernel& k, const PtxBudget& b) {
  using nlohmann::json;
  json rings = json::array();
  for (size_t i = 0; i < b.rings.size(); ++i) {
    const ptx::TmaRing& r = b.rings[i];
    const sim::Site* site = r.site < k.sites.size() ? &k.sites[r.site] : nullptr;
    rings.push_back(json{{"barriers", ring_label(r)},
                         {"offsets", r.barriers},
                         {"stages", r.stages()},
                         {"stride", r.stride},
                         {"init_count", r.init_count},
                         {"stage_bytes", r.stage_bytes},
                         {"expected_bytes", r.expected_bytes},
                         {"phases", r.phases},
                         {"buffer", json{{"lo", r.buffer_lo}, {"hi", r.buffer_hi}, {"bytes", r.buffer_bytes}}},
                         {"more_stages", b.more_stages[i]},
                         {"line", site ? json(site->loc.line) : json(nullptr)},
                         {"source", site && !site->origin.empty() ? json(site->origin) : json(nullptr)}});
  }
  json stores = nullptr;
  if (b.stores)
    stores = json{{"buffers", b.stores->buffers}, {"bytes", b.stores->bytes}, {"stride", b.stores->stride}, {"lo", b.stores->lo}, {"hi", b.stores->hi}};
  json solver = nullptr;
  if (b.solver)
    solver = json{{"ring", b.solver->ring}, {"num_ab_stage", b.solver->num_ab_stage}, {"num_c_stage", b.solver->num_c_stage},
                  {"other_bytes", b.solver->other_bytes}};
  json tmem = nullptr;
  if (b.tmem_columns > 0) tmem = json{{"columns", b.tmem_columns}, {"capacity", b.tmem_capacity}, {"cta_group", b.tmem_cta_group2 ? 2 : 1}};
  return json{{"smem", json{{"static", b.smem_static}, {"dynamic", b.smem_dynamic}, {"declared", b.smem_declared}, {"touched", b.smem_touched},
                            {"capacity", b.capacity}, {"ctas_per_sm", b.ctas_per_sm}, {"left", b.left}}},
              {"rings", std::move(rings)},
              {"store_buffers", std::move(stores)},
              {"solver", std::move(solver)},
              {"tmem", std::move(tmem)}};
}

}  // namespace pipesim::verify
