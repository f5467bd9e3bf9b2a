// wgmma.mma_async as the warpgroup collective it is (Engine::do_wgmma): a warp's issue stalls until all
// four warps have issued it (as on the H100: docs/runs/mmaprobe-lag-h100-2026-11-26.txt), so a sibling
// that never issues hangs the others at their wgmma, and siblings issuing different wgmmas fault.
// Both ways in reach it: a PTX kernel's wgmma.mma_async and the scenario language's `wgmma`.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "verify/check.hpp"

namespace pipesim::verify {
namespace {

// Warps 0-2 issue one wgmma, commit and wait for it; warp 3 sleeps 20 us first and then, by `mode`:
// 0 issues the same wgmma, 1 exits without issuing, 2 issues a narrower one.
const char* kKernel = R"(.version 8.4
.target sm_90a
.address_size 64

.visible .entry wg(.param .u32 mode)
{
  .reg .pred %p<4>;
  .reg .b32 %r<4>;
  .reg .b64 %rd<2>;
  .reg .f32 %f<3>;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 5;
  ld.param.u32 %r3, [mode];
  mov.u64 %rd1, 0;
  setp.ne.u32 %p1, %r2, 3;
  @%p1 bra $L_issue;
  nanosleep.u32 20000;
  setp.eq.u32 %p2, %r3, 1;
  @%p2 bra $L_done;
  setp.eq.u32 %p3, %r3, 2;
  @%p3 bra $L_narrow;
$L_issue:
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f1, %f2}, %rd1, %rd1, 1, 1, 1, 0, 0;
  bra.uni $L_commit;
$L_narrow:
  wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f1, %f2}, %rd1, %rd1, 1, 1, 1, 0, 0;
$L_commit:
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
$L_done:
  ret;
}
)";

CheckResult check_mode(int mode) {
  const std::string path = testing::TempDir() + "/wgmma_collective.ptx";
  std::ofstream(path, std::ios::binary) << kKernel;
  CheckOptions o;
  o.launch_sets = {"entry=wg", "grid=1", "block=128", "param.mode=" + std::to_string(mode)};
  return check_file(path, o);
}

