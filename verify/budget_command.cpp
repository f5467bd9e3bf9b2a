#include "verify/budget_command.hpp"

#include "verify/inputs.hpp"

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "model/gemv_budget.hpp"
#include "verify/device_query.hpp"
#include "verify/parser.hpp"
#include "verify/scenario_budget.hpp"

namespace pipesim::verify {
namespace {

// The flags, in the order they are applied (formats before the scale overrides).
constexpr const char* kKeys[] = {
    "arch",        "tile",         "cluster",         "cta-group",        "ab",         "a",
    "b",           "c",            "sf",              "sf-vec",           "lora-rank",  "lora-stages",
    "lora-dtype",  "epilogue",     "epilogue-stages", "epilogue-vectors", "ab-stages",  "acc-stages",
    "occupancy",   "solver",       "threads",         "regs",             "setmaxnreg", "tmem-alloc",
};

constexpr const char* kHelp[] = {
    "architecture: sm_100a, sm_103a (sm_90a, sm_120a are rejected: no tcgen05)",
    "MMA tile MxN or MxNxK (M of the CTA pair under cta_group 2; K default: 4 MMA instructions)",
    "cluster shape M or MxN",
    "1, 2 or auto (2 when tile M is 256)",
    "A and B format: nvfp4, mxfp4, mxf6, mxf8, f16, bf16, tf32, e4m3, e5m2, e3m2, e2m3, e2m1",
    "A format (overrides --ab)",
    "B format (overrides --ab)",
    "output type: f32, f16, bf16, e4m3, e5m2",
    "scale-factor type: e4m3 (ue4m3), ue8m0, none",
    "elements per scale factor: 16 or 32",
    "LoRA rank R (0: none)",
    "LoRA pipeline stages",
    "LoRA operand type: f16 or bf16",
    "tma (C staged in shared memory) or none",
    "epilogue (C) stages: auto or N",
    "per-column epilogue vectors in the C type (seed 001: wcscale and bias = 2)",
    "A/B stages: auto (solver) or N (fixed by the kernel)",
    "accumulator stages: auto (CUTLASS: 1 if N = 256 else 2) or N",
    "CTAs per SM the configuration targets",
    "stage solver: auto (seed when LoRA or vectors are present), cutlass, seed",
    "threads per CTA",
    "registers per thread at launch (0: unknown)",
    "setmaxnreg per warpgroup, e.g. 40,232",
    "TMEM allocation: auto, max (all columns) or pow2",
};

struct State {
  std::vector<std::string> values = std::vector<std::string>(std::size(kKeys));
  std::string gemv;         // --gemv MxKxL: the NVFP4 GEMV kernel instead of a GEMM configuration
  std::string stage_bytes;  // --stage-bytes (GEMV only)
  std::vector<std::string> hand;
  std::string file;
  std::vector<std::string> defines;
  bool json = false;
  bool device = false;
};

void print_errors(const State& st, const std::vector<std::string>& errors) {
  if (st.json) {
    nlohmann::json j{{"ok", false}, {"exit_code", 2}, {"errors", errors}};
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    for (const std::string& e : errors) std::fprintf(stderr, "pipesim budget: error: %s\n", e.c_str());
  }
}

// --device: the GPU's limits, printed next to the table's; nullopt (and a message) when there is none.
std::optional<model::Capacity> device_capacity(const State& st, const std::string& arch_name) {
  const model::Arch* arch = model::find_arch(arch_name);
  if (!arch) return std::nullopt;
  const DeviceLimits d = query_device_limits(arch->cap);
  if (!d.ok) {
    print_errors(st, {"--device: " + d.error});
    return std::nullopt;
  }
  if (!st.json)
    std::printf("device: %s (sm_%d%d): %lld B shared memory per block (opt-in), %lld per SM, %lld registers per SM, "
                "%d SMs; %s table: %lld, %lld, %lld, %d\n",
                d.name.c_str(), d.major, d.minor, static_cast<long long>(d.cap.smem_per_block),
                static_cast<long long>(d.cap.smem_per_sm), static_cast<long long>(d.cap.regs_per_sm), d.cap.sms,
                arch_name.c_str(), static_cast<long long>(arch->cap.smem_per_block),
                static_cast<long long>(arch->cap.smem_per_sm), static_cast<long long>(arch->cap.regs_per_sm),
                arch->cap.sms);
  const std::string present = "sm_" + std::to_string(d.major) + std::to_string(d.minor);
  if (!st.json && arch_name.rfind(present, 0) != 0)
    std::printf("note: the GPU present is %s, the configuration targets %s: the device's limits are applied as "
                "they are; the rest of the %s table stays\n",
                present.c_str(), arch_name.c_str(), arch_name.c_str());
  return d.cap;
}

nlohmann::json device_json(const model::Capacity& dev, const std::string& arch_name) {
  const model::Arch* arch = model::find_arch(arch_name);
  auto cap_json = [](const model::Capacity& c) {
    return nlohmann::json{{"smem_per_block", c.smem_per_block}, {"smem_per_sm", c.smem_per_sm},
                          {"regs_per_sm", c.regs_per_sm},       {"sms", c.sms},
                          {"threads_per_sm", c.threads_per_sm}, {"blocks_per_sm", c.blocks_per_sm}};
  };
  return {{"device", cap_json(dev)}, {"table", arch ? cap_json(arch->cap) : nlohmann::json(nullptr)}};
}

// `pipesim budget FILE`: the scenario's config through the model, and the scenario against it.
int run_file(const State& st) {
  std::vector<Define> defines;
  if (std::string bad; !parse_defines(st.defines, defines, bad)) {
    print_errors(st, {"-D " + bad + ": expected NAME=INTEGER"});
    return 2;
  }
  std::ifstream in(st.file, std::ios::binary);
  if (!in) {
    print_errors(st, {st.file + ": cannot read the file"});
    return 2;
  }
  std::ostringstream text;
  text << in.rdbuf();
  sim::Kernel k;
  try {
    k = parse_scenario(st.file, text.str(), defines);
  } catch (const ParseError& e) {
    if (st.json) print_errors(st, {e.what()});
    else std::fputs(e.what(), stderr);
    return 2;
  }
  if (!k.budget.has_config()) {
    print_errors(st, {st.file + ": the scenario has no 'config' line, so there is no configuration to budget "
                      "(docs/scenario-language.md, \"Budgets\")"});
    return 2;
  }
  std::optional<model::Capacity> dev;
  if (st.device) {
    dev = device_capacity(st, std::string(k.arch->name));
    if (!dev) return 2;
  }
  const ScenarioBudget b = check_scenario_budget(k, dev ? &*dev : nullptr);
  if (b.bad_input) {
    if (st.json) print_errors(st, {b.diagnostic});
    else std::fputs(b.diagnostic.c_str(), stderr);
    return 2;
  }
  const int code = b.exit_code();
  if (st.json) {
    nlohmann::json j = b.gemv_derived ? gemv_budget_to_json(*b.gemv_derived) : budget_to_json(b.report);
    j["scenario"] = scenario_budget_to_json(k, b);
    j["exit_code"] = code;
    j["ok"] = code == 0;
    if (dev) j["device"] = device_json(*dev, std::string(k.arch->name));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::fputs((b.gemv_derived ? model::format_gemv_budget(*b.gemv_derived) : model::format_report(b.report)).c_str(),
               stdout);
    std::fputs(format_scenario_budget(k, b).c_str(), stdout);
  }
  return code;
}

// What both budgets' JSON starts with: the verdict, the architecture and the findings.
nlohmann::json report_head_json(int exit_code, bool valid, bool bad_input, const std::string& arch,
                                const std::string& arch_note, const std::vector<model::Finding>& findings) {
  nlohmann::json j{{"exit_code", exit_code}, {"ok", exit_code == 0}, {"valid", valid}, {"bad_input", bad_input},
                   {"arch", arch}};
  if (!arch_note.empty()) j["arch_uncertain"] = arch_note;
  nlohmann::json fs = nlohmann::json::array();
  for (const model::Finding& f : findings)
    fs.push_back({{"severity", model::severity_name(f.severity)}, {"message", f.message}});
  j["findings"] = fs;
  return j;
}

// The end of both flag forms: the errors (exit 2), or the GPU's limits when --device asks, the budget
// `check` makes with them, printed as JSON or by `print`; its exit code.
template <class Check, class ToJson, class Print>
int print_budget(const State& st, const std::vector<std::string>& errors, const std::string& arch, Check check,
                 ToJson to_json, Print print) {
  if (!errors.empty()) {
    print_errors(st, errors);
    return 2;
  }
  std::optional<model::Capacity> dev;
  if (st.device) {
    dev = device_capacity(st, arch);
    if (!dev) return 2;
  }
  const auto report = check(dev ? &*dev : nullptr);
  if (st.json) {
    nlohmann::json j = to_json(report);
    if (dev) j["device"] = device_json(*dev, arch);
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    print(report);
  }
  return report.exit_code();
}

// `pipesim budget --gemv MxKxL`: the NVFP4 GEMV kernel's layout (model/gemv_budget.hpp).
int run_gemv(const State& st, CLI::App* cmd) {
  model::GemvBudgetConfig cfg;
  std::vector<std::string> errors;
  auto set = [&](const char* key, const std::string& value) {
    if (std::string e = model::set_gemv_field(cfg, key, value); !e.empty()) errors.push_back(std::move(e));
  };
  set("gemv", st.gemv);
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    if (cmd->count(std::string("--") + kKeys[i]) == 0) continue;
    const std::string key = kKeys[i];
    if (key == "arch" || key == "ab-stages" || key == "regs") set(kKeys[i], st.values[i]);
    else errors.push_back("--" + key + " does not apply to --gemv (its flags: --arch, --ab-stages, --stage-bytes, --regs)");
  }
  if (cmd->count("--stage-bytes") > 0) set("stage-bytes", st.stage_bytes);
  if (!st.hand.empty()) errors.push_back("--hand does not apply to --gemv");
  if (!st.file.empty()) errors.push_back("--gemv with a scenario FILE: the scenario's 'config gemv = ...' line is the configuration");
  if (!st.defines.empty()) errors.push_back("-D applies to a scenario FILE only");
  return print_budget(st, errors, cfg.arch,
                      [&](const model::Capacity* dev) { return model::check_gemv_budget(cfg, dev); },
                      gemv_budget_to_json, [&](const model::GemvBudget& b) {
                        if (b.valid) {
                          std::fputs(model::format_gemv_budget(b).c_str(), stdout);
                          return;
                        }
                        std::vector<std::string> why;
                        for (const model::Finding& f : b.findings) why.push_back(f.message);
                        print_errors(st, why);
                      });
}

int run(const State& st, CLI::App* cmd) {
  if (cmd->count("--gemv") > 0) return run_gemv(st, cmd);
  if (cmd->count("--stage-bytes") > 0) {
    print_errors(st, {"--stage-bytes applies to --gemv only"});
    return 2;
  }
  model::GemmConfig cfg;
  std::vector<std::string> errors;
  if (!st.file.empty()) {
    for (size_t i = 0; i < std::size(kKeys); ++i)
      if (cmd->count(std::string("--") + kKeys[i]) > 0)
        errors.push_back(std::string("--") + kKeys[i] + " with a scenario FILE: the scenario's 'config' line is the configuration");
    if (!st.hand.empty()) errors.push_back("--hand with a scenario FILE: write 'estimate' lines in the scenario");
    if (!errors.empty()) {
      print_errors(st, errors);
      return 2;
    }
    return run_file(st);
  }
  if (!st.defines.empty()) errors.push_back("-D applies to a scenario FILE only");
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    if (cmd->count(std::string("--") + kKeys[i]) == 0) continue;
    std::string e = model::set_config_field(cfg, kKeys[i], st.values[i]);
    if (!e.empty()) errors.push_back(std::move(e));
  }
  for (const std::string& h : st.hand) {
    std::string e = model::set_config_field(cfg, "hand", h);
    if (!e.empty()) errors.push_back(std::move(e));
  }
  return print_budget(st, errors, cfg.arch, [&](const model::Capacity* dev) { return model::check_budget(cfg, dev); },
                      budget_to_json,
                      [](const model::BudgetReport& r) { std::fputs(model::format_report(r).c_str(), stdout); });
}

}  // namespace

