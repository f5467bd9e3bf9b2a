// The human report of one checked scenario: verdict, broken rules, hang explanation, timing.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "verify/check.hpp"

namespace pipesim::verify {

std::string_view verdict_name(sim::Verdict v);
// "ok", "hang", "error pending_underflow" ...
std::string expectation_text(const sim::Expectation& e);
std::string outcome_text(const sim::RunResult& r);

// One finding per (kind, severity, site, cause): the same finding in many CTAs (or warps) is one group.
struct FindingGroup {
  std::vector<size_t> members;          // indices into RunResult::findings, in their order
  std::string message;                  // the cause; a CTA's own number reads "each CTA" when several share it
  std::vector<std::string> notes;       // the notes every member has (generalised the same way)
  std::vector<int> ctas, warps;         // where, sorted (-1: not tied to a CTA / warp)
};
std::vector<FindingGroup> group_findings(const sim::RunResult& r);

// ANSI colour for the verdict word and severities only (pipesim check --color).
enum class Paint { Good, Bad, Warn };
std::string paint(std::string_view text, Paint p, bool on);

struct HumanReportOptions {
  bool verbose = false;  // under each grouped finding, what its instances say beyond it
  bool color = false;
};
std::string human_report(const CheckResult& r, const HumanReportOptions& options = {});

}  // namespace pipesim::verify
