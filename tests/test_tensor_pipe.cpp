// sim/tensor_pipe.hpp and the engine's use of it (issue 21): MMAs back to back on one SM's tensor
// pipe take the sum of their durations, an issue into a full queue waits for the oldest MMA, a
// cta_group::2 MMA occupies both pipes of the pair, and tcgen05.commit arrives only when the pipe has
// drained the MMAs before it. Also the bytes and the launch floor the reports carry.
#include <gtest/gtest.h>

#include <string>

#include "model/arch.hpp"
#include "sim/tensor_pipe.hpp"
#include "verify/check.hpp"
#include "verify/json_report.hpp"

namespace {

using pipesim::sim::TensorPipe;

TEST(TensorPipe, MmasBackToBackTakeTheSumOfTheirDurations) {
  for (int depth : {0, 1, 4}) {
    TensorPipe pipe(depth);
    double t = 0, last_end = 0;
    for (int i = 0; i < 10; ++i) {
      const TensorPipe::Slot s = pipe.issue(t, 25.0);
      EXPECT_DOUBLE_EQ(s.start, 25.0 * i) << "depth " << depth;
      last_end = s.end;
      t = s.accepted;  // the issuing warp goes on once the pipe took the MMA
    }
    EXPECT_DOUBLE_EQ(last_end, 250.0) << "depth " << depth;
    EXPECT_DOUBLE_EQ(pipe.drained(), 250.0);
    EXPECT_DOUBLE_EQ(pipe.busy_ns(), 250.0);
  }
}

TEST(TensorPipe, AFullQueueHoldsTheIssueUntilTheOldestFinishes) {
  TensorPipe pipe(2);
  EXPECT_DOUBLE_EQ(pipe.issue(0, 10).accepted, 0);   // runs 0..10
  EXPECT_DOUBLE_EQ(pipe.issue(0, 10).accepted, 0);   // queued, runs 10..20
  EXPECT_DOUBLE_EQ(pipe.issue(0, 10).accepted, 10);  // full: waits for the first
  EXPECT_DOUBLE_EQ(pipe.issue(10, 10).accepted, 20);
  // Once the pipe has drained, an issue is taken at once and starts at once.
  const TensorPipe::Slot late = pipe.issue(100, 10);
  EXPECT_DOUBLE_EQ(late.accepted, 100);
  EXPECT_DOUBLE_EQ(late.start, 100);
  EXPECT_DOUBLE_EQ(late.end, 110);
}

TEST(TensorPipe, AnUnboundedQueueNeverHoldsTheIssue) {
  TensorPipe pipe(0);
  for (int i = 0; i < 100; ++i) EXPECT_DOUBLE_EQ(pipe.issue(0, 10).accepted, 0);
  EXPECT_DOUBLE_EQ(pipe.drained(), 1000);
}

TEST(TensorPipe, APairMmaWaitsForBothPipes) {
  TensorPipe a(4), b(4);
  a.issue(0, 50);  // a busy until 50, b idle
  const TensorPipe::Slot s = TensorPipe::issue_pair(a, &b, 0, 10);
  EXPECT_DOUBLE_EQ(s.start, 50);
  EXPECT_DOUBLE_EQ(a.drained(), 60);
  EXPECT_DOUBLE_EQ(b.drained(), 60);
  EXPECT_DOUBLE_EQ(b.busy_ns(), 10);
}

// One warp issues N tcgen05.mma and commits them to a barrier; the warp waits on it. A kind::f16
// 128x256x16 MMA is 2*128*256*16 FLOP; the model's rate comes from model/arch.
pipesim::verify::CheckResult run_commit(int n, double queue_depth) {
  const std::string text = "kernel pipe_drain on sm_100a\n"
                           "launch ctas = 1, threads = 32\n"
                           "barrier done count = 1\n"
                           "role mma warp 0:\n"
                           "  mma kind = f16 m = 128 n = 256 k = 16 count = " + std::to_string(n) + "\n"
                           "  commit done\n"
                           "  wait done parity = 0\n"
                           "expect ok\n";
  pipesim::verify::CheckOptions o;
  o.run.timing_overrides.emplace_back(pipesim::model::find_timing_field("mma_queue_depth"), queue_depth);
  return pipesim::verify::check_text("pipe_drain.scn", text, o);
}

double mma_ns() {
  const pipesim::model::Arch* b200 = pipesim::model::find_arch("sm_100a");
  const double rate = b200->mma_flops_per_clk[static_cast<size_t>(pipesim::model::MmaKind::F16)] * b200->time.tensor_clock_ghz;
  return 2.0 * 128 * 256 * 16 / rate;
}

TEST(TensorPipeEngine, CommitArrivesWhenThePipeHasDrained) {
  for (int n : {1, 8, 64}) {
    const pipesim::verify::CheckResult r = run_commit(n, 0);
    ASSERT_FALSE(r.bad_input) << r.diagnostic;
    ASSERT_EQ(r.result.verdict, pipesim::sim::Verdict::Ok) << r.report;
    // The wait ends after the commit's arrival, which comes after the last MMA: N x its duration, plus
    // issue and wake-up costs well under a microsecond.
    EXPECT_GE(r.result.end_ns, n * mma_ns()) << n;
    EXPECT_LT(r.result.end_ns, n * mma_ns() + 1000) << n;
    EXPECT_NEAR(r.result.tensor_busy_ns, n * mma_ns(), 1e-6) << n;
  }
}

// SemiAnalysis's public B200 umma_throughput: under cta_group::1 an M = 64 MMA takes the cycles of an
// M = 128 one (half the FLOP rate); under cta_group::2 each SM computes M / 2 rows at the full rate.
TEST(TensorPipeEngine, AnM64MmaOfOneCtaTakesAsLongAsAnM128One) {
  auto busy = [](int m, int cta_group) {
    const std::string text = "kernel m64 on sm_100a\n"
                             "launch ctas = " + std::to_string(cta_group) + ", cluster = " + std::to_string(cta_group) +
                             ", threads = 32, cta_group = " + std::to_string(cta_group) + "\n"
                             "barrier done count = 1\n"
                             "role mma warp 0:\n"
                             "  if cluster_rank == 0:\n"
                             "    mma kind = f16 m = " + std::to_string(m) + " n = 256 k = 16 count = 4\n"
                             "    commit done\n"
                             "    wait done parity = 0\n"
                             "expect ok\n";
    const pipesim::verify::CheckResult r = pipesim::verify::check_text("m64.scn", text, {});
    EXPECT_FALSE(r.bad_input) << r.diagnostic;
    EXPECT_EQ(r.result.verdict, pipesim::sim::Verdict::Ok) << r.report;
    return r.result.tensor_busy_ns;
  };
  EXPECT_NEAR(busy(64, 1), 4 * mma_ns(), 1e-6);
  EXPECT_NEAR(busy(128, 1), 4 * mma_ns(), 1e-6);
  // cta_group::2: M = 128 is 64 rows on each of the two SMs at the full rate, M = 256 128 rows (the
  // busy time is summed over both SMs).
  EXPECT_NEAR(busy(128, 2), 2 * 4 * mma_ns() / 2, 1e-6);
  EXPECT_NEAR(busy(256, 2), 2 * 4 * mma_ns(), 1e-6);
}

TEST(TensorPipeEngine, AFullQueueStallsTheIssuingWarp) {
  // With room for every MMA the warp reaches its commit at once and waits there; with a queue of 2
  // it cannot leave the mma statement before all but two of the 64 MMAs have finished. The end is
  // the same: the pipe decides it.
  const pipesim::verify::CheckResult open = run_commit(64, 0), tight = run_commit(64, 2);
  ASSERT_EQ(open.result.verdict, pipesim::sim::Verdict::Ok) << open.report;
  ASSERT_EQ(tight.result.verdict, pipesim::sim::Verdict::Ok) << tight.report;
  EXPECT_NEAR(open.result.end_ns, tight.result.end_ns, 1.0);
  double open_wait = 0, tight_wait = 0;
  for (const auto& w : open.result.role_waits) open_wait += w.ns;
  for (const auto& w : tight.result.role_waits) tight_wait += w.ns;
  EXPECT_GT(open_wait, 60 * mma_ns());                   // waited on the barrier for ~all 64
  EXPECT_LT(tight_wait, 3 * mma_ns());                   // waited only for the last two
}

}  // namespace

