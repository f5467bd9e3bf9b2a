// Determinism as a tested property: two runs of every scenario in scenarios/ give byte-identical
// `pipesim check --json`, apart from the fields that are host wall-clock time (docs/json-report.md,
// "Determinism": `wall_ms`, and a stopped run's `stopped.after_s` and the seconds in its message),
// also under an interleaving search with a given seed (--explore N --seed S, verify/explore.cpp) and
// under both schedule searches (--search adversarial / exhaustive: their text, less host times).
#include <cstdio>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

// `pipesim check ARGS` on a directory of the source tree: its standard output.
std::string pipesim_check(const std::string& args, const std::string& dir) {
  const std::string cmd = std::string(PIPESIM_BIN) + " check " + args + " " + PIPESIM_SOURCE_DIR "/" + dir + " 2>/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[65536];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  pclose(p);
  return out;
}

std::string run(const std::string& args) { return pipesim_check("--json " + args, "scenarios"); }

// The report without its wall-clock fields.
nlohmann::json without_wall_clock(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  for (nlohmann::json& r : j["results"]) {
    r.erase("wall_ms");
    if (r.contains("stopped") && r["stopped"].is_object()) r["stopped"].erase("after_s");
  }
  return j;
}

void expect_same_twice(const std::string& args) {
  const nlohmann::json a = without_wall_clock(run(args)), b = without_wall_clock(run(args));
  ASSERT_GT(a["results"].size(), 100u) << "scenarios/ should hold the project's scenarios";
  ASSERT_EQ(a["results"].size(), b["results"].size());
  for (size_t i = 0; i < a["results"].size(); ++i) {
    const nlohmann::json &x = a["results"][i], &y = b["results"][i];
    if (x == y) continue;
    for (auto it = x.begin(); it != x.end(); ++it)
      EXPECT_EQ(it.value(), y.value(it.key(), nlohmann::json())) << x["file"] << ": field " << it.key() << " differs between two runs";
  }
  EXPECT_EQ(a["summary"], b["summary"]);
}

TEST(Determinism, EveryScenarioGivesTheSameJsonTwice) { expect_same_twice(""); }

TEST(Determinism, EveryScenarioGivesTheSameJsonTwiceUnderExplore) { expect_same_twice("--explore 1 --seed 7"); }

// The searches' reports name host time, rates and memory (wall-clock fields); everything else, the
// trail and the counts included, is the same twice.
std::string search_text(const std::string& search) {
  const std::string out = pipesim_check("--search " + search, "scenarios/races");
  // With the spaces before it: the verdict line pads its columns around the width of the time.
  static const std::regex wall(R"( +[0-9.]+ (ms|s|states/s|MiB)\b)");
  return std::regex_replace(out, wall, " <wall>");
}

TEST(Determinism, TheSearchesGiveTheSameReportTwice) {
  for (const char* search : {"adversarial", "exhaustive"}) {
    const std::string a = search_text(search), b = search_text(search);
    ASSERT_NE(a.find("search " + std::string(search)), std::string::npos) << a;
    EXPECT_EQ(a, b) << search;
  }
}

}  // namespace
