// The machine-readable report of `pipesim check --json`: schema "pipesim.check/1",
// documented field by field in docs/json-report.md. Fields are only ever added within a schema
// version; renaming or removing one bumps it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

#include <nlohmann/json.hpp>

#include "verify/check.hpp"

namespace pipesim::verify {

inline constexpr std::string_view kReportSchema = "pipesim.check/1";

struct ReportOptions {
  // Run options the result came from: "seed" and "jitter" are null when unset.
  std::optional<uint64_t> seed;
  std::optional<double> jitter;
  // "barriers" lists every barrier element of every CTA when there are at most this many in
  // all, else only the elements whose end state differs from their initial state.
  size_t all_barriers_limit = 4096;
};

// One scenario.
nlohmann::json to_json(const CheckResult& result, const ReportOptions& options = {});

// Several scenarios, as `pipesim check --json FILE...` prints them:
// {"schema", "results": [to_json(r)...], "summary": {"scenarios", "matched", "bad_input", "exit_code"}}.
nlohmann::json to_json(std::span<const CheckResult> results, const ReportOptions& options = {});

}  // namespace pipesim::verify
