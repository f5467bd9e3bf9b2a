// `pipesim check` as a library: parse a scenario, run it, explain it, compare with `expect`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "verify/parser.hpp"

namespace pipesim::verify {

struct CheckOptions {
  std::vector<Define> defines;  // -D NAME=INT
  sim::RunOptions run;
  // PTX kernels (FILE.ptx): the launch file, the command line's short forms ("grid=132",
  // "param.K=4096"; docs/ptx.md) and the verdict the check expects (default ok).
  std::string launch;
  std::vector<std::string> launch_sets;
  std::optional<sim::Expectation> expect;
};

struct PtxBudget;  // verify/ptx_budget.hpp

struct CheckResult {
  std::string file;
  bool bad_input = false;       // parse or scenario error: `diagnostic` says what, exit 2
  std::string diagnostic;       // file:line:col: error: ... with the line and a caret
  sim::Kernel kernel;
  sim::RunResult result;
  bool matches_expect = false;  // verdict (and error kind) equal the file's `expect`
  double wall_ms = 0;
  std::string report;           // the human report (hang explanation, findings, timing)
  bool options_empty_commit_local = true;  // the assumption the run used
  // A PTX kernel: its budget from the run (shared memory, TMA rings, TMEM); null for a scenario.
  std::shared_ptr<const PtxBudget> ptx_budget;
  // `--explore`: what the interleaving search found (verify/explore.hpp); absent when not asked.
  struct Interleavings {
    int runs = 0;
    double jitter = 0;
    std::map<std::string, int> outcomes;  // outcome text -> runs
    bool race = false;
    struct Trail {  // the first explored run giving an outcome the fixed run does not
      std::string outcome;
      int run = 0;  // 1-based, of `runs`
      uint64_t seed = 0;
      double issue_scale = 1;
      bool start_skew = true;
    };
    std::vector<Trail> trails;
    std::string error;  // the search stopped on bad input at run time
  };
  std::optional<Interleavings> interleavings;
};

// `pipesim check`'s exit code over the files it checked: 2 when one was bad input, else 3 when a run
// was stopped by its budget without `expect stopped` (no verdict: docs/scenario-language.md,
// "Budget"), else 1 when a verdict differs from its `expect`, else 0.
inline constexpr int kExitStopped = 3;
inline int check_exit_code(int bad_input, int stopped, int mismatched) {
  return bad_input > 0 ? 2 : stopped > 0 ? kExitStopped : mismatched > 0 ? 1 : 0;
}
// What a std::bad_alloc tells the user: sizes are checked before a run allocates (sim::RunFootprint),
// so this is the last resort (check_text, check_ptx, verify/main.cpp).
inline constexpr const char* kOutOfMemory =
    "out of memory: the input needs more host memory than this machine gives; a smaller launch (fewer CTAs, "
    "warps or barrier elements) or smaller -D values will run";
inline bool stopped_unexpectedly(const CheckResult& r) {
  return !r.bad_input && !r.matches_expect && r.result.verdict == sim::Verdict::Stopped;
}

// A PTX kernel (checked under a launch) rather than a scenario: the path ends in .ptx.
inline bool is_ptx_kernel(const std::string& path) { return path.ends_with(".ptx"); }

// A scenario file, or a PTX kernel (is_ptx_kernel) under options.launch.
CheckResult check_file(const std::string& path, const CheckOptions& options);
CheckResult check_ptx(const std::string& path, const CheckOptions& options);
// Compares the run's verdict with the kernel's `expect` and writes the human report.
void judge(CheckResult& r);
CheckResult check_text(const std::string& path, const std::string& text, const CheckOptions& options);

}  // namespace pipesim::verify
