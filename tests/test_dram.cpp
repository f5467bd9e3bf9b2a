// sim/dram.hpp: the DRAM's fair sharing among SMs, by hand-computed finish times.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
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
  EXPECT_NEAR(q.next_done(), 2.0, 1e-9);  // alone
  q.advance(1.0);                          // 100 B served alone
  q.add(1, 50, 0, 1);
  EXPECT_NEAR(q.next_done(), 2.0, 1e-9);  // SM 1's 50 B at 50 B/ns; SM 0 has 100 B left at 50
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

// The same rules computed the plain way: every step re-derives every SM's rate by max-min
// water-filling and serves each copy its share. DramQueue's virtual clock must agree with it.
class ReferenceDram {
 public:
  ReferenceDram(double bw, std::vector<double> w, double overlap, double hit_bw = 0)
      : bw_(bw), hit_bw_(hit_bw), w_(std::move(w)), overlap_(overlap), q_(w_.size()) {}
  void add(int sm, double bytes, double cap, uint32_t token, bool hit = false) { q_[static_cast<size_t>(sm)].push_back({bytes, cap, token, hit}); }
  // Serves until `until` or the next finish, whichever is first; returns the time reached.
  double step(double now, double until, std::vector<uint32_t>& done) {
    std::vector<double> rate(q_.size(), 0);
    std::vector<int> busy;
    for (size_t i = 0; i < q_.size(); ++i)
      if (!q_[i].empty()) busy.push_back(static_cast<int>(i));
    auto cpw = [&](int i) { const double c = q_[static_cast<size_t>(i)].front().cap; return c > 0 ? c / w_[static_cast<size_t>(i)] : 1e300; };
    std::sort(busy.begin(), busy.end(), [&](int a, int b) { return cpw(a) < cpw(b); });
    double weights = 0, miss_weights = 0;
    for (int i : busy) {
      weights += w_[static_cast<size_t>(i)];
      if (!q_[static_cast<size_t>(i)].front().hit) miss_weights += w_[static_cast<size_t>(i)];
    }
    // What the queued SMs share: the DRAM's rate, or with hits the L2's, no more than the DRAM's
    // rate over the misses' part of the weights.
    double left = hit_bw_ <= 0 ? bw_ : miss_weights <= 0 ? hit_bw_ : std::min(hit_bw_, bw_ * weights / miss_weights);
    std::vector<bool> capped(q_.size(), false);
    for (int i : busy) {
      const double share = left * w_[static_cast<size_t>(i)] / weights;
      const double c = q_[static_cast<size_t>(i)].front().cap;
      rate[static_cast<size_t>(i)] = c > 0 && c < share ? c : share;
      capped[static_cast<size_t>(i)] = c > 0 && c < share;
      left -= rate[static_cast<size_t>(i)];
      weights -= w_[static_cast<size_t>(i)];
    }
    auto share = [&](int i, size_t k) {
      const auto& q = q_[static_cast<size_t>(i)];
      if (overlap_ <= 0 || capped[static_cast<size_t>(i)]) return k == 0 ? 1.0 : 0.0;
      return overlap_ / static_cast<double>(q.size()) + (k == 0 ? 1.0 - overlap_ : 0.0);
    };
    double dt = until - now;
    for (int i : busy)
      for (size_t k = 0; k < q_[static_cast<size_t>(i)].size(); ++k)
        if (share(i, k) > 0) dt = std::min(dt, q_[static_cast<size_t>(i)][k].left / (rate[static_cast<size_t>(i)] * share(i, k)));
    for (int i : busy) {
      auto& q = q_[static_cast<size_t>(i)];
      for (size_t k = 0; k < q.size(); ++k) q[k].left -= rate[static_cast<size_t>(i)] * share(i, k) * dt;
      std::erase_if(q, [&](const Item& c) { if (c.left > 1e-6) return false; done.push_back(c.token); return true; });
    }
    return now + dt;
  }

 private:
  struct Item { double left, cap; uint32_t token; bool hit; };
  double bw_, hit_bw_;
  std::vector<double> w_;
  double overlap_;
  std::vector<std::vector<Item>> q_;
};

