// The DRAM as a fair server of the SMs' copies (docs/semantics.md, "The DRAM serves SMs side by side").
// Every SM takes its own copies in issue order; the SMs with a copy queued share the device's
// bandwidth max-min fairly by weight, each capped by what it can take in (its oldest copy's ingest
// rate). Where the DRAM rather than its intake limits an SM, a share `overlap` of the SM's rate is
// spread evenly over all its queued copies and the rest goes to the oldest: the DRAM serves an SM's
// outstanding requests partly side by side, so a burst's first copy lands later than in order.
// With a hit rate set, the same queue serves the L2's hits beside the misses (set_hit_rate).
// A fluid model: rates change only when an SM's queue changes, so the engine asks for the next finish
// after every change.
//
// Cost: the SMs that their intake does not hold back all progress at their weight times one common
// rate, so the queue keeps a virtual clock of that rate (as generalized processor sharing does) and a
// heap of each such SM's next finish on it; the few capped SMs run at their caps, served explicitly.
// O(log SMs + copies queued per SM) per copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
#include <set>
#include <utility>
#include <vector>

namespace pipesim::sim {

class DramQueue {
 public:
  // `weights[i]`: SM i's relative share of a loaded DRAM (1 = fair); `overlap` in [0, 1).
  DramQueue(double bytes_per_ns, std::vector<double> weights, double overlap = 0);

  // A copy of `bytes` into SM `sm`, served no faster than `cap` bytes/ns (0: no cap), queued behind
  // the SM's earlier copies. `token` comes back from take_done. Call advance(now) first.
  // `hit`: its bytes are the L2's (set_hit_rate), not the DRAM's.
  void add(int sm, double bytes, double cap, uint32_t token, bool hit = false);
  // The L2's rate for hits (0: the queue serves misses only). Hits and misses share one queue: every
  // SM with a copy queued (the engine's lanes: two an SM, sim/engine_impl.hpp) gets its share of one
  // rate, min(hit rate, DRAM rate x W / W_miss), where W weighs the SMs queued and W_miss those whose
  // oldest copy is a miss. So hits beside misses go no faster than the misses do
  // (kernels/interp/l2mixprobe.cu). Call advance(now) first.
  void set_hit_rate(double bytes_per_ns);
  // Serves every SM's copies up to `now`.
  void advance(double now);
  // When the next copy finishes at the current rates (infinity when none is queued).
  double next_done();
  // The tokens of the copies finished by the last advance.
  void take_done(std::vector<uint32_t>& out);
  // Bytes added and not yet served, device-wide.
  double backlog();

 private:
  struct Copy {
    double left, cap;
    uint32_t token;
    bool hit;
  };
  using CapKey = std::pair<double, int>;  // an SM's oldest copy's cap per weight, the SM
  struct Sm {
    std::vector<Copy> copies;  // front: the oldest
    bool capped = false;       // its intake holds it back: served at `rate`, explicitly
    double rate = 0;           // capped: its cap (bytes/ns)
    double vsync = 0;          // not capped: the virtual time its copies were served up to
    uint64_t version = 0;      // not capped: its entry in the finish heap
    double share_head = 1, share_rest = 0;  // of its rate: to its oldest copy, to each later one
    std::multiset<CapKey>::iterator cap_key{};  // in caps_, while it has copies
    bool head_miss = false;    // its oldest copy is a miss (counted in miss_weights_)
  };
  struct Finish {
    double v;  // virtual finish time
    int sm;
    uint64_t version;
    bool operator>(const Finish& o) const { return v > o.v || (v == o.v && sm > o.sm); }
  };

  double cap_per_weight(int i) const;
  double total_rate() const;            // what the queued SMs share (set_hit_rate)
  bool note_head(int i);                // after SM i's queue changed: miss_weights_; whether its oldest copy's kind changed
  void reshare(Sm& s) const;            // its shares, after its queue or `capped` changed
  void serve(Sm& s, double amount);     // `amount` of the SM's rate-time, split by its shares
  double finish_in(const Sm& s) const;  // of the SM's rate-time until one of its copies is done
  void sync(int i);                     // an uncapped SM: serve it up to the virtual clock
  void push_finish(int i);
  void set_capped(int i, bool capped);
  void rebalance();                     // the queued SMs or an oldest copy's cap changed

  double bw_, overlap_;
  double hit_bw_ = 0;                   // set_hit_rate
  double miss_weights_ = 0;             // of the SMs queued whose oldest copy is a miss
  std::vector<double> weight_;
  std::vector<Sm> sms_;
  double weights_ = 0;                  // of the SMs with copies queued
  std::multiset<CapKey> caps_;          // of the SMs with copies queued
  std::vector<int> capped_;             // SMs held back by their intake
  double now_ = 0;
  double vnow_ = 0, fair_ = 0;  // the virtual clock at now_ and its rate (bytes/ns per unit of weight)
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finish_;
  std::vector<int> scratch_;      // take_done's SMs due
  std::vector<int> next_capped_;  // rebalance's new capped set (no allocation per change)
};

}  // namespace pipesim::sim
