// sim/event_queue.hpp: the engine's radix-heap event queue pops in (time, sequence) order, exactly as
// a comparison heap would, under the engine's use: pushes never earlier than the last pop, many
// events at the same time, times that grow by nanoseconds and by milliseconds.
#include <gtest/gtest.h>

#include <cstdint>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

#include "sim/event_queue.hpp"

namespace {

struct Ev {
  double t = 0;
  uint64_t seq = 0;
};

struct Later {
  bool operator()(const Ev& a, const Ev& b) const {
    const auto key = [](const Ev& e) { return std::make_tuple(static_cast<uint64_t>(e.t * 1000.0 + 0.5), e.seq); };
    return key(a) > key(b);
  }
};

TEST(EventQueue, PopsInTimeThenSequenceOrderAsAHeapWould) {
  std::mt19937_64 rng(7);
  pipesim::sim::EventQueue<Ev> q;
  std::priority_queue<Ev, std::vector<Ev>, Later> ref;
  uint64_t seq = 0;
  double now = 0;
  size_t popped = 0;
  for (int round = 0; round < 200'000; ++round) {
    // Mostly pushes while small, then drains: the queue's size swings between empty and thousands.
    const bool push = ref.empty() || (rng() % 100) < (ref.size() < 2000 ? 60u : 35u);
    if (push) {
      double dt = 0;
      switch (rng() % 5) {
        case 0: dt = 0; break;                                           // now: ties broken by sequence
        case 4: dt = static_cast<double>(rng() % 8) / 1000.0; break;    // 0-7 ps: keys one low bit apart
        case 1: dt = static_cast<double>(rng() % 5); break;              // a few ns
        case 2: dt = static_cast<double>(rng() % 100000) / 7.0; break;   // fractions of a ns up to µs
        default: dt = static_cast<double>(rng() % 1000) * 1e6; break;    // up to a second
      }
      const Ev e{now + dt, seq++};
      q.push(e);
      ref.push(e);
    } else {
      ASSERT_FALSE(q.empty());
      const Ev got = q.pop(), want = ref.top();
      ref.pop();
      ASSERT_EQ(got.seq, want.seq) << "pop " << popped;
      now = std::max(now, got.t);
      ++popped;
    }
    ASSERT_EQ(q.empty(), ref.empty());
  }
  EXPECT_GT(popped, 50'000u);
}

// An event pushed for a time before the last pop (only rounding could do that in the engine) comes
// out next among those of that instant, after the ones already there.
TEST(EventQueue, AnEventForThePastWaitsBehindTheCurrentInstant) {
  pipesim::sim::EventQueue<Ev> q;
  q.push({10.0, 0});
  q.push({10.0, 1});
  q.push({20.0, 2});
  EXPECT_EQ(q.pop().seq, 0u);
  q.push({5.0, 3});
  EXPECT_EQ(q.pop().seq, 1u);
  EXPECT_EQ(q.pop().seq, 3u);
  EXPECT_EQ(q.pop().seq, 2u);
  EXPECT_TRUE(q.empty());
}

}  // namespace
