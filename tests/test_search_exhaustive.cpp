// The exhaustive search (issue 20): every interleaving of synchronising actions of a small
// configuration, untimed (sim/explore.hpp), on the engine as it is. The race pairs of
// scenarios/races/: each broken form passes the plain run and the search finds a schedule that
// breaks it, with a trail that replays to the same outcome; each fixed form is proven clean within
// the bounds. Plus the bound, determinism and the state hash.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unordered_set>
#include <vector>

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

ExhaustiveBounds unreduced() {
  ExhaustiveBounds b = bounds();
  b.partial_order = false;
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

// The partial-order reduction (sleep sets, persistent sets) against every order (--search-por off):
// the same verdicts, every end outcome still reached, and fewer choices taken.
TEST_P(RacePairs, TheReductionKeepsTheVerdictsAndTakesFewerChoices) {
  const CheckResult broken = check(GetParam() + "_broken.scn");
  const ExhaustiveResult found_on = exhaustive_search(broken.kernel, {}, bounds()), found_off = exhaustive_search(broken.kernel, {}, unreduced());
  EXPECT_FALSE(found_on.outcome.empty());
  EXPECT_FALSE(found_off.outcome.empty());
  std::string error;
  const auto replayed = replay_trail(broken.kernel, {}, trail_text(found_on.trail), error);
  ASSERT_TRUE(replayed) << error;
  EXPECT_EQ(outcome_text(*replayed), found_on.outcome);

  const CheckResult fixed = check(GetParam() + "_fixed.scn");
  const ExhaustiveResult on = exhaustive_search(fixed.kernel, {}, bounds()), off = exhaustive_search(fixed.kernel, {}, unreduced());
  ASSERT_TRUE(on.complete && off.complete);
  EXPECT_TRUE(on.outcome.empty() && off.outcome.empty());
  std::vector<std::string> ends_on, ends_off;
  for (const auto& [what, n] : on.outcomes) ends_on.push_back(what);
  for (const auto& [what, n] : off.outcomes) ends_off.push_back(what);
  EXPECT_EQ(ends_on, ends_off);
  EXPECT_LT(on.transitions, off.transitions);
  EXPECT_LE(on.states, off.states);
  EXPECT_GT(on.pruned_sleep + on.pruned_persistent, 0u);
  EXPECT_EQ(off.pruned_sleep + off.pruned_persistent, 0u);
  const std::string text = exhaustive_report(fixed, off, "x.scn", "");
  EXPECT_NE(text.find("no partial-order reduction (--search-por off)"), std::string::npos) << text;
}

INSTANTIATE_TEST_SUITE_P(Exhaustive, RacePairs, testing::Values("a_named_count_small", "b_named_arrive_ahead", "c_elected_release"));

// Persistent sets cut states, not only orders (sleep sets alone reach every state): on race (c)'s fix
// the producer's and the consumers' steps on barriers nobody else touches any more are taken alone.
TEST(Exhaustive, PersistentSetsReachFewerStatesOnTheElectedReleaseFix) {
  const CheckResult r = check("c_elected_release_fixed.scn", {Define{"K_TILES", 16}});
  const ExhaustiveResult on = exhaustive_search(r.kernel, {}, bounds()), off = exhaustive_search(r.kernel, {}, unreduced());
  ASSERT_TRUE(on.complete && off.complete);
  EXPECT_GT(on.pruned_persistent, 0u);
  EXPECT_LT(on.states, off.states);
  EXPECT_LT(on.transitions, off.transitions);
}

TEST(Exhaustive, TheConsumedPhaseFixIsProvenClean) {
  const CheckResult r = check("d_phase_not_carried_fixed.scn");
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.complete);
  EXPECT_TRUE(s.outcome.empty()) << s.outcome;
}

