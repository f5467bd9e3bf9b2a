#include "verify/explore.hpp"

#include "verify/report.hpp"

namespace pipesim::verify {

Exploration explore(const sim::Kernel& kernel, const sim::RunOptions& base, int n, double jitter,
                    const std::function<void(int, int)>& progress) {
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
    const bool skew = (i - 1) / 4 % 2 == 0;
    if (!skew) o.timing_overrides.emplace_back(&model::Timing::warp_start_skew_ns, 0.0);
    o.record_trace = base.record_trace;
    sim::RunResult r = sim::run(kernel, o);
    ++e.outcomes[outcome_text(r)];
    e.runs.push_back({o.seed, kIssueScale[(i - 1) % 4], skew, std::move(r)});
    if (progress) progress(i, n);
  }
  return e;
}

int enumerate_parts(const sim::Kernel& kernel, const sim::RunOptions& base, int budget,
                    const std::function<bool(const sim::RunResult&)>& visit) {
  std::vector<std::vector<uint8_t>> todo{{}};  // choice prefixes still to run
  int runs = 0;
  while (!todo.empty() && runs < budget) {
    const std::vector<uint8_t> script = std::move(todo.back());
    todo.pop_back();
    std::vector<uint8_t> made;  // the choices this run makes: the script's, then "whole"
    sim::RunOptions o = base;
    o.parts_choice = [&](const sim::PartsChoice&) {
      made.push_back(made.size() < script.size() ? script[made.size()] : 0);
      return made.back() != 0;
    };
    const sim::RunResult r = sim::run(kernel, o);
    ++runs;
    if (visit(r)) break;
    // Each choice past the script could have split instead.
    for (size_t i = made.size(); i-- > script.size();) {
      std::vector<uint8_t> next(made.begin(), made.begin() + static_cast<std::ptrdiff_t>(i));
      next.push_back(1);
      todo.push_back(std::move(next));
    }
  }
  return runs;
}

}  // namespace pipesim::verify
