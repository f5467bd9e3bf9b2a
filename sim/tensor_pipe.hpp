// The tensor pipe of one SM (docs/semantics.md, "The tensor pipe"): the unit that runs wgmma.mma_async
// (Hopper) and tcgen05.mma (Blackwell). MMAs run one after another, in the order the pipe accepted
// them, each for its FLOPs at the architecture's dense rate for its kind (model::Arch, the engine
// computes the duration). The pipe holds at most `queue_depth` MMAs that have not finished, the
// running one included: an issue into a full queue is accepted only when the oldest MMA finishes,
// and the issuing warp stalls until then. wgmma.wait_group and tcgen05.commit complete when the pipe
// has finished the MMAs they cover (the engine keeps those times per warp).
// Under tcgen05 cta_group::2 one MMA occupies the pipes of both SMs of the pair (issue_pair).
#pragma once

#include <cstddef>
#include <vector>

namespace pipesim::sim {

class TensorPipe {
 public:
  // queue_depth <= 0: an unbounded queue (issue never stalls).
  TensorPipe() = default;
  explicit TensorPipe(int queue_depth) : depth_(queue_depth) {}

  // Where one MMA went: accepted into the queue (the issuing warp may go on from then), started, ended.
  struct Slot {
    double accepted = 0, start = 0, end = 0;
  };

  // An MMA of `duration_ns` issued at `at`.
  Slot issue(double at, double duration_ns) { return issue_pair(*this, nullptr, at, duration_ns); }
  // One MMA on pipe `a` and, when `b` is set, the peer SM's pipe `b` at once (cta_group::2): it is
  // accepted when both queues have room and starts when both pipes are free.
  static Slot issue_pair(TensorPipe& a, TensorPipe* b, double at, double duration_ns);

  // When an MMA issued at `at` would be accepted (at, or when the queue next has room).
  double accept_time(double at);
  // When every MMA accepted so far has finished.
  double drained() const { return free_; }
  // Time the pipe has spent running MMAs.
  double busy_ns() const { return busy_; }
  int queue_depth() const { return depth_; }

 private:
  void take(double start, double end);
  size_t queued() const { return ends_.size() - head_; }

  int depth_ = 0;
  // End times of accepted MMAs not yet known to have finished, oldest first: ends_[head_ ..]. A vector
  // and not a std::deque, which allocates even when empty (every SM of every copy of an untimed run).
  std::vector<double> ends_;
  size_t head_ = 0;
  double free_ = 0;          // the last accepted MMA ends then
  double busy_ = 0;
};

}  // namespace pipesim::sim
