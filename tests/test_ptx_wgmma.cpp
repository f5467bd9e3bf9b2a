// wgmma.mma_async as the warpgroup collective it is (Engine::do_wgmma): a warp's issue stalls until all
// four warps have issued it (as on the H100: docs/runs/mmaprobe-lag-h100-2026-11-26.txt), so a sibling
// that never issues hangs the others at their wgmma, and siblings issuing different wgmmas fault.
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
      EXPECT_NE(f.message.find("this wgmma differs from the one warp 0 of its warpgroup is issuing at"), std::string::npos) << f.message;
    }
  EXPECT_TRUE(found) << r.report;
}

}  // namespace
}  // namespace pipesim::verify
