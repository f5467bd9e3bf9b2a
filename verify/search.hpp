// Schedules that only some timings expose (issue 20). `--explore` jitters latencies a little; the
// races here need one warp held back for microseconds. The adversarial search runs the engine as it
// is, with sim::RunOptions::delays: it holds one warp (or one copy's landing) at one synchronising
// point, then two, by amounts up to the kernel's own length, until the verdict changes, and reports
// the fewest delays that change it with the command line that replays them.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/explore.hpp"
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

// A run's report as `judge` writes it, without its first line, indented under a search's finding.
std::string indented_report(const CheckResult& checked, const sim::RunResult& result);

// ------------------------------------------------------------------ the exhaustive search
// Every interleaving of synchronising actions of a small configuration (a few CTAs, a few tiles),
// untimed (sim/explore.hpp): depth first, each state remembered by a 64-bit hash so that two orders
// reaching the same state are explored once. It ends when a schedule's outcome differs from the
// plain run's (the counterexample, with its trail) or when every schedule within the bounds was
// explored. Scenario kernels only.

struct ExhaustiveBounds {
  uint64_t max_states = 2'000'000;  // distinct states
  double max_seconds = 60;          // host time (0: no limit)
  // The process's resident memory, MiB (0: no limit): the stack holds a copy of the run at each
  // choice point on the path, and a deep path of a large launch would fill the machine.
  uint64_t max_memory_mib = 4096;
  bool partial_order = true;        // sleep sets and persistent sets (search_exhaustive.cpp); false: every order
};

// One choice of a schedule: which of the open choices (index of `open`, oldest first) was taken.
struct TrailStep {
  sim::UntimedRun::Choice choice;
  size_t index = 0, open = 0;
};

struct ExhaustiveResult {
  std::string baseline;          // outcome of the plain (timed) run
  uint64_t states = 0;           // distinct states reached (choice points and ends)
  uint64_t transitions = 0;      // choices taken
  uint64_t revisits = 0;         // choices that led to a state already explored
  bool partial_order = false;    // the reduction was on
  uint64_t pruned_sleep = 0;     // choices not taken because they were asleep (sleep sets)
  uint64_t pruned_persistent = 0;  // choices not taken beside a lone independent one (persistent sets)
  uint64_t schedules = 0;        // complete schedules ended (distinct end states)
  size_t max_depth = 0;          // the longest schedule, in choices
  double seconds = 0;
  uint64_t peak_rss_kib = 0;     // of the process, at the end (0: unknown)
  bool complete = false;         // every schedule within the bounds explored
  std::string stopped_by;        // "" or "states" / "seconds"
  std::map<std::string, uint64_t> outcomes;  // outcome -> distinct end states
  // The first schedule whose outcome differs from the baseline's; empty trail: none.
  std::vector<TrailStep> trail;
  std::string outcome;
  sim::RunResult result;
};

ExhaustiveResult exhaustive_search(const sim::Kernel& kernel, const sim::RunOptions& base, const ExhaustiveBounds& bounds,
                                   const std::function<void(uint64_t, uint64_t)>& progress = {});

// Replays one schedule: the choice at each point is 0 unless `trail` says otherwise ("DEPTH:INDEX,..."
// as the report prints it). Bad text: nullopt and `error`.
std::optional<sim::RunResult> replay_trail(const sim::Kernel& kernel, const sim::RunOptions& base, const std::string& trail,
                                           std::string& error);
std::string trail_text(const std::vector<TrailStep>& trail);

std::string exhaustive_report(const CheckResult& checked, const ExhaustiveResult& s, const std::string& file, const std::string& flags);

// One delay as `--delay` takes it and reports print it: "cta0.warp3@22:7#2+2000ns" (the warp is
// held 2000 ns before the third execution of its synchronising op at line 22, column 7),
// "...+2000ns:landing" (the copy that op issues lands 2000 ns late). When several sites share a
// source position the site is named by number: "cta0.warp3@site17#2+2000ns".
std::string delay_text(const sim::Kernel& kernel, const sim::Delay& d);
// Parses delay_text's form; nullopt and `error` (one sentence) on anything else.
std::optional<sim::Delay> parse_delay(const sim::Kernel& kernel, const std::string& text, std::string& error);

}  // namespace pipesim::verify
