#include "sim/tensor_pipe.hpp"

#include <algorithm>

namespace pipesim::sim {

double TensorPipe::accept_time(double at) {
  // The pipe is serial, so ends_ is sorted: drop what has finished by `at`, then, if the queue is
  // still full, the issue waits for the oldest to finish (which frees one place).
  while (head_ < ends_.size() && ends_[head_] <= at) ++head_;
  if (head_ == ends_.size() || head_ > 64) {  // drop what has left (at most one move per 64 left)
    ends_.erase(ends_.begin(), ends_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  if (depth_ > 0 && static_cast<int>(queued()) >= depth_)
    return ends_[ends_.size() - static_cast<size_t>(depth_)];
  return at;
}

void TensorPipe::take(double start, double end) {
  ends_.push_back(end);  // finished MMAs leave the queue in accept_time, at the next issue's time
  free_ = end;
  busy_ += end - start;
}

TensorPipe::Slot TensorPipe::issue_pair(TensorPipe& a, TensorPipe* b, double at, double duration_ns) {
  Slot s;
  s.accepted = a.accept_time(at);
  if (b) s.accepted = std::max(s.accepted, b->accept_time(at));
  s.start = std::max(s.accepted, a.free_);
  if (b) s.start = std::max(s.start, b->free_);
  s.end = s.start + duration_ns;
  a.take(s.start, s.end);
  if (b) b->take(s.start, s.end);
  return s;
}

}  // namespace pipesim::sim
