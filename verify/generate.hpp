// A generator of random but well-formed Hopper mbarrier/TMA protocols, written in the scenario
// language (docs/scenario-language.md), for differential testing of the model against the device
// interpreter (issue 5). A seed fixes the text completely; with a set rate the generator injects one
// deliberate mistake (wrong tx, wrong start phase, a missing release, ...) and says which in the
// file's header, so a human sees the intent. Without a mistake every scenario finishes (verdict ok).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pipesim::verify {

struct GenOptions {
  double mistake_rate = 0.0;  // probability in [0, 1] that a scenario carries one deliberate mistake
  int max_trip = 5;           // inner loop trip counts are drawn from 0 .. max_trip (1 .. 8)
};

struct GeneratedScenario {
  uint64_t seed = 0;
  std::string text;                   // the scenario, ready for `pipesim check` (no `expect` line)
  std::string shape;                  // "pipeline" (PipelineTmaAsync / PipelineAsync calls) or "raw"
  std::string mistake = "none";       // one of mistake_kinds(), or "none"
  std::vector<std::string> features;  // sorted, e.g. "cluster4", "multicast", "named_barrier", "zero_trip"
  bool has(std::string_view feature) const;
};

// The deliberate mistakes the generator can inject.
const std::vector<std::string_view>& mistake_kinds();

GeneratedScenario generate(const GenOptions& options, uint64_t seed);
std::string generate_scenario(const GenOptions& options, uint64_t seed);

}  // namespace pipesim::verify
