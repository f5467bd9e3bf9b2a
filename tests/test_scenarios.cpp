// Golden tests on the shipped scenarios (scenarios/): every file's verdict matches its `expect`;
// for each bug pair of ../shared/spec/bug-catalog.md, the key lines of the report explain the bug
// (which barrier, which role and warps, which cycle or rule); determinism across seeds.
//
// Line numbers are not hard-coded: they are looked up in the scenario text by a marker, so that
// editing a header comment does not break the tests.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "verify/check.hpp"
#include "verify/explore.hpp"
#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

namespace fs = std::filesystem;

const fs::path kScenarios = fs::path(PIPESIM_SOURCE_DIR) / "scenarios";

std::vector<std::string> all_scenarios() {
  std::vector<std::string> out;
  if (!fs::exists(kScenarios)) return out;
  for (const auto& e : fs::recursive_directory_iterator(kScenarios))
    if (e.is_regular_file() && e.path().extension() == ".scn") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string rel(const std::string& path) { return fs::relative(path, kScenarios).generic_string(); }

std::string scn(const std::string& relpath) { return (kScenarios / relpath).string(); }

CheckResult check(const std::string& relpath, std::vector<Define> defines = {}, uint64_t seed = 1,
                  double jitter = 0.0) {
  CheckOptions o;
  o.defines = std::move(defines);
  o.run.seed = seed;
  o.run.jitter = jitter;
  return check_file(scn(relpath), o);
}

// 1-based number of the first line of the scenario containing `marker`.
int line_of(const std::string& relpath, const std::string& marker) {
  std::ifstream in(scn(relpath));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(marker) != std::string::npos) return n;
  ADD_FAILURE() << relpath << ": no line contains " << marker;
  return -1;
}

// "scenarios/.../x.scn:LINE:" as the report prints a site.
std::string site(const std::string& relpath, const std::string& marker) {
  return scn(relpath) + ":" + std::to_string(line_of(relpath, marker)) + ":";
}

bool has(const std::string& report, const std::string& text) { return report.find(text) != std::string::npos; }

#define EXPECT_REPORT_HAS(r, text) EXPECT_TRUE(has((r).report, text)) << "missing: " << (text) << "\n--- report:\n" << (r).report
#define EXPECT_REPORT_LACKS(r, text) EXPECT_FALSE(has((r).report, text)) << "unexpected: " << (text) << "\n--- report:\n" << (r).report

// The (cta, warp) pairs blocked at the end of a run.
std::set<std::pair<int, int>> blocked(const CheckResult& r) {
  std::set<std::pair<int, int>> s;
  for (const sim::WarpEnd& w : r.result.warps)
    if (w.status == sim::WarpStatus::Blocked) s.insert({w.cta, w.warp});
  return s;
}

std::set<std::pair<int, int>> range(int cta_lo, int cta_hi, int warp_lo, int warp_hi) {
  std::set<std::pair<int, int>> s;
  for (int c = cta_lo; c <= cta_hi; ++c)
    for (int w = warp_lo; w <= warp_hi; ++w) s.insert({c, w});
  return s;
}

// ------------------------------------------------------------------ every scenario
class EveryScenario : public testing::TestWithParam<std::string> {};

