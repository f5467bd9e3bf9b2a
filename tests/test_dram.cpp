// sim/dram.hpp: the DRAM's fair sharing among SMs, by hand-computed finish times.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/dram.hpp"

using pipesim::sim::DramQueue;

namespace {

// Runs the queue to empty, returning each token's finish time (tokens are 0..n-1).
std::vector<double> drain(DramQueue& q, size_t n) {
  std::vector<double> done(n, -1);
  std::vector<uint32_t> out;
  for (int guard = 0; guard < 1000; ++guard) {
    const double t = q.next_done();
    if (std::isinf(t)) break;
    q.advance(t);
    out.clear();
    q.take_done(out);
    for (uint32_t k : out) done[k] = t;
  }
  return done;
}

TEST(DramQueue, CompetingSmsShareAndTheSurvivorTakesItAll) {
  DramQueue q(100.0, {1.0, 1.0});
  q.add(0, 100, 0, 0);
  q.add(1, 300, 0, 1);
  const auto done = drain(q, 2);
  EXPECT_NEAR(done[0], 2.0, 1e-9);  // 50 B/ns each
  EXPECT_NEAR(done[1], 4.0, 1e-9);  // 200 B left at 100 B/ns
  EXPECT_NEAR(q.backlog(), 0.0, 1e-6);
}

TEST(DramQueue, AnSmTakesItsCopiesInOrder) {
  DramQueue q(100.0, {1.0});
  q.add(0, 100, 0, 0);
  q.add(0, 100, 0, 1);
  EXPECT_DOUBLE_EQ(q.backlog(), 200.0);
  const auto done = drain(q, 2);
  EXPECT_NEAR(done[0], 1.0, 1e-9);
  EXPECT_NEAR(done[1], 2.0, 1e-9);
}

TEST(DramQueue, ACappedSmLeavesItsShareToTheOthers) {
  DramQueue q(100.0, {1.0, 1.0});
  q.add(0, 100, 10, 0);  // at most 10 B/ns: the other SM gets 90
  q.add(1, 90, 0, 1);
  const auto done = drain(q, 2);
  EXPECT_NEAR(done[1], 1.0, 1e-9);
  EXPECT_NEAR(done[0], 10.0, 1e-9);  // capped at 10 B/ns even alone
}

TEST(DramQueue, WeightsSplitALoadedDram) {
  DramQueue q(100.0, {1.5, 0.5});
  q.add(0, 150, 0, 0);  // 75 B/ns
  q.add(1, 100, 0, 1);  // 25 B/ns until t = 2, then 50 B left at 100 B/ns
  const auto done = drain(q, 2);
  EXPECT_NEAR(done[0], 2.0, 1e-9);
  EXPECT_NEAR(done[1], 2.5, 1e-9);
}

TEST(DramQueue, ALateArrivalSlowsTheCopyInService) {
  DramQueue q(100.0, {1.0, 1.0});
  q.add(0, 200, 0, 0);
  const uint64_t g = q.generation();
  q.advance(1.0);  // 100 B served alone
  q.add(1, 50, 0, 1);
  EXPECT_NE(q.generation(), g);  // the rates changed: a finish event scheduled before is stale
  const auto done = drain(q, 2);
  EXPECT_NEAR(done[1], 2.0, 1e-9);  // 50 B/ns each
  EXPECT_NEAR(done[0], 2.5, 1e-9);  // 50 B left at 100 B/ns
}

// overlap 0.5: the oldest of two queued copies gets 0.5 + 0.5 / 2 of its SM's rate, the other 0.5 / 2,
// so the second has been partly served when the first lands; an SM held back by its own intake (its
// cap) takes its copies strictly in order.
TEST(DramQueue, ADramLimitedSmServesItsCopiesPartlySideBySide) {
  DramQueue q(100.0, {1.0}, 0.5);
  q.add(0, 100, 0, 0);
  q.add(0, 100, 0, 1);
  auto done = drain(q, 2);
  EXPECT_NEAR(done[0], 100.0 / 75.0, 1e-9);
  EXPECT_NEAR(done[1], 2.0, 1e-9);  // the DRAM is never idle: both by 200 / 100
  DramQueue capped(100.0, {1.0}, 0.5);
  capped.add(0, 100, 50, 0);
  capped.add(0, 100, 50, 1);
  done = drain(capped, 2);
  EXPECT_NEAR(done[0], 2.0, 1e-9);
  EXPECT_NEAR(done[1], 4.0, 1e-9);
}

}  // namespace
