// The DRAM as a fair server of the SMs' copies (docs/semantics.md, "The DRAM serves SMs side by side").
// Every SM takes its own copies in issue order; the SMs with a copy in service share the device's
// bandwidth max-min fairly by weight, each capped by what it can take in (its copy's ingest rate).
// A fluid model: rates change only when an SM's copy finishes or an idle SM starts one, so the engine
// asks for the next finish, and asks again after every change.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

namespace pipesim::sim {

class DramQueue {
 public:
  // `weights[i]`: SM i's relative share of a loaded DRAM (1 = fair).
  DramQueue(double bytes_per_ns, std::vector<double> weights);

  // A copy of `bytes` into SM `sm`, served no faster than `cap` bytes/ns (0: no cap), queued behind
  // the SM's earlier copies. `token` comes back from take_done. Call advance(now) first.
  void add(int sm, double bytes, double cap, uint32_t token);
  // Serves every SM's copy in service up to `now`.
  void advance(double now);
  // When the next copy in service finishes at the current rates (infinity when none is).
  double next_done() const;
  // The tokens of the copies finished by the last advance, in SM order; starts each SM's next copy.
  void take_done(std::vector<uint32_t>& out);
  // Bytes added and not yet served, device-wide.
  double backlog() const { return backlog_; }
  // Changes whenever the rates do: an engine's finish event carries it, and a stale one is dropped.
  uint64_t generation() const { return generation_; }

 private:
  struct Copy {
    double left, cap;
    uint32_t token;
  };
  struct Sm {
    std::deque<Copy> copies;  // front: in service
    double rate = 0;
  };
  void rebalance();

  double bw_;
  std::vector<double> weight_;
  std::vector<Sm> sms_;
  std::vector<int> busy_;   // SMs with a copy in service
  std::vector<int> order_;  // rebalance's scratch
  double now_ = 0, backlog_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace pipesim::sim