nlohmann::json budget_to_json(const model::BudgetReport& r) {
  using nlohmann::json;
  const model::GemmConfig& c = r.config;
  json j = report_head_json(r.exit_code(), r.valid, r.bad_input, r.arch_name, r.arch_note, r.findings);
  if (!r.valid) return j;
  j["config"] = {
      {"tile", {c.mma_m, c.mma_n, c.tile_k}},
      {"cluster", {c.cluster_m, c.cluster_n}},
      {"cta_group", c.cta_group},
      {"a", model::dtype_name(c.a.data)},
      {"b", model::dtype_name(c.b.data)},
      {"c", model::dtype_name(c.c)},
      {"sf", r.sf ? json(model::dtype_name(*r.sf)) : json(nullptr)},
      {"sf_vec", r.sf_vec},
      {"mma_kind", model::mma_kind_name(r.mma.kind)},
      {"lora_rank", c.lora_rank},
      {"occupancy", c.occupancy},
      {"solver", c.solver == model::GemmConfig::Solver::seed ? "seed" : "cutlass"},
  };
  j["stages"] = {{"num_ab_stage", r.num_ab_stage},
                 {"num_c_stage", r.num_c_stage},
                 {"num_acc_stage", r.num_acc_stage},
                 {"num_lora_stage", r.num_lora_stage}};
  j["solver"] = {{"capacity", r.solver_capacity},
                 {"capacity_after_extra", r.solved.capacity_for_solver},
                 {"derived", {{"ok", r.solved.ok},
                              {"num_ab_stage", r.solved.num_ab_stage},
                              {"num_c_stage", r.solved.num_c_stage},
                              {"error", r.solved.error}}}};
  if (r.solved_hand)
    j["solver"]["hand_written"] = {{"ok", r.solved_hand->ok},
                                   {"num_ab_stage", r.solved_hand->num_ab_stage},
                                   {"num_c_stage", r.solved_hand->num_c_stage},
                                   {"error", r.solved_hand->error}};
  json bufs = json::array();
  for (const model::BufferLine& b : r.buffers)
    bufs.push_back({{"name", b.name},
                    {"derived_from", b.what},
                    {"bytes_per_stage", b.bytes_per_stage},
                    {"stages", b.stages},
                    {"bytes", b.bytes},
                    {"allocated", b.allocated}});
  j["smem"] = {{"buffers", bufs},
               {"total", r.total},
               {"capacity", r.capacity},
               {"headroom", r.headroom},
               {"percent", r.percent},
               {"device_capacity", r.device_capacity}};
  json map = json::array();
  for (const model::TmemRange& m : r.tmem_map)
    map.push_back({{"name", m.name}, {"first", m.first}, {"columns", m.columns}});
  j["tmem"] = {{"map", map},
               {"accumulator", r.tmem.accumulator_total},
               {"sfa", r.tmem.sfa},
               {"sfb", r.tmem.sfb},
               {"used", r.tmem.used},
               {"pow2", r.tmem.pow2},
               {"requested", r.tmem.requested},
               {"capacity", r.cap.tmem_columns}};
  j["registers"] = {{"threads", c.threads},
                    {"regs_per_thread", c.regs_per_thread},
                    {"regs_per_cta", r.regs.regs_per_cta},
                    {"setmaxnreg", c.setmaxnreg},
                    {"regs_after_setmaxnreg", r.regs.regs_after_setmaxnreg},
                    {"max_regs_for_occupancy", r.regs.max_regs_for_occupancy}};
  j["occupancy"] = {{"by_threads", r.occupancy.by_threads},
                    {"by_blocks", r.occupancy.by_blocks},
                    {"by_smem", r.occupancy.by_smem},
                    {"by_regs", r.occupancy.by_regs},
                    {"by_tmem", r.occupancy.by_tmem},
                    {"achieved", r.occupancy.achieved}};
  json mm = json::array();
  for (const model::Mismatch& m : r.mismatches)
    mm.push_back({{"operand", m.operand},
                  {"hand", m.hand},
                  {"derived", m.derived},
                  {"ratio", m.ratio},
                  {"causes", m.causes},
                  {"message", m.message}});
  j["mismatches"] = mm;
  return j;
}

