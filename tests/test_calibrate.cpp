// pipesim calibrate's pieces: reading crosscheck logs and fitting the interpreter's cost.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "sim/engine.hpp"
#include "verify/calibrate.hpp"
#include "verify/parser.hpp"

namespace pipesim::verify {
namespace {

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/";

TEST(CrosscheckLog, KeepsAgreeingRunsThatFinishedWithTheirDefinesAndTimestamps) {
  std::istringstream log(
      "== a.scn -D N=100 -D BYTES=256\n"
      "  verdict   model: ok                           device: ok                                 agree\n"
      "  end phases: 1 barrier(s) compared, all the same parity\n"
      "  time      kernel: model 1.000 us, device 2.500 us (first warp start to last warp end; 9 us by events), model -60.0 %, SM clock 1980 MHz, timestamps off\n"
      "== b.scn\n"
      "  verdict   model: ok                           device: ok                                 agree\n"
      "  time      kernel: model 1.000 us, device 3.000 us (first warp start to last warp end; 9 us by events), model -66.7 %\n"
      "== c.scn\n"
      "  verdict   model: hang                         device: hang                               agree\n"
      "  time      kernel: model 1.000 us, device 200000.000 us (first warp start to last warp end; 9 us by events)\n"
      "== d.scn\n"
      "  verdict   model: ok                           device: ok                                 model-only rule\n"
      "  time      kernel: model 1.000 us, device 4.000 us (first warp start to last warp end; 9 us by events)\n"
      "== e.scn --l2-sources\n"
      "  verdict   model: ok                           device: ok                                 agree\n"
      "  time      kernel: model 1.000 us, device 5.000 us (first warp start to last warp end; 9 us by events), timestamps off\n");
  const std::vector<Measured> m = read_crosscheck_log(log, true);
  ASSERT_EQ(m.size(), 2u);  // c hangs, d is a tcgen05 emulation / model-only, e re-reads L2
  EXPECT_EQ(m[0].file, "a.scn");
  EXPECT_DOUBLE_EQ(m[0].device_ns, 2500.0);
  EXPECT_FALSE(m[0].stamped);
  EXPECT_EQ(m[0].defines, (std::vector<std::string>{"N=100", "BYTES=256"}));
  EXPECT_EQ(m[1].file, "b.scn");
  EXPECT_TRUE(m[1].stamped);
  EXPECT_TRUE(m[1].defines.empty());
}

sim::Kernel load(const std::string& rel) {
  std::ifstream in(kDir + rel);
  std::ostringstream s;
  s << in.rdbuf();
  return parse_scenario(rel, s.str(), {});
}

// Device times made by the model itself with a known cost: the fit from zero must find costs that
// reproduce them (the fields are not all identifiable from a few scenarios, the times are).
TEST(Calibrate, FitReproducesTimesMadeWithAKnownCost) {
  model::InterpreterCost truth{};
  truth.op_ns = 120;
  truth.wait_ns = 200;
  truth.compute_ns = 150;
  truth.named_ns = 300;
  truth.start_ns = 900;
  truth.timestamp_ns = 30;
  std::vector<FitPoint> pts;
  for (const char* f : {"scenarios/calibration/op_issue.scn", "scenarios/calibration/named_barrier.scn",
                        "scenarios/probes/p02_one_arrive_parity0_passes.scn", "scenarios/crosscheck/n3_named_arrive_counts_like_sync.scn",
                        "scenarios/bugs/14_zero_trip_k_loop_fixed.scn"}) {
    for (const bool stamped : {false, true}) {
      FitPoint p{{f, 0, stamped, {}}, load(f)};
      sim::RunOptions o;
      o.interp = &truth;
      o.interp_timestamps = stamped;
      p.measured.device_ns = sim::run(p.kernel, o).end_ns;
      ASSERT_GT(p.measured.device_ns, 0) << f;
      pts.push_back(std::move(p));
    }
  }
  const FitScore before = score(pts, model::InterpreterCost{});
  const model::InterpreterCost fitted = fit_interpreter_cost(pts, model::InterpreterCost{}, 6);
  const FitScore after = score(pts, fitted);
  EXPECT_GT(before.mean_abs_log, 0.5);
  EXPECT_LT(after.mean_abs_log, 0.03) << "op " << fitted.op_ns << " wait " << fitted.wait_ns << " start " << fitted.start_ns;
  EXPECT_EQ(after.within_10pct, after.n);
  EXPECT_NEAR(fitted.timestamp_ns, truth.timestamp_ns, 15.0);  // the stamped/unstamped pairs pin it
}

// The fit times a scenario as the crosscheck ran it: past the rules the hardware does not check
// (here early_completion), on to the end, not stopped where `pipesim check` stops.
TEST(Calibrate, ScoresRunsAsTheCrosscheckRanThem) {
  const char* f = "scenarios/rules/early_completion_broken.scn";
  const model::InterpreterCost& cost = *model::interpreter_cost("sm_90a");
  const FitPoint p{{f, 1000, true, {}}, load(f)};
  const double crosscheck_ns = sim::run(p.kernel, sim::interpreter_run_options(&cost, true)).end_ns;
  sim::RunOptions stops;
  stops.interp = &cost;
  const sim::RunResult stopped = sim::run(p.kernel, stops);
  ASSERT_EQ(stopped.verdict, sim::Verdict::Error);
  ASSERT_GT(crosscheck_ns, stopped.end_ns);
  const FitScore s = score({p}, cost);
  ASSERT_EQ(s.model_ns.size(), 1u);
  EXPECT_DOUBLE_EQ(s.model_ns[0], crosscheck_ns);
}

}  // namespace
}  // namespace pipesim::verify
