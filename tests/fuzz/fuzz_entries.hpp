// The fuzz targets' entry functions, one per front end (fuzz_entries.cpp). libFuzzer calls them
// through fuzz_*.cpp; tests/fuzz/replay.cpp calls the same functions on tests/fuzz/regressions/ in
// CTest, without libFuzzer. Each returns normally on any input: bad input must end in the front
// end's own error (ParseError, LaunchError, PtxError, ScenarioError, a diagnostic), and anything
// else (a std::logic_error such as out_of_range, std::bad_alloc, a sanitizer report) is a bug.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pipesim::fuzz {

// The budget every fuzzed run gets: small, so that a generated runaway ends at once, and
// deterministic (no wall-clock budget), so that a crash replays.
inline constexpr uint64_t kFuzzMaxEvents = 5'000;
inline constexpr uint64_t kFuzzMaxInstructions = 200'000;

// Scenario text: parse, check its budgets, run it (verify::check_text).
void scenario_front_end(const std::string& text);
// A launch file's text: read it (ptx::parse_launch) and resolve it against a small fixed module.
void ptx_launch(const std::string& text);
// PTX text: parse it, and run its first entry on one CTA of one warpgroup with zeroed parameters.
void ptx_kernel(const std::string& text);

}  // namespace pipesim::fuzz