nlohmann::json gemv_budget_to_json(const model::GemvBudget& b) {
  using nlohmann::json;
  json j = report_head_json(b.exit_code(), b.valid, b.bad_input, b.arch_name, b.arch_note, b.findings);
  j["kernel"] = "gemv_nvfp4";
  if (!b.valid) return j;
  const model::GemvPlan& p = b.plan;
  j["shape"] = {{"m", b.config.shape.m}, {"k", b.config.shape.k}, {"l", b.config.shape.l}};
  j["launch"] = {{"ctas", p.grid}, {"threads", p.threads}, {"consumer_warps", p.consumer_warps}};
  j["stages"] = {{"ab", p.stages},
                 {"fixed", b.config.stages > 0},
                 {"stage_a_bytes", p.stage_a_bytes},
                 {"stage_sf_bytes", p.stage_sf_bytes},
                 {"stage_tx_bytes", b.stage_tx_bytes},
                 {"vector_slots", p.b_buffers},
                 {"vector_tx_bytes", b.vector_tx_bytes},
                 {"max_ab_stages", b.max_stages}};
  json bufs = json::array();
  for (const model::BufferLine& l : b.buffers)
    bufs.push_back({{"name", l.name},
                    {"derived_from", l.what},
                    {"bytes_per_stage", l.bytes_per_stage},
                    {"stages", l.stages},
                    {"bytes", l.allocated}});
  j["smem"] = {{"buffers", bufs},
               {"total", b.total},
               {"capacity", b.capacity},
               {"headroom", b.headroom},
               {"percent", b.percent},
               {"device_capacity", b.device_capacity}};
  j["registers"] = {{"threads", p.threads},
                    {"regs_per_thread", b.config.regs_per_thread},
                    {"regs_per_cta", b.regs.regs_per_cta},
                    {"max_regs_for_occupancy", b.regs.max_regs_for_occupancy}};
  j["occupancy"] = {{"by_threads", b.occupancy.by_threads},
                    {"by_blocks", b.occupancy.by_blocks},
                    {"by_smem", b.occupancy.by_smem},
                    {"by_regs", b.occupancy.by_regs},
                    {"achieved", b.occupancy.achieved}};
  return j;
}