// Random arrivals of copies of random sizes and caps onto 12 SMs of unequal weights, with overlap
// (and with `hit_bw`, a third of them L2 hits): every copy finishes when the plain computation says.
void agree_on_random_arrivals(double hit_bw) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    const int sms = 12;
    std::vector<double> w(sms);
    for (int i = 0; i < sms; ++i) w[static_cast<size_t>(i)] = 0.8 + 0.4 * std::uniform_real_distribution<double>(0, 1)(rng);
    DramQueue fast(300.0, w, 0.3);
    fast.set_hit_rate(hit_bw);
    ReferenceDram ref(300.0, w, 0.3, hit_bw);
    struct Arrival { double t; int sm; double bytes, cap; bool hit; };
    std::vector<Arrival> arrivals;
    double t = 0;
    for (int k = 0; k < 200; ++k) {
      t += std::exponential_distribution<double>(0.2)(rng);
      const double bytes = 16.0 * static_cast<double>(1 + rng() % 256);
      const double cap = rng() % 3 == 0 ? 0.0 : 10.0 + static_cast<double>(rng() % 60);
      arrivals.push_back({t, static_cast<int>(rng() % sms), bytes, cap, hit_bw > 0 && rng() % 3 == 0});
    }
    std::vector<double> fast_done(arrivals.size(), -1), ref_done(arrivals.size(), -1);
    // The fast queue, driven as the engine drives it.
    {
      size_t next = 0;
      double now = 0;
      std::vector<uint32_t> out;
      while (true) {
        const double nd = fast.next_done();
        const double na = next < arrivals.size() ? arrivals[next].t : std::numeric_limits<double>::infinity();
        if (std::isinf(nd) && std::isinf(na)) break;
        now = std::min(nd, na);
        fast.advance(now);
        if (na <= nd) {
          fast.add(arrivals[next].sm, arrivals[next].bytes, arrivals[next].cap, static_cast<uint32_t>(next), arrivals[next].hit);
          ++next;
        } else {
          out.clear();
          fast.take_done(out);
          for (uint32_t k : out) fast_done[k] = now;
        }
      }
    }
    {
      size_t next = 0;
      double now = 0;
      std::vector<uint32_t> out;
      for (int guard = 0; guard < 100000; ++guard) {
        while (next < arrivals.size() && arrivals[next].t <= now) {
          ref.add(arrivals[next].sm, arrivals[next].bytes, arrivals[next].cap, static_cast<uint32_t>(next), arrivals[next].hit);
          ++next;
        }
        out.clear();
        const double until = next < arrivals.size() ? arrivals[next].t : 1e12;
        now = ref.step(now, until, out);
        for (uint32_t k : out) ref_done[k] = now;
        if (next == arrivals.size() && std::all_of(ref_done.begin(), ref_done.end(), [](double d) { return d >= 0; })) break;
      }
    }
    for (size_t k = 0; k < arrivals.size(); ++k) {
      ASSERT_GE(fast_done[k], 0) << "seed " << seed << " copy " << k;
      EXPECT_NEAR(fast_done[k], ref_done[k], 1e-6 * std::max(1.0, ref_done[k])) << "seed " << seed << " copy " << k;
    }
  }
}

TEST(DramQueue, AgreesWithThePlainComputationOnRandomArrivals) { agree_on_random_arrivals(0); }
TEST(DramQueue, AgreesWithThePlainComputationOnRandomHitsAndMisses) { agree_on_random_arrivals(800.0); }

// L2 hits and DRAM misses share one queue (kernels/interp/l2mixprobe.cu): alone, hits go at the L2's
// rate; beside misses every SM queued takes the same share of min(L2 rate, DRAM rate x W / W_miss),
// so the hits go at the misses' pace.
TEST(DramQueue, HitsAloneGoAtTheL2sRate) {
  DramQueue q(100.0, {1.0, 1.0});
  q.set_hit_rate(400.0);
  q.add(0, 200, 0, 0, true);
  q.add(1, 200, 0, 1, true);
  const auto done = drain(q, 2);
  EXPECT_NEAR(done[0], 1.0, 1e-9);  // 200 B/ns each
  EXPECT_NEAR(done[1], 1.0, 1e-9);
}

TEST(DramQueue, HitsBesideMissesGoAtTheMissesPace) {
  DramQueue q(100.0, {1.0, 1.0, 1.0, 1.0});
  q.set_hit_rate(400.0);
  for (int sm = 0; sm < 3; ++sm) q.add(sm, 100, 0, static_cast<uint32_t>(sm));  // misses
  q.add(3, 100, 0, 3, true);
  // Three of four SMs miss: min(400, 100 x 4 / 3) = 133.3 B/ns shared, 33.3 each: the DRAM gives
  // its 100 to the misses, and the hit goes no faster than they do.
  const auto done = drain(q, 4);
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(done[static_cast<size_t>(k)], 3.0, 1e-9) << k;
}

TEST(DramQueue, TheSharedRateFollowsWhatEachSmTakesNext) {
  DramQueue q(100.0, {1.0, 1.0});
  q.set_hit_rate(400.0);
  q.add(0, 100, 0, 0);        // a miss, then
  q.add(0, 100, 0, 1, true);  // a hit
  q.add(1, 300, 0, 2, true);
  const auto done = drain(q, 3);
  // One SM misses: min(400, 200) shared, 100 each, until the miss is done at 1.0; then both hit at
  // 200 each (SM 0's 100 B done at 1.5); then SM 1 alone at 400 (its last 100 B: 1.75).
  EXPECT_NEAR(done[0], 1.0, 1e-9);
  EXPECT_NEAR(done[1], 1.5, 1e-9);
  EXPECT_NEAR(done[2], 1.75, 1e-9);
}

}  // namespace