TEST(WgmmaCollective, TheIssueStallsUntilTheLastWarpIssues) {
  const CheckResult r = check_mode(0);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  ASSERT_EQ(r.result.warps.size(), 4u);
  // Warps 0-2 reached their wgmma at once, but it ran only after warp 3's 20 us sleep.
  for (int w = 0; w < 3; ++w) EXPECT_GE(r.result.warps[static_cast<size_t>(w)].exited_ns, 20'000.0) << "warp " << w;
}

TEST(WgmmaCollective, ASiblingThatNeverIssuesHangsTheOthersAtTheirWgmma) {
  const CheckResult r = check_mode(1);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  ASSERT_EQ(r.result.hang.groups.size(), 1u) << r.report;
  const sim::HangGroup& g = r.result.hang.groups.front();
  EXPECT_EQ(g.members.size(), 3u);
  EXPECT_NE(g.waits_on.find("a wgmma of its warpgroup that warp 3 of this CTA has not issued"), std::string::npos) << g.waits_on;
  EXPECT_EQ(r.kernel.sites.at(g.site).what.find("wgmma.mma_async"), 0u) << r.kernel.sites.at(g.site).what;
}

TEST(WgmmaCollective, SiblingsIssuingDifferentShapesFault) {
  const CheckResult r = check_mode(2);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  bool found = false;
  for (const sim::Finding& f : r.result.findings)
    if (f.kind == "wgmma_mismatch") {
      found = true;
      EXPECT_NE(f.message.find("this warp's wgmma m64n64k16.f16 differs from m64n128k16.f16, which warp 0 of its warpgroup issued at"),
                std::string::npos)
          << f.message;
    }
  EXPECT_TRUE(found) << r.report;
}

// ---------------------------------------------------------------- the scenario statement
// Two warpgroups; warp 3 computes LATE ns before its MMAs, and issues them only when SKIP is 0.
std::string scenario(int threads, int late_ns, bool skip) {
  return "kernel wg on sm_90a\n"
         "launch ctas = 1, threads = " + std::to_string(threads) + "\n"
         "role math warps 0.." + std::to_string(threads / 32 - 1) + ":\n"
         "  if warp == 3:\n"
         "    compute " + std::to_string(late_ns) + " ns\n"
         "  if warp != 3 || " + std::string(skip ? "0" : "1") + ":\n"
         "    wgmma kind = f16 n = 256 k = 16 count = 64\n"
         "  wgmma_commit\n"
         "  wgmma_wait 0\n";
}

double exited(const CheckResult& r, int warp) { return r.result.warps.at(static_cast<size_t>(warp)).exited_ns; }

TEST(WgmmaScenario, TwoWarpgroupsTakeTheSmsOneTensorPipeInTurn) {
  const CheckResult one = check_text("wg.scn", scenario(128, 0, false), {});
  const CheckResult two = check_text("wg.scn", scenario(256, 0, false), {});
  ASSERT_FALSE(one.bad_input) << one.diagnostic;
  ASSERT_EQ(one.result.verdict, sim::Verdict::Ok) << one.report;
  ASSERT_EQ(two.result.verdict, sim::Verdict::Ok) << two.report;
  // 64 m64n256k16 take microseconds; the second warpgroup's MMA queues behind the first's.
  const double d = exited(one, 0);
  EXPECT_GT(d, 1000.0);
  const double first = std::min(exited(two, 0), exited(two, 4)), second = std::max(exited(two, 0), exited(two, 4));
  EXPECT_NEAR(first, d, 0.1 * d);
  EXPECT_NEAR(second, 2 * d, 0.1 * d);
}

// A wgmma nobody waits for runs on past the last warp's exit: the pipe's busy time counts only what
// ran inside the kernel (it once read "tensor pipes busy 1714%").
TEST(WgmmaScenario, AnMmaNobodyWaitsForCountsOnlyItsTimeInsideTheRun) {
  const CheckResult r = check_text("wg.scn", "kernel wg on sm_90a\nlaunch ctas = 1, threads = 128\nrole math warps 0..3:\n"
                                   "  wgmma kind = f16 n = 256 k = 16 count = 64\n  compute 1 us\n", {});
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  // The run lasts the microsecond of compute; the MMA (several microseconds) was busy nearly all of it.
  EXPECT_GT(r.result.tensor_busy_ns, 0.9 * 1000.0);
  EXPECT_LE(r.result.tensor_busy_ns, r.result.end_ns * r.result.sms_used + 1e-9) << r.report;
}

TEST(WgmmaScenario, ALateWarpHoldsItsWarpgroupOnly) {
  const CheckResult r = check_text("wg.scn", scenario(256, 20'000, false), {});
  ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  for (int w : {0, 1, 2, 3}) EXPECT_GT(exited(r, w), 20'000.0) << "warp " << w;
  for (int w : {4, 5, 6, 7}) EXPECT_LT(exited(r, w), 20'000.0) << "warp " << w;
}

TEST(WgmmaScenario, AWarpThatNeverIssuesHangsItsSiblingsAndIsNamed) {
  const CheckResult r = check_text("wg.scn", scenario(256, 0, true), {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  ASSERT_EQ(r.result.hang.groups.size(), 1u) << r.report;
  const sim::HangGroup& g = r.result.hang.groups.front();
  EXPECT_EQ(g.members, (std::vector<std::pair<int, int>>{{0, 0}, {0, 1}, {0, 2}}));
  EXPECT_NE(g.waits_on.find("a wgmma of its warpgroup that warp 3 of this CTA has not issued"), std::string::npos) << g.waits_on;
  EXPECT_EQ(r.kernel.sites.at(g.site).loc.line, 7u);
}

TEST(WgmmaScenario, BadStatementsAreErrorsAtTheirOperand) {
  const auto diag = [](const std::string& arch, const std::string& stmt) {
    const CheckResult r = check_text("wg.scn", "kernel wg on " + arch + "\nlaunch ctas = 1, threads = 128\nrole math warps 0..3:\n  " + stmt + "\n", {});
    EXPECT_TRUE(r.bad_input) << stmt;
    return r.diagnostic;
  };
  EXPECT_NE(diag("sm_90a", "wgmma kind = f16 n = 100 k = 16").find(
                "wg.scn:4:24: error: illegal wgmma.mma_async shape m64n100k16: N must be 8..256 in steps of 8, got 100"),
            std::string::npos);
  EXPECT_NE(diag("sm_90a", "wgmma kind = tf32 n = 64 k = 16 m = 128").find("wg.scn:4:39: error: illegal wgmma.mma_async shape m128n64k16: M must be 64, got 128"),
            std::string::npos);
  EXPECT_NE(diag("sm_90a", "wgmma kind = mxf4 n = 64 k = 64").find("wgmma has no kind mxf4"), std::string::npos);
  EXPECT_NE(diag("sm_90a", "wgmma_wait 8").find("wg.scn:4:14: error: wgmma.wait_group count must be in 0..7, got 8"), std::string::npos);
  EXPECT_NE(diag("sm_100a", "wgmma kind = f16 n = 64 k = 16").find("wg.scn:4:3: error: wgmma needs sm_90a; this kernel is on sm_100a"),
            std::string::npos);
  // A computed shape is judged by the same rule when it runs.
  const CheckResult run = check_text("wg.scn", "kernel wg on sm_90a\nlaunch ctas = 1, threads = 128\nrole math warps 0..3:\n"
                                     "  wgmma kind = f16 n = 100 + warp % 1 k = 16\n", {});
  ASSERT_FALSE(run.bad_input) << run.diagnostic;
  EXPECT_EQ(run.result.verdict, sim::Verdict::Error) << run.report;
  ASSERT_FALSE(run.result.findings.empty());
  EXPECT_EQ(run.result.findings.front().kind, "bad_mma_shape");
  EXPECT_NE(run.result.findings.front().message.find("N must be 8..256 in steps of 8, got 100"), std::string::npos);
}

}  // namespace
}  // namespace pipesim::verify