CLI::App* add_budget_command(CLI::App& app, std::function<int()>& action) {
  CLI::App* cmd = app.add_subcommand(
      "budget", "shared memory, TMEM, registers and stage counts of a GEMM configuration or of the GEMV kernel");
  auto st = std::make_shared<State>();
  for (size_t i = 0; i < std::size(kKeys); ++i)
    cmd->add_option(std::string("--") + kKeys[i], st->values[i], kHelp[i]);
  cmd->add_option("--hand", st->hand,
                  "hand-written bytes per CTA and stage, NAME=BYTES[,...]; names A B SFA SFB C LA LU VEC AB LORA")
      ->take_all();
  cmd->add_option("--gemv", st->gemv,
                  "the NVFP4 GEMV kernel (kernels/gemv_nvfp4) for shape MxKxL instead of a GEMM; with --arch, "
                  "--ab-stages, --stage-bytes, --regs");
  cmd->add_option("--stage-bytes", st->stage_bytes, "GEMV: A bytes per stage (multiple of 512; default: the plan's)");
  cmd->add_flag("--json", st->json, "print the report as JSON");
  cmd->add_option("file", st->file, "scenario file with a 'config' line (instead of the flags)");
  add_repeatable_option(*cmd, "-D", st->defines, "NAME=INT: override a scenario parameter (with FILE; repeatable)");
  cmd->add_flag("--device", st->device,
                "check against the limits of the GPU present (cudaGetDeviceProperties) instead of the arch table");
  cmd->callback([st, cmd, &action]() { action = [st, cmd]() { return run(*st, cmd); }; });
  return cmd;
}

}  // namespace pipesim::verify
