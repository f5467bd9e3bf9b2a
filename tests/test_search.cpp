// Races that only some schedules expose (issue 20): the polling rule and the consumed-phase rule,
// the race pairs of scenarios/races/ (the broken form passes the default, fixed-order run and the
// adversarial search finds the delay that breaks it; the fixed form stays clean under the search),
// and `--delay`'s replay form.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "sim/mbarrier.hpp"
#include "verify/check.hpp"
#include "verify/report.hpp"
#include "verify/search.hpp"

namespace pipesim::verify {
namespace {

namespace fs = std::filesystem;

const fs::path kRacesDir = fs::path(PIPESIM_SOURCE_DIR) / "scenarios" / "races";

CheckResult check(const std::string& name) {
  CheckResult r = check_file((kRacesDir / name).string(), {});
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  return r;
}

// Small bounds: every race scenario is a few microseconds long; a whole search is a few thousand runs.
AdversarialBounds bounds() {
  AdversarialBounds b;
  b.max_runs = 20'000;
  b.max_seconds = 60;
  return b;
}

// ------------------------------------------------------------------ the rules
TEST(Polling, APollReadsOnlyTheCurrentParity) {
  sim::MBarrier b;
  ASSERT_EQ(sim::mbar_init(b, 1).violation, sim::MbarViolation::None);
  EXPECT_EQ(sim::mbar_poll(b, 0, -1), sim::MbarPoll::Blocked);
  sim::mbar_arrive(b, 1);  // phase 0 completes
  EXPECT_EQ(sim::mbar_poll(b, 0, -1), sim::MbarPoll::Passed);
  sim::mbar_arrive(b, 1);  // phase 1 too, before the warp polled again: the parity is back
  EXPECT_EQ(sim::mbar_poll(b, 0, -1), sim::MbarPoll::Blocked) << "a phase completed between two polls is missed";
}

TEST(Polling, PassingWhereTheWarpsLastWaitReturnedIsAConsumedPhase) {
  sim::MBarrier b;
  sim::mbar_init(b, 1);
  sim::mbar_arrive(b, 1);  // completed 1
  EXPECT_EQ(sim::mbar_poll(b, 0, /*consumed=*/1), sim::MbarPoll::PassedOnConsumed);
  EXPECT_EQ(sim::mbar_poll(b, 0, /*consumed=*/0), sim::MbarPoll::Passed);
  // A fresh barrier "has completed" the phase before phase 0: a wait for parity 1 passes there once.
  sim::MBarrier fresh;
  sim::mbar_init(fresh, 1);
  EXPECT_EQ(sim::mbar_poll(fresh, 1, -1), sim::MbarPoll::Passed);
  EXPECT_EQ(sim::mbar_poll(fresh, 1, 0), sim::MbarPoll::PassedOnConsumed);
}

TEST(ConsumedPhase, ARawWaitWhosePhaseBitDidNotFlipIsCaughtWithoutAnnotations) {
  const CheckResult r = check("d_phase_not_carried_broken.scn");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  EXPECT_EQ(r.result.findings.front().kind, "phase_reused");
  EXPECT_EQ(r.result.findings.front().warp, 1);
  EXPECT_TRUE(r.matches_expect);
  // The GPU does not check it: as the hardware would, the run goes on (to `ok`: the race is silent there).
  CheckOptions hw;
  hw.run.hardware_only = true;
  const CheckResult h = check_file((kRacesDir / "d_phase_not_carried_broken.scn").string(), hw);
  EXPECT_EQ(h.result.verdict, sim::Verdict::Ok) << h.report;
  EXPECT_TRUE(std::any_of(h.result.findings.begin(), h.result.findings.end(),
                          [](const sim::Finding& f) { return f.kind == "phase_reused" && !f.fatal; }));
}

// A consumer passes a count-1 barrier's first completion, does `between`, and waits on it again
// with the same parity while the producer's second signal is still 5 us away: the second wait
// passes on the completion the first returned on. Only a release while that pass was the warp's
// latest makes it phase_reused (Engine::wait_passed).
CheckResult check_second_pass(const std::string& between, const std::string& expect) {
  const std::string text =
      "kernel second_pass on sm_90a\n"
      "launch ctas = 1, threads = 64\n"
      "barrier flag[1] count = 1\n"
      "barrier other[1] count = 1\n"
      "barrier never[1] count = 1\n"
      "barrier done[1] count = 1\n"
      "role producer warp 0:\n"
      "  compute 100 ns\n"
      "  arrive other\n"
      "  arrive flag\n"
      "  compute 5 us\n"
      "  arrive flag\n"
      "role consumer warp 1:\n"
      "  wait flag parity = 0\n" +
      between +
      "  wait flag parity = 0\n"
      "expect " + expect + "\n";
  const fs::path path = fs::temp_directory_path() / ("pipesim_test_second_pass_" + std::to_string(::getpid()) + ".scn");
  std::ofstream(path) << text;
  CheckResult r = check_file(path.string(), {});
  fs::remove(path);
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_TRUE(r.matches_expect) << between << r.report;
  return r;
}

TEST(ConsumedPhase, ASecondPassWithNothingReleasedIsARecheck) {
  // CUTLASS's try-acquire then acquire (or a peek and a later try-acquire) on one phase.
  EXPECT_EQ(check_second_pass("  compute 200 ns\n", "ok").result.verdict, sim::Verdict::Ok);
}

TEST(ConsumedPhase, AReleaseAfterThePassMakesTheSecondPassAReuse) {
  const CheckResult r = check_second_pass("  arrive done\n", "error phase_reused");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  EXPECT_EQ(r.result.findings.front().kind, "phase_reused");
}

TEST(ConsumedPhase, AReleaseBelongsToTheWarpsLatestPass) {
  // sm100's load warp: a peek at a stage, then the CLC response's wait and release, then the stage
  // again (load_tail): the release is the CLC pass's, not the stage's.
  EXPECT_EQ(check_second_pass("  wait other parity = 0\n  arrive done\n", "ok").result.verdict, sim::Verdict::Ok);
  // A test_wait that returned false passed nothing: the release stays with the pass before it.
  const CheckResult r = check_second_pass("  test_wait never parity = 0 expect false\n  arrive done\n", "error phase_reused");
  EXPECT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
}

// ------------------------------------------------------------------ the race pairs
struct RacePair {
  std::string stem;         // scenarios/races/<stem>_broken.scn and _fixed.scn
  std::string found;        // outcome the search reaches on the broken form
};
std::ostream& operator<<(std::ostream& os, const RacePair& p) { return os << p.stem; }

class Races : public testing::TestWithParam<RacePair> {};

TEST_P(Races, TheBrokenFormPassesTheFixedOrderRunAndTheSearchBreaksIt) {
  const CheckResult r = check(GetParam().stem + "_broken.scn");
  ASSERT_EQ(outcome_text(r.result), "ok") << "the default order must not show the race:\n" << r.report;
  const AdversarialResult s = adversarial_search(r.kernel, {}, bounds());
  ASSERT_FALSE(s.found.empty()) << adversarial_report(r, s, "x.scn", "");
  EXPECT_EQ(s.baseline, "ok");
  EXPECT_EQ(s.outcome, GetParam().found) << adversarial_report(r, s, "x.scn", "");
  // The reported delays replay to the same verdict, through the text form --delay reads.
  sim::RunOptions again;
  for (const sim::Delay& d : s.found) {
    std::string error;
    const std::optional<sim::Delay> back = parse_delay(r.kernel, delay_text(r.kernel, d), error);
    ASSERT_TRUE(back) << error;
    EXPECT_EQ(back->site, d.site);
    EXPECT_EQ(back->occurrence, d.occurrence);
    again.delays.push_back(*back);
  }
  EXPECT_EQ(outcome_text(sim::run(r.kernel, again)), s.outcome);
}

TEST_P(Races, TheFixedFormIsCleanUnderTheSearch) {
  const CheckResult r = check(GetParam().stem + "_fixed.scn");
  ASSERT_EQ(outcome_text(r.result), "ok") << r.report;
  const AdversarialResult s = adversarial_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.found.empty()) << adversarial_report(r, s, "x.scn", "");
  EXPECT_TRUE(s.exhausted) << s.stopped_by;
  EXPECT_GT(s.singles_tried, 0);
}

INSTANTIATE_TEST_SUITE_P(Search, Races,
                         testing::Values(RacePair{"a_named_count_small", "hang"}, RacePair{"b_named_arrive_ahead", "error named_overrun"},
                                         RacePair{"c_elected_release", "hang"}),
                         [](const testing::TestParamInfo<RacePair>& i) { return i.param.stem; });

TEST(Races, TheConsumedPhaseFixIsCleanUnderTheSearch) {
  const CheckResult r = check("d_phase_not_carried_fixed.scn");
  ASSERT_EQ(outcome_text(r.result), "ok") << r.report;
  const AdversarialResult s = adversarial_search(r.kernel, {}, bounds());
  EXPECT_TRUE(s.found.empty()) << adversarial_report(r, s, "x.scn", "");
}

// ------------------------------------------------------------------ --delay's form
TEST(DelayText, BadFormsGetOneSentence) {
  const CheckResult r = check("a_named_count_small_broken.scn");
  for (const char* bad : {"", "cta0", "cta0.warp9@1:1#0+5ns", "cta7.warp1@1:1#0+5ns", "cta0.warp1@999:1#0+5ns",
                          "cta0.warp1@site99999#0+5ns", "cta0.warp1@1:1#x+5ns", "cta0.warp1@1:1#0+5"}) {
    std::string error;
    EXPECT_FALSE(parse_delay(r.kernel, bad, error)) << bad;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    EXPECT_NE(error.find("--delay"), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace pipesim::verify
