#include "verify/scenario_budget.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "verify/parser.hpp"

namespace pipesim::verify {
namespace {

const char* counter_of(BudgetPipe p) {
  switch (p) {
    case BudgetPipe::ab: return "num_ab_stage";
    case BudgetPipe::c: return "num_c_stage";
    case BudgetPipe::acc: return "num_acc_stage";
    case BudgetPipe::lora: return "num_lora_stage";
    case BudgetPipe::vec: return "vector slots";
  }
  return "?";
}

uint32_t add_site(sim::Kernel& k, sim::SourceLoc loc, std::string what) {
  k.sites.push_back(sim::Site{loc, std::move(what), {}});
  return static_cast<uint32_t>(k.sites.size() - 1);
}

sim::Finding finding(sim::Kernel& k, std::string_view rule, bool fatal, sim::SourceLoc loc, std::string what,
                     std::string message, std::vector<std::string> notes = {}) {
  sim::Finding f;
  f.kind = std::string(rule);
  f.fatal = fatal;
  f.site = add_site(k, loc, std::move(what));
  f.message = std::move(message);
  f.notes = std::move(notes);
  return f;
}

bool lora_name(const std::string& n) { return n.rfind("lora", 0) == 0 || n.rfind("LORA", 0) == 0; }
bool vec_name(const std::string& n) { return n.rfind("vec", 0) == 0 || n.rfind("VEC", 0) == 0; }

std::string plural(int64_t n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

std::string buffers_note(const std::vector<model::BufferLine>& buffers) {
  std::string s = "buffers:";
  for (const model::BufferLine& b : buffers)
    s += fmt::format(" {} {}{}", b.name, b.allocated, b.stages > 1 ? fmt::format(" ({} × {})", b.stages, b.bytes_per_stage) : "");
  return s;
}

std::string loc_text(const sim::Kernel& k, sim::SourceLoc l) { return fmt::format("{}:{}:{}", k.file, l.line, l.col); }

bool gemv_config(const sim::BudgetDecls& d) {
  return std::any_of(d.config.begin(), d.config.end(), [](const sim::BudgetDecls::Setting& s) { return s.key == "gemv"; });
}

// `config gemv = M x K x L`: the scenario against the GEMV kernel's plan (model/gemv_budget.hpp).
void check_gemv_scenario(sim::Kernel& k, const model::Capacity* device, ScenarioBudget& b) {
  const sim::BudgetDecls& d = k.budget;
  model::GemvBudgetConfig cfg;
  cfg.arch = std::string(k.arch->name);
  if (k.launch.regs > 0) cfg.regs_per_thread = static_cast<int>(k.launch.regs);
  for (const sim::BudgetDecls::Setting& s : d.config)
    if (std::string e = model::set_gemv_field(cfg, s.key, s.value); !e.empty()) {
      b.bad_input = true;
      b.diagnostic = render_diagnostic(k.file, k.lines, s.loc, "error", "config: " + e);
      return;
    }
  b.gemv_derived = model::check_gemv_budget(cfg, device);
  if (!b.gemv_derived->valid) {
    std::string why = "the configuration is not valid";
    for (const model::Finding& f : b.gemv_derived->findings)
      if (f.severity == model::Severity::error) why = f.message;
    b.bad_input = true;
    b.diagnostic = render_diagnostic(k.file, k.lines, d.config_loc, "error", "config: " + why, {}, 6);
    return;
  }
  const model::GemvPlan& plan = b.gemv_derived->plan;

  const sim::PipelineDecl* ring = nullptr;
  const sim::PipelineDecl* vec = nullptr;
  std::vector<sim::Finding> fatal, warn;
  for (const sim::PipelineDecl& p : k.pipelines) {
    if (p.kind != sim::PipelineKind::TmaAsync) continue;
    const sim::PipelineDecl*& slot = vec_name(p.name) ? vec : ring;
    if (slot)
      warn.push_back(finding(k, "budget_mismatch", false, p.loc, "pipeline " + p.name,
                             fmt::format("pipeline {}: a GEMV has one A + SFA ring and one vector pipeline (named vec*); "
                                         "{} already holds this one's part",
                                         p.name, slot->name)));
    else
      slot = &p;
  }
  model::GemvBudgetConfig fixed = cfg;
  if (ring) fixed.stages = static_cast<int>(std::clamp<int64_t>(ring->stages, 2, 64));
  b.gemv_declared = model::check_gemv_budget(fixed, device);
  const model::GemvBudget& D = *b.gemv_declared;
  b.launch_smem = k.launch.smem;

  auto bind = [&](const sim::PipelineDecl* p, BudgetPipe what, int64_t expected) {
    if (!p) return;
    PipelineStages s;
    s.pipeline = p->name;
    s.holds = what;
    s.counter = counter_of(what);
    s.declared = p->stages;
    s.expected = expected;
    s.from_solver = what == BudgetPipe::ab && cfg.stages == 0;
    s.loc = p->loc;
    b.stages.push_back(s);
  };
  bind(ring, BudgetPipe::ab, plan.stages);
  bind(vec, BudgetPipe::vec, plan.b_buffers);

  if (D.valid && D.total > D.capacity)
    fatal.push_back(finding(k, "smem_over_capacity", true, d.launch_loc, "launch",
                            fmt::format("the launch would fail: {} B requested, {} B available{}", D.total, D.capacity,
                                        D.device_capacity ? " on the GPU present" : fmt::format(" on {}", D.arch_name)),
                            {buffers_note(D.buffers), fmt::format("with pipeline {} stages = {}; at most {} fit",
                                                               ring ? ring->name : "?", D.plan.stages, D.max_stages)}));
  for (const model::Finding& f : D.findings)
    if (f.severity == model::Severity::error && f.message.rfind("the launch would fail", 0) != 0)
      warn.push_back(finding(k, "budget_mismatch", false, d.config_loc, "config", "budget: " + f.message));

  // --- the launch against the plan ---
  auto launch_field = [&](const char* what, int64_t declared, int64_t expected, const std::string& why) {
    if (declared != expected)
      warn.push_back(finding(k, "budget_mismatch", false, d.launch_loc, "launch",
                             fmt::format("launch {} = {}, but the kernel launches {} ({})", what, declared, expected, why)));
  };
  launch_field("ctas", k.launch.ctas, plan.grid, fmt::format("one CTA per SM, {} SMs", D.cap.sms));
  launch_field("threads", k.launch.threads, plan.threads,
               fmt::format("producer warp, {} consumer warps, scheduler warp", plan.consumer_warps));
  if (b.launch_smem > 0 && b.launch_smem != D.total)
    warn.push_back(finding(k, "budget_mismatch", false, d.launch_loc, "launch",
                           fmt::format("launch smem = {} B, but the kernel's layout with these stages is {} B",
                                       b.launch_smem, D.total),
                           {buffers_note(D.buffers)}));

  // --- the pipelines against the plan ---
  if (!ring)
    warn.push_back(finding(k, "budget_mismatch", false, d.config_loc, "config",
                           "no `tma -> threads` pipeline holds the A + SFA stages the GEMV streams"));
  if (ring && ring->tx != b.gemv_derived->stage_tx_bytes)
    warn.push_back(finding(k, "budget_mismatch", false, ring->loc, "pipeline " + ring->name,
                           fmt::format("pipeline {}: tx = {} B, but a full stage carries {} B ({} A + {} SFA, one scale "
                                       "byte per 8 A bytes)",
                                       ring->name, ring->tx, b.gemv_derived->stage_tx_bytes,
                                       plan.stage_a_bytes, plan.stage_a_bytes / 8)));
  if (vec && vec->tx != D.vector_tx_bytes)
    warn.push_back(finding(k, "budget_mismatch", false, vec->loc, "pipeline " + vec->name,
                           fmt::format("pipeline {}: tx = {} B, but one batch's b and sfb are {} B (k/2 + k/16)",
                                       vec->name, vec->tx, D.vector_tx_bytes)));
  for (const PipelineStages& s : b.stages) {
    if (s.declared == s.expected) continue;
    if (s.holds == BudgetPipe::ab && s.from_solver && s.declared < s.expected)
      warn.push_back(finding(k, "stages_lost", false, s.loc, "pipeline " + s.pipeline,
                             fmt::format("pipeline {}: stages = {}, but the plan streams through {}: {} lost", s.pipeline,
                                         s.declared, s.expected, plural(s.expected - s.declared, "stage"))));
    else
      warn.push_back(finding(k, "budget_mismatch", false, s.loc, "pipeline " + s.pipeline,
                             s.holds == BudgetPipe::vec
                                 ? fmt::format("pipeline {}: stages = {}, but the kernel has {} vector slot{} (2 when "
                                               "a CTA's rows can cross a batch edge, l > 1)",
                                               s.pipeline, s.declared, s.expected, s.expected == 1 ? "" : "s")
                                 : fmt::format("pipeline {}: stages = {}, but the kernel is built with {}{}", s.pipeline,
                                               s.declared, s.expected, s.from_solver ? " (the plan's count)" : "")));
  }
  b.findings = std::move(fatal);
  for (sim::Finding& f : warn) b.findings.push_back(std::move(f));
}

// "launch smem = N B; WHAT M B (agree)" (WHAT ends in its verb) and the capacity line of a scenario's budget section.
std::string smem_lines(int64_t launch_smem, std::string_view what, int64_t total, int64_t capacity,
                       std::string_view limit_from) {
  std::string out =
      launch_smem > 0
          ? fmt::format("  launch smem = {} B; {} {} B{}\n", launch_smem, what, total,
                        launch_smem == total ? " (agree)" : "")
          : fmt::format("  launch smem not given; {} {} B\n", what, total);
  return out + fmt::format("  capacity {} B per block ({}); {}\n", capacity, limit_from,
                           total > capacity ? fmt::format("over by {} B", total - capacity)
                                            : fmt::format("headroom {} B", capacity - total));
}

std::string findings_text(const sim::Kernel& k, const std::vector<sim::Finding>& findings) {
  std::string out;
  if (!findings.empty()) out += "\n";
  for (const sim::Finding& f : findings) {
    const sim::SourceLoc l = f.site < k.sites.size() ? k.sites[f.site].loc : sim::SourceLoc{};
    out += fmt::format("{}: {}: [{}] {}\n", loc_text(k, l), f.fatal ? "error" : "warning", f.kind, f.message);
    for (const std::string& n : f.notes) out += "  note: " + n + "\n";
  }
  return out;
}

std::string format_gemv_scenario(const sim::Kernel& k, const ScenarioBudget& b) {
  const model::GemvBudget& D = *b.gemv_declared;
  const model::GemvPlan& plan = b.gemv_derived->plan;
  auto agree = [](bool ok) { return ok ? " (agree)" : " (differ)"; };
  std::string out = fmt::format("\nscenario {} (kernel {}) against the GEMV kernel's plan\n", k.file, k.name);
  out += fmt::format("  launch ctas = {}, threads = {}; the kernel launches {} × {}{}\n", k.launch.ctas, k.launch.threads,
                     plan.grid, plan.threads, agree(k.launch.ctas == plan.grid && k.launch.threads == plan.threads));
  out += smem_lines(b.launch_smem, "the layout with these stages needs", D.total, D.capacity,
                    D.device_capacity ? "GPU present" : D.arch_name);
  for (const PipelineStages& s : b.stages)
    out += fmt::format("  pipeline {}: stages = {}; {} {} = {}{}\n", s.pipeline, s.declared,
                       s.holds == BudgetPipe::vec ? "kernel:" : s.from_solver ? "plan:" : "config:", s.counter,
                       s.expected, agree(s.declared == s.expected));
  return out + findings_text(k, b.findings);
}

}  // namespace

int ScenarioBudget::exit_code() const {
  if (!present) return 0;
  if (bad_input) return 2;
  int code = std::max({report.exit_code(), declared.exit_code()});
  if (gemv_declared) code = std::max(code, gemv_declared->exit_code());
  for (const sim::Finding& f : findings) code = std::max(code, f.fatal ? 2 : 1);
  return code;
}

ScenarioBudget check_scenario_budget(sim::Kernel& k, const model::Capacity* device) {
  ScenarioBudget b;
  const sim::BudgetDecls& d = k.budget;
  if (!d.has_config() || !k.arch) return b;
  b.present = true;
  if (gemv_config(d)) {
    check_gemv_scenario(k, device, b);
    return b;
  }

  // --- the configuration: the scenario's own facts first, then its `config`, then the estimates ---
  model::GemmConfig cfg;
  cfg.arch = std::string(k.arch->name);
  cfg.cluster_m = static_cast<int>(k.launch.cluster);
  cfg.cluster_n = 1;
  cfg.cta_group = static_cast<int>(k.launch.cta_group);
  cfg.threads = static_cast<int>(k.launch.threads);
  if (k.launch.regs > 0) cfg.regs_per_thread = static_cast<int>(k.launch.regs);
  for (const sim::BudgetDecls::Setting& s : d.config)
    if (std::string e = model::set_config_field(cfg, s.key, s.value); !e.empty()) {
      b.bad_input = true;
      b.diagnostic = render_diagnostic(k.file, k.lines, s.loc, "error", "config: " + e);
      return b;
    }
  model::GemmConfig plain = cfg;  // without the estimates
  for (const sim::BudgetDecls::Estimate& e : d.estimates) cfg.hand.push_back({e.operand, e.bytes});
  b.config = cfg;
  b.report = model::check_budget(cfg, device);
  if (b.report.bad_input || !b.report.valid) {
    std::string why = "the configuration is not valid";
    for (const model::Finding& f : b.report.findings)
      if (f.severity == model::Severity::error) {
        why = f.message;
        break;
      }
    b.bad_input = true;
    b.diagnostic = render_diagnostic(k.file, k.lines, d.config_loc, "error", "config: " + why, {}, 6);
    return b;
  }
  b.derived = model::check_budget(plain, device);

  // --- which pipeline holds what ---
  std::vector<const sim::PipelineDecl*> loads, loras, stores, accs;
  for (const sim::PipelineDecl& p : k.pipelines) {
    switch (p.kind) {
      case sim::PipelineKind::TmaUmma:
      case sim::PipelineKind::TmaAsync: (lora_name(p.name) ? loras : loads).push_back(&p); break;
      case sim::PipelineKind::TmaStore: stores.push_back(&p); break;
      case sim::PipelineKind::UmmaAsync: accs.push_back(&p); break;
      default: break;
    }
  }
  model::GemmConfig fixed = plain;
  auto bind = [&](const std::vector<const sim::PipelineDecl*>& v, BudgetPipe what, int64_t expected, bool from_solver) {
    if (v.size() != 1) return;
    PipelineStages s;
    s.pipeline = v[0]->name;
    s.holds = what;
    s.counter = counter_of(what);
    s.declared = v[0]->stages;
    s.expected = expected;
    s.from_solver = from_solver;
    s.loc = v[0]->loc;
    b.stages.push_back(s);
    const int st = static_cast<int>(std::min<int64_t>(s.declared, 64));
    if (what == BudgetPipe::ab) fixed.ab_stages = st;
    if (what == BudgetPipe::c) fixed.epilogue_stages = st;
    if (what == BudgetPipe::acc) fixed.acc_stages = std::min(st, 4);
  };
  bind(loads, BudgetPipe::ab, b.derived.num_ab_stage, plain.ab_stages < 0);
  if (plain.epilogue_tma) bind(stores, BudgetPipe::c, b.derived.num_c_stage, plain.epilogue_stages < 0 && plain.ab_stages < 0);
  bind(accs, BudgetPipe::acc, b.derived.num_acc_stage, plain.acc_stages < 0);
  if (plain.lora_rank > 0) bind(loras, BudgetPipe::lora, plain.lora_stages, false);
  b.declared = model::check_budget(fixed, device);
  b.launch_smem = k.launch.smem;

  std::vector<sim::Finding> fatal, warn;
  const model::BudgetReport& D = b.declared;
  const bool solver_failed = plain.ab_stages < 0 && !b.derived.solved.ok;

  // --- over capacity: the launch would fail ---
  if (D.valid && D.total > D.capacity) {
    std::vector<std::string> notes{buffers_note(D.buffers)};
    std::string stages_txt;
    for (const PipelineStages& s : b.stages)
      if (s.holds != BudgetPipe::acc)
        stages_txt += fmt::format("{}pipeline {} stages = {}", stages_txt.empty() ? "" : ", ", s.pipeline, s.declared);
    if (!stages_txt.empty()) notes.push_back("with " + stages_txt);
    if (b.derived.solved.ok && plain.ab_stages < 0)
      notes.push_back(fmt::format("the solver fits num_ab_stage {}, num_c_stage {} with the derived footprints",
                                  b.derived.solved.num_ab_stage, b.derived.solved.num_c_stage));
    fatal.push_back(finding(k, "smem_over_capacity", true, d.launch_loc, "launch",
                            fmt::format("the launch would fail: {} B requested, {} B available{}", D.total, D.capacity,
                                        D.device_capacity ? " on the GPU present" : fmt::format(" on {}", D.arch_name)),
                            std::move(notes)));
  } else if (solver_failed) {
    fatal.push_back(finding(k, "smem_over_capacity", true, d.config_loc, "config",
                            "the launch would fail: " + b.derived.solved.error,
                            {fmt::format("solver capacity {} B after the extra buffers",
                                         b.derived.solved.capacity_for_solver)}));
  }
  // Other errors of the model (TMEM columns, registers): warnings here, `pipesim budget FILE` shows them.
  for (const model::Finding& f : D.findings)
    if (f.severity == model::Severity::error && f.message.rfind("the launch would fail", 0) != 0 &&
        f.message.find("K stages") == std::string::npos)
      warn.push_back(finding(k, "budget_mismatch", false, d.config_loc, "config", "budget: " + f.message));

  // --- launch smem against the buffers declared ---
  if (b.launch_smem > 0 && D.valid && b.launch_smem != D.total) {
    const int64_t diff = b.launch_smem - D.total;
    warn.push_back(finding(
        k, "budget_mismatch", false, d.launch_loc, "launch",
        fmt::format("launch smem = {} B, but the buffers of the config and the declared pipelines need {} B "
                    "(1024-byte aligned): {} B {}",
                    b.launch_smem, D.total, diff > 0 ? diff : -diff, diff > 0 ? "more than needed" : "short"),
        {buffers_note(D.buffers)}));
  }

  // --- hand-written estimates against the derived footprints ---
  for (const model::Mismatch& m : b.report.mismatches) {
    auto it = std::find_if(d.estimates.begin(), d.estimates.end(),
                           [&](const sim::BudgetDecls::Estimate& e) { return e.operand == m.operand; });
    if (it == d.estimates.end()) continue;
    warn.push_back(finding(k, "budget_mismatch", false, it->loc, "estimate " + m.operand, "estimate " + m.message));
  }

  // --- each pipeline's stages against the solver's choice ---
  for (const PipelineStages& s : b.stages) {
    if (s.declared == s.expected || (s.from_solver && solver_failed)) continue;
    std::vector<std::string> notes;
    if (b.report.solved_hand && b.report.solved_hand->ok && s.holds == BudgetPipe::ab &&
        b.report.solved_hand->num_ab_stage == s.declared)
      notes.push_back(fmt::format("the estimates give the solver (num_ab_stage, num_c_stage) = ({}, {}); the derived "
                                  "footprints give ({}, {})",
                                  b.report.solved_hand->num_ab_stage, b.report.solved_hand->num_c_stage,
                                  b.derived.solved.num_ab_stage, b.derived.solved.num_c_stage));
    const std::string source = s.from_solver ? "the solver chooses" : "the config fixes";
    if (s.from_solver && s.declared < s.expected && (s.holds == BudgetPipe::ab || s.holds == BudgetPipe::c)) {
      warn.push_back(finding(k, "stages_lost", false, s.loc, "pipeline " + s.pipeline,
                             fmt::format("pipeline {}: stages = {}, but {} {} with the derived footprints: {} {} → {}: {} lost",
                                         s.pipeline, s.declared, source, s.expected, s.counter, s.declared, s.expected,
                                         plural(s.expected - s.declared, "stage")),
                             std::move(notes)));
    } else {
      warn.push_back(finding(k, "budget_mismatch", false, s.loc, "pipeline " + s.pipeline,
                             fmt::format("pipeline {}: stages = {}, but {} {} = {}{}", s.pipeline, s.declared, source,
                                         s.counter, s.expected,
                                         s.from_solver ? " with the derived footprints" : ""),
                             std::move(notes)));
    }
  }
  b.findings = std::move(fatal);
  for (sim::Finding& f : warn) b.findings.push_back(std::move(f));
  return b;
}

std::string format_scenario_budget(const sim::Kernel& k, const ScenarioBudget& b) {
  if (!b.present) return {};
  if (b.bad_input) return b.diagnostic;
  if (b.gemv_declared) return format_gemv_scenario(k, b);
  std::string out = fmt::format("\nscenario {} (kernel {}) against the derived numbers\n", k.file, k.name);
  const model::BudgetReport& D = b.declared;
  out += smem_lines(b.launch_smem, "the declared buffers need", D.total, D.capacity,
                    D.device_capacity ? "GPU present" : D.arch_name);
  for (const PipelineStages& s : b.stages)
    out += fmt::format("  pipeline {}: stages = {}; {} {} = {}{}\n", s.pipeline, s.declared,
                       s.from_solver ? "solver with the derived footprints:" : "config:", s.counter, s.expected,
                       s.declared == s.expected ? " (agree)"
                       : s.declared < s.expected && s.from_solver
                           ? fmt::format(" ({} → {}: {} lost)", s.declared, s.expected, plural(s.expected - s.declared, "stage"))
                           : " (differ)");
  for (const sim::BudgetDecls::Estimate& e : k.budget.estimates) {
    auto it = std::find_if(b.report.mismatches.begin(), b.report.mismatches.end(),
                           [&](const model::Mismatch& m) { return m.operand == e.operand; });
    if (it == b.report.mismatches.end())
      out += fmt::format("  estimate {} = {} B (line {}): matches the derived footprint\n", e.operand, e.bytes, e.loc.line);
    else
      out += fmt::format("  estimate {} = {} B (line {}): derived {} B, ratio {:.3f}\n", e.operand, e.bytes, e.loc.line,
                         it->derived, it->ratio);
  }
  return out + findings_text(k, b.findings);
}

nlohmann::json scenario_budget_to_json(const sim::Kernel& k, const ScenarioBudget& b) {
  using nlohmann::json;
  json j;
  j["file"] = k.file;
  j["kernel"] = k.name;
  j["has_config"] = b.present;
  if (!b.present) return j;
  j["bad_input"] = b.bad_input;
  if (b.bad_input) {
    j["diagnostic"] = b.diagnostic;
    return j;
  }
  j["launch_smem"] = b.launch_smem > 0 ? json(b.launch_smem) : json(nullptr);
  j["declared_total"] = b.gemv_declared ? b.gemv_declared->total : b.declared.total;
  j["capacity"] = b.gemv_declared ? b.gemv_declared->capacity : b.declared.capacity;
  json pipes = json::array();
  for (const PipelineStages& s : b.stages)
    pipes.push_back({{"pipeline", s.pipeline},
                     {"counter", s.counter},
                     {"declared", s.declared},
                     {"expected", s.expected},
                     {"from_solver", s.from_solver},
                     {"lost", s.from_solver && s.declared < s.expected ? s.expected - s.declared : 0},
                     {"line", s.loc.line}});
  j["pipelines"] = pipes;
  json est = json::array();
  for (const sim::BudgetDecls::Estimate& e : k.budget.estimates) {
    auto it = std::find_if(b.report.mismatches.begin(), b.report.mismatches.end(),
                           [&](const model::Mismatch& m) { return m.operand == e.operand; });
    json x{{"operand", e.operand}, {"bytes", e.bytes}, {"line", e.loc.line}, {"matches", it == b.report.mismatches.end()}};
    if (it != b.report.mismatches.end()) {
      x["derived"] = it->derived;
      x["ratio"] = it->ratio;
      x["causes"] = it->causes;
    }
    est.push_back(std::move(x));
  }
  j["estimates"] = est;
  json fs = json::array();
  for (const sim::Finding& f : b.findings) {
    const sim::SourceLoc l = f.site < k.sites.size() ? k.sites[f.site].loc : sim::SourceLoc{};
    fs.push_back({{"rule", f.kind},
                  {"severity", f.fatal ? "error" : "warning"},
                  {"line", l.line},
                  {"col", l.col},
                  {"message", f.message},
                  {"notes", f.notes}});
  }
  j["findings"] = fs;
  return j;
}

}  // namespace pipesim::verify
