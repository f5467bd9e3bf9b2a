// The exhaustive search on PTX kernels (issue 20): nvcc's output of tests/data/ptx/races.cu, the CUDA
// forms of two race classes of scenarios/races/, run warp by warp under every interleaving of their
// synchronising actions. The run is copied at each choice with its memory and registers
// (ExternalRun::clone) and hashed with them, so these tests also check that a copy goes on exactly as
// the original would.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/explore.hpp"
#include "verify/check.hpp"
#include "verify/report.hpp"
#include "verify/search.hpp"

namespace pipesim::verify {
namespace {

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";

CheckResult check_ptx(const std::string& ptx, const std::string& launch, std::vector<std::string> sets = {}) {
  CheckOptions o;
  o.launch = kDir + launch;
  o.launch_sets = std::move(sets);
  CheckResult r = check_file(kDir + ptx, o);
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  return r;
}

CheckResult races(const std::string& entry) {
  const bool named = entry.starts_with("named");
  return check_ptx("races.ptx", named ? "races_named.launch.json" : "races_elected.launch.json", {"entry=" + entry});
}

ExhaustiveBounds bounds() {
  ExhaustiveBounds b;
  b.max_states = 200'000;
  b.max_seconds = 60;
  return b;
}

class PtxRacePairs : public testing::TestWithParam<std::string> {};

TEST_P(PtxRacePairs, TheBrokenKernelPassesThePlainRunAndTheSearchFindsTheScheduleThatHangsIt) {
  const CheckResult r = races(GetParam() + "_broken");
  ASSERT_EQ(outcome_text(r.result), "ok") << "the plain run must not show the race by itself";
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_EQ(s.baseline, "ok");
  ASSERT_FALSE(s.outcome.empty()) << "no schedule found in " << s.states << " states";
  EXPECT_TRUE(s.outcome.starts_with("hang")) << s.outcome;
  ASSERT_FALSE(s.trail.empty());
  // The trail replays to the same end, through the same PTX.
  std::string error;
  const auto replayed = replay_trail(r.kernel, {}, trail_text(s.trail), error);
  ASSERT_TRUE(replayed) << error;
  EXPECT_EQ(outcome_text(*replayed), s.outcome);
}

TEST_P(PtxRacePairs, TheFixedKernelIsCleanUnderEveryInterleaving) {
  const CheckResult r = races(GetParam() + "_fixed");
  ASSERT_EQ(outcome_text(r.result), "ok");
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.outcome.empty()) << s.outcome;
  EXPECT_TRUE(s.complete) << "stopped by " << s.stopped_by << " after " << s.states << " states";
  EXPECT_GT(s.states, 10u) << "the kernel's warps interleave: more than one order";
  EXPECT_EQ(s.outcomes.size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Races, PtxRacePairs, testing::Values("named_count_small", "elected_release"));

// A copy of a PTX run is a copy of all of it: at every choice, a copy run to its end (by other
// choices than the original's) leaves the original untouched, and a copy that takes the original's
// next choice reaches the state the original reaches, down to its registers and memory.
TEST(PtxUntimedRun, ACopyGoesOnAsTheOriginalDoesAndLeavesItAlone) {
  const CheckResult r = races("elected_release_broken");
  sim::UntimedRun run(r.kernel, {});
  size_t steps = 0;
  for (size_t open = run.settle(); open > 0; open = run.settle(), ++steps) {
    const uint64_t before = run.state_hash();
    {
      sim::UntimedRun away(run);
      for (size_t n = away.settle(); n > 0; n = away.settle()) away.take(n - 1);
      EXPECT_FALSE(outcome_text(std::move(away).finish()).empty());
    }
    ASSERT_EQ(run.state_hash(), before) << "a copy's run changed the original after " << steps << " choices";
    sim::UntimedRun copy(run);
    ASSERT_EQ(copy.state_hash(), before);
    ASSERT_EQ(copy.settle(), open);
    const size_t pick = steps % open;  // not always the oldest: both sides of the race
    copy.take(pick);
    run.take(pick);
    ASSERT_EQ(copy.settle(), run.settle());
    ASSERT_EQ(copy.state_hash(), run.state_hash()) << "after " << steps << " choices";
  }
  EXPECT_GT(steps, 10u);
}

// A warp that spins on shared memory (no synchronising instruction in its loop) yields to the
// search: without that, the search would spin with it wherever the warp that raises the flag is
// held at a choice. The events bound turns such a spin into a `stopped` end, which fails here.
TEST(PtxExhaustive, AWarpSpinningOnMemoryYieldsAndTheSearchEnds) {
  const CheckResult r = check_ptx("races.ptx", "races_named.launch.json", {"entry=flag_handoff", "block=64"});
  ASSERT_EQ(outcome_text(r.result), "ok");
  sim::RunOptions o;
  o.max_events = 1'000'000;
  const ExhaustiveResult s = exhaustive_search(r.kernel, o, bounds());
  EXPECT_TRUE(s.outcome.empty()) << s.outcome;
  EXPECT_TRUE(s.complete) << "stopped by " << s.stopped_by;
  EXPECT_GT(s.revisits, 0u) << "a spin that yields comes back to the state it left";
}

// Registers and memory are part of the state: two orders that leave different values are two states.
TEST(PtxUntimedRun, TheStateHashSeesRegistersAndSharedMemory) {
  const CheckResult r = races("elected_release_fixed");
  sim::UntimedRun a(r.kernel, {});
  ASSERT_GT(a.settle(), 0u);
  sim::UntimedRun b(a);
  // Run each to its end by different choices where there are two; the ends' hashes differ while
  // their outcomes are the same `ok`.
  size_t differed = 0;
  for (size_t step = 0; step < 10000; ++step) {
    const size_t na = a.settle(), nb = b.settle();
    if (na == 0 || nb == 0) break;
    a.take(0);
    b.take(nb - 1);
    differed += a.state_hash() != b.state_hash();
  }
  EXPECT_GT(differed, 0u);
}

// A PTX kernel that hangs in every order is reported as its plain run's verdict, never a difference.
TEST(PtxExhaustive, AKernelThatAlwaysHangsHasNoOtherOutcome) {
  const CheckResult r = check_ptx("pipeline.ptx", "pipeline.launch.json", {"entry=pipeline_skip_last_release", "grid=1", "param.1=2"});
  ASSERT_TRUE(outcome_text(r.result).starts_with("hang")) << outcome_text(r.result);
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.outcome.empty()) << s.outcome;
  EXPECT_TRUE(s.complete) << "stopped by " << s.stopped_by;
}

}  // namespace
}  // namespace pipesim::verify
