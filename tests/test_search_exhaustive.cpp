// The exhaustive search (issue 20): every interleaving of synchronising actions of a small
// configuration, untimed (sim/explore.hpp), on the engine as it is. The race pairs of
// scenarios/races/: each broken form passes the plain run and the search finds a schedule that
// breaks it, with a trail that replays to the same outcome; each fixed form is proven clean within
// the bounds. Plus the bound, determinism and the state hash.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "sim/explore.hpp"
#include "verify/check.hpp"
#include "verify/report.hpp"
#include "verify/search.hpp"

namespace pipesim::verify {
namespace {

namespace fs = std::filesystem;

const fs::path kRacesDir = fs::path(PIPESIM_SOURCE_DIR) / "scenarios" / "races";

CheckResult check(const std::string& name, const std::vector<Define>& defines = {}) {
  CheckOptions o;
  o.defines = defines;
  CheckResult r = check_file((kRacesDir / name).string(), o);
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  return r;
}

ExhaustiveBounds bounds() {
  ExhaustiveBounds b;
  b.max_states = 500'000;
  b.max_seconds = 60;
  return b;
}

class RacePairs : public testing::TestWithParam<std::string> {};

TEST_P(RacePairs, TheBrokenFormPassesThePlainRunAndTheSearchFindsAScheduleThatBreaksIt) {
  const CheckResult r = check(GetParam() + "_broken.scn");
  ASSERT_EQ(outcome_text(r.result), "ok") << "the plain run must not show the race by itself";
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_EQ(s.baseline, "ok");
  ASSERT_FALSE(s.outcome.empty()) << "no schedule found";
  EXPECT_NE(s.outcome, "ok");
  EXPECT_FALSE(s.trail.empty());
  // The trail replays to the same end.
  std::string error;
  const auto replayed = replay_trail(r.kernel, {}, trail_text(s.trail), error);
  ASSERT_TRUE(replayed) << error;
  EXPECT_EQ(outcome_text(*replayed), s.outcome);
  // The report names the trail's last choice and the replay command.
  const std::string text = exhaustive_report(r, s, "x.scn", "");
  EXPECT_NE(text.find("--trail " + trail_text(s.trail)), std::string::npos) << text;
  EXPECT_NE(text.find("changes the verdict `ok` to `" + s.outcome + "`"), std::string::npos) << text;
}

TEST_P(RacePairs, TheFixedFormIsProvenCleanWithinTheBounds) {
  const CheckResult r = check(GetParam() + "_fixed.scn");
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.complete) << "stopped by " << s.stopped_by;
  EXPECT_TRUE(s.outcome.empty()) << s.outcome;
  EXPECT_EQ(s.outcomes.size(), 1u);
  EXPECT_EQ(s.outcomes.begin()->first, "ok");
  // Orders that reach one state are explored once: some choices lead to states seen before.
  EXPECT_GT(s.revisits, 0u);
  EXPECT_GT(s.states, 10u);
}

INSTANTIATE_TEST_SUITE_P(Exhaustive, RacePairs, testing::Values("a_named_count_small", "b_named_arrive_ahead", "c_elected_release"));

TEST(Exhaustive, TheConsumedPhaseFixIsProvenClean) {
  const CheckResult r = check("d_phase_not_carried_fixed.scn");
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.complete);
  EXPECT_TRUE(s.outcome.empty()) << s.outcome;
}

TEST(Exhaustive, TheStateBoundStopsTheSearchAndSaysSo) {
  const CheckResult r = check("c_elected_release_fixed.scn");
  ExhaustiveBounds b = bounds();
  b.max_states = 50;
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, b);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.stopped_by, "states");
  EXPECT_GE(s.states, 50u);
  const std::string text = exhaustive_report(r, s, "x.scn", "");
  EXPECT_NE(text.find("stopped by the states bound"), std::string::npos) << text;
}

TEST(Exhaustive, TwoSearchesCoverTheSameStatesAndFindTheSameTrail) {
  const CheckResult fixed = check("b_named_arrive_ahead_fixed.scn");
  const ExhaustiveResult a = exhaustive_search(fixed.kernel, {}, bounds()), b = exhaustive_search(fixed.kernel, {}, bounds());
  EXPECT_EQ(a.states, b.states);
  EXPECT_EQ(a.transitions, b.transitions);
  EXPECT_EQ(a.revisits, b.revisits);
  const CheckResult broken = check("c_elected_release_broken.scn");
  const ExhaustiveResult c = exhaustive_search(broken.kernel, {}, bounds()), d = exhaustive_search(broken.kernel, {}, bounds());
  EXPECT_EQ(trail_text(c.trail), trail_text(d.trail));
}

// More tiles, more states: the search grows with the configuration, and the bigger one holds the
// smaller one's count at least (a check that the count means something).
TEST(Exhaustive, StatesGrowWithTheTiles) {
  const ExhaustiveResult small = exhaustive_search(check("c_elected_release_fixed.scn", {Define{"K_TILES", 2}}).kernel, {}, bounds());
  const ExhaustiveResult big = exhaustive_search(check("c_elected_release_fixed.scn", {Define{"K_TILES", 4}}).kernel, {}, bounds());
  EXPECT_TRUE(small.complete && big.complete);
  EXPECT_GT(big.states, small.states);
  EXPECT_GT(big.max_depth, small.max_depth);
}

TEST(UntimedRun, EqualStatesHashEqualAndAChoiceChangesTheHash) {
  const CheckResult r = check("a_named_count_small_fixed.scn");
  sim::UntimedRun run(r.kernel, {});
  const size_t open = run.settle();
  ASSERT_GE(open, 2u) << "the scenario starts with several warps poised";
  sim::UntimedRun copy = run;
  EXPECT_EQ(copy.state_hash(), run.state_hash());
  copy.take(0);
  copy.settle();
  EXPECT_NE(copy.state_hash(), run.state_hash());
  // Two orders of the first two choices: different paths, and each choice is described.
  EXPECT_EQ(run.describe(0).kind, sim::UntimedRun::Choice::Kind::Op);
  EXPECT_GE(run.describe(0).cta, 0);
}

TEST(Trail, BadFormsGetOneSentence) {
  const CheckResult r = check("a_named_count_small_fixed.scn");
  std::string error;
  EXPECT_FALSE(replay_trail(r.kernel, {}, "3-1", error));
  EXPECT_NE(error.find("is not DEPTH:CHOICE"), std::string::npos) << error;
  EXPECT_FALSE(replay_trail(r.kernel, {}, "0:99", error));
  EXPECT_NE(error.find("does not exist"), std::string::npos) << error;
  EXPECT_TRUE(replay_trail(r.kernel, {}, "0", error)) << error;
}

}  // namespace
}  // namespace pipesim::verify
