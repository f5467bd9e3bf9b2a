// The human report of one checked scenario: verdict, broken rules, hang explanation, timing.
#pragma once

#include <string>

#include "verify/check.hpp"

namespace pipesim::verify {

std::string_view verdict_name(sim::Verdict v);
// "ok", "hang", "error pending_underflow" ...
std::string expectation_text(const sim::Expectation& e);
std::string outcome_text(const sim::RunResult& r);

std::string human_report(const CheckResult& r);

}  // namespace pipesim::verify