TEST_P(EveryScenario, VerdictMatchesExpect) {
  const CheckResult r = check_file(GetParam(), {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_TRUE(r.kernel.expect.has_value()) << GetParam() << " has no expect line";
  EXPECT_EQ(r.result.verdict, r.kernel.expect->verdict) << r.report;
  EXPECT_TRUE(r.matches_expect) << r.report;
}

TEST_P(EveryScenario, VerdictIsTheSameUnderJitter) {
  const CheckResult base = check_file(GetParam(), {});
  ASSERT_FALSE(base.bad_input) << base.diagnostic;
  if (base.kernel.expect && base.kernel.expect->racy) {
    // A scenario that says its verdict depends on timing must show it: the interleaving search
    // reaches another outcome too.
    const Exploration e = explore(base.kernel, {}, 256, 0.5);
    EXPECT_TRUE(e.timing_dependent())
        << GetParam() << " is marked racy, but it and 256 explored runs all give " << outcome_text(base.result);
    return;
  }
  for (uint64_t seed : {2, 3, 7, 11}) {
    CheckOptions o;
    o.run.seed = seed;
    o.run.jitter = 0.2;
    const CheckResult r = check_file(GetParam(), o);
    ASSERT_FALSE(r.bad_input) << r.diagnostic;
    EXPECT_EQ(r.result.verdict, base.result.verdict) << "seed " << seed << "\n" << r.report;
    if (!r.result.findings.empty() && !base.result.findings.empty()) {
      EXPECT_EQ(r.result.findings.front().kind, base.result.findings.front().kind) << "seed " << seed;
    }
  }
}

TEST_P(EveryScenario, SameSeedGivesIdenticalReport) {
  CheckOptions o;
  o.run.seed = 42;
  o.run.jitter = 0.1;
  const CheckResult a = check_file(GetParam(), o);
  const CheckResult b = check_file(GetParam(), o);
  ASSERT_FALSE(a.bad_input) << a.diagnostic;
  EXPECT_EQ(a.report, b.report);
  EXPECT_EQ(a.result.events, b.result.events);
  EXPECT_EQ(a.result.end_ns, b.result.end_ns);
}

std::string test_name(const testing::TestParamInfo<std::string>& info) {
  std::string n = rel(info.param);
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(Shipped, EveryScenario, testing::ValuesIn(all_scenarios()), test_name);

TEST(ShippedScenarios, EveryRequiredFileIsThere) {
  std::set<std::string> have;
  for (const std::string& p : all_scenarios()) have.insert(rel(p));
  for (const char* f : {"hopper/ws_gemm.scn", "probes/p00_fresh_parity1_passes.scn",
                        "probes/p13_two_copies_one_barrier_completes.scn",
                        "probes/u1_arrive_while_bytes_outstanding.scn", "probes/u4b_standalone_expect_tx_completes.scn",
                        "probes/m1_multicast_full_size_to_each_cta.scn", "probes/m2_remote_arrives_complete.scn"})
    EXPECT_TRUE(have.count(f)) << f;
  // h100-probes.md rows 0..11, 13 and U1..U4b, M1, M2: one file each.
  int probes = 0;
  for (const std::string& f : have) probes += f.rfind("probes/", 0) == 0;
  EXPECT_EQ(probes, 13 + 5 + 2);
  for (const char* n : {"01", "03", "04", "11", "13", "14", "15"}) {
    int broken = 0, fixed = 0;
    for (const std::string& f : have) {
      if (f.rfind(std::string("bugs/") + n + "_", 0) != 0) continue;
      broken += f.ends_with("_broken.scn");
      fixed += f.ends_with("_fixed.scn");
    }
    EXPECT_EQ(broken, 1) << "bug " << n;
    EXPECT_EQ(fixed, 1) << "bug " << n;
  }
}

// ------------------------------------------------------------------ probes: key lines
TEST(GoldenProbes, U1FaultNamesTheRuleAndTheArrive) {
  const std::string f = "probes/u1_arrive_while_bytes_outstanding.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error);
  ASSERT_FALSE(r.result.findings.empty());
  EXPECT_EQ(r.result.findings.front().kind, "pending_underflow");
  EXPECT_EQ(r.kernel.sites.at(r.result.findings.front().site).loc.line,
            static_cast<uint32_t>(line_of(f, "arrive bar  ")));
  EXPECT_REPORT_HAS(r, site(f, "arrive bar  ") );
  EXPECT_REPORT_HAS(r, "[pending_underflow]");
  EXPECT_REPORT_HAS(r, "pending 0 of 1, tx 256");  // the state the arrival hit
}

TEST(GoldenProbes, U2FaultNamesTheCount) {
  const std::string f = "probes/u2_arrive_count_beyond_pending.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error);
  EXPECT_REPORT_HAS(r, site(f, "arrive bar count = 3"));
  EXPECT_REPORT_HAS(r, "[pending_underflow] arrive count 3");
}

TEST(GoldenProbes, Row10HangSaysBytesAreMissing) {
  const std::string f = "probes/p10_expect_more_than_delivered_hangs.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang);
  EXPECT_REPORT_HAS(r, site(f, "wait bar parity = 0"));
  EXPECT_REPORT_HAS(r, "waits on bar[0] parity 0");
  EXPECT_REPORT_HAS(r, "pending 0 of 1, tx 128");
  EXPECT_REPORT_HAS(r, "could unblock: nobody");
}

TEST(GoldenProbes, Row11HangSaysTxIsStuckNegative) {
  const CheckResult r = check("probes/p11_expect_less_than_delivered_hangs.scn");
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang);
  EXPECT_REPORT_HAS(r, "pending 0 of 1, tx -128");
  EXPECT_REPORT_HAS(r, "more byte(s) landed than were expected");
}

// ------------------------------------------------------------------ hopper GEMM
TEST(GoldenHopper, WsGemmRunsCleanWithoutFindings) {
  const CheckResult r = check("hopper/ws_gemm.scn");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Ok);
  EXPECT_TRUE(r.result.findings.empty()) << r.report;
  EXPECT_EQ(r.kernel.launch.ctas, 132);
  EXPECT_EQ(r.kernel.launch.cluster, 2);
  EXPECT_GT(r.result.end_ns, 0);
  EXPECT_REPORT_HAS(r, "predicted duration");
}

TEST(GoldenHopper, WsGemmOtherSizesPass) {
  for (auto defs : std::vector<std::vector<Define>>{{{"M", 256}, {"N", 256}},   // fewer tiles than SMs
                                                    {{"K", 128}},               // K_TILES < STAGES
                                                    {{"M", 4096}, {"K", 256}}}) {
    const CheckResult r = check("hopper/ws_gemm.scn", defs);
    ASSERT_FALSE(r.bad_input) << r.diagnostic;
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  }
}

// ------------------------------------------------------------------ hang groups
// The hang group that contains (cta, warp); the test fails when there is none.
const sim::HangGroup* group_of(const CheckResult& r, int cta, int warp) {
  for (const sim::HangGroup& g : r.result.hang.groups)
    for (auto m : g.members)
      if (m == std::pair<int, int>{cta, warp}) return &g;
  ADD_FAILURE() << "no hang group holds CTA " << cta << " warp " << warp << "\n" << r.report;
  return nullptr;
}

uint32_t line_of_site(const CheckResult& r, uint32_t site) { return r.kernel.sites.at(site).loc.line; }

std::string role_of(const CheckResult& r, const sim::HangGroup& g) {
  return g.role >= 0 ? r.kernel.roles.at(static_cast<size_t>(g.role)).name : "";
}

bool any_unblocker_has(const sim::HangGroup& g, const std::string& text) {
  return std::any_of(g.unblockers.begin(), g.unblockers.end(), [&](const std::string& u) { return has(u, text); });
}

bool any_hint_has(const sim::HangGroup& g, const std::string& text) {
  return std::any_of(g.hints.begin(), g.hints.end(), [&](const std::string& u) { return has(u, text); });
}

std::string re_escape(const std::string& text) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(text, special, R"(\$&)");
}

