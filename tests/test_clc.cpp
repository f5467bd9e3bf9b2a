// Cluster launch control in the scenario language (docs/scenario-language.md, "Cluster launch
// control"): clc_try_cancel hands out the grid's clusters not yet launched, in launch order, through
// the engine that launches them; its response lands in an smem cell with complete_tx on a barrier, and
// read_without_wait judges who reads it. The CLC persistent GEMM of scenarios/blackwell/ and its broken
// twins give the verdicts below.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sim/stream.hpp"
#include "verify/check.hpp"

namespace pipesim::verify {
namespace {

namespace fs = std::filesystem;
const fs::path kScenarios = fs::path(PIPESIM_SOURCE_DIR) / "scenarios";

CheckResult check(const std::string& relpath) { return check_file((kScenarios / relpath).string(), {}); }

// 1-based number of the first line of the scenario containing `marker`.
uint32_t line_of(const std::string& relpath, const std::string& marker) {
  std::ifstream in(kScenarios / relpath);
  std::string line;
  for (uint32_t n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return n;
  ADD_FAILURE() << relpath << ": no line contains " << marker;
  return 0;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The warps of the run by (cta, warp).
std::map<std::pair<int, int>, const sim::WarpEnd*> by_warp(const CheckResult& r) {
  std::map<std::pair<int, int>, const sim::WarpEnd*> m;
  for (const sim::WarpEnd& w : r.result.warps) m[{w.cta, w.warp}] = &w;
  return m;
}

// Geometry of scenarios/blackwell/clc_gemm_*.scn: 222 two-CTA clusters on a B200 (148 SMs, one CTA
// each: 74 clusters resident); warps 0-3 epilogue, 4 MMA, 5 TMA, 6 scheduler.
constexpr int kClusters = 3 * 74, kResident = 74, kCluster = 2;
constexpr int kTma = 5, kScheduler = 6;

TEST(Clc, GemmOkHandsEveryNotLaunchedClusterToExactlyOneSchedulerAndEveryRoleDecodesTheSameWork) {
  const CheckResult r = check("blackwell/clc_gemm_ok.scn");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  const auto warps = by_warp(r);
  // Only the resident clusters launched; the others were cancelled, never started.
  std::set<int> started;
  for (const auto& [key, w] : warps) started.insert(key.first);
  EXPECT_EQ(started.size(), static_cast<size_t>(kResident * kCluster));
  EXPECT_EQ(*started.rbegin(), kResident * kCluster - 1);
  // The schedulers (rank 0) decoded the clusters 74..95 between them, each once, and each ended on -1.
  std::vector<int64_t> granted;
  for (int cl = 0; cl < kResident; ++cl) {
    const sim::WarpEnd& s = *warps.at({cl * kCluster, kScheduler});
    ASSERT_FALSE(s.loaded.empty());
    EXPECT_EQ(s.loaded.back(), -1) << "cluster " << cl;
    for (size_t i = 0; i + 1 < s.loaded.size(); ++i) granted.push_back(s.loaded[i]);
    // Every consumer warp of both CTAs read the same responses in the same order.
    for (int rank = 0; rank < kCluster; ++rank)
      for (int w = 0; w <= kTma; ++w)
        EXPECT_EQ(warps.at({cl * kCluster + rank, w})->loaded, s.loaded) << "cluster " << cl << " rank " << rank << " warp " << w;
  }
  std::sort(granted.begin(), granted.end());
  std::vector<int64_t> want;
  for (int c = kResident; c < kClusters; ++c) want.push_back(c);
  EXPECT_EQ(granted, want);
}

// The run's first finding, of a run that must end in an error of `kind`; nullptr (and a failure) otherwise.
const sim::Finding* first_error(const CheckResult& r, const std::string& kind) {
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  if (r.bad_input || r.result.findings.empty()) {
    ADD_FAILURE() << "no finding\n" << r.report;
    return nullptr;
  }
  EXPECT_EQ(r.result.findings.front().kind, kind);
  return &r.result.findings.front();
}

TEST(Clc, AConsumerDecodingWithoutItsWaitIsReadWithoutWait) {
  const std::string f = "blackwell/clc_gemm_read_without_wait_broken.scn";
  const CheckResult r = check(f);
  const sim::Finding* found = first_error(r, "read_without_wait");
  ASSERT_NE(found, nullptr);
  const sim::Finding& x = *found;
  EXPECT_LE(x.warp, 3) << "an epilogue warp";
  EXPECT_EQ(r.kernel.sites.at(x.site).loc.line, line_of(f, "BUG: no clc.consumer_wait"));
  EXPECT_TRUE(has(x.message, "is not ordered after the clusterlaunchcontrol.try_cancel response that landed in it (line " +
                                 std::to_string(line_of(f, "clc_try_cancel clc_response")) + ")"))
      << x.message;
  EXPECT_TRUE(has(r.report, "read_without_wait")) << r.report;
}

TEST(Clc, ASchedulerReArmingAStageNotReleasedRunsTheResponseBarrierPastItsConsumers) {
  const CheckResult r = check("blackwell/clc_gemm_no_empty_wait_broken.scn");
  const sim::Finding* found = first_error(r, "stale_wait");
  ASSERT_NE(found, nullptr);
  const sim::Finding& x = *found;
  EXPECT_NE(x.warp, kScheduler) << "a consumer finds the barrier ahead of it";
  EXPECT_TRUE(has(x.message, "wait on clc_full[")) << x.message;
  EXPECT_TRUE(has(x.message, "for its completion #1 (parity 0) while it has completed 2 phases")) << x.message;
}

TEST(Clc, ATmaWarpThatLoadsForTheNoMoreClustersResponseHangsInItsTail) {
  const std::string f = "blackwell/clc_gemm_done_ignored_broken.scn";
  const CheckResult r = check(f);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const uint32_t tail = line_of(f, "  ab.producer_tail");  // the statement, not the comment
  int stuck = 0;
  for (const sim::WarpEnd& w : r.result.warps) {
    if (w.status != sim::WarpStatus::Blocked) continue;
    EXPECT_EQ(w.warp, kTma) << "only TMA warps hang";
    EXPECT_EQ(r.kernel.sites.at(w.site).loc.line, tail);
    ++stuck;
  }
  EXPECT_EQ(stuck, kResident * kCluster) << "every CTA's TMA warp loaded a tile for -1";
}

TEST(Clc, TwoRolesDecodingOneResponseDifferentlyHangTheRingTheyShare) {
  // The TMA warp decodes the cluster id, the MMA warp the first CTA id (always even): for an odd
  // cluster the TMA warp loads one k-tile more than the MMA warp consumes.
  const std::string f = "blackwell/clc_gemm_decode_mismatch_broken.scn";
  const CheckResult r = check(f);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const uint32_t tail = line_of(f, "  ab.producer_tail");
  std::set<int> clusters;
  for (const sim::WarpEnd& w : r.result.warps) {
    if (w.status != sim::WarpStatus::Blocked) continue;
    EXPECT_EQ(w.warp, kTma);
    EXPECT_EQ(r.kernel.sites.at(w.site).loc.line, tail);
    clusters.insert(w.cta / kCluster);
  }
  // Exactly the clusters that were given an odd work unit (their own id or a cancelled one's) hang.
  const auto warps = by_warp(r);
  for (int cl = 0; cl < kResident; ++cl) {
    const std::vector<int64_t>& got = warps.at({cl * kCluster, kScheduler})->loaded;
    bool odd = cl % 2 == 1;
    for (int64_t c : got) odd = odd || (c >= 0 && c % 2 == 1);
    EXPECT_EQ(clusters.count(cl), odd ? 1u : 0u) << "cluster " << cl;
  }
}

TEST(Clc, AResponseWithoutMulticastLeavesTheOtherRanksWaitOnItsBarrier) {
  const std::string f = "blackwell/clc_gemm_no_multicast_broken.scn";
  const CheckResult r = check(f);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  // Rank 1's consumers wait on clc_full for a response that only rank 0 got.
  const auto warps = by_warp(r);
  for (int w : {0, 4, kTma}) {
    const sim::WarpEnd& x = *warps.at({1, w});
    EXPECT_EQ(x.status, sim::WarpStatus::Blocked) << "warp " << w;
    EXPECT_EQ(x.op.kind, sim::OpKind::Wait);
    EXPECT_EQ(r.kernel.barriers.at(x.op.bar.array).name, "clc_full");
  }
  EXPECT_TRUE(has(r.report, "clc_full")) << r.report;
}

// The smallest grid larger than the machine: 150 one-CTA clusters, 148 resident. Every resident warp
// asks once; the two clusters not launched go to the first two askers, the others get -1.
std::string one_ask(const std::string& arch, bool wait) {
  return "kernel t on " + arch +
         "\n"
         "launch ctas = 150, threads = 32\n"
         "barrier full count = 1\n"
         "smem response\n"
         "role w warp 0:\n"
         "  arrive_expect_tx full bytes = 16\n"
         "  clc_try_cancel response bar = full\n" +
         (wait ? "  wait full parity = 0\n" : "  compute 5 us\n") +
         "  var next = load response\n"
         "expect " +
         (wait ? "ok" : "error read_without_wait") + "\n";
}

TEST(Clc, TryCancelTakesTheClustersNotYetLaunchedInLaunchOrder) {
  const CheckResult r = check_text("inline.scn", one_ask("sm_100a", true), {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  std::multiset<int64_t> got;
  for (const sim::WarpEnd& w : r.result.warps) {
    EXPECT_LT(w.cta, 148) << "a cancelled cluster never launches";
    ASSERT_EQ(w.loaded.size(), 1u);
    got.insert(w.loaded.front());
  }
  EXPECT_EQ(r.result.warps.size(), 148u);
  EXPECT_EQ(got.count(148), 1u);
  EXPECT_EQ(got.count(149), 1u);
  EXPECT_EQ(got.count(-1), 146u);
}

TEST(Clc, AResponseReadAfterItLandedButWithoutTheWaitIsStillReadWithoutWait) {
  // Judged by order, not by the clock: 5 us is long past the landing.
  const CheckResult r = check_text("inline.scn", one_ask("sm_100a", false), {});
  const sim::Finding* x = first_error(r, "read_without_wait");
  ASSERT_NE(x, nullptr);
  EXPECT_TRUE(has(x->message, "no wait of this warp on full[0] has returned")) << x->message;
}

TEST(Clc, AResponseOverwrittenAfterTheWaitIsNotTheOneTheWarpWaitedFor) {
  // The warp waits for the first response, then cancels again into the same cell and reads without
  // waiting for the second: the cell holds the second, which its wait does not order.
  const std::string text =
      "kernel t on sm_100a\n"
      "launch ctas = 150, threads = 32\n"
      "barrier full count = 1\n"
      "smem response\n"
      "role w warp 0:\n"
      "  arrive_expect_tx full bytes = 16\n"
      "  clc_try_cancel response bar = full\n"
      "  wait full parity = 0\n"
      "  arrive_expect_tx full bytes = 16\n"
      "  clc_try_cancel response bar = full\n"
      "  compute 5 us\n"
      "  var next = load response\n"
      "expect error read_without_wait\n";
  const CheckResult r = check_text("inline.scn", text, {});
  const sim::Finding* found = first_error(r, "read_without_wait");
  ASSERT_NE(found, nullptr);
  const sim::Finding& x = *found;
  EXPECT_TRUE(has(x.message, "try_cancel response that landed in it (line 10)")) << x.message;
  bool overwritten = false;
  for (const std::string& n : x.notes)
    overwritten = overwritten || has(n, "this warp's latest wait on full[0] returned on completion 1; the response in the cell counts toward "
                                        "completion 2: a later try_cancel overwrote the response it waited for");
  EXPECT_TRUE(overwritten) << r.report;
}

TEST(Clc, TryCancelDoesNotRunOnTheDeviceInterpreterAndSaysSoAtTheStatement) {
  const CheckResult r = check_text("inline.scn", one_ask("sm_100a", true), {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  try {
    sim::materialise(r.kernel);
    ADD_FAILURE() << "expected StreamUnavailable";
  } catch (const sim::StreamUnavailable& e) {
    EXPECT_EQ(std::string(e.what()), "line 7: cluster launch control ('clc_try_cancel') does not run on the device interpreter");
  }
}

TEST(Clc, TryCancelOnAnArchitectureWithoutClcIsBadInputWithOneSentence) {
  const CheckResult r = check_text("inline.scn", one_ask("sm_90a", true), {});
  ASSERT_TRUE(r.bad_input);
  EXPECT_TRUE(has(r.diagnostic, "inline.scn:7:3: error: clusterlaunchcontrol.try_cancel needs sm_100a, sm_103a or sm_120a; "
                                "this kernel is on sm_90a"))
      << r.diagnostic;
}

TEST(Clc, TheResponseMustGoToAnSmemCell) {
  std::string text = one_ask("sm_100a", true);
  text.replace(text.find("clc_try_cancel response"), 23, "clc_try_cancel full");
  const CheckResult r = check_text("inline.scn", text, {});
  ASSERT_TRUE(r.bad_input);
  EXPECT_TRUE(has(r.diagnostic, "inline.scn:7:18: error: expected the smem cell the response lands in after 'clc_try_cancel', found"))
      << r.diagnostic;
}

}  // namespace
}  // namespace pipesim::verify
