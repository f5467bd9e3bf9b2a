// Budgets inside scenarios (issue 4): the `config` and `estimate` declarations, the checks
// `pipesim check` runs on them (verify/scenario_budget.hpp) and `pipesim budget FILE`.
// Expected numbers are computed here from the documented rules (docs/budget.md), not by the solver.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "budget_cli.hpp"
#include "verify/budget_command.hpp"
#include "verify/check.hpp"
#include "verify/parser.hpp"

namespace pipesim::verify {
namespace {

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/scenarios/";

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Python floor division, for the solver's formula.
int64_t fdiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

// The seed's solver (seed-kernels.md §1): cap' = 232448 − lora − 512; num_ab = (cap' − (1024 + 2·C)) // AB;
// num_c = 2 + (cap' − AB·num_ab − 1024 − 2·C) // C.
std::pair<int64_t, int64_t> seed_solver(int64_t lora_bytes_all_stages) {
  const int64_t ab = 16384 + 8192 + 2048 + 2048, c = 128 * 32 * 2;
  const int64_t cap = 232448 - lora_bytes_all_stages - 512;
  const int64_t n_ab = fdiv(cap - (1024 + 2 * c), ab);
  return {n_ab, 2 + fdiv(cap - ab * n_ab - 1024 - 2 * c, c)};
}

const sim::Finding* find(const CheckResult& r, const std::string& rule) {
  for (const sim::Finding& f : r.result.findings)
    if (f.kind == rule) return &f;
  return nullptr;
}

size_t count(const CheckResult& r, const std::string& rule) {
  return static_cast<size_t>(std::count_if(r.result.findings.begin(), r.result.findings.end(),
                                           [&](const sim::Finding& f) { return f.kind == rule; }));
}

// A small cta_group 2 kernel whose A/B pipeline, estimates and launch the tests vary.
std::string tiny(const std::string& config, const std::string& extra, int stages, const std::string& launch_extra = "") {
  return fmt::format(R"(kernel tiny on sm_100a
let TILE_M = 256, TILE_N = 128, R = 64
{}
launch ctas = 2, cluster = 2, threads = 64, cta_group = 2{}
{}
pipeline ab : tma -> umma, stages = {}, tx = 28672
barrier done count = 1
role mma warp 0:
  cluster_sync
  tmem_alloc cols = 256
  if is_leader:
    for k in 0 .. 8:
      ab.consumer_wait
      mma kind = mxf4nvf4 m = 256 n = 128 k = 64 count = 4
      ab.consumer_release
    commit done multicast = 0b11
  wait done parity = 0
  tmem_dealloc cols = 256
  cluster_sync
role tma warp 1:
  cluster_sync
  for k in 0 .. 8:
    ab.producer_acquire
    tma ab bytes = 28672
  ab.producer_tail
expect ok
)",
                     config, launch_extra, extra, stages);
}

const std::string kTinyConfig = "config tile = 256x128x256, ab = nvfp4, c = f16";

CheckResult check(const std::string& text) { return check_text("inline.scn", text, {}); }

std::string parse_error(const std::string& text) {
  try {
    parse_scenario("inline.scn", text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "(no error)";
}

// ------------------------------------------------------------------ parsing
TEST(ScenarioBudgetParse, ConfigAndEstimatesAreStored) {
  const sim::Kernel k = parse_scenario(
      "inline.scn", tiny("config tile = TILE_M x TILE_N x 256, ab = nvfp4, c = f16, sf_vec = 16, lora_rank = R, "
                         "lora_stages = 2, acc_stages = auto, setmaxnreg = [40, 232]   # comment",
                         "estimate A = 128 * 256 / 2, lu = 64 * R * 2", 7));
  ASSERT_TRUE(k.budget.has_config());
  EXPECT_EQ(k.budget.config_loc.line, 3u);
  std::vector<std::pair<std::string, std::string>> got;
  for (const auto& s : k.budget.config) got.emplace_back(s.key, s.value);
  const std::vector<std::pair<std::string, std::string>> want{
      {"tile", "256x128x256"}, {"ab", "nvfp4"},       {"c", "f16"},          {"sf-vec", "16"},
      {"lora-rank", "64"},     {"lora-stages", "2"}, {"acc-stages", "auto"}, {"setmaxnreg", "40,232"}};
  EXPECT_EQ(got, want);
  ASSERT_EQ(k.budget.estimates.size(), 2u);
  EXPECT_EQ(k.budget.estimates[0].operand, "A");
  EXPECT_EQ(k.budget.estimates[0].bytes, 16384);
  EXPECT_EQ(k.budget.estimates[1].operand, "LU");
  EXPECT_EQ(k.budget.estimates[1].bytes, 64 * 64 * 2);
  EXPECT_EQ(k.budget.estimates[1].loc.line, 5u);
  EXPECT_EQ(k.budget.launch_loc.line, 4u);
}

TEST(ScenarioBudgetParse, BadInputNamesTheSpot) {
  struct Case {
    std::string config, extra, want;
  };
  const std::vector<Case> cases{
      {"config tile = 256x128x256, lora_rnak = 64", "", "inline.scn:3:28: error: unknown config key 'lora_rnak'; did you mean 'lora_rank'?"},
      {"config tile = 256x128x256, ab = int3", "", "inline.scn:3:33: error: config: ab: unknown operand format 'int3'"},
      {"config arch = sm_100a", "", "inline.scn:3:8: error: 'arch' is not set in 'config': it comes from the scenario's 'kernel NAME on ARCH' line"},
      {"config cta_group = 2", "", "inline.scn:3:8: error: 'cta_group' is not set in 'config': it comes from the scenario's 'launch'"},
      {"config tile = 256x128x256, tile = 128x128", "", "inline.scn:3:28: error: repeated config key 'tile'"},
      {"config tile = 256x128, occupancy = 0", "", "inline.scn:3:36: error: config: occupancy: expected an integer in [1, 32], got '0'"},
      {"config tile = 256x128, lora_rank = NOPE", "", "inline.scn:3:36: error: unknown name 'NOPE'"},
      {"config tile", "", "inline.scn:3:8: error: expected KEY = VALUE in 'config', found 'tile'"},
      {"config hand = LU=1", "", "inline.scn:3:8: error: hand-written byte counts go on an 'estimate' line"},
      {kTinyConfig, "estimate LX = 5", "inline.scn:5:10: error: unknown operand 'LX' for 'estimate'; did you mean 'LA'?"},
      {kTinyConfig, "estimate LU = 5, LU = 6", "inline.scn:5:18: error: repeated estimate for 'LU'"},
      {kTinyConfig, "estimate LU = -5", "inline.scn:5:15: error: a byte count must not be negative, got -5"},
      {kTinyConfig, "estimate LU", "inline.scn:5:12: error: expected '=' after 'LU'"},
      {"# no config", "estimate LU = 5", "inline.scn:5:10: error: 'estimate' needs a 'config' line"},
  };
  for (const Case& c : cases) {
    const std::string err = parse_error(tiny(c.config, c.extra, 7));
    EXPECT_EQ(err.rfind(c.want, 0), 0u) << "want: " << c.want << "\ngot:  " << err;
  }
  // A second config line.
  const std::string err = parse_error(tiny(kTinyConfig + "\n" + kTinyConfig, "", 7));
  EXPECT_TRUE(has(err, "inline.scn:4:1: error: duplicate 'config' line")) << err;
}

TEST(ScenarioBudgetParse, ConfigTheModelRejectsIsBadInput) {
  // N = 100 is no tcgen05.mma shape under cta_group 2 (step 16): bad input at the config line.
  const CheckResult r = check(tiny("config tile = 256x100x256, ab = nvfp4", "", 7));
  ASSERT_TRUE(r.bad_input);
  EXPECT_TRUE(has(r.diagnostic, "inline.scn:3:1: error: config: tile N 100 is not a tcgen05.mma shape")) << r.diagnostic;
}

// ------------------------------------------------------------------ the checks
TEST(ScenarioBudget, SeedLuEstimateBrokenWarnsWithTheSeedsNumbers) {
  const int64_t la = 128 * 128 * 2, lu_true = 64 * 128 * 2, lu_hand = 128 * 128 * 2;
  const auto [hab, hc] = seed_solver((la + lu_hand) * 2);
  const auto [tab, tc] = seed_solver((la + lu_true) * 2);
  ASSERT_EQ(std::make_pair(hab, hc), std::make_pair(int64_t{2}, int64_t{5}));  // seed-kernels.md
  ASSERT_EQ(std::make_pair(tab, tc), std::make_pair(int64_t{4}, int64_t{2}));
  const CheckResult r = check_file(kDir + "budget/seed_lu_estimate_broken.scn", {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Ok);
  EXPECT_TRUE(r.matches_expect);
  const std::string lost = fmt::format("num_ab_stage {} → {}: {} stages lost", hab, tab, tab - hab);
  const sim::Finding* est = nullptr;
  for (const sim::Finding& f : r.result.findings)
    if (f.kind == "budget_mismatch" && has(f.message, "estimate LU")) est = &f;
  ASSERT_NE(est, nullptr) << r.report;
  EXPECT_FALSE(est->fatal);
  EXPECT_TRUE(has(est->message, fmt::format("hand-written {} B, derived {} B (ratio 2.000)", lu_hand, lu_true))) << est->message;
  EXPECT_TRUE(has(est->message, "not divided by cta_group 2 along N")) << est->message;
  EXPECT_TRUE(has(est->message, lost)) << est->message;
  const sim::Finding* st = find(r, "stages_lost");
  ASSERT_NE(st, nullptr) << r.report;
  EXPECT_TRUE(has(st->message, "pipeline ab: stages = 2")) << st->message;
  EXPECT_TRUE(has(st->message, lost)) << st->message;
  // Printed at the estimate's and the pipeline's file:line:col.
  const uint32_t est_line = r.kernel.sites.at(est->site).loc.line;
  EXPECT_TRUE(has(r.kernel.lines.at(est_line - 1), "estimate ")) << est_line;
  EXPECT_TRUE(has(r.kernel.lines.at(r.kernel.sites.at(st->site).loc.line - 1), "pipeline ab"));
  EXPECT_TRUE(has(r.report, fmt::format("{}:{}:", r.file, est_line))) << r.report;
  EXPECT_TRUE(has(r.report, "[stages_lost]")) << r.report;
  EXPECT_EQ(count(r, "smem_over_capacity"), 0u);
}

TEST(ScenarioBudget, SeedLuEstimateFixedIsQuiet) {
  const CheckResult r = check_file(kDir + "budget/seed_lu_estimate_fixed.scn", {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_TRUE(r.matches_expect) << r.report;
  EXPECT_EQ(count(r, "budget_mismatch") + count(r, "stages_lost") + count(r, "smem_over_capacity"), 0u) << r.report;
}

TEST(ScenarioBudget, OverCapacityIsTheVerdict) {
  // 2 A/B stages, 2 C buffers, 4 LoRA stages, the barriers' block: the documented allocation.
  const int64_t total = 1024 + 2 * 8192 + 2 * (16384 + 8192 + 2048 + 2048) + 4 * (32768 + 16384);
  ASSERT_EQ(total, 271360);
  const auto [ab, c] = seed_solver(4 * (32768 + 16384));
  EXPECT_LT(ab, 2);  // the seed's solver finds no room: the kernel asserts
  (void)c;
  const CheckResult r = check_file(kDir + "budget/seed_lora_stages4_over_capacity.scn", {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Error);
  EXPECT_TRUE(r.matches_expect) << r.report;
  ASSERT_FALSE(r.result.findings.empty());
  const sim::Finding& f = r.result.findings.front();
  EXPECT_EQ(f.kind, "smem_over_capacity");
  EXPECT_TRUE(f.fatal);
  EXPECT_TRUE(has(f.message, fmt::format("the launch would fail: {} B requested, 232448 B available", total))) << f.message;
  EXPECT_EQ(r.result.events, 0u);  // the kernel never starts
}

TEST(ScenarioBudget, StagesLostAgainstTheCutlassSolver) {
  // CUTLASS: num_ab = (232448 − (1024 + 2·8192)) // (16384 + 8192 + 2048 + 2048).
  const int64_t want = fdiv(232448 - (1024 + 2 * 8192), 16384 + 8192 + 2048 + 2048);
  ASSERT_EQ(want, 7);
  const CheckResult lost = check(tiny(kTinyConfig, "", 4));
  ASSERT_FALSE(lost.bad_input) << lost.diagnostic;
  const sim::Finding* f = find(lost, "stages_lost");
  ASSERT_NE(f, nullptr) << lost.report;
  EXPECT_TRUE(has(f->message, fmt::format("num_ab_stage 4 → {}: {} stages lost", want, want - 4))) << f->message;
  EXPECT_EQ(lost.kernel.sites.at(f->site).loc.line, 6u);
  const CheckResult ok = check(tiny(kTinyConfig, "", static_cast<int>(want)));
  EXPECT_EQ(count(ok, "stages_lost") + count(ok, "budget_mismatch"), 0u) << ok.report;
  // More stages than fit the solver, still under the limit with fewer C buffers: a mismatch, not lost.
  const CheckResult more = check(tiny(kTinyConfig + ", epilogue_stages = 1", "", 8));
  EXPECT_EQ(count(more, "stages_lost"), 0u) << more.report;
}

TEST(ScenarioBudget, LaunchSmemAgainstTheDeclaredBuffers) {
  // 7 A/B stages + 3 C buffers (CUTLASS top-up) + barriers: 1024 + 7·28672 + 3·8192.
  const int64_t need = 1024 + 7 * 28672 + 3 * 8192;
  const CheckResult same = check(tiny(kTinyConfig, "", 7, fmt::format(", smem = {}", need)));
  EXPECT_EQ(count(same, "budget_mismatch"), 0u) << same.report;
  const CheckResult off = check(tiny(kTinyConfig, "", 7, ", smem = 200000"));
  const sim::Finding* f = find(off, "budget_mismatch");
  ASSERT_NE(f, nullptr) << off.report;
  EXPECT_TRUE(has(f->message, fmt::format("launch smem = 200000 B, but the buffers of the config and the declared "
                                          "pipelines need {} B", need)))
      << f->message;
  EXPECT_EQ(off.kernel.sites.at(f->site).loc.line, 4u);
}

TEST(ScenarioBudget, ShippedScenariosAgreeWithTheModel) {
  for (const char* f : {"svdquant/v2_fa4_4352x3840x3072_r128.scn", "svdquant/v2_fa4_4352x10240x3072_r32.scn",
                        "blackwell/blockscaled_gemm_1cta_128x256.scn", "blackwell/blockscaled_gemm_2cta_256x128.scn",
                        "blackwell/blockscaled_gemm_2cta_256x256.scn"}) {
    const CheckResult r = check_file(kDir + f, {});
    ASSERT_FALSE(r.bad_input) << r.diagnostic;
    EXPECT_TRUE(r.kernel.budget.has_config()) << f;
    EXPECT_EQ(count(r, "budget_mismatch") + count(r, "stages_lost") + count(r, "smem_over_capacity"), 0u) << f << "\n"
                                                                                                          << r.report;
  }
}

// ------------------------------------------------------------------ pipesim budget FILE
using Outcome = testing_support::BudgetRun;
Outcome budget(std::vector<std::string> args) { return testing_support::run_budget(std::move(args)); }

TEST(BudgetFile, JsonOfTheSeedBrokenScenario) {
  const Outcome r = budget({kDir + "budget/seed_lu_estimate_broken.scn", "--json"});
  EXPECT_EQ(r.code, 1) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["exit_code"], 1);
  EXPECT_EQ(j["stages"]["num_ab_stage"], 2);  // with the estimates, as the kernel runs
  EXPECT_EQ(j["solver"]["derived"]["num_ab_stage"], 4);
  const auto& s = j["scenario"];
  EXPECT_EQ(s["launch_smem"], 1024 + 5 * 8192 + 2 * 28672 + 2 * (32768 + 16384));
  EXPECT_EQ(s["declared_total"], s["launch_smem"]);
  bool saw_ab = false;
  for (const auto& p : s["pipelines"])
    if (p["pipeline"] == "ab") {
      saw_ab = true;
      EXPECT_EQ(p["declared"], 2);
      EXPECT_EQ(p["expected"], 4);
      EXPECT_EQ(p["lost"], 2);
    }
  EXPECT_TRUE(saw_ab);
  bool saw_lu = false;
  for (const auto& e : s["estimates"])
    if (e["operand"] == "LU") {
      saw_lu = true;
      EXPECT_EQ(e["bytes"], 32768);
      EXPECT_EQ(e["derived"], 16384);
      EXPECT_EQ(e["ratio"], 2.0);
      EXPECT_FALSE(e["matches"].get<bool>());
    }
  EXPECT_TRUE(saw_lu);
  std::vector<std::string> rules;
  for (const auto& f : s["findings"]) rules.push_back(f["rule"]);
  EXPECT_NE(std::find(rules.begin(), rules.end(), "stages_lost"), rules.end());
  EXPECT_NE(std::find(rules.begin(), rules.end(), "budget_mismatch"), rules.end());
}

TEST(BudgetFile, TableAndComparisonText) {
  const Outcome r = budget({kDir + "budget/seed_lu_estimate_broken.scn"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "shared memory (per CTA)")) << r.out;
  EXPECT_TRUE(has(r.out, "pipeline ab: stages = 2; solver with the derived footprints: num_ab_stage = 4 (2 → 4: 2 stages lost)"))
      << r.out;
  EXPECT_TRUE(has(r.out, "warning: [stages_lost]")) << r.out;
}

TEST(BudgetFile, ExitCodes) {
  EXPECT_EQ(budget({kDir + "budget/seed_lu_estimate_fixed.scn"}).code, 0);
  const Outcome over = budget({kDir + "budget/seed_lora_stages4_over_capacity.scn"});
  EXPECT_EQ(over.code, 2);
  EXPECT_TRUE(has(over.out, "the launch would fail: 271360 B requested, 232448 B available")) << over.out;
  const Outcome none = budget({kDir + "rules/uninit_ok.scn"});
  EXPECT_EQ(none.code, 2);
  EXPECT_TRUE(has(none.err, "has no 'config' line")) << none.err;
  const Outcome mixed = budget({kDir + "budget/seed_lu_estimate_fixed.scn", "--tile", "128x128"});
  EXPECT_EQ(mixed.code, 2);
  EXPECT_TRUE(has(mixed.err, "--tile with a scenario FILE")) << mixed.err;
  // -D reaches the scenario: 3 LoRA stages (seed sweep: (2, 3)) still agree with the scenario's own lets.
  EXPECT_EQ(budget({kDir + "budget/seed_lu_estimate_fixed.scn", "-D", "num_lora_stage=3"}).code, 0);
  // ... and before the FILE too: -D takes exactly one value, it does not swallow the file.
  EXPECT_EQ(budget({"-D", "num_lora_stage=3", kDir + "budget/seed_lu_estimate_fixed.scn"}).code, 0);
}

TEST(BudgetFile, DeviceNeedsAGpu) {
  const Outcome r = budget({kDir + "budget/seed_lu_estimate_fixed.scn", "--device"});
  if (r.code == 2) {
    EXPECT_TRUE(has(r.err, "--device: ")) << r.err;
  } else {
    EXPECT_TRUE(has(r.out, "device: ")) << r.out;  // a GPU is present: both limits are printed
  }
}

}  // namespace
}  // namespace pipesim::verify