bool report_matches(const CheckResult& r, const std::string& re) {
  return std::regex_search(r.report, std::regex(re));
}
#define EXPECT_REPORT_MATCHES(r, re) EXPECT_TRUE(report_matches(r, re)) << "no match for: " << (re) << "\n--- report:\n" << (r).report

// Checks one hang group: who (role, every member), where (site line), on what, barrier state.
void expect_group(const CheckResult& r, const std::string& relpath, const std::string& marker,
                  const std::set<std::pair<int, int>>& members, const std::string& role, const std::string& waits_on) {
  ASSERT_FALSE(members.empty());
  const sim::HangGroup* g = group_of(r, members.begin()->first, members.begin()->second);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(role_of(r, *g), role);
  EXPECT_EQ(line_of_site(r, g->site), static_cast<uint32_t>(line_of(relpath, marker))) << marker;
  EXPECT_EQ(g->waits_on.rfind(waits_on, 0), 0u) << g->waits_on << " vs " << waits_on;
  for (auto m : members) EXPECT_EQ(group_of(r, m.first, m.second), g) << "CTA " << m.first << " warp " << m.second;
  // The report prints the group at its site with its role and what it waits on.
  EXPECT_REPORT_MATCHES(r, re_escape(site(relpath, marker)) + R"(\d+: warps? [-0-9, ]+ in CTAs? [-0-9, ]+ \()" + role +
                               R"(\) waits? on )" + re_escape(waits_on));
}

std::set<std::pair<int, int>> warps_of(std::initializer_list<int> ctas, int warp_lo, int warp_hi) {
  std::set<std::pair<int, int>> s;
  for (int c : ctas)
    for (int w = warp_lo; w <= warp_hi; ++w) s.insert({c, w});
  return s;
}