// A bound that ends the search leaves it incomplete, and the report says which bound and how to raise it.
ExhaustiveResult stopped_by(void (*set)(ExhaustiveBounds&), const std::string& bound) {
  const CheckResult r = check("c_elected_release_fixed.scn");
  ExhaustiveBounds b = bounds();
  set(b);
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, b);
  EXPECT_FALSE(s.complete);
  EXPECT_EQ(s.stopped_by, bound);
  const std::string text = exhaustive_report(r, s, "x.scn", "");
  EXPECT_NE(text.find("stopped by the " + bound + " bound"), std::string::npos) << text;
  EXPECT_NE(text.find("--search-" + bound), std::string::npos) << text;
  return s;
}

TEST(Exhaustive, TheStateBoundStopsTheSearchAndSaysSo) {
  const ExhaustiveResult s = stopped_by([](ExhaustiveBounds& b) { b.max_states = 50; }, "states");
  EXPECT_GE(s.states, 50u);
}

// The memory bound (resident MiB, polled every 256 steps of the search): a process holds more than
// 1 MiB, so the search stops at its first poll.
TEST(Exhaustive, TheMemoryBoundStopsTheSearchAndSaysSo) {
  const ExhaustiveResult s = stopped_by([](ExhaustiveBounds& b) { b.max_memory_mib = 1; }, "memory");
  EXPECT_LT(s.states, 1000u);
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

// The Hopper warp-specialized GEMM as shipped, at one cluster (2 CTAs, 18 warps, a multicast B,
// two consumer warpgroups each, the epilogue's named barriers and bulk stores) and one k-block: every
// interleaving is covered. (Before waits were guards and exits judged by whether they end the CTA,
// this did not finish within 500,000 states.)
TEST(Exhaustive, TheHopperWsPipelineAtOneClusterIsProven) {
  CheckOptions o;
  o.defines = {Define{"M", 128}, Define{"N", 128}, Define{"K", 64}};
  const CheckResult r = check_file((fs::path(PIPESIM_SOURCE_DIR) / "scenarios" / "hopper" / "ws_gemm.scn").string(), o);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.complete) << "stopped by " << s.stopped_by << " after " << s.states << " states";
  EXPECT_TRUE(s.outcome.empty()) << s.outcome;
  EXPECT_GT(s.pruned_persistent, 0u);
}

// bench/spin/ws_pipeline.scn, the SPIN comparison's twin of ws_pipeline.pml (bench/spin/compare.sh):
// proven at a few tiles, and its bug (the producer starting at phase 0) hangs in every order.
TEST(Exhaustive, TheSpinBenchPipelineIsProvenAndItsBugHangs) {
  const auto bench = [](std::vector<Define> d) {
    CheckOptions o;
    o.defines = std::move(d);
    return check_file((fs::path(PIPESIM_SOURCE_DIR) / "bench" / "spin" / "ws_pipeline.scn").string(), o);
  };
  const CheckResult ok = bench({Define{"TILES", 4}});
  ASSERT_FALSE(ok.bad_input) << ok.diagnostic;
  const ExhaustiveResult proof = exhaustive_search(ok.kernel, {}, bounds());
  EXPECT_TRUE(proof.complete && proof.outcome.empty());
  EXPECT_EQ(proof.baseline, "ok");
  const CheckResult bug = bench({Define{"TILES", 1}, Define{"PRODUCER_PHASE", 0}});
  const ExhaustiveResult hangs = exhaustive_search(bug.kernel, {}, bounds());
  EXPECT_EQ(hangs.baseline, "hang");
  EXPECT_TRUE(hangs.complete && hangs.outcome.empty()) << "no order escapes the hang";
}

// A dive into fresh memory keeps a copy of the run only every 32nd frame and rebuilds the frames
// between by replaying their path (verify/search_exhaustive.cpp): at 16 tiles the ws protocol's first
// dive is 511 frames deep, so most frames are rebuilt so, and the search must still cover exactly the
// states and transitions it covered when every frame kept a copy (docs/performance.md's table).
TEST(Exhaustive, FramesRebuiltFromCheckpointsExploreAsCopiesDid) {
  CheckOptions o;
  o.defines = {Define{"TILES", 16}, Define{"K_TILES", 4}};
  const CheckResult r = check_file((fs::path(PIPESIM_SOURCE_DIR) / "bench" / "spin" / "ws_pipeline.scn").string(), o);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  const ExhaustiveResult s = exhaustive_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.complete && s.outcome.empty());
  EXPECT_EQ(s.states, 14227u);
  EXPECT_EQ(s.transitions, 14350u);
  EXPECT_EQ(s.revisits, 124u);
  EXPECT_EQ(s.max_depth, 511u);
}

