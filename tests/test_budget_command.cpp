// `pipesim budget` through CLI11: exit codes and JSON.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "budget_cli.hpp"
#include "verify/budget_command.hpp"

namespace pipesim::verify {
namespace {

using Outcome = testing_support::BudgetRun;
Outcome run(std::vector<std::string> args) { return testing_support::run_budget(std::move(args)); }

const std::vector<std::string> kSeed{"--arch", "sm_100a", "--tile", "256x128x256", "--cluster", "2",
                                     "--cta-group", "2", "--ab", "nvfp4", "--c", "f16", "--sf", "e4m3",
                                     "--sf-vec", "16", "--lora-rank", "128", "--lora-stages", "2",
                                     "--epilogue-vectors", "2", "--acc-stages", "1", "--epilogue-stages",
                                     "auto", "--occupancy", "1"};

TEST(BudgetCommand, SeedFitsExitZero) {
  const Outcome r = run(kSeed);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("num_ab_stage 4, num_c_stage 2"), std::string::npos) << r.out;
}

TEST(BudgetCommand, HandMismatchExitOneAndJson) {
  auto args = kSeed;
  args.insert(args.end(), {"--json", "--hand", "LA=32768,LU=32768"});
  const Outcome r = run(args);
  EXPECT_EQ(r.code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["stages"]["num_ab_stage"], 2);
  EXPECT_EQ(j["stages"]["num_c_stage"], 5);
  EXPECT_EQ(j["solver"]["derived"]["num_ab_stage"], 4);
  ASSERT_EQ(j["mismatches"].size(), 1u);
  EXPECT_EQ(j["mismatches"][0]["operand"], "LU");
  EXPECT_EQ(j["mismatches"][0]["ratio"], 2.0);
  EXPECT_EQ(j["smem"]["capacity"], 232448);
}

TEST(BudgetCommand, BadInputExitTwo) {
  const Outcome r = run({"--ab", "int3"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown operand format"), std::string::npos) << r.err;
}

TEST(BudgetCommand, OverCapacityExitTwo) {
  const Outcome r = run({"--tile", "256x128", "--ab", "nvfp4", "--ab-stages", "8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("the launch would fail: 246784 B requested, 232448 B available"), std::string::npos);
}

}  // namespace
}  // namespace pipesim::verify
