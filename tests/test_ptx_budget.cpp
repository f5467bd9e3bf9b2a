// The budget `pipesim check` reads from a PTX kernel's own run (verify/ptx_budget.hpp,
// verify/ptx/run_use.hpp): shared memory declared and touched, TMA rings inferred from the mbarriers
// their copies complete on, store buffers, TMEM, and `stages_lost` when a ring has room to grow.
// The kernels are tests/data/ptx/ring_budget.cu (a two-stage ring in three launches) and
// umma_pair.cu (a 2-CTA ring); their PTX is committed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "verify/check.hpp"
#include "verify/json_report.hpp"
#include "verify/ptx_budget.hpp"

namespace pipesim::verify {
namespace {

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";

CheckResult check_kernel(const std::string& kernel, std::vector<std::string> sets = {}) {
  CheckOptions o;
  o.launch = kDir + kernel + ".launch.json";
  o.launch_sets = std::move(sets);
  return check_file(kDir + kernel + ".ptx", o);
}

std::vector<const sim::Finding*> stages_lost(const CheckResult& r) {
  std::vector<const sim::Finding*> out;
  for (const sim::Finding& f : r.result.findings)
    if (f.kind == "stages_lost") out.push_back(&f);
  return out;
}

// sm_90a: 232448 B a CTA may hold at 1 CTA per SM (model/arch); the kernels' barriers are 32 B of
// static shared memory, the ring 2 stages of 16384 B.
constexpr int64_t kCapacity = 232448, kStatic = 32, kStage = 16384;

TEST(PtxBudget, TwoStageRingWithRoomForMoreLosesStages) {
  const CheckResult r = check_kernel("ring_budget");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  ASSERT_NE(r.ptx_budget, nullptr);
  const PtxBudget& b = *r.ptx_budget;
  EXPECT_EQ(b.smem_static, kStatic);
  EXPECT_EQ(b.smem_dynamic, 2 * kStage);
  EXPECT_EQ(b.capacity, kCapacity);
  EXPECT_EQ(b.left, kCapacity - kStatic - 2 * kStage);
  // The dynamic area starts at 128 (its alignment); the ring's stages are its first 32 KiB.
  EXPECT_EQ(b.smem_touched, 128 + 2 * kStage);
  ASSERT_EQ(b.rings.size(), 1u) << r.report;
  const ptx::TmaRing& ring = b.rings.front();
  EXPECT_EQ(ring.stages(), 2);
  EXPECT_EQ(ring.stride, 8u);
  EXPECT_EQ(ring.init_count, 1);
  EXPECT_EQ(ring.stage_bytes, kStage);
  EXPECT_EQ(ring.expected_bytes, kStage);
  EXPECT_EQ(ring.phases, 4);  // 8 tiles over 2 stages
  EXPECT_EQ(ring.buffer_lo, 128u);
  EXPECT_EQ(ring.buffer_hi, 128u + 2 * kStage);
  EXPECT_FALSE(b.stores.has_value());
  EXPECT_EQ(b.tmem_columns, 0);

  const auto lost = stages_lost(r);
  ASSERT_EQ(lost.size(), 1u) << r.report;
  EXPECT_FALSE(lost.front()->fatal);
  EXPECT_EQ(lost.front()->message, "ring full[0..1] has 2 stages of 16384 B; 12 more fit in the 199648 B left");
  // At the ring's first mbarrier.init, in the kernel's source.
  EXPECT_NE(r.kernel.sites.at(lost.front()->site).origin.find("ring_budget.cu:"), std::string::npos);
  EXPECT_EQ(r.kernel.sites.at(lost.front()->site).what.rfind("mbarrier.init", 0), 0u) << r.kernel.sites.at(lost.front()->site).what;
  EXPECT_NE(r.report.find("warning: [stages_lost] ring full[0..1] has 2 stages"), std::string::npos) << r.report;
  EXPECT_NE(r.report.find("budget: shared memory 32800 B declared (32 static + 32768 dynamic), 32896 B touched, of 232448 B"),
            std::string::npos)
      << r.report;
  EXPECT_NE(r.report.find("  TMA ring full[0..1]: 2 stages of 16384 B per CTA"), std::string::npos) << r.report;
}

TEST(PtxBudget, RingWithoutRoomForAnotherStageLosesNone) {
  const CheckResult r = check_kernel("ring_budget", {"entry=ring_full", "smem=221184"});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  const PtxBudget& b = *r.ptx_budget;
  EXPECT_EQ(b.left, kCapacity - kStatic - 221184);
  EXPECT_LT(b.left, kStage);
  EXPECT_EQ(b.smem_touched, 128 + 221184);  // the staging area's last bytes
  ASSERT_EQ(b.rings.size(), 1u);
  EXPECT_EQ(b.rings.front().stages(), 2);
  EXPECT_EQ(b.more_stages.front(), 0);
  EXPECT_TRUE(stages_lost(r).empty()) << r.report;
  for (const sim::Finding& f : r.result.findings) ADD_FAILURE() << f.kind << ": " << f.message;
}

TEST(PtxBudget, StoreBuffersAboveTwoAreStagesTheSolverGivesTheRing) {
  const CheckResult r = check_kernel("ring_budget", {"entry=ring_stores", "smem=98304"});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  const PtxBudget& b = *r.ptx_budget;
  ASSERT_TRUE(b.stores.has_value());
  EXPECT_EQ(b.stores->buffers, 4);
  EXPECT_EQ(b.stores->bytes, 16384);
  EXPECT_EQ(b.stores->stride, 16384u);
  EXPECT_EQ(b.stores->lo, 128u + 2 * kStage);
  ASSERT_TRUE(b.solver.has_value());
  EXPECT_EQ(b.solver->other_bytes, kStatic);
  // (232448 − 32 − 2 × 16384) // 16384 = 12 A/B stages; 2 store buffers and 3040 B over.
  EXPECT_EQ(b.solver->num_ab_stage, 12);
  EXPECT_EQ(b.solver->num_c_stage, 2);
  const auto lost = stages_lost(r);
  ASSERT_EQ(lost.size(), 1u) << r.report;
  EXPECT_EQ(lost.front()->message, "ring full[0..1] has 2 stages of 16384 B; 8 more fit in the 134112 B left");
  bool solver_note = false;
  for (const std::string& n : lost.front()->notes)
    solver_note |= n.find("num_ab_stage 2 → 12: 10 stages lost; num_c_stage 4 → 2 (the kernel's 4 store buffers of 16384 B)") != std::string::npos;
  EXPECT_TRUE(solver_note) << r.report;
}

TEST(PtxBudget, PairRingCountsOneCtasBytesPerStageAndThePairsPerPhase) {
  const CheckResult r = check_kernel("umma_pair", {"entry=umma_pair_ok"});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  const PtxBudget& b = *r.ptx_budget;
  ASSERT_EQ(b.rings.size(), 1u) << r.report;
  const ptx::TmaRing& ring = b.rings.front();
  EXPECT_EQ(ring.stages(), 4);
  EXPECT_EQ(ring.stage_bytes, 64 * 128 * 2);       // one CTA's half: one TMA box
  EXPECT_EQ(ring.expected_bytes, 2 * 64 * 128 * 2);  // the leader arms for both CTAs
  EXPECT_EQ(b.tmem_columns, 256);
  EXPECT_TRUE(b.tmem_cta_group2);
  EXPECT_EQ(b.tmem_capacity, 512);
}

TEST(PtxBudget, JsonCarriesTheBudgetAndScenariosHaveNone) {
  const CheckResult r = check_kernel("ring_budget");
  const nlohmann::json j = to_json(r);
  ASSERT_TRUE(j.at("budget").is_object()) << j.dump(2);
  EXPECT_EQ(j["budget"]["smem"]["declared"], kStatic + 2 * kStage);
  EXPECT_EQ(j["budget"]["smem"]["left"], kCapacity - kStatic - 2 * kStage);
  EXPECT_EQ(j["budget"]["rings"][0]["stages"], 2);
  EXPECT_EQ(j["budget"]["rings"][0]["stage_bytes"], kStage);
  EXPECT_EQ(j["budget"]["rings"][0]["more_stages"], 12);
  EXPECT_EQ(j["budget"]["rings"][0]["barriers"], "full[0..1]");
  EXPECT_TRUE(j["budget"]["store_buffers"].is_null());
  EXPECT_TRUE(j["budget"]["tmem"].is_null());

  const CheckResult s = check_file(std::string(PIPESIM_SOURCE_DIR) + "/scenarios/rules/stages_lost_broken.scn", {});
  ASSERT_FALSE(s.bad_input) << s.diagnostic;
  EXPECT_TRUE(to_json(s).at("budget").is_null());
}

}  // namespace
}  // namespace pipesim::verify
