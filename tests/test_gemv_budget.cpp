// The NVFP4 GEMV kernel's budget (model/gemv_budget.hpp): `pipesim budget --gemv`, and scenarios with
// `config gemv = M x K x L`. Expected layouts are computed here from the layout rules docs/gemv.md
// states (barrier block, 128-aligned stages, vector buffers, row sums), not read back from the plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "budget_cli.hpp"
#include "model/gemv_budget.hpp"
#include "verify/check.hpp"
#include "verify/parser.hpp"

namespace pipesim::verify {
namespace {

namespace pm = pipesim::model;

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/scenarios/";
bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
int64_t up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The layout of an all-static plan with S stages of 32 KiB, by the rules of docs/gemv.md: barrier
// block (2S + 4 + 2·4 + 1 mbarriers, flag, S + 4 headers of 16 B, one done counter) rounded to 128;
// stages of 32768 A + (4096 + 32) SFA room, 128-aligned; per slot a decoded vector of k·e + k/16·4 and
// a raw one of k/2 + k/16 + 32, each 128-aligned; 16 warps × rows floats of row sums; 128 B of base slack.
int64_t layout(int64_t m, int64_t k, int64_t l, int sms, int elem, int stages) {
  const int64_t bars = up(16 * stages + 32 + 16 + 16 * stages + 16 * 4 + 8 * 4 + 8 * 4 + 8 + 4, 128);
  const int64_t ring = up(32768 + up(4096 + 32, 16), 128) * stages;
  const int64_t slots = l > 1 ? 2 : 1;
  const int64_t vec = slots * (up(k * elem + k / 16 * 4, 128) + up(k / 2 + k / 16 + 32, 128));
  const int64_t rows = cdiv(l * m, sms);
  return 128 + bars + ring + vec + up(16 * rows * 4, 128);
}

TEST(GemvBudget, LayoutOfTheBenchmarkShapesByHand) {
  struct Case {
    pm::GemvShape s;
    const char* arch;
    int sms, elem;
  };
  for (const Case& c : {Case{{7168, 16384, 1}, "sm_90a", 132, 1}, Case{{4096, 7168, 8}, "sm_90a", 132, 1},
                        Case{{7168, 2048, 4}, "sm_90a", 132, 1}, Case{{7168, 2048, 4}, "sm_100a", 148, 2},
                        Case{{4096, 7168, 8}, "sm_100a", 148, 2}}) {
    pm::GemvBudgetConfig cfg;
    cfg.shape = c.s;
    cfg.arch = c.arch;
    const pm::GemvBudget b = pm::check_gemv_budget(cfg);
    ASSERT_TRUE(b.valid) << pm::format_gemv_budget(b);
    EXPECT_EQ(b.plan.stages, 4);
    EXPECT_EQ(b.total, layout(c.s.m, c.s.k, c.s.l, c.sms, c.elem, 4)) << c.arch << " " << c.s.k;
    int64_t sum = 0;
    for (const pm::BufferLine& l : b.buffers) sum += l.allocated;
    EXPECT_EQ(sum, b.total);
    // The most stages that fit: the largest S whose layout is within the per-block limit.
    int fit = 0;
    for (int st = 2; st <= 64; ++st)
      if (layout(c.s.m, c.s.k, c.s.l, c.sms, c.elem, st) <= 232448) fit = st;
    EXPECT_EQ(b.max_stages, fit);
    EXPECT_EQ(b.exit_code(), 0) << pm::format_gemv_budget(b);
  }
  // The documented figures (docs/gemv.md): 181 888 / 190 592 / 170 112 B on the H100.
  EXPECT_EQ(layout(7168, 16384, 1, 132, 1, 4), 181888);
  EXPECT_EQ(layout(4096, 7168, 8, 132, 1, 4), 190592);
  EXPECT_EQ(layout(7168, 2048, 4, 132, 1, 4), 170112);
}

TEST(GemvBudget, FixedStagesOverTheLimitCannotLaunch) {
  pm::GemvBudgetConfig cfg;
  cfg.shape = {7168, 2048, 4};
  cfg.arch = "sm_90a";
  cfg.stages = 6;
  const pm::GemvBudget b = pm::check_gemv_budget(cfg);
  EXPECT_EQ(b.total, layout(7168, 2048, 4, 132, 1, 6));
  EXPECT_EQ(b.exit_code(), 2);
  EXPECT_TRUE(has(pm::format_gemv_budget(b), "the launch would fail: 244096 B of shared memory requested, 232448 B "
                                             "available (6 stages of 36992 B; at most 5 fit)"))
      << pm::format_gemv_budget(b);
  cfg.stages = 5;
  EXPECT_EQ(pm::check_gemv_budget(cfg).exit_code(), 0);
}

TEST(GemvBudget, RegistersAgainstTheFile) {
  pm::GemvBudgetConfig cfg;
  cfg.shape = {7168, 16384, 1};
  cfg.arch = "sm_90a";
  cfg.regs_per_thread = 95;  // allocated as 96 per thread: 18 warps × 3072 = 55296
  pm::GemvBudget b = pm::check_gemv_budget(cfg);
  EXPECT_EQ(b.regs.regs_per_cta, 18 * 3072);
  EXPECT_EQ(b.occupancy.achieved, 1);
  EXPECT_EQ(b.exit_code(), 0);
  cfg.regs_per_thread = 120;  // 576 × 120 = 69120 > 65536
  b = pm::check_gemv_budget(cfg);
  EXPECT_EQ(b.exit_code(), 2);
  EXPECT_TRUE(has(pm::format_gemv_budget(b), "69120 registers per CTA")) << pm::format_gemv_budget(b);
}

TEST(GemvBudget, ArchitecturesTheKernelIsNotBuiltFor) {
  pm::GemvBudgetConfig cfg;
  cfg.shape = {7168, 2048, 4};
  cfg.arch = "sm_120a";  // 99 KiB per block: fewer or smaller stages
  const pm::GemvBudget b = pm::check_gemv_budget(cfg);
  ASSERT_TRUE(b.valid);
  EXPECT_LE(b.total, 101376);
  EXPECT_EQ(b.exit_code(), 1);
  EXPECT_TRUE(has(pm::format_gemv_budget(b), "compiled for sm_90a and sm_100a, not sm_120a"));
}

// ------------------------------------------------------------------ the command
using Outcome = testing_support::BudgetRun;
Outcome budget(std::vector<std::string> args) { return testing_support::run_budget(std::move(args)); }

TEST(GemvBudgetCommand, TableAndJson) {
  const Outcome t = budget({"--gemv", "7168x2048x4", "--arch", "sm_90a", "--regs", "96"});
  EXPECT_EQ(t.code, 0) << t.err;
  EXPECT_TRUE(has(t.out, "budget: sm_90a NVFP4 GEMV m 7168 k 2048 l 4")) << t.out;
  EXPECT_TRUE(has(t.out, "170112")) << t.out;
  EXPECT_TRUE(has(t.out, "tensor memory: none")) << t.out;
  const Outcome j = budget({"--gemv", "7168x2048x4", "--arch", "sm_90a", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const auto x = nlohmann::json::parse(j.out);
  EXPECT_EQ(x["kernel"], "gemv_nvfp4");
  EXPECT_EQ(x["smem"]["total"], 170112);
  EXPECT_EQ(x["smem"]["capacity"], 232448);
  EXPECT_EQ(x["stages"]["ab"], 4);
  EXPECT_EQ(x["stages"]["max_ab_stages"], 5);
  EXPECT_EQ(x["stages"]["stage_tx_bytes"], 32768 + 4096);
  EXPECT_EQ(x["stages"]["vector_tx_bytes"], 1024 + 128);
  EXPECT_EQ(x["launch"]["ctas"], 132);
  EXPECT_EQ(x["launch"]["threads"], 576);
}

TEST(GemvBudgetCommand, BadInputSaysWhat) {
  struct Case {
    std::vector<std::string> args;
    std::string want;
  };
  const std::vector<Case> cases{
      {{"--gemv", "7168x2000x4"}, "gemv: k must be a multiple of 64"},
      {{"--gemv", "7168x2048"}, "gemv: expected the shape MxKxL"},
      {{"--gemv", "0x2048x4"}, "gemv: m, k and l must be at least 1"},
      {{"--gemv", "7168x2048x4", "--tile", "128x128"}, "--tile does not apply to --gemv"},
      {{"--gemv", "7168x2048x4", "--arch", "sm_99a"}, "arch: unknown 'sm_99a'"},
      {{"--gemv", "7168x2048x4", "--stage-bytes", "1000"}, "stage-bytes: must be a multiple of 512"},
      {{"--gemv", "7168x2048x4", "--ab-stages", "1"}, "ab-stages: expected auto or a stage count in [2, 64]"},
      {{"--stage-bytes", "1024"}, "--stage-bytes applies to --gemv only"},
      {{"--gemv", "7168x2048x4", "--hand", "A=1"}, "--hand does not apply to --gemv"},
  };
  for (const Case& c : cases) {
    const Outcome r = budget(c.args);
    EXPECT_EQ(r.code, 2) << c.want;
    EXPECT_TRUE(has(r.err, c.want)) << "want: " << c.want << "\ngot: " << r.err;
  }
}

// ------------------------------------------------------------------ scenarios
const sim::Finding* find(const CheckResult& r, const std::string& rule) {
  for (const sim::Finding& f : r.result.findings)
    if (f.kind == rule) return &f;
  return nullptr;
}

CheckResult check_gemv(const std::string& define = "") {
  CheckOptions o;
  if (!define.empty()) {
    std::string bad;
    EXPECT_TRUE(parse_defines({define}, o.defines, bad)) << bad;
  }
  return check_file(kDir + "gemv_nvfp4/7168x2048x4.scn", o);
}

TEST(GemvScenarioBudget, ShippedScenariosAgreeWithThePlan) {
  for (const char* f : {"7168x16384x1", "4096x7168x8", "7168x2048x4", "7168x16384x1_broken_producer_phase",
                        "4096x7168x8_broken_producer_phase", "7168x2048x4_broken_producer_phase"}) {
    const CheckResult r = check_file(kDir + "gemv_nvfp4/" + f + ".scn", CheckOptions{});
    ASSERT_FALSE(r.bad_input) << r.diagnostic;
    for (const char* rule : {"budget_mismatch", "stages_lost", "smem_over_capacity"})
      EXPECT_EQ(find(r, rule), nullptr) << f << ": " << rule << "\n" << r.report;
  }
}

TEST(GemvScenarioBudget, EachDepartureFromThePlanIsFound) {
  struct Case {
    std::string define, rule, message;
  };
  const std::vector<Case> cases{
      {"STAGES=3", "stages_lost", "pipeline ab: stages = 3, but the plan streams through 4: 1 stage lost"},
      {"STAGES=5", "budget_mismatch", "pipeline ab: stages = 5, but the kernel is built with 4"},
      {"SA=16384", "budget_mismatch", "pipeline ab: tx = 18432 B, but a full stage carries 36864 B"},
      {"SMS=100", "budget_mismatch", "launch ctas = 100, but the kernel launches 132"},
      {"VSTAGES=1", "budget_mismatch", "pipeline vec: stages = 1, but the kernel has 2 vector slots"},
      {"K=4096", "budget_mismatch", "launch smem = 170112 B, but the kernel's layout with these stages is"},
  };
  for (const Case& c : cases) {
    const CheckResult r = check_gemv(c.define);
    ASSERT_FALSE(r.bad_input) << c.define << ": " << r.diagnostic;
    bool found = false;
    for (const sim::Finding& f : r.result.findings)
      if (f.kind == c.rule && has(f.message, c.message)) found = true;
    EXPECT_TRUE(found) << c.define << ": want [" << c.rule << "] " << c.message << "\n" << r.report;
  }
}

TEST(GemvScenarioBudget, StagesThatDoNotFitAreTheVerdict) {
  const CheckResult r = check_gemv("STAGES=7");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  const sim::Finding* f = find(r, "smem_over_capacity");
  ASSERT_NE(f, nullptr) << r.report;
  EXPECT_TRUE(f->fatal);
  EXPECT_TRUE(has(f->message, "the launch would fail: " + std::to_string(layout(7168, 2048, 4, 132, 1, 7)) +
                                  " B requested, 232448 B available on sm_90a"))
      << f->message;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Error);
}

TEST(GemvScenarioBudget, BadConfigNamesTheSpot) {
  const std::string head = "kernel g on sm_90a\nlet M = 7168, K = 2048, L = 4\nlaunch ctas = 132, threads = 576\n";
  const std::string tail = "pipeline ab : tma -> threads, stages = 4, tx = 36864, consumers = 16 warps\n"
                           "role p warp 0:\n  ab.producer_tail\nexpect ok\n";
  struct Case {
    std::string config, want;
  };
  const std::vector<Case> cases{
      {"config gemv = M x 2000 x L", "inline.scn:4:15: error: config: gemv: k must be a multiple of 64"},
      {"config gemv = M x K x L, tile = 128x128", "inline.scn:4:26: error: 'tile' does not apply to a GEMV configuration"},
      {"config tile = 128x128, stage_bytes = 1024", "inline.scn:4:24: error: 'stage_bytes' applies to a GEMV configuration only"},
      {"config gemv = M x K", "inline.scn:4:15: error: config: gemv: expected the shape MxKxL"},
  };
  for (const Case& c : cases) {
    std::string err = "(no error)";
    try {
      parse_scenario("inline.scn", head + c.config + "\n" + tail);
    } catch (const ParseError& e) {
      err = e.what();
    }
    EXPECT_EQ(err.rfind(c.want, 0), 0u) << "want: " << c.want << "\ngot:  " << err;
  }
}

TEST(GemvScenarioBudget, ThreadsAndMissingRing) {
  const std::string text = "kernel g on sm_90a\nlet M = 7168, K = 2048, L = 4\nlaunch ctas = 132, threads = 608\n"
                           "config gemv = M x K x L\n"
                           "role p warp 0:\n  compute 1 ns\nexpect ok\n";
  const CheckResult r = check_text("inline.scn", text, {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  std::vector<std::string> messages;
  for (const sim::Finding& f : r.result.findings)
    if (f.kind == "budget_mismatch") messages.push_back(f.message);
  auto saw = [&](const std::string& part) {
    return std::any_of(messages.begin(), messages.end(), [&](const std::string& m) { return has(m, part); });
  };
  EXPECT_TRUE(saw("launch threads = 608, but the kernel launches 576")) << r.report;
  EXPECT_TRUE(saw("no `tma -> threads` pipeline holds the A + SFA stages")) << r.report;
}

TEST(GemvScenarioBudget, BudgetFileJson) {
  const Outcome r = budget({kDir + "gemv_nvfp4/7168x2048x4.scn", "--json"});
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kernel"], "gemv_nvfp4");
  EXPECT_EQ(j["smem"]["total"], 170112);
  EXPECT_EQ(j["scenario"]["launch_smem"], 170112);
  EXPECT_EQ(j["scenario"]["declared_total"], 170112);
  EXPECT_EQ(j["registers"]["regs_per_thread"], 96);
  ASSERT_EQ(j["scenario"]["pipelines"].size(), 2u);
  EXPECT_EQ(j["scenario"]["findings"].size(), 0u);
  const Outcome over = budget({kDir + "gemv_nvfp4/7168x2048x4.scn", "-D", "STAGES=7"});
  EXPECT_EQ(over.code, 2);
  EXPECT_TRUE(has(over.out, "[smem_over_capacity]")) << over.out;
}

}  // namespace
}  // namespace pipesim::verify
