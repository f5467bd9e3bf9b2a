// The DRAM as a fair server of the SMs' copies (docs/semantics.md, "The DRAM serves SMs side by side").
// Every SM takes its own copies in issue order; the SMs with a copy in service share the device's
// bandwidth max-min fairly by weight, each capped by what it can take in (its oldest copy's ingest
// rate). Where the DRAM rather than its intake limits an SM, a share `overlap` of the SM's rate is
// spread evenly over all its queued copies and the rest goes to the oldest: the DRAM serves an SM's
// outstanding requests partly side by side, so a burst's first copy lands later than in order.
// A fluid model: rates change only when an SM's queue changes, so the engine asks for the next finish,
// and asks again after every change.
//
// Cost: while no SM is held back by its intake (a loaded DRAM: 132 SMs share ~23 B/ns each against an
// intake of 180), every SM progresses at its weight times one common rate, so the queue keeps a
// virtual clock of that rate (as generalized processor sharing does) and a heap of each SM's next
// finish on it: O(log SMs) per copy. While some SM is capped it serves every busy SM explicitly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <queue>
#include <vector>

namespace pipesim::sim {

class DramQueue {
 public:
  // `weights[i]`: SM i's relative share of a loaded DRAM (1 = fair); `overlap` in [0, 1).
  DramQueue(double bytes_per_ns, std::vector<double> weights, double overlap = 0);

  // A copy of `bytes` into SM `sm`, served no faster than `cap` bytes/ns (0: no cap), queued behind
  // the SM's earlier copies. `token` comes back from take_done. Call advance(now) first.
  void add(int sm, double bytes, double cap, uint32_t token);
  // Serves every SM's copies up to `now`.
  void advance(double now);
  // When the next copy finishes at the current rates (infinity when none is in service).
  double next_done();
  // The tokens of the copies finished by the last advance.
  void take_done(std::vector<uint32_t>& out);
  // Bytes added and not yet served, device-wide.
  double backlog();
  // Changes whenever the next finish may have: an engine's finish event carries it, and a stale one
  // is dropped.
  uint64_t generation() const { return generation_; }

 private:
  struct Copy {
    double left, cap;
    uint32_t token;
  };
  struct Sm {
    std::vector<Copy> copies;  // front: the oldest
    double rate = 0;           // explicit mode: bytes/ns
    double vsync = 0;          // virtual mode: the virtual time its copies were served up to
    uint64_t version = 0;      // virtual mode: its entry in the finish heap
    bool overlapped = false;   // DRAM-limited: its copies share its rate (overlap)
  };
  struct Finish {
    double v;  // virtual finish time
    int sm;
    uint64_t version;
    bool operator>(const Finish& o) const { return v > o.v || (v == o.v && sm > o.sm); }
  };

  double share(const Sm& s, std::size_t k) const;  // of the SM's rate, to its k-th queued copy
  double cap_per_weight(int i) const;
  void serve(Sm& s, double amount);   // `amount` bytes/ns-times-ns of the SM's rate, split by share
  double finish_in(const Sm& s) const;  // of the SM's rate-time until its first copy is done
  void sync(int i);                    // virtual mode: serve SM i up to the virtual clock
  void push_finish(int i);
  void busy_changed();                 // the busy set or a head's cap changed: rates anew
  void to_explicit();
  void to_virtual();

  double bw_, overlap_;
  std::vector<double> weight_;
  std::vector<Sm> sms_;
  std::vector<int> busy_;  // SMs with a copy queued
  std::vector<int> order_;  // explicit mode's scratch
  bool virtual_ = true;
  double now_ = 0;
  double vnow_ = 0, fair_ = 0;  // virtual mode: the clock at now_ and its rate (bytes/ns per weight)
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finish_;
  uint64_t generation_ = 0;
};

}  // namespace pipesim::sim
