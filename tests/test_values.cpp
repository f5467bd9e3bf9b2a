// Constant and computed operands meet one rule (sim/operand_rules.hpp): for every operand range rule,
// the constant form is refused while reading (file:line:col, exit 2) and the same value computed at
// run time (from a `var`) faults at the statement with the same sentence.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sim/stream.hpp"
#include "verify/check.hpp"

namespace pipesim::verify {
namespace {

const char* kHopper =
    "kernel t on sm_90a\n"
    "launch ctas = 2, cluster = 2, threads = 64\n"
    "barrier bar[2] count = 1\n"
    "barrier raw\n"
    "pipeline ab : tma -> threads, stages = 2, tx = 1024\n";
const char* kBlackwell =
    "kernel t on sm_100a\n"
    "launch ctas = 2, cluster = 2, threads = 64\n"
    "barrier bar[2] count = 1\n"
    "barrier raw\n"
    "pipeline ab : tma -> threads, stages = 2, tx = 1024\n";
constexpr uint32_t kHeaderLines = 5;

struct RuleCase {
  const char* name;
  const char* header;
  std::string stmt;      // `{v}` stands for the value; the rule's statement is its first line
  const char* value;     // the out-of-range value, as written
  const char* kind;      // the rule id of the run-time fault
  std::string sentence;  // what both say
};

std::string replaced(std::string s, const std::string& by) {
  for (size_t p; (p = s.find("{v}")) != std::string::npos;) s.replace(p, 3, by);
  return s;
}

// The role: `var v = VALUE`, then the statement with `{v}` as the literal (constant) or as `v`.
CheckResult run_case(const RuleCase& c, bool computed) {
  const std::string text = std::string(c.header) + "role probe warp 0:\n  var v = " + c.value + "\n  " +
                           replaced(c.stmt, computed ? "v" : c.value) + "\nexpect error\n";
  return check_text("inline.scn", text, {});
}

const std::vector<RuleCase>& cases() {
  static const std::vector<RuleCase> v = {
      {"wait_parity", kHopper, "wait bar parity = {v}", "2", "bad_operand", "parity must be 0 or 1, got 2"},
      {"test_wait_parity", kHopper, "test_wait bar parity = {v} expect true", "3", "bad_operand", "parity must be 0 or 1, got 3"},
      {"wait_phase", kHopper, "wait bar phase = {v}", "-1", "bad_operand", "phase must be in 0..9223372036854775807, got -1"},
      {"init_count", kHopper, "init raw count = {v}", "0", "count_range", "arrival count must be in 1..1048575, got 0"},
      {"arrive_count", kHopper, "arrive bar count = {v}", "1 << 20", "count_range", "arrival count must be in 1..1048575, got 1048576"},
      {"expect_tx_bytes", kHopper, "expect_tx bar bytes = {v}", "2000000", "tx_range",
       "byte count 2000000 is outside the tx range -1048575..1048575"},
      {"tma_bytes", kHopper, "tma bar bytes = {v}", "100", "bad_operand", "TMA size 100 is not a multiple of 16 bytes"},
      {"tma_bytes_zero", kHopper, "tma bar bytes = {v}", "0", "bad_operand", "TMA size must be positive, got 0"},
      {"store_bytes", kHopper, "store bytes = {v}", "24", "bad_operand", "bulk store size 24 is not a multiple of 16 bytes"},
      {"tma_multicast", kHopper, "tma bar bytes = 1024 multicast = {v}", "4", "bad_operand",
       "multicast mask 0x4 names a rank outside the cluster of 2 (ranks 0..1)"},
      {"tma_multicast_zero", kHopper, "tma bar bytes = 1024 multicast = {v}", "0", "bad_operand",
       "multicast mask must name at least one CTA, got 0"},
      {"rank", kHopper, "arrive bar cta = {v}", "2", "bad_operand", "cluster rank 2 is outside the cluster of 2 (ranks 0..1)"},
      {"index", kHopper, "arrive bar[{v}]", "2", "bad_operand", "index 2 is outside 'bar' (2 elements: 0..1)"},
      {"pipe_index", kHopper, "wait ab.full[{v}] parity = 0", "-1", "bad_operand", "index -1 is outside 'ab.full' (2 elements: 0..1)"},
      {"wait_group", kHopper, "wait_group {v}", "64", "bad_operand", "wait_group count must be in 0..63, got 64"},
      {"named_id", kHopper, "bar_sync {v} threads = 64", "16", "bad_operand", "named barrier id must be in 0..15, got 16"},
      {"named_threads", kHopper, "bar_sync 1 threads = {v}", "48", "bad_operand", "thread count 48 is not a multiple of 32"},
      {"named_threads_over", kHopper, "bar_arrive 1 threads = {v}", "96", "bad_operand", "thread count 96 exceeds the CTA's 64 threads"},
      {"state_index", kHopper, "ab.state producer index = {v}", "2", "bad_operand", "pipeline state index must be in 0..1, got 2"},
      {"state_phase", kHopper, "ab.state consumer phase = {v}", "-1", "bad_operand",
       "pipeline state phase must be in 0..9223372036854775807, got -1"},
      {"loop_step", kHopper, "for i in 0 .. 4 step {v}:\n    compute 1 ns", "0", "bad_operand", "loop step must be positive, got 0"},
      {"compute", kHopper, "compute {v} ns", "-5", "bad_operand", "compute time must not be negative, got -5"},
      {"mma_dim", kBlackwell, "mma kind = f16 m = {v} n = 256 k = 16", "70000", "bad_operand", "M must be in 0..65535, got 70000"},
      {"mma_count", kBlackwell, "mma kind = f16 m = 128 n = 256 k = 16 count = {v}", "0", "bad_operand",
       "mma count must be in 1..2147483647, got 0"},
      {"mma_shape", kBlackwell, "mma kind = f16 m = {v} n = 128 k = 16", "96", "bad_mma_shape",
       "illegal tcgen05.mma shape M=96 N=128 K=16 for kind::f16: M must be 64 or 128 under cta_group::1, got 96"},
      {"cta_group", kBlackwell, "commit bar cta_group = {v}", "3", "bad_operand", "cta_group must be 1 or 2, got 3"},
      {"commit_multicast", kBlackwell, "commit bar multicast = {v}", "4", "bad_operand",
       "multicast mask 0x4 names a rank outside the cluster of 2 (ranks 0..1)"},
      {"tmem_alloc_cols", kBlackwell, "tmem_alloc cols = {v}", "48", "tmem_bad_alloc",
       "TMEM columns must be a power of two in 32..512, got 48"},
      {"tmem_load_cols", kBlackwell, "tmem_load cols = {v}", "0", "bad_operand", "TMEM columns must be in 1..512, got 0"},
  };
  return v;
}

class OperandRule : public testing::TestWithParam<RuleCase> {};

TEST_P(OperandRule, ConstantIsRefusedWhileReading) {
  const RuleCase& c = GetParam();
  const CheckResult r = run_case(c, false);
  ASSERT_TRUE(r.bad_input) << r.report;
  const std::string at = "inline.scn:" + std::to_string(kHeaderLines + 3) + ":";
  EXPECT_EQ(r.diagnostic.rfind(at, 0), 0u) << r.diagnostic;
  EXPECT_NE(r.diagnostic.find(": error: " + c.sentence + "\n"), std::string::npos) << r.diagnostic;
}

TEST_P(OperandRule, ComputedValueFaultsAtTheStatementWithTheSameSentence) {
  const RuleCase& c = GetParam();
  const CheckResult r = run_case(c, true);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  ASSERT_FALSE(r.result.findings.empty());
  const sim::Finding& f = r.result.findings.front();
  EXPECT_EQ(f.kind, c.kind) << r.report;
  EXPECT_EQ(f.message, c.sentence) << r.report;
  EXPECT_EQ(r.kernel.sites.at(f.site).loc.line, kHeaderLines + 3) << r.report;
  EXPECT_EQ(f.warp, 0);
}

INSTANTIATE_TEST_SUITE_P(Values, OperandRule, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<RuleCase>& i) { return std::string(i.param.name); });

// A value in range passes both ways (the rules do not refuse what the hardware takes).
TEST(OperandRuleBounds, InRangeValuesRunBothWays) {
  for (bool computed : {false, true}) {
    const std::string v = computed ? "v" : "1";
    const CheckResult r = check_text(
        "inline.scn", std::string(kHopper) + "role probe warp 0:\n  var v = 1\n  arrive bar count = " + v +
                          "\n  wait bar parity = 1 - " + v + "\n  wait bar phase = " + v + " - 1\nexpect ok\n",
        {});
    ASSERT_FALSE(r.bad_input) << r.diagnostic;
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  }
}

// A raw tma's `cta = R`: the own rank, or under cta_group 2 the pair leader's; anything else faults.
TEST(TmaBarrierRank, OnlyTheOwnCtaOrThePairLeader) {
  const std::string h = "kernel t on sm_100a\nlaunch ctas = 2, cluster = 2, threads = 32, cta_group = 2\nbarrier full count = 1\n";
  const CheckResult r = check_text("inline.scn", h + "role p warp 0:\n  tma full bytes = 1024 cta = peer_rank\nexpect error\n", {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  const sim::Finding& f = r.result.findings.front();
  EXPECT_EQ(f.kind, "bad_operand");
  EXPECT_EQ(f.cta, 0);  // the leader names its follower
  EXPECT_EQ(f.message, "a TMA completes its bytes on its own CTA's barrier or its pair leader's (rank 0); cta = 1 names neither");
  // Under cta_group 1 only the own rank.
  const std::string h1 = "kernel t on sm_100a\nlaunch ctas = 2, cluster = 2, threads = 32\nbarrier full count = 1\n";
  const CheckResult r1 = check_text("inline.scn", h1 + "role p warp 0:\n  tma full bytes = 1024 cta = 1 - cluster_rank\nexpect error\n", {});
  ASSERT_FALSE(r1.result.findings.empty()) << r1.report;
  EXPECT_EQ(r1.result.findings.front().message,
            "a TMA completes its bytes on its own CTA's barrier (the pair leader's only under cta_group 2); cta = 1 names neither");
}

// Loads and stores of smem cells: bad input while reading, the never-stored cell at run time.
TEST(SmemValues, ReadingErrorsAndANeverStoredCell) {
  const std::string h = "kernel t on sm_90a\nlaunch ctas = 1, threads = 64\nbarrier ready count = 1\nsmem info[2]\n";
  const CheckResult idx = check_text("inline.scn", h + "role p warp 0:\n  store info[2] = 1\nexpect ok\n", {});
  ASSERT_TRUE(idx.bad_input);
  EXPECT_EQ(idx.diagnostic.rfind("inline.scn:6:14: error: index 2 is outside 'info' (2 elements: 0..1)", 0), 0u) << idx.diagnostic;
  const CheckResult dup = check_text("inline.scn", h + "smem ready\nrole p warp 0:\n  compute 1 ns\nexpect ok\n", {});
  ASSERT_TRUE(dup.bad_input);
  EXPECT_NE(dup.diagnostic.find("duplicate barrier, pipeline or smem name 'ready'"), std::string::npos) << dup.diagnostic;
  const CheckResult never = check_text("inline.scn", h + "role p warp 0:\n  var v = load info[1]\nexpect error\n", {});
  ASSERT_FALSE(never.bad_input) << never.diagnostic;
  ASSERT_FALSE(never.result.findings.empty()) << never.report;
  EXPECT_EQ(never.result.findings.front().kind, "read_without_wait");
  EXPECT_EQ(never.result.findings.front().message, "load of info[1], which no warp has stored to");
  // A computed index past the array: the index rule, at run time.
  const CheckResult past = check_text("inline.scn", h + "role p warp 0:\n  var i = 3\n  store info[i] = 1\nexpect error\n", {});
  ASSERT_FALSE(past.result.findings.empty()) << past.report;
  EXPECT_EQ(past.result.findings.front().message, "index 3 is outside 'info' (2 elements: 0..1)");
}

// The loaded value steers control flow, and a warp's own store is ordered for itself; a store the
// reader waited for (the writer's arrive after it) passes, the same store without that arrive does not.
TEST(SmemValues, OrderComesFromTheWritersReleaseAndTheReadersWait) {
  const std::string h = "kernel t on sm_90a\nlaunch ctas = 1, threads = 64\nbarrier ready count = 1\nbarrier other count = 1\nsmem info\n";
  const std::string own = h + "role p warp 0:\n  store info = 3\n  var n = load info\n  for i in 0 .. n:\n    arrive ready\n    wait ready parity = i & 1\nexpect ok\n";
  const CheckResult a = check_text("inline.scn", own, {});
  ASSERT_FALSE(a.bad_input) << a.diagnostic;
  EXPECT_EQ(a.result.verdict, sim::Verdict::Ok) << a.report;
  EXPECT_EQ(a.result.events, check_text("inline.scn", own, {}).result.events);
  // The writer arrives on `other` before its store and on `ready` after it: waiting on `other` does not order the load.
  const std::string body = "role w warp 0:\n  arrive other\n  store info = 5\n  arrive ready\nrole r warp 1:\n  wait W parity = 0\n  var v = load info\n  compute v ns\n";
  auto with = [&](const char* wait_on) {
    std::string b = body;
    b.replace(b.find("wait W"), 6, std::string("wait ") + wait_on);
    return check_text("inline.scn", h + b + "expect error\n", {});
  };
  EXPECT_EQ(with("ready").result.verdict, sim::Verdict::Ok) << with("ready").report;
  const CheckResult bad = with("other");
  ASSERT_EQ(bad.result.verdict, sim::Verdict::Error) << bad.report;
  EXPECT_EQ(bad.result.findings.front().kind, "read_without_wait");
}

// The device interpreter lays a scenario's streams out before the run: a loaded value or a refused
// operand cannot be, so crosscheck reports the device side unavailable instead of running it.
TEST(SmemValues, TheDeviceInterpreterRefusesLoadsAndRefusedOperands) {
  const std::string h = "kernel t on sm_90a\nlaunch ctas = 1, threads = 32\nbarrier bar count = 1\nsmem info\n";
  const CheckResult load = check_text("inline.scn", h + "role p warp 0:\n  store info = 1\n  var v = load info\nexpect ok\n", {});
  ASSERT_FALSE(load.bad_input) << load.diagnostic;
  EXPECT_THROW(sim::materialise(load.kernel), sim::StreamUnavailable);
  const CheckResult bad = check_text("inline.scn", h + "role p warp 0:\n  var p = 2\n  wait bar phase = p - 3\nexpect error\n", {});
  ASSERT_FALSE(bad.bad_input) << bad.diagnostic;
  try {
    sim::materialise(bad.kernel);
    ADD_FAILURE() << "expected StreamUnavailable";
  } catch (const sim::StreamUnavailable& e) {
    EXPECT_EQ(std::string(e.what()), "line 7: bad_operand: phase must be in 0..9223372036854775807, got -1");
  }
}

}  // namespace
}  // namespace pipesim::verify