// ------------------------------------------------------------------ bug 1
TEST(GoldenBugs, B01ProducerPhaseZero) {
  const std::string f = "bugs/01_producer_phase_zero_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  std::set<std::pair<int, int>> want = range(0, 3, 4, 11);
  for (int c = 0; c < 4; ++c) want.insert({c, 0});
  EXPECT_EQ(blocked(r), want);
  // The producer of every CTA waits on the first (fresh) empty barrier at parity 0.
  expect_group(r, f, "ab.producer_acquire", warps_of({0, 1, 2, 3}, 0, 0), "producer", "ab.empty[0] parity 0");
  const sim::HangGroup* p = group_of(r, 0, 0);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->state.has_value());
  EXPECT_EQ(p->state->completed, 0);
  EXPECT_EQ(p->state->pending, 2);  // both consumer warpgroups' releases missing
  EXPECT_TRUE(any_hint_has(*p, "producer pipeline state the scenario overrides")) << r.report;
  EXPECT_TRUE(any_unblocker_has(*p, "(consumer)")) << r.report;
  // The consumers wait on the first full barrier, which only the producer can fill.
  expect_group(r, f, "ab.consumer_wait", warps_of({0, 1, 2, 3}, 4, 11), "consumer", "ab.full[0] parity 0");
  EXPECT_TRUE(any_unblocker_has(*group_of(r, 0, 4), "warp 0 (producer)")) << r.report;
  EXPECT_REPORT_HAS(r, "deadlock cycle: warp 0 (producer) waits on ab.empty[0] parity 0 at line " +
                           std::to_string(line_of(f, "ab.producer_acquire")));
  EXPECT_REPORT_HAS(r, "ab.full[0] parity 0 at line " + std::to_string(line_of(f, "ab.consumer_wait")));
}

// ------------------------------------------------------------------ bug 3
TEST(GoldenBugs, B03TxBytesMismatch) {
  const std::string f = "bugs/03_tx_bytes_mismatch_broken.scn";
  const CheckResult r = check(f);
  // tx reaches zero before the peer's multicast half of B lands: the phase completes early and
  // the late bytes arrive after it. That race is the error, at the copy that lands late.
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  ASSERT_FALSE(r.result.findings.empty());
  const sim::Finding& e = r.result.findings.front();
  EXPECT_EQ(e.kind, "early_completion");
  EXPECT_TRUE(e.fatal);
  EXPECT_EQ(r.kernel.sites[e.site].loc.line, static_cast<uint32_t>(line_of(f, "B_BYTES / 2 multicast")));
  EXPECT_NE(e.message.find("8192 bytes landed on ab.full[0]"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("after the phase they were issued for"), std::string::npos) << e.message;
  EXPECT_REPORT_HAS(r, "the expect_tx of that phase was smaller than the bytes its copies deliver");
  // With the right tx the same kernel passes.
  EXPECT_EQ(check(f, {{"TX", 32768}}).result.verdict, sim::Verdict::Ok);
}

// ------------------------------------------------------------------ bug 4
TEST(GoldenBugs, B04RingWrapConstantParity) {
  const std::string f = "bugs/04_ring_wrap_phase_broken.scn";
  const std::string bug = "parity = 0          # bug";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  // The consumers wait for parity 0 on a barrier that has completed two phases: parity 0 now names
  // phase 2, which needs a refill that needs a release they never give.
  expect_group(r, f, bug, warps_of({0}, 4, 11), "consumer", "ab.full[0] parity 0");
  const sim::HangGroup* c = group_of(r, 0, 4);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->state.has_value());
  EXPECT_EQ(c->state->completed, 2);
  EXPECT_EQ(c->state->pending, 1);
  EXPECT_EQ(c->state->tx, 0);
  expect_group(r, f, "ab.producer_acquire", warps_of({0}, 0, 0), "producer", "ab.empty[0] parity 1");
  EXPECT_REPORT_HAS(r, "deadlock cycle: warp 0 (producer) waits on ab.empty[0] parity 1");
  EXPECT_REPORT_HAS(r, "ab.full[0] parity 0 at line " + std::to_string(line_of(f, bug)));
  // Fine while the ring does not wrap, hangs as soon as it does.
  EXPECT_EQ(check(f, {{"K_TILES", 2}}).result.verdict, sim::Verdict::Ok);
  EXPECT_EQ(check(f, {{"K_TILES", 4}}).result.verdict, sim::Verdict::Ok);
  EXPECT_EQ(check(f, {{"K_TILES", 5}}).result.verdict, sim::Verdict::Hang);
  // The fixed form passes at every length.
  for (int64_t k : {2, 4, 5, 16, 33})
    EXPECT_EQ(check("bugs/04_ring_wrap_phase_fixed.scn", {{"K_TILES", k}}).result.verdict, sim::Verdict::Ok) << k;
}

