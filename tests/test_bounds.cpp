// Hostile input stays bounded (issue 23): a run ends within its budget with Verdict::Stopped and
// every warp's state, and a launch too large to hold is refused before anything is allocated.
#include <string>

#include <gtest/gtest.h>

#include "verify/check.hpp"
#include "verify/ptx/launch.hpp"

namespace pipesim::verify {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

CheckResult check_scenario(const std::string& text, uint64_t max_events = 0) {
  CheckOptions o;
  if (max_events) o.run.max_events = max_events;
  return check_text("bounds.scn", text, o);
}

// A loop whose body yields no op never reaches the engine's event loop on its own: the lowering
// yields a zero-time compute every sim::WarpProgram::kIdleSteps statements, which the budget counts.
TEST(Budget, LoopWithoutOpsIsStoppedByTheEventBudget) {
  const CheckResult r = check_scenario(
      "kernel spin on sm_90a\nlaunch ctas = 1, threads = 32\nbarrier bar count = 1\nrole w warp 0:\n"
      "  for k in 0 .. 1000000000000:\n    if k < 0:\n      arrive bar\nexpect ok\n",
      50);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Stopped);
  EXPECT_EQ(r.result.stopped_by, sim::RunResult::StopCause::Events);
  EXPECT_TRUE(has(r.report, "bounds.scn:6:")) << r.report;  // where the warp was: the `if` it keeps skipping
  EXPECT_TRUE(has(r.report, "warp 0 in CTA 0 (w) is running")) << r.report;
}

TEST(Budget, BlockedAndRunningWarpsAreBothDescribed) {
  // Warp 1 waits on a barrier nobody completes while warp 0 loops: stopped, not a hang.
  const CheckResult r = check_scenario(
      "kernel two on sm_90a\nlaunch ctas = 2, threads = 64\nbarrier bar count = 2\nrole spin warp 0:\n"
      "  for k in 0 .. 1000000000:\n    compute 10 ns\nrole waiter warp 1:\n  wait bar parity = 0\nexpect ok\n",
      1000);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Stopped);
  EXPECT_TRUE(has(r.report, "warp 1 in CTAs 0, 1 (waiter) wait on bar[0] parity 0")) << r.report;
  EXPECT_TRUE(has(r.report, "barrier: phase 0 (parity 0), pending 2 of 2, tx 0")) << r.report;
  EXPECT_TRUE(has(r.report, "(spin) are running")) << r.report;
}

TEST(Budget, ExpectStoppedMatchesAStoppedRun) {
  const CheckResult r = check_scenario(
      "kernel spin on sm_90a\nlaunch ctas = 1, threads = 32\nrole w warp 0:\n  for k in 0 .. 1000000000:\n    compute 1 ns\n"
      "expect stopped\n",
      100);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Stopped);
  EXPECT_TRUE(r.matches_expect);
  EXPECT_FALSE(stopped_unexpectedly(r));
}

TEST(Budget, ExitCodesOrderBadInputThenStoppedThenMismatch) {
  EXPECT_EQ(check_exit_code(1, 1, 1), 2);
  EXPECT_EQ(check_exit_code(0, 1, 1), kExitStopped);
  EXPECT_EQ(check_exit_code(0, 0, 1), 1);
  EXPECT_EQ(check_exit_code(0, 0, 0), 0);
}

// A PTX warp spinning without synchronising executes instructions between engine events: the
// instruction budget stops it, deterministically.
TEST(Budget, SpinningPtxWarpIsStoppedByTheInstructionBudget) {
  const std::string dir = testing::TempDir();
  const std::string ptx = dir + "/spin.ptx";
  FILE* f = std::fopen(ptx.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(".version 8.4\n.target sm_90a\n.address_size 64\n\n.visible .entry spin()\n{\n  .reg .b32 %r<2>;\n"
             "  mov.u32 %r1, 0;\n$L_loop:\n  add.u32 %r1, %r1, 1;\n  bra.uni $L_loop;\n  ret;\n}\n",
             f);
  std::fclose(f);
  CheckOptions o;
  o.launch_sets = {"entry=spin", "grid=1", "block=32"};
  o.run.max_instructions = 1'000'000;
  o.run.max_events = 0;
  o.run.max_seconds = 0;
  const CheckResult r = check_ptx(ptx, o);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Stopped);
  EXPECT_EQ(r.result.stopped_by, sim::RunResult::StopCause::Instructions);
  EXPECT_GE(r.result.instructions, 1'000'000u);
  EXPECT_LT(r.result.instructions, 1'000'000u + 1024 * 4096u);  // polled every 1024 events of <= 4096 instructions
  EXPECT_TRUE(has(r.report, "raise --max-instructions to go on")) << r.report;
  EXPECT_TRUE(has(r.report, "is running")) << r.report;
}

