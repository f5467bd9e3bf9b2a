#include "verify/check.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <new>
#include <sstream>

#include "sim/explain_past.hpp"
#include "verify/report.hpp"
#include "verify/scenario_budget.hpp"

namespace pipesim::verify {

CheckResult check_text(const std::string& path, const std::string& text, const CheckOptions& options) {
  CheckResult r;
  r.file = path;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    r.kernel = parse_scenario(path, text, options.defines);
  } catch (const ParseError& e) {
    r.bad_input = true;
    r.diagnostic = e.what();
    return r;
  }
  // Budgets (verify/scenario_budget.hpp): over capacity, the kernel never launches; warnings join the run's.
  ScenarioBudget budget = check_scenario_budget(r.kernel);
  if (budget.bad_input) {
    r.bad_input = true;
    r.diagnostic = budget.diagnostic;
    return r;
  }
  const bool launch_fails = std::any_of(budget.findings.begin(), budget.findings.end(),
                                        [](const sim::Finding& f) { return f.fatal; });
  try {
    if (launch_fails) r.result.verdict = sim::Verdict::Error;
    else r.result = sim::run(r.kernel, options.run);
    sim::annotate_stale_waits(r.kernel, r.result);  // the cause of a warp behind its barrier, from the past
    r.result.findings.insert(r.result.findings.end(), budget.findings.begin(), budget.findings.end());
  } catch (const sim::ScenarioError& e) {
    r.bad_input = true;
    r.diagnostic = render_diagnostic(path, r.kernel.lines, e.loc, "error", e.what());
    return r;
  } catch (const std::bad_alloc&) {
    r.bad_input = true;
    r.diagnostic = path + ": error: " + kOutOfMemory + "\n";
    return r;
  } catch (const std::exception& e) {
    r.bad_input = true;
    r.diagnostic = path + ": error: " + e.what() + "\n";
    return r;
  }
  r.options_empty_commit_local = options.run.empty_commit_local;
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  judge(r);
  return r;
}

void judge(CheckResult& r) {
  const sim::Expectation want = r.kernel.expect.value_or(sim::Expectation{});
  r.matches_expect = r.result.verdict == want.verdict;
  if (r.matches_expect && want.verdict == sim::Verdict::Error && !want.error_kind.empty())
    r.matches_expect = !r.result.findings.empty() && r.result.findings.front().kind == want.error_kind;
  r.report = human_report(r);
}

CheckResult check_file(const std::string& path, const CheckOptions& options) {
  if (is_ptx_kernel(path)) return check_ptx(path, options);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    CheckResult r;
    r.file = path;
    r.bad_input = true;
    r.diagnostic = path + ": error: cannot read the file\n";
    return r;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return check_text(path, ss.str(), options);
}

}  // namespace pipesim::verify
