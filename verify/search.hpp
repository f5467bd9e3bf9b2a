// Schedules that only some timings expose (issue 20). `--explore` jitters latencies a little; the
// races here need one warp held back for microseconds. The adversarial search runs the engine as it
// is, with sim::RunOptions::delays: it holds one warp (or one copy's landing) at one synchronising
// point, then two, by amounts up to the kernel's own length, until the verdict changes, and reports
// the fewest delays that change it with the command line that replays them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "verify/check.hpp"

namespace pipesim::verify {

struct AdversarialBounds {
  int max_runs = 5000;          // runs of the kernel, the baseline included
  double max_seconds = 60;      // host time of the whole search
  int max_pair_points = 24;     // pairs: among the first this many points of the ranking
};

struct AdversarialResult {
  std::string baseline;                  // outcome of the run without delays ("ok", "hang", "error KIND")
  double kernel_ns = 0;                  // its simulated length: the largest delay tried
  int points = 0;                        // synchronising points (and copies) the baseline passed
  int runs = 0;                          // runs made, the baseline included
  int singles_tried = 0, pairs_tried = 0;
  bool exhausted = false;                // every single (and pair, when tried) within the bounds was run
  std::string stopped_by;                // "" or "runs" / "seconds": the bound that ended the search
  // The fewest delays found that change the verdict (empty: none within the bounds), each amount
  // shrunk by bisection to about the smallest that still changes it.
  std::vector<sim::Delay> found;
  std::string outcome;                   // the verdict under `found`
  sim::RunResult result;                 // the run under `found`
};

// The search. `progress` (optional) hears (runs done, run bound) now and then. Throws what sim::run throws.
AdversarialResult adversarial_search(const sim::Kernel& kernel, const sim::RunOptions& base, const AdversarialBounds& bounds,
                                     const std::function<void(int, int)>& progress = {});

// The report's lines: what the search covered (runs, points, delay amounts, bound), and when the
// verdict changes, the delays, the command that replays them (`pipesim check FILE FLAGS --delay ...`)
// and the report of that run, indented.
std::string adversarial_report(const CheckResult& checked, const AdversarialResult& s, const std::string& file,
                               const std::string& flags);

// One delay as `--delay` takes it and reports print it: "cta0.warp3@22:7#2+2000ns" (the warp is
// held 2000 ns before the third execution of its synchronising op at line 22, column 7),
// "...+2000ns:landing" (the copy that op issues lands 2000 ns late). When several sites share a
// source position the site is named by number: "cta0.warp3@site17#2+2000ns".
std::string delay_text(const sim::Kernel& kernel, const sim::Delay& d);
// Parses delay_text's form; nullopt and `error` (one sentence) on anything else.
std::optional<sim::Delay> parse_delay(const sim::Kernel& kernel, const std::string& text, std::string& error);

}  // namespace pipesim::verify