// ------------------------------------------------------------------ sizes before allocation
TEST(Sizes, MillionCtaLaunchIsRefusedAtItsLineWithTheMemoryItNeeds) {
  const CheckResult r = check_scenario("kernel big on sm_90a\nlaunch ctas = 1000000, threads = 1024\nrole w warp 0:\n  compute 1 ns\n");
  ASSERT_TRUE(r.bad_input);
  EXPECT_TRUE(has(r.diagnostic, "bounds.scn:2:1: error: the launch is too large to simulate: 1,000,000 CTAs x 32 warps need ~62.1 GB "
                                "of simulator state; the limit is 8.0 GB"))
      << r.diagnostic;
}

// Barrier elements are bounded per CTA by shared memory (8 bytes each), not in the grid.
TEST(Sizes, BarrierArraysCountPerCta) {
  const CheckResult r = check_scenario(
      "kernel bars on sm_90a\nlaunch ctas = 100000, threads = 32\nbarrier bar[29000] count = 1\nrole w warp 0:\n  compute 1 ns\n");
  ASSERT_TRUE(r.bad_input);
  EXPECT_TRUE(has(r.diagnostic, "100,000 CTAs x 1 warp and 29,000 barrier elements per CTA need ~406.3 GB")) << r.diagnostic;
  // The same array in a few CTAs is fine.
  EXPECT_FALSE(check_scenario("kernel bars on sm_90a\nlaunch ctas = 2, threads = 32\nbarrier bar[29000] count = 1\n"
                              "role w warp 0:\n  compute 1 ns\n")
                   .bad_input);
}

TEST(Sizes, FootprintSaturatesInsteadOfWrapping) {
  sim::RunFootprint f;
  f.ctas = uint64_t{1} << 40;
  f.warps_per_cta = uint64_t{1} << 40;
  EXPECT_EQ(f.bytes(), UINT64_MAX);
  EXPECT_FALSE(f.refusal().empty());
}

TEST(Sizes, PtxGridTooLargeIsRefusedAtTheGrid) {
  CheckOptions o;
  o.launch = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/pipeline.launch.json";
  o.launch_sets = {"grid=2000000000"};
  const CheckResult r = check_ptx(std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/pipeline.ptx", o);
  ASSERT_TRUE(r.bad_input);
  EXPECT_TRUE(has(r.diagnostic, "the launch is too large to simulate: 2,000,000,000 CTAs x 3 warps need ~")) << r.diagnostic;
  EXPECT_TRUE(has(r.diagnostic, "the limit is 8.0 GB")) << r.diagnostic;
}

// Found by fuzz_ptx_launch (docs/fuzzing.md): a number past what a double holds escaped the launch
// reader as nlohmann's out_of_range instead of a LaunchError at its place.
TEST(Sizes, LaunchNumberPastADoubleIsALaunchErrorAtItsPlace) {
  try {
    ptx::parse_launch("l.json", "{\"entry\": \"k\",\n \"grid\": 1E999}\n");
    FAIL() << "no error";
  } catch (const ptx::LaunchError& e) {
    EXPECT_EQ(std::string(e.what()), "number 1E999 is out of range");
    EXPECT_EQ(e.pos.line, 2u);
    EXPECT_EQ(e.pos.col, 10u);
  }
}

}  // namespace
}  // namespace pipesim::verify
