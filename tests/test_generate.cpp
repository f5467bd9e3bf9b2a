// The random protocol generator (verify/generate.cpp, issue 5): for 500 seeds its output parses and
// runs on the model without bad input; a seed fixes the text; without mistakes every scenario is
// well-formed (verdict ok); with a mistake in every scenario a large share is not ok; and the
// features the differential test relies on (clusters, multicast, named barriers, zero-trip loops, ...)
// are really produced.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "verify/check.hpp"
#include "verify/generate.hpp"

namespace pipesim::verify {
namespace {

constexpr uint64_t kSeeds = 500;
constexpr uint64_t kFirstSeed = 1;

CheckResult run_text(const GeneratedScenario& g) {
  CheckOptions o;
  o.run.max_events = 20'000'000;
  return check_text("gen_" + std::to_string(g.seed) + ".scn", g.text, o);
}

std::string verdict_of(const CheckResult& r) {
  if (r.bad_input) return "bad_input";
  switch (r.result.verdict) {
    case sim::Verdict::Ok: return "ok";
    case sim::Verdict::Hang: return "hang";
    case sim::Verdict::Error: return "error " + (r.result.findings.empty() ? std::string("?") : r.result.findings.front().kind);    case sim::Verdict::Stopped: return "stopped";
  }
  return "?";
}

TEST(Generate, SameSeedSameText) {
  for (double rate : {0.0, 0.3, 1.0}) {
    GenOptions o;
    o.mistake_rate = rate;
    for (uint64_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
      const std::string a = generate_scenario(o, s);
      ASSERT_EQ(a, generate_scenario(o, s)) << "seed " << s;
      ASSERT_NE(a, generate_scenario(o, s + 1)) << "seed " << s;
    }
  }
}

TEST(Generate, HeaderNamesSeedAndMistake) {
  GenOptions o;
  o.mistake_rate = 0.3;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + 50; ++s) {
    const GeneratedScenario g = generate(o, s);
    EXPECT_NE(g.text.find("seed=" + std::to_string(s)), std::string::npos);
    EXPECT_NE(g.text.find("# generated: mistake=" + g.mistake + "\n"), std::string::npos);
    EXPECT_EQ(g.text.find("\nexpect"), std::string::npos) << "generated scenarios carry no expect line";
  }
}

// Rate 0: every scenario parses, runs and finishes. A failure here is a generator bug or a model bug;
// the message carries the scenario so it can be investigated.
TEST(Generate, WellFormedScenariosFinish) {
  GenOptions o;
  o.mistake_rate = 0.0;
  std::map<std::string, int> verdicts;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    const GeneratedScenario g = generate(o, s);
    ASSERT_EQ(g.mistake, "none");
    const CheckResult r = run_text(g);
    ASSERT_FALSE(r.bad_input) << "seed " << s << ":\n" << r.diagnostic << "\n" << g.text;
    ++verdicts[verdict_of(r)];
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << "seed " << s << " (" << verdict_of(r) << "):\n"
                                                  << g.text << "\n" << r.report;
  }
  for (const auto& [v, n] : verdicts) std::printf("rate 0: %-28s %d\n", v.c_str(), n);
}

// Well-formed means for every interleaving, not just the nominal timing: the device will not keep
// the model's latencies. Heavy latency jitter found real races in earlier versions of the generator
// (a warpgroup's non-arriving warps falling a lap behind; start-phase pre-arrivals racing the first wait).
TEST(Generate, WellFormedUnderJitter) {
  GenOptions o;
  o.mistake_rate = 0.0;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    const GeneratedScenario g = generate(o, s);
    for (uint64_t js : {11u, 12u, 13u}) {
      CheckOptions co;
      co.run.max_events = 20'000'000;
      co.run.seed = js;
      co.run.jitter = 0.9;
      const CheckResult r = check_text("gen.scn", g.text, co);
      ASSERT_FALSE(r.bad_input) << r.diagnostic;
      EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << "seed " << s << " jitter seed " << js << " (" << verdict_of(r)
                                                    << "):\n" << g.text << "\n" << r.report;
    }
  }
}

