// Runs `pipesim budget ARGS...` in process through CLI11, capturing its exit code and output.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "verify/budget_command.hpp"

namespace pipesim::verify::testing_support {

struct BudgetRun {
  int code = -1;
  std::string out, err;
};

inline BudgetRun run_budget(std::vector<std::string> args) {
  CLI::App app{"pipesim"};
  std::function<int()> action;
  add_budget_command(app, action);
  std::vector<std::string> argv{"pipesim", "budget"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> ptrs;
  for (std::string& s : argv) ptrs.push_back(s.data());
  app.parse(static_cast<int>(ptrs.size()), ptrs.data());
  BudgetRun r;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  r.code = action ? action() : -2;
  std::fflush(stdout);
  r.out = testing::internal::GetCapturedStdout();
  r.err = testing::internal::GetCapturedStderr();
  return r;
}

}  // namespace pipesim::verify::testing_support