// ------------------------------------------------------------------ bug 11
TEST(GoldenBugs, B11ZeroTileCta) {
  const std::string f = "bugs/11_zero_tile_cta_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  // Exactly the consumer warps of the CTAs that got no tile (128 tiles, 132 CTAs) are stuck.
  EXPECT_EQ(blocked(r), range(128, 131, 4, 11));
  expect_group(r, f, "wait scales parity = 0", range(128, 131, 4, 11), "consumer", "scales[0] parity 0");
  const sim::HangGroup* c = group_of(r, 128, 4);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->unblockers.empty()) << r.report;  // nobody: the producer has exited
  EXPECT_REPORT_HAS(r, "could unblock: nobody");
  EXPECT_TRUE(any_hint_has(*c, "no live warp of the cluster will arrive on scales[0] again")) << r.report;
  EXPECT_TRUE(any_hint_has(*c, "line " + std::to_string(line_of(f, "arrive_expect_tx scales")) +
                                   " (arrive_expect_tx) in role producer"))
      << r.report;
  // A grid sized to the tile count does not hang: the zero-tile CTAs are the cause.
  EXPECT_EQ(check(f, {{"SMS", 128}}).result.verdict, sim::Verdict::Ok);
}

// ------------------------------------------------------------------ bug 13
TEST(GoldenBugs, B13PartialClusterSync) {
  const std::string f = "bugs/13_partial_cluster_sync_broken.scn";
  const std::string sync = "cluster_sync                              # bug";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  expect_group(r, f, sync, warps_of({0, 1, 2, 3}, 4, 11), "consumer", "the cluster barrier");
  // The warp that never arrives is named, and why it cannot: it waits on a release.
  const sim::HangGroup* c = group_of(r, 0, 4);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(any_unblocker_has(*c, "warp 0 (producer)")) << r.report;
  EXPECT_REPORT_MATCHES(r, R"(warp 0 \(producer\) ha(s|ve) not arrived on the cluster barrier)");
  EXPECT_REPORT_MATCHES(r, R"(not arrived on the cluster barrier[^\n]*blocked at line )" +
                               std::to_string(line_of(f, "ab.producer_acquire")));
  expect_group(r, f, "ab.producer_acquire", warps_of({0, 1, 2, 3}, 0, 0), "producer", "ab.empty[0]");
  EXPECT_TRUE(any_unblocker_has(*group_of(r, 0, 0), "blocked at line " + std::to_string(line_of(f, sync)) +
                                                        " (cluster_sync) on the cluster barrier"))
      << r.report;
  EXPECT_REPORT_HAS(r, "deadlock cycle: warp 0 (producer) waits on ab.empty[0]");
  EXPECT_REPORT_HAS(r, "waits on the cluster barrier at line " + std::to_string(line_of(f, sync)) +
                           " (cluster_sync); that needs warp 0 (producer) to arrive");
  // With one tile per cluster the producer exits before anyone waits, and exited warps do not count.
  EXPECT_EQ(check(f, {{"TILES", 2}}).result.verdict, sim::Verdict::Ok);
}

