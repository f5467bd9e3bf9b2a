// Blackwell (sm_100a) kernels from their PTX: tcgen05.alloc / mma / commit / ld / dealloc on the
// engine's Blackwell units. The kernels are our own (tests/data/ptx/umma.cu, umma_pair.cu, clc.cu; their PTX is
// committed so that these run without nvcc). No Blackwell GPU exists for this project: these verdicts
// are the model's, never checked on silicon.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "verify/check.hpp"

namespace pipesim::verify {
namespace {

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";

CheckResult check_kernel(const std::string& kernel, const std::string& entry, std::vector<std::string> sets = {}) {
  CheckOptions o;
  o.launch = kDir + kernel + ".launch.json";
  o.launch_sets = std::move(sets);
  o.launch_sets.push_back("entry=" + entry);
  return check_file(kDir + kernel + ".ptx", o);
}

// "FILE.cu:N:" for the `nth` line of the kernel's source holding `text`.
std::string at(const std::string& kernel, const std::string& text, int nth = 1) {
  std::ifstream in(kDir + kernel + ".cu");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos && --nth == 0) return kernel + ".cu:" + std::to_string(n) + ":";
  ADD_FAILURE() << "no line holds " << text;
  return "?";
}

const sim::HangGroup* group_waiting_on(const CheckResult& r, const std::string& barrier) {
  for (const sim::HangGroup& g : r.result.hang.groups)
    if (g.waits_on.rfind(barrier, 0) == 0) return &g;
  return nullptr;
}

const sim::Finding* fatal_finding(const CheckResult& r) {
  for (const sim::Finding& f : r.result.findings)
    if (f.fatal) return &f;
  return nullptr;
}

// ---- One CTA: umma.cu ------------------------------------------------------------------------------

TEST(PtxBlackwell, UmmaPipelineRunsToTheEndOnTheTensorPipe) {
  const CheckResult r = check_kernel("umma", "umma_ok");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  EXPECT_EQ(r.kernel.arch->name, "sm_100a");
  for (const sim::WarpEnd& w : r.result.warps) EXPECT_EQ(w.status, sim::WarpStatus::Exited);
  // 6 tiles x 8 k-blocks x 4 MMAs of 128x128x16 (f16) per CTA, on 4 SMs' tensor pipes: the run is at
  // least as long as one SM's share at the architecture's rate.
  const double flops = 6.0 * 8 * 4 * 2 * 128 * 128 * 16;
  const double rate = r.kernel.arch->mma_flops_per_clk[static_cast<size_t>(model::MmaKind::F16)] * r.kernel.arch->time.clock_ghz;
  EXPECT_GT(r.result.end_ns, flops / rate);
  EXPECT_GT(r.result.tensor_busy_ns, 0);
  // Every barrier the kernel initialised was found and completed: full/empty 4 each, acc 2 + 2.
  EXPECT_EQ(r.result.barrier_names.size(), 12u);
}

TEST(PtxBlackwell, AccumulatorProducerStartingAtPhaseZeroHangsTheMmaWarpAtItsWait) {
  const CheckResult r = check_kernel("umma", "umma_acc_phase_zero");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* mma = group_waiting_on(r, "acc_empty[0]");
  ASSERT_NE(mma, nullptr) << r.report;
  EXPECT_EQ(mma->members.front().second, 1);  // the MMA warp
  EXPECT_NE(r.kernel.sites.at(mma->site).origin.find(at("umma", "wait(&acc_empty[acc.index], acc.phase);")), std::string::npos)
      << r.kernel.sites.at(mma->site).origin;
  ASSERT_TRUE(mma->state.has_value());
  EXPECT_EQ(mma->state->completed, 0);  // no epilogue ever released it: it waits for phase 0 itself
}

TEST(PtxBlackwell, MissingCommitOfTheLastStageHangsTheTmaWarpsTail) {
  const CheckResult r = check_kernel("umma", "umma_skip_last_commit");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* tma = group_waiting_on(r, "empty[");
  ASSERT_NE(tma, nullptr) << r.report;
  EXPECT_EQ(tma->members.front().second, 0);
  EXPECT_NE(r.kernel.sites.at(tma->site).origin.find(at("umma", "wait(&empty[ps.index], ps.phase);", 2)), std::string::npos)
      << r.kernel.sites.at(tma->site).origin;  // the tail's wait, not the main loop's
  // The last arrival on it was a tcgen05.commit (the engine names the instruction).
  EXPECT_NE(r.report.find("tcgen05.commit"), std::string::npos) << r.report;
}

TEST(PtxBlackwell, AllocationNotGivenBackIsATmemLeakAtTheExit) {
  const CheckResult r = check_kernel("umma", "umma_no_dealloc");
  const sim::Finding* f = fatal_finding(r);
  ASSERT_NE(f, nullptr) << r.report;
  EXPECT_EQ(f->kind, "tmem_leak");
  EXPECT_NE(f->message.find("256 TMEM columns"), std::string::npos) << f->message;
}

TEST(PtxBlackwell, AllocationOfColumnsNotAPowerOfTwoIsRefusedAtTheAlloc) {
  const CheckResult r = check_kernel("umma", "umma_alloc_not_pow2");
  const sim::Finding* f = fatal_finding(r);
  ASSERT_NE(f, nullptr) << r.report;
  EXPECT_EQ(f->kind, "tmem_bad_alloc");
  EXPECT_NE(r.kernel.sites.at(f->site).origin.find(at("umma", "ptx::tcgen05_alloc(")), std::string::npos)
      << r.kernel.sites.at(f->site).origin;
}

TEST(PtxBlackwell, AccumulatorEmptyCountLargerThanTheEpilogueHangs) {
  const CheckResult r = check_kernel("umma", "umma_acc_empty_count_off");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* mma = group_waiting_on(r, "acc_empty[0]");
  ASSERT_NE(mma, nullptr) << r.report;
  ASSERT_TRUE(mma->state.has_value());
  EXPECT_EQ(mma->state->pending, 32);  // 160 expected, the 128 epilogue threads arrived
}

// ---- A CTA pair: umma_pair.cu (cta_group::2) -----------------------------------------------------

TEST(PtxBlackwellPair, PairPipelineRunsToTheEnd) {
  const CheckResult r = check_kernel("umma_pair", "umma_pair_ok");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  EXPECT_EQ(r.result.cta_group, 2);
  for (const sim::WarpEnd& w : r.result.warps) EXPECT_EQ(w.status, sim::WarpStatus::Exited);
  // No rule bent on the way: a correct pair kernel draws no warning either. (Its small ring leaves
  // room for more stages, which the budget reports: tests/test_ptx_budget.cpp.)
  for (const sim::Finding& f : r.result.findings)
    if (f.kind != "stages_lost") ADD_FAILURE() << f.kind << ": " << f.message;
  // Both CTAs' halves land on the leader's full barriers: its full[0] completed once per ring lap
  // (6 tiles x 8 k-blocks over 4 stages), the follower's never (nobody arms it).
  const auto full0 = [&](int cta) { return r.result.barriers.at(static_cast<size_t>(cta)).at(0); };
  EXPECT_EQ(full0(0).completed, 6 * 8 / 4);
  EXPECT_EQ(full0(1).completed, 0);
}

TEST(PtxBlackwellPair, FollowerArmingTheLeadersBarrierTooIsAnArrivalTooMany) {
  const CheckResult r = check_kernel("umma_pair", "umma_pair_follower_expect_tx");
  const sim::Finding* f = fatal_finding(r);
  ASSERT_NE(f, nullptr) << r.report;
  EXPECT_EQ(f->kind, "pending_underflow");
  EXPECT_EQ(f->cta % 2, 1);  // the follower's arrive is the one too many
  EXPECT_NE(r.kernel.sites.at(f->site).origin.find(at("umma_pair", "::\"r\"(in_rank(&full[ps.index], 0))")), std::string::npos)
      << r.kernel.sites.at(f->site).origin;
}

TEST(PtxBlackwellPair, LeaderExpectingOnlyItsOwnHalfCompletesThePhaseEarly) {
  const CheckResult r = check_kernel("umma_pair", "umma_pair_tx_without_pair");
  const sim::Finding* f = fatal_finding(r);
  ASSERT_NE(f, nullptr) << r.report;
  EXPECT_EQ(f->kind, "early_completion");
  EXPECT_NE(r.kernel.sites.at(f->site).origin.find(at("umma_pair", "ptx::cp_async_bulk_tensor(")), std::string::npos)
      << r.kernel.sites.at(f->site).origin;
}

TEST(PtxBlackwellPair, StageReleaseReachingOnlyTheLeaderHangsTheFollowersTmaWarp) {
  const CheckResult r = check_kernel("umma_pair", "umma_pair_commit_leader_only");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  bool follower_tma_waits = false;
  for (const sim::HangGroup& g : r.result.hang.groups)
    for (const auto& [cta, warp] : g.members)
      if (cta % 2 == 1 && warp == 0 && g.waits_on.rfind("empty[", 0) == 0) follower_tma_waits = true;
  EXPECT_TRUE(follower_tma_waits) << r.report;
}

// The pair's tcgen05.alloc is collective: the leader's MMA warp, the only one to issue it, waits there
// for its peer, which never does; the rest of the leader waits for it at __syncthreads.
TEST(PtxBlackwellPair, PairAllocationIssuedByTheLeaderOnlyWaitsForThePeer) {
  const CheckResult r = check_kernel("umma_pair", "umma_pair_alloc_leader_only");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  bool leader_waits_for_peer = false;
  for (const sim::HangGroup& g : r.result.hang.groups)
    for (const auto& [cta, warp] : g.members)
      if (cta % 2 == 0 && warp == 1 && g.waits_on == "the pair peer's tcgen05.alloc.cta_group::2 (256 columns)") {
        leader_waits_for_peer = true;
        EXPECT_NE(r.kernel.sites.at(g.site).origin.find(at("umma_pair", "ptx::tcgen05_alloc(")), std::string::npos)
            << r.kernel.sites.at(g.site).origin;
      }
  EXPECT_TRUE(leader_waits_for_peer) << r.report;
  EXPECT_NE(r.report.find("has not issued it"), std::string::npos) << r.report;
}

// ---- Cluster launch control: clc.cu -----------------------------------------------------------------

TEST(PtxBlackwellClc, PersistentCtasTakeOverTheCtasThatHaveNotLaunched) {
  const CheckResult r = check_kernel("clc", "clc_ok");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  // 400 CTAs of ~200 KB shared memory: one per SM, 148 run; try_cancel hands the other 252 to them, so
  // none of those ever launches (and the grid still ends: no cluster is left waiting to start).
  std::set<int> ran;
  for (const sim::WarpEnd& w : r.result.warps) ran.insert(w.cta);
  EXPECT_EQ(ran.size(), static_cast<size_t>(r.kernel.arch->cap.sms));
  EXPECT_EQ(r.result.hang.unlaunched_clusters, 0);
}

TEST(PtxBlackwellClc, ResponseWithoutExpectTxLeavesTheBarrierShortAndHangs) {
  const CheckResult r = check_kernel("clc", "clc_no_expect_tx");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  ASSERT_EQ(r.result.hang.groups.size(), 1u);
  const sim::HangGroup& g = r.result.hang.groups.front();
  ASSERT_TRUE(g.state.has_value());
  EXPECT_EQ(g.state->tx, -16);  // the response's 16 bytes, never expected
  EXPECT_NE(r.kernel.sites.at(g.site).origin.find(at("clc", "wait(&bar, phase);")), std::string::npos);
}

TEST(PtxBlackwellClc, WaitThatKeepsItsParityArmsTheBarrierTwiceInOnePhase) {
  const CheckResult r = check_kernel("clc", "clc_parity_not_flipped");
  const sim::Finding* f = fatal_finding(r);
  ASSERT_NE(f, nullptr) << r.report;
  EXPECT_EQ(f->kind, "pending_underflow");
}

TEST(PtxBlackwell, TcgenInstructionOnHopperIsRefused) {
  CheckOptions o;
  o.launch = kDir + "umma.launch.json";
  o.launch_sets = {"arch=sm_90a"};
  const CheckResult r = check_file(kDir + "umma.ptx", o);
  ASSERT_TRUE(r.bad_input) << r.report;
  EXPECT_NE(r.diagnostic.find("sm_100a"), std::string::npos) << r.diagnostic;
}

}  // namespace
}  // namespace pipesim::verify