// The report's memory line and --json's `memory` and `predicted_event_ns` (issue 21): a bulk store's
// bytes are written back to the DRAM; the H100's launch floor is added to the body for event timing.
TEST(ReportBytes, StoreBytesReachTheDramAndTheLaunchFloorIsAdded) {
  const std::string text = "kernel store_bytes on sm_90a\n"
                           "launch ctas = 2, threads = 32\n"
                           "role epilogue warp 0:\n"
                           "  store bytes = 32768\n"
                           "  commit_group\n"
                           "  wait_group 0\n"
                           "expect ok\n";
  const pipesim::verify::CheckResult r = pipesim::verify::check_text("store_bytes.scn", text, {});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, pipesim::sim::Verdict::Ok) << r.report;
  EXPECT_EQ(r.result.dram_write_bytes, 2 * 32768);
  EXPECT_EQ(r.result.l2_hit_bytes + r.result.l2_miss_bytes, 0);
  EXPECT_NE(r.report.find("DRAM 0 B read, 65.5 KB written"), std::string::npos) << r.report;
  const double floor = pipesim::model::find_arch("sm_90a")->time.launch_floor_ns;
  ASSERT_GT(floor, 0);
  const nlohmann::json j = pipesim::verify::to_json(r);
  EXPECT_EQ(j["memory"]["dram_write_bytes"], 2 * 32768);
  EXPECT_EQ(j["memory"]["dram_read_bytes"], 0);
  EXPECT_DOUBLE_EQ(j["predicted_event_ns"].get<double>(), r.result.end_ns + floor);
}

TEST(ReportBytes, NoLaunchFloorWhereItWasNeverMeasured) {
  const pipesim::verify::CheckResult r = run_commit(4, 0);  // sm_100a
  ASSERT_EQ(r.result.verdict, pipesim::sim::Verdict::Ok) << r.report;
  EXPECT_TRUE(pipesim::verify::to_json(r)["predicted_event_ns"].is_null());
  EXPECT_EQ(r.report.find("launch floor"), std::string::npos) << r.report;
}