// ------------------------------------------------------------------ bug 14
TEST(GoldenBugs, B14ZeroTripKLoop) {
  const std::string f = "bugs/14_zero_trip_k_loop_broken.scn";
  const std::string peeled = "ab.consumer_wait                        # bug";
  const std::string epi = "bar_sync 1 threads = 288                # mainloop";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  // Only the split with the empty K range (CTA 2) is stuck: its producer and all its math warps.
  std::set<std::pair<int, int>> want = range(2, 2, 4, 11);
  want.insert({2, 0});
  EXPECT_EQ(blocked(r), want);
  expect_group(r, f, "bar_sync 1 threads = 288                # wait until", {{2, 0}}, "producer", "named barrier 1");
  EXPECT_REPORT_HAS(r, "32 of 288 threads have arrived");
  EXPECT_TRUE(any_unblocker_has(*group_of(r, 2, 0), "would arrive at line " + std::to_string(line_of(f, epi)) +
                                                        " (bar_sync), but are blocked at line " +
                                                        std::to_string(line_of(f, peeled))) ||
              any_unblocker_has(*group_of(r, 2, 0), "would arrive at line " + std::to_string(line_of(f, epi)) +
                                                        " (bar_sync), but it is blocked at line " +
                                                        std::to_string(line_of(f, peeled))))
      << r.report;
  expect_group(r, f, peeled, range(2, 2, 4, 11), "consumer", "ab.full[0] parity 0");
  EXPECT_TRUE(group_of(r, 2, 4)->unblockers.empty()) << r.report;
  EXPECT_TRUE(any_hint_has(*group_of(r, 2, 4), "no live warp of the cluster will arrive on ab.full[0] again")) << r.report;
  // Without an empty split the same code passes.
  EXPECT_EQ(check(f, {{"SPLITS", 2}}).result.verdict, sim::Verdict::Ok);
}

// ------------------------------------------------------------------ bug 15
TEST(GoldenBugs, B15NamedBarrierCount) {
  const std::string f = "bugs/15_named_barrier_count_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  expect_group(r, f, "bar_sync 1 threads = EPI_THREADS", warps_of({0, 1, 2, 3}, 4, 11), "consumer",
               "named barrier 1 (384 threads)");
  EXPECT_REPORT_HAS(r, "256 of 384 threads have arrived");
  expect_group(r, f, "ab.producer_acquire", warps_of({0, 1, 2, 3}, 0, 0), "producer", "ab.empty[0]");
  EXPECT_EQ(check(f, {{"EPI_THREADS", 256}}).result.verdict, sim::Verdict::Ok);
}

// A warp blocked in bar.sync / barrier.cluster.wait has already arrived for the current phase; its
// next arrival belongs to a later phase and cannot complete this one. The explanation must not offer
// it (or its equally blocked peers) as the way out, nor call its own later arrival a deadlock cycle:
// the missing arrivals are the producer warps (13) or threads no warp provides (15).
TEST(GoldenExplain, WarpsAlreadyArrivedAtANamedBarrierAreNotItsUnblockers) {
  const std::string f = "bugs/15_named_barrier_count_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang);
  const std::string line = std::to_string(line_of(f, "bar_sync 1 threads = EPI_THREADS"));
  EXPECT_REPORT_LACKS(r, "this warp itself would arrive");
  // No warp already waiting at bar 1 is offered as the one that would arrive there.
  EXPECT_FALSE(report_matches(r, "would arrive at line " + line + R"( \(bar_sync\), but (it is|are) blocked at line )" + line))
      << r.report;
  // And a warp's own later arrival is no deadlock cycle.
  EXPECT_FALSE(report_matches(r, R"(deadlock cycle: warp (\d+) \(consumer\) waits on named barrier 1[^\n]*; that needs warp \1 \(consumer\) to reach line )" + line))
      << r.report;
}

TEST(GoldenExplain, WarpsAlreadyArrivedAtTheClusterBarrierAreNotItsUnblockers) {
  const std::string f = "bugs/13_partial_cluster_sync_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang);
  const std::string line = std::to_string(line_of(f, "cluster_sync                              # bug"));
  EXPECT_REPORT_LACKS(r, "this warp itself would arrive");
  EXPECT_FALSE(report_matches(r, "would arrive at line " + line + R"( \(cluster_sync\), but (it is|are) blocked at line )" + line))
      << r.report;
}

// ------------------------------------------------------------------ fixed forms
TEST(GoldenBugs, FixedFormsPassWithoutFatalFindings) {
  for (const char* f : {"bugs/01_producer_phase_zero_fixed.scn", "bugs/03_tx_bytes_mismatch_fixed.scn",
                        "bugs/04_ring_wrap_phase_fixed.scn", "bugs/11_zero_tile_cta_fixed.scn",
                        "bugs/13_partial_cluster_sync_fixed.scn", "bugs/14_zero_trip_k_loop_fixed.scn",
                        "bugs/15_named_barrier_count_fixed.scn"}) {
    const CheckResult r = check(f);
    ASSERT_FALSE(r.bad_input) << r.diagnostic;
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
    for (const sim::Finding& x : r.result.findings) EXPECT_FALSE(x.fatal) << f << ": " << x.message;
    EXPECT_TRUE(std::none_of(r.result.warps.begin(), r.result.warps.end(),
                             [](const sim::WarpEnd& w) { return w.status == sim::WarpStatus::Blocked; }))
        << f;
  }
}