// Rate 0.3 (the driver's default): never bad input; the mistakes show up at about the set rate.
TEST(Generate, SomeMistakesNeverBadInput) {
  GenOptions o;
  o.mistake_rate = 0.3;
  int with_mistake = 0;
  std::map<std::string, int> verdicts;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    const GeneratedScenario g = generate(o, s);
    const CheckResult r = run_text(g);
    ASSERT_FALSE(r.bad_input) << "seed " << s << ":\n" << r.diagnostic << "\n" << g.text;
    ++verdicts[verdict_of(r)];
    if (g.mistake == "none") {
      EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << "seed " << s << ":\n" << g.text << "\n" << r.report;
    } else {
      ++with_mistake;
    }
  }
  EXPECT_GT(with_mistake, 100);
  EXPECT_LT(with_mistake, 200);
  for (const auto& [v, n] : verdicts) std::printf("rate 0.3: %-28s %d\n", v.c_str(), n);
}

// Rate 1: every scenario carries a mistake, never bad input, and most of them are caught.
TEST(Generate, MistakesAreMostlyCaught) {
  GenOptions o;
  o.mistake_rate = 1.0;
  int not_ok = 0;
  std::map<std::string, std::pair<int, int>> by_kind;  // mistake -> (not ok, total)
  std::map<std::string, int> verdicts;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    const GeneratedScenario g = generate(o, s);
    ASSERT_NE(g.mistake, "none");
    const CheckResult r = run_text(g);
    ASSERT_FALSE(r.bad_input) << "seed " << s << ":\n" << r.diagnostic << "\n" << g.text;
    ++verdicts[verdict_of(r)];
    const bool caught = r.result.verdict != sim::Verdict::Ok;
    not_ok += caught;
    by_kind[g.mistake].first += caught;
    ++by_kind[g.mistake].second;
  }
  for (const auto& [v, n] : verdicts) std::printf("rate 1: %-28s %d\n", v.c_str(), n);
  for (const auto& [k, n] : by_kind) std::printf("mistake %-24s caught %d of %d\n", k.c_str(), n.first, n.second);
  EXPECT_GT(not_ok, static_cast<int>(kSeeds * 8 / 10));
  for (std::string_view k : mistake_kinds()) {
    ASSERT_TRUE(by_kind.count(std::string(k))) << k << " never injected";
    EXPECT_GT(by_kind[std::string(k)].first, 0) << k << " never caught";
  }
}

// The features the differential test is meant to exercise are produced, and in quantity.
TEST(Generate, FeaturesAreCovered) {
  GenOptions o;
  o.mistake_rate = 0.0;
  std::map<std::string, int> count;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    const GeneratedScenario g = generate(o, s);
    for (const std::string& f : g.features) ++count[f];
    ++count["shape_" + g.shape];
  }
  for (const auto& [f, n] : count) std::printf("feature %-20s %d\n", f.c_str(), n);
  const std::map<std::string, int> want = {
      {"cluster1", 100},     {"cluster2", 80},        {"cluster4", 40},       {"multicast", 60},
      {"multicast_release", 40}, {"named_barrier", 100}, {"zero_trip", 80},   {"cluster_sync", 80},
      {"pipeline_tma", 100}, {"pipeline_async", 80},  {"raw", 100},           {"chain", 50},
      {"peel", 40},          {"release_lag", 20},     {"producer_phase0", 30}, {"consumer_phase1", 10},
      {"state_simple", 20},  {"tail_none", 10},       {"tail_45", 3},         {"own_init", 40},
      {"phase_wait", 40},    {"test_wait", 15},       {"bulk_store", 15},     {"remote_arrive", 15},
      {"syncthreads", 10},   {"bar_arrive", 10},      {"expect_tx", 10},      {"complete_tx", 10},
      {"idle_warps", 40},    {"tile_loop", 100},      {"warpgroup_sync", 30},
  };
  for (const auto& [f, n] : want) EXPECT_GE(count[f], n) << "feature " << f;
}

// Shape limits from the brief: small enough for a GPU to run in milliseconds.
TEST(Generate, ScenariosStaySmall) {
  GenOptions o;
  o.mistake_rate = 0.3;
  for (uint64_t s = kFirstSeed; s < kFirstSeed + kSeeds; ++s) {
    const GeneratedScenario g = generate(o, s);
    const CheckResult r = run_text(g);
    ASSERT_FALSE(r.bad_input) << g.text;
    EXPECT_LE(r.kernel.launch.ctas, 8) << g.text;
    EXPECT_LE(r.kernel.launch.threads, 12 * 32) << g.text;
    for (const sim::WarpEnd& w : r.result.warps) EXPECT_LE(w.ops_done, 400) << "seed " << s;
  }
}

}  // namespace
}  // namespace pipesim::verify
