// What a CUTLASS corpus mutant must give (tests/test_ptx_corpus.cpp for sm_90a,
// tests/test_ptx_corpus_sm100.cpp for sm_100a): the verdict (and rule), and a place the report must
// name in CUTLASS's source, in the inlining chain of the instruction where the warps stop (or of the
// fatal finding).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "verify/check.hpp"

namespace pipesim::verify {

struct MutantWant {
  sim::Verdict verdict;
  std::string kind;   // for errors
  std::string where;  // substring of a blocked warp's (or the finding's) source chain
  std::string shape;  // another launch of the same kernel than the mutant's own ("4096x4096x4096")
};

// The mutant's launch file, at `want.shape` where it names one instead of the base launch's shape.
inline std::string mutant_launch(std::string launch, const MutantWant& want, const std::string& base_shape) {
  if (!want.shape.empty()) launch.replace(launch.find(base_shape), base_shape.size(), want.shape);
  return launch;
}

// The verdict, the rule of the first finding (errors) and the place where it stopped.
inline void expect_caught(const std::string& name, const CheckResult& r, const MutantWant& want) {
  ASSERT_FALSE(r.bad_input) << name << ": " << r.diagnostic;
  EXPECT_EQ(r.result.verdict, want.verdict) << name << "\n" << r.report;
  bool named = false;
  if (want.verdict == sim::Verdict::Error) {
    ASSERT_FALSE(r.result.findings.empty()) << name;
    const sim::Finding& f = r.result.findings.front();
    EXPECT_EQ(f.kind, want.kind) << name << "\n" << r.report;
    named = r.kernel.sites.at(f.site).origin.find(want.where) != std::string::npos;
  } else {
    for (const sim::HangGroup& g : r.result.hang.groups)
      named |= r.kernel.sites.at(g.site).origin.find(want.where) != std::string::npos;
  }
  EXPECT_TRUE(named) << name << ": nothing stopped at " << want.where << "\n" << r.report;
}

}  // namespace pipesim::verify