// ------------------------------------------------------------------ per-warp mutable variables
TEST(LanguageVar, AMissedPhaseFlipIsReportedAtTheWait) {
  const CheckResult ok = check("language/var_phase_ok.scn");
  EXPECT_EQ(ok.result.verdict, sim::Verdict::Ok) << ok.report;
  const std::string f = "language/var_phase_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  ASSERT_FALSE(r.result.findings.empty());
  EXPECT_EQ(r.result.findings.front().kind, "phase_reused");
  EXPECT_EQ(r.kernel.sites.at(r.result.findings.front().site).loc.line,
            static_cast<uint32_t>(line_of(f, "wait full[stage] parity = phase")));
  EXPECT_REPORT_HAS(r, "wait on full[0] for parity 1 passed");  // iteration 4: the unflipped bit
}

// The line a warp of CTA `cta` is blocked at (0: not blocked).
uint32_t blocked_line(const CheckResult& r, int cta, int warp) {
  for (const sim::WarpEnd& w : r.result.warps)
    if (w.cta == cta && w.warp == warp && w.status == sim::WarpStatus::Blocked) return r.kernel.sites.at(w.site).loc.line;
  return 0;
}

// ------------------------------------------------------------------ a raw tma to the pair leader's barrier
TEST(LanguagePairTma, BothCopiesCompleteTheLeadersBarrierAndTheFollowersOwnHangsTheLeader) {
  const CheckResult ok = check("language/pair_tma_leader_ok.scn");
  ASSERT_FALSE(ok.bad_input) << ok.diagnostic;
  EXPECT_EQ(ok.result.verdict, sim::Verdict::Ok) << ok.report;
  const std::string f = "language/pair_tma_leader_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  // The leader's MMA warp (CTAs 0 and 2, warp 1) waits on its full barrier: half the bytes came.
  const uint32_t at = static_cast<uint32_t>(line_of(f, "wait full[k % STAGES] parity = (k / STAGES) % 2"));
  EXPECT_EQ(blocked_line(r, 0, 1), at) << r.report;
  EXPECT_EQ(blocked_line(r, 2, 1), at) << r.report;
  EXPECT_REPORT_HAS(r, "16384 more byte(s)");
}

// ------------------------------------------------------------------ values through shared memory
TEST(LanguageValues, PublishedValuesSteerTheReadersAndAReadBeforeItsWaitIsAnError) {
  const CheckResult ok = check("language/values_publish_ok.scn");
  ASSERT_FALSE(ok.bad_input) << ok.diagnostic;
  EXPECT_EQ(ok.result.verdict, sim::Verdict::Ok) << ok.report;
  const std::string f = "language/values_read_without_wait_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  ASSERT_FALSE(r.result.findings.empty());
  EXPECT_EQ(r.result.findings.front().kind, "read_without_wait");
  EXPECT_EQ(r.kernel.sites.at(r.result.findings.front().site).loc.line,
            static_cast<uint32_t>(line_of(f, "var tile = load tile_info[k % STAGES]")));
}

TEST(LanguageValues, TwoRolesDecodingTheSameGrantDifferentlyHangAtTheConsumersWait) {
  const CheckResult ok = check("language/values_decode_ok.scn");
  ASSERT_FALSE(ok.bad_input) << ok.diagnostic;
  EXPECT_EQ(ok.result.verdict, sim::Verdict::Ok) << ok.report;
  const std::string f = "language/values_decode_broken.scn";
  const CheckResult r = check(f);
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const uint32_t at = static_cast<uint32_t>(line_of(f, "ab.consumer_wait"));
  EXPECT_EQ(blocked_line(r, 0, 2), at) << r.report;
  EXPECT_EQ(blocked_line(r, 1, 2), at) << r.report;
}

}  // namespace
}  // namespace pipesim::verify
