#include "verify/explore.hpp"

#include "verify/report.hpp"

namespace pipesim::verify {

Exploration explore(const sim::Kernel& kernel, const sim::RunOptions& base, int n, double jitter) {
  Exploration e;
  sim::RunOptions fixed = base;
  fixed.record_trace = false;
  e.fixed = outcome_text(sim::run(kernel, fixed));
  for (int i = 1; i <= n; ++i) {
    sim::RunOptions o = base;
    o.seed = base.seed + static_cast<uint64_t>(i);
    o.jitter = jitter;
    // Besides latency jitter, vary how costly issuing an instruction is against the latencies
    // (code between the modelled ops, a slower SM): 1x, 3x, 10x, 30x in turn.
    static constexpr double kIssueScale[] = {1.0, 3.0, 10.0, 30.0};
    o.issue_scale = base.issue_scale * kIssueScale[(i - 1) % 4];
    // Every other group of four starts all warps together (no start skew): with many CTAs a skewed
    // run almost always trips a start race somewhere, which would hide the outcomes behind it.
    if ((i - 1) / 4 % 2 == 1) o.timing_overrides.emplace_back(&model::Timing::warp_start_skew_ns, 0.0);
    o.record_trace = base.record_trace;
    sim::RunResult r = sim::run(kernel, o);
    ++e.outcomes[outcome_text(r)];
    e.runs.push_back({o.seed, std::move(r)});
  }
  return e;
}

}  // namespace pipesim::verify