TEST(UntimedRun, EqualStatesHashEqualAndAChoiceChangesTheHash) {
  const CheckResult r = check_text("named.scn", "kernel n on sm_90a\nlaunch ctas = 1, threads = 128\nrole w warps 0..3:\n  bar_sync 1 threads = 128\n", {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
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

// Takes the choice of warp `warp`'s next op.
void take_warp(sim::UntimedRun& run, int warp) {
  for (size_t i = 0; i < run.choice_count(); ++i)
    if (run.describe(i).kind == sim::UntimedRun::Choice::Kind::Op && run.describe(i).warp == warp) {
      run.take(i);
      run.settle();
      return;
    }
  ADD_FAILURE() << "warp " << warp << " has no choice";
}

// Arrivals on one named barrier in either order leave one state (the barrier keeps who arrived as a
// set, as it does its waiters): otherwise the search would visit every order of a warpgroup's bar_sync.
TEST(UntimedRun, TheOrderOfArrivalsOnANamedBarrierIsNotPartOfTheState) {
  const CheckResult r = check_text("named.scn", "kernel n on sm_90a\nlaunch ctas = 1, threads = 128\nrole w warps 0..3:\n  bar_sync 1 threads = 128\n", {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  sim::UntimedRun a(r.kernel, {});
  ASSERT_EQ(a.settle(), 4u);
  sim::UntimedRun b = a;
  take_warp(a, 0);
  take_warp(a, 1);
  take_warp(b, 1);
  take_warp(b, 0);
  EXPECT_EQ(a.state_hash(), b.state_hash());
  take_warp(b, 2);
  EXPECT_NE(a.state_hash(), b.state_hash());
}

// A wait on a phase that has not completed is no choice (a guard): which warps had begun waiting
// before a completion is not a state of its own. It opens when the phase completes, and where only
// such waits are left they block, so the run ends in the usual hang report.
TEST(UntimedRun, AWaitOnAnIncompletePhaseIsNoChoiceUntilThePhaseCompletes) {
  const CheckResult r = check_text("guard.scn",
                                   "kernel g on sm_90a\nlaunch ctas = 1, threads = 96\nbarrier ready[1] count = 1\n"
                                   "role producer warp 0:\n  bar_sync 1 threads = 32\n  arrive ready\n"
                                   "role consumer warps 1..2:\n  wait ready parity = 0\n  wait ready parity = 1\n",
                                   {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  sim::UntimedRun run(r.kernel, {});
  ASSERT_EQ(run.settle(), 1u) << "only the producer may act: the consumers' phase has not completed";
  EXPECT_EQ(run.describe(0).warp, 0);
  take_warp(run, 0);  // bar_sync, then the arrive is poised
  take_warp(run, 0);  // the arrive completes phase 0
  ASSERT_EQ(run.choice_count(), 2u) << "both consumers may pass now";
  take_warp(run, 1);
  take_warp(run, 2);
  EXPECT_EQ(run.choice_count(), 0u) << "the waits for phase 1 are guarded and nothing else can happen";
  const sim::RunResult end = std::move(run).finish();
  EXPECT_EQ(outcome_text(end), "hang");
  const std::string text = indented_report(r, end);
  EXPECT_NE(text.find("ready"), std::string::npos) << text;
  EXPECT_NE(text.find("2 warps"), std::string::npos) << text;
}

// A remote arrival that may land after its target CTA has ended: the search finds the order (a warp's
// exit is judged by whether it can be the CTA's last, and a CTA with a warp in a persistent set does
// not end outside it, Footprint::conflicts), with the reduction on and off.
TEST(Exhaustive, ARemoteArrivalAfterItsTargetEndedIsFound) {
  const CheckResult r = check_text("exited.scn",
                                   "kernel x on sm_90a\nlaunch ctas = 2, cluster = 2, threads = 96\nbarrier done[1] count = 1\n"
                                   "role signaller warp 0:\n  if cluster_rank == 0:\n    compute 100 ns\n    arrive done cta = 1\n"
                                   "role bystander warps 1..2:\n  if cluster_rank == 1:\n    bar_sync warp_in_role + 1 threads = 32\n    compute 5000 ns\n",
                                   {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(outcome_text(r.result), "ok") << "the plain run lands the arrival long before CTA 1 ends";
  for (const ExhaustiveBounds& b : {bounds(), unreduced()}) {
    const ExhaustiveResult s = exhaustive_search(r.kernel, {}, b);
    EXPECT_EQ(s.outcome, "error exited_target") << (b.partial_order ? "reduced" : "every order");
  }
}

// The independence the reduction rests on, checked against the engine itself: two choices whose
// footprints do not conflict reach the same state in either order, and neither closes the other
// (or, where one ends the run, both orders end with the same outcome). Over the first states of
// every scenario of scenarios/races/ and of ws_gemm at one cluster (two CTAs).
TEST(Footprint, ChoicesJudgedIndependentCommute) {
  size_t pairs = 0;
  std::vector<CheckResult> scenarios;
  for (const char* name : {"a_named_count_small", "b_named_arrive_ahead", "c_elected_release", "d_phase_not_carried"})
    for (const char* form : {"_broken.scn", "_fixed.scn"}) {
      const bool tiles = std::string(name) == "c_elected_release";  // the one pair with a K_TILES setting
      scenarios.push_back(check(std::string(name) + form, tiles ? std::vector<Define>{Define{"K_TILES", 2}} : std::vector<Define>{}));
    }
  {  // two CTAs of a cluster: multicast copies, remote releases, exits
    CheckOptions o;
    o.defines = {Define{"M", 128}, Define{"N", 128}, Define{"K", 128}};
    scenarios.push_back(check_file((fs::path(PIPESIM_SOURCE_DIR) / "scenarios" / "hopper" / "ws_gemm.scn").string(), o));
    ASSERT_FALSE(scenarios.back().bad_input) << scenarios.back().diagnostic;
  }
  for (const CheckResult& r : scenarios) {
    const std::string& name = r.kernel.file;
    {
      std::vector<sim::UntimedRun> todo;
      todo.emplace_back(r.kernel, sim::RunOptions{});
      std::unordered_set<uint64_t> seen;
      // Takes the choice with `id` (it must still be open) and settles; the choices then open.
      const auto take = [](sim::UntimedRun& run, uint64_t id) {
        for (size_t k = 0; k < run.choice_count(); ++k)
          if (run.choice_id(k) == id) {
            run.take(k);
            return run.settle();
          }
        ADD_FAILURE() << "a choice judged independent closed the other";
        return run.settle();
      };
      while (!todo.empty() && seen.size() < 150) {
        sim::UntimedRun run = std::move(todo.back());
        todo.pop_back();
        const size_t open = run.settle();
        if (!seen.insert(run.state_hash()).second) continue;
        for (size_t i = 0; i < open; ++i) {
          sim::UntimedRun child = run;
          child.take(i);
          todo.push_back(std::move(child));
          for (size_t j = i + 1; j < open; ++j) {
            sim::Footprint fi, fj;
            run.footprint(i, fi);
            run.footprint(j, fj);
            if (fi.conflicts(fj)) continue;
            ++pairs;
            const uint64_t a = run.choice_id(i), b = run.choice_id(j);
            sim::UntimedRun ij = run, ji = run;
            const bool ij_ended = take(ij, a) == 0 || take(ij, b) == 0;
            const bool ji_ended = take(ji, b) == 0 || take(ji, a) == 0;
            if (ij_ended || ji_ended) {
              EXPECT_EQ(outcome_text(std::move(ij).finish()), outcome_text(std::move(ji).finish())) << name;
              continue;
            }
            EXPECT_EQ(ij.state_hash(), ji.state_hash()) << name << ": " << i << " and " << j;
          }
        }
      }
    }
  }
  EXPECT_GT(pairs, 100u) << "too few independent pairs to say anything";
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
