// Interleavings: a scenario whose verdict depends on timing is a race. Re-running the model under
// several seeds with latency jitter shows which verdicts it can reach; `pipesim check --explore`
// reports them and `pipesim crosscheck` accepts a device outcome the model can reach (counted apart).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "sim/engine.hpp"

namespace pipesim::verify {

struct Exploration {
  struct Run {
    uint64_t seed;
    double issue_scale;  // relative to base's
    bool start_skew;     // warps start up to warp_start_skew_ns apart
    sim::RunResult result;
  };
  std::string fixed;                    // the outcome of the same run without jitter (the default order)
  std::vector<Run> runs;                // one per seed, in seed order
  std::map<std::string, int> outcomes;  // "ok", "hang", "error stale_wait" -> how many runs
  // A race: the explored runs reach more than one outcome, or one that the fixed order does not.
  bool timing_dependent() const { return outcomes.size() > 1 || (!outcomes.empty() && !outcomes.count(fixed)); }
};

// Runs the kernel once as `base` says (the fixed order the explored runs are judged against: the
// engine's run, without the static checks `pipesim check` adds), then under seeds base.seed+1 ..
// base.seed+n with `jitter` (0 < jitter < 1), cycling
// the instruction issue cost through 1x, 3x, 10x and 30x, and every other four runs without the
// warps' start skew.
// Throws what sim::run throws (ScenarioError on bad operands).
// `progress` (optional) hears (runs done, n) after each run.
Exploration explore(const sim::Kernel& kernel, const sim::RunOptions& base, int n, double jitter,
                    const std::function<void(int, int)>& progress = {});

// Every way one run's copies can land in parts, depth first: each landing that could complete a
// phase early (docs/semantics.md, "TMA delivery in parts") splits or does not, and each combination
// of those choices is run once (SPIN-like, stateless: choice points found by running), the timing
// otherwise base's. Random jitter reaches a combination of n such choices with odds 2^-n; this
// reaches all of them while 2^n fits the budget. `visit` sees every run and stops the search by
// returning true. Returns the number of runs made. Throws what sim::run throws.
int enumerate_parts(const sim::Kernel& kernel, const sim::RunOptions& base, int budget,
                    const std::function<bool(const sim::RunResult&)>& visit);

}  // namespace pipesim::verify
