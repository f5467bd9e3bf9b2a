// The user's surface of `pipesim check` (issue 22): findings grouped per (kind, place, cause) with the
// CTA list folded, -v for the instances, the JSON grouping, --version, --color, --quiet, and the hang
// and stale_wait hints that name a skipped phase or an extra completion instead of "too few arrivals".
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/explain.hpp"
#include "sim/rules.hpp"
#include "verify/check.hpp"
#include "verify/json_report.hpp"
#include "verify/report.hpp"

namespace fs = std::filesystem;
using namespace pipesim;
using namespace pipesim::verify;

namespace {

std::string scenario(const std::string& rel) { return (fs::path(PIPESIM_SOURCE_DIR) / "scenarios" / rel).string(); }

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}
size_t lines(const std::string& text) { return count(text, "\n"); }

const CheckResult& production() {
  static const CheckResult r = check_file(scenario("svdquant/v2_fa4_4352x3840x3072_r128.scn"), {});
  return r;
}

struct CmdRun {
  int code = -1;
  std::string out, err;
};

CmdRun pipesim(const std::vector<std::string>& args, const std::string& env = "") {
  const fs::path dir = fs::temp_directory_path() / ("pipesim_report_output_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::string cmd = env + " '" + std::string(PIPESIM_BIN) + "'";
  for (const std::string& a : args) cmd += " '" + a + "'";
  cmd += " >'" + (dir / "out").string() + "' 2>'" + (dir / "err").string() + "'";
  const int status = std::system(cmd.c_str());
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  CmdRun r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

TEST(FoldList, RunsStepsAndNeighbours) {
  std::vector<int> all(148);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(sim::fold_list(all), "0-147");
  std::vector<int> even;
  for (int c = 0; c <= 74; c += 2) even.push_back(c);
  EXPECT_EQ(sim::fold_list(even), "0, 2, ..., 74");
  EXPECT_EQ(sim::fold_list({8, 4}), "4, 8");
  EXPECT_EQ(sim::fold_list({4, 5}), "4, 5");
  EXPECT_EQ(sim::fold_list({0, 1, 2, 3, 8, 10, 11, 11}), "0-3, 8, 10, 11");
  EXPECT_EQ(sim::fold_list({0, 10, 21, 33, 46, 60, 75, 91, 108, 126}), "0, 10, 21, 33, 46, 60, 75, 91, ...");
}

// The production scenario: 148 dangling_expect_tx instances in four (site, barrier) causes.
TEST(GroupedFindings, ProductionScenarioIsShort) {
  const CheckResult& r = production();
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.findings.size(), 148u) << "the scenario changed: its warnings no longer show the grouping";
  EXPECT_LT(lines(r.report), 40u) << r.report;
  EXPECT_EQ(count(r.report, "[dangling_expect_tx]"), 4u) << r.report;
  EXPECT_EQ(count(r.report, "  in CTAs 0, 2, ..., 74 (38)\n"), 2u) << r.report;
  EXPECT_EQ(count(r.report, "  in CTAs 76, 78, ..., 146 (36)\n"), 2u) << r.report;
  EXPECT_NE(r.report.find("ab.full[1] of each CTA is left expecting 57344 bytes"), std::string::npos) << r.report;
  // One line on why, from the rule's general reading.
  EXPECT_EQ(count(r.report, "  impact: " + std::string(sim::warning_impact("dangling_expect_tx")) + "\n"), 4u) << r.report;
}

// -v adds detail, never floods: 148 instances that say the same as their group add one line per group.
TEST(GroupedFindings, VerboseDoesNotRepeatTheGroup) {
  const CheckResult& r = production();
  const std::string v = human_report(r, {.verbose = true, .color = false});
  EXPECT_EQ(lines(v), lines(r.report) + 4) << v;
  EXPECT_EQ(count(v, "  every instance says the same (--json lists each one)\n"), 4u) << v;
  EXPECT_EQ(v.find("\n  CTA 0: barrier state"), std::string::npos) << v;
}

// The instances that do say more: each distinct detail once, with the CTAs that carry it.
TEST(GroupedFindings, VerboseShowsEachDistinctDetailOnce) {
  CheckResult r = production();
  size_t marked = 0;
  for (sim::Finding& f : r.result.findings) {
    if (f.message.find("ab.full[1]") == std::string::npos) continue;  // the group in CTAs 0, 2, ..., 74
    if (f.cta == 0 || f.cta == 2) f.notes.push_back("the TMA unit of CTA " + std::to_string(f.cta) + " was reset");
    if (f.cta == 4) f.notes.push_back("a note only CTA 4 has");
    marked += f.cta == 0 || f.cta == 2 || f.cta == 4;
  }
  ASSERT_EQ(marked, 3u);
  const std::string v = human_report(r, {.verbose = true, .color = false});
  EXPECT_EQ(count(v, "\n  CTAs 0, 2 (2): the TMA unit of this CTA was reset\n"), 1u) << v;
  EXPECT_EQ(count(v, "\n  CTA 4: a note only this CTA has\n"), 1u) << v;
  EXPECT_EQ(count(v, "every instance says the same"), 3u) << "the other three groups" << v;
  const std::string plain = human_report(r, {.verbose = false, .color = false});
  EXPECT_EQ(count(plain, "  note: 3 of the 38 instances have notes of their own (-v shows them)\n"), 1u) << plain;
}

TEST(GroupedFindings, JsonKeepsInstancesAndGroups) {
  const CheckResult& r = production();
  const nlohmann::json j = to_json(r);
  ASSERT_EQ(j["findings"].size(), 148u);
  ASSERT_EQ(j["finding_groups"].size(), 4u);
  size_t members = 0;
  for (const auto& g : j["finding_groups"]) {
    members += g["members"].size();
    EXPECT_EQ(g["kind"], "dangling_expect_tx");
    EXPECT_EQ(g["ctas"].size(), g["members"].size());
    EXPECT_TRUE(g["impact"].is_string());
    for (const auto& m : g["members"]) EXPECT_EQ(j["findings"][m.get<size_t>()]["where"], g["where"]);
  }
  EXPECT_EQ(members, 148u);
  EXPECT_TRUE(j["finding_groups"][0]["ctas_text"] == "76, 78, ..., 146" || j["finding_groups"][0]["ctas_text"] == "0, 2, ..., 74")
      << j["finding_groups"][0]["ctas_text"];
}

TEST(GroupedFindings, EveryWarningRuleSaysItsImpact) {
  for (const sim::RuleInfo& rule : sim::kRules)
    if (!rule.fatal) {
      EXPECT_FALSE(sim::warning_impact(rule.id).empty()) << rule.id;
    }
}

// --------------------------------------------------------------------------- the command line
// The version names the commit the binary was built from (written at build time, not configure time:
// a tree configured once and rebuilt after later commits used to print the first one).
TEST(CheckCli, Version) {
  const CmdRun r = pipesim({"--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("pipesim 0.", 0), 0u) << r.out;
  const std::string head_file = (fs::temp_directory_path() / ("pipesim_head_" + std::to_string(::getpid()))).string();
  const std::string git = "git -C '" + std::string(PIPESIM_SOURCE_DIR) + "' rev-parse --short HEAD >'" + head_file + "' 2>/dev/null";
  if (std::system(git.c_str()) != 0) GTEST_SKIP() << "not a git checkout: the version carries no commit";
  std::ifstream in(head_file);
  std::string head;
  std::getline(in, head);
  fs::remove(head_file);
  ASSERT_FALSE(head.empty());
  EXPECT_NE(r.out.find(head), std::string::npos) << "HEAD is " << head << "; --version says " << r.out;
}

TEST(CheckCli, ColorAlwaysAndNever) {
  const std::string f = scenario("bugs/16_dangling_expect_tx_broken.scn");
  const CmdRun always = pipesim({"check", "--color=always", f});
  EXPECT_EQ(always.code, 0);
  EXPECT_NE(always.out.find("\x1b[32mok"), std::string::npos) << always.out;
  EXPECT_NE(always.out.find("\x1b[33mwarning\x1b[0m"), std::string::npos) << always.out;
  const CmdRun never = pipesim({"check", "--color=never", f});
  EXPECT_EQ(never.out.find('\x1b'), std::string::npos);
  // auto: stdout is a file here, so no colour, NO_COLOR or not.
  EXPECT_EQ(pipesim({"check", f}).out.find('\x1b'), std::string::npos);
  EXPECT_EQ(pipesim({"check", "--color=sometimes", f}).code, 2);
  EXPECT_TRUE(pipesim({"check", f}).err.empty()) << "no progress line off a terminal";
}

// The progress line of one long run hears the engine every 65,536 events, simulated time running on.
TEST(CheckCli, OneLongRunReportsItsProgress) {
  CheckOptions o;
  o.defines = {{"K", 8192}};
  std::vector<std::pair<double, uint64_t>> heard;
  o.run.on_progress = [&](double ns, uint64_t events, uint64_t) { heard.emplace_back(ns, events); };
  const CheckResult r = check_file(scenario("hopper/ws_gemm.scn"), o);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_GE(heard.size(), 2u) << r.result.events << " events";
  for (size_t i = 1; i < heard.size(); ++i) {
    EXPECT_GT(heard[i].first, heard[i - 1].first);
    EXPECT_GT(heard[i].second, heard[i - 1].second);
  }
  EXPECT_LE(heard.back().first, r.result.end_ns);
  EXPECT_LE(heard.back().second, r.result.events);
}

TEST(CheckCli, QuietPrintsTheVerdictLineOnly) {
  const CmdRun ok = pipesim({"check", "--quiet", scenario("bugs/04_ring_wrap_phase_broken.scn")});
  EXPECT_EQ(ok.code, 0);
  EXPECT_EQ(lines(ok.out), 1u) << ok.out;
  EXPECT_EQ(ok.out.rfind("ok ", 0), 0u) << ok.out;
  EXPECT_TRUE(ok.err.empty()) << ok.err;
  // A verdict that misses its expectation: exit 1 as without --quiet.
  const CmdRun miss = pipesim({"check", "-q", scenario("bugs/04_ring_wrap_phase_broken.scn"), "-D", "K_TILES=2"});
  EXPECT_EQ(miss.code, 1) << miss.out;
  EXPECT_EQ(lines(miss.out), 1u) << miss.out;
  EXPECT_EQ(miss.out.rfind("FAIL", 0), 0u) << miss.out;
}

// --------------------------------------------------------------------------- hints
const sim::HangGroup* group_at(const CheckResult& r, const std::string& role_name) {
  for (const sim::HangGroup& g : r.result.hang.groups)
    if (g.role >= 0 && r.kernel.roles[static_cast<size_t>(g.role)].name == role_name) return &g;
  return nullptr;
}
bool any_hint(const sim::HangGroup& g, const std::string& what) {
  return std::any_of(g.hints.begin(), g.hints.end(), [&](const std::string& h) { return h.find(what) != std::string::npos; });
}

// Missing wait (the parity never flips): the consumer's wait is two phases on, so not "more arrivals".
TEST(HangHints, MissingWaitIsNotTooFewArrivals) {
  const CheckResult r = check_file(scenario("bugs/04_ring_wrap_phase_broken.scn"), {});
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* consumer = group_at(r, "consumer");
  ASSERT_NE(consumer, nullptr);
  EXPECT_TRUE(any_hint(*consumer, "was for parity 0 too")) << r.report;
  EXPECT_TRUE(any_hint(*consumer, "more arrivals are not the fix")) << r.report;
  EXPECT_FALSE(any_hint(*consumer, "more arrival(s)")) << r.report;
  // The producer's wait kept step with its barrier: there the count of missing arrivals is the reading.
  const sim::HangGroup* producer = group_at(r, "producer");
  ASSERT_NE(producer, nullptr);
  EXPECT_TRUE(any_hint(*producer, "it needs phase 1 to complete: 2 more arrival(s) of 2")) << r.report;
}

// Too few arrivals (a real one): nobody arrives on the stage the tail waits for; every source of the
// barrier is listed, the tcgen05.commit of the MMA warp's release included.
TEST(HangHints, SourcesIncludeCommits) {
  const CheckResult r = check_file(scenario("bugs/05_producer_tail_2cta_broken.scn"), {});
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  EXPECT_NE(r.report.find("(ab.consumer_release) in role mma (a tcgen05.commit"), std::string::npos) << r.report;
}

// A commit whose mask leaves the waiting CTA out is named; a cta_group::1 commit to its own CTA, the
// normal form, is not (it left nobody out).
TEST(HangHints, ACommitMissingThisCtaIsNamedAnOwnCommitIsNot) {
  const std::string f = testing::TempDir() + "/commit_skip.scn";
  std::ofstream(f) << "kernel commit_skip on sm_100a\n"
                      "launch ctas = 2, cluster = 2, threads = 64\n"
                      "barrier done count = 1\n"
                      "role mma warp 0:\n"
                      "  cluster_sync\n"
                      "  if cluster_rank == 1:\n"
                      "    commit done multicast = 0b01\n"   // line 7: rank 0 only, leaves its own CTA out
                      "  commit done\n"                      // line 8: own CTA
                      "role epi warp 1:\n"
                      "  cluster_sync\n"
                      "  wait done parity = 0\n"
                      "  wait done parity = 1\n"
                      "expect hang\n";
  const CheckResult r = check_file(f, {});
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* epi = group_at(r, "epi");
  ASSERT_NE(epi, nullptr) << r.report;
  EXPECT_TRUE(any_hint(*epi, "tcgen05.commit(s) to done[0] at line 7 (commit) by warp 0 (mma) of cluster rank 1 went to mask 0b1, which leaves out this CTA (rank 1)")) << r.report;
  EXPECT_FALSE(any_hint(*epi, "at line 8 (commit) by warp")) << r.report;
}

// Extra completion: a raw arrive beside the pipeline's releases runs the empty barrier ahead.
TEST(StaleWaitHints, ExtraCompletionIsNamed) {
  const CheckResult r = check_file(scenario("crosscheck/regress_gen_1_270.scn"), {});
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  EXPECT_NE(r.report.find("cause: an extra completion"), std::string::npos) << r.report;
  EXPECT_EQ(r.report.find("too few arrivals gate"), std::string::npos) << r.report;
}

TEST(StaleWaitHints, UndecidedCauseNamesEveryReading) {
  const CheckResult r = check_file(scenario("rules/stale_wait_broken.scn"), {});
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  EXPECT_NE(r.report.find("arrivals on it so far (1 complete a phase): 4 at line"), std::string::npos) << r.report;
  EXPECT_EQ(r.report.find("cause: an extra completion"), std::string::npos) << r.report;
}

}  // namespace
