#include "sim/dram.hpp"

#include <algorithm>
#include <limits>

namespace pipesim::sim {

namespace {
// A copy with less than this left is done: finish times are rounded to picoseconds by the event queue.
constexpr double kDoneBytes = 1e-3;
}  // namespace

DramQueue::DramQueue(double bytes_per_ns, std::vector<double> weights)
    : bw_(bytes_per_ns), weight_(std::move(weights)), sms_(weight_.size()) {}

void DramQueue::add(int sm, double bytes, double cap, uint32_t token) {
  Sm& s = sms_[static_cast<size_t>(sm)];
  s.copies.push_back(Copy{bytes, cap, token});
  backlog_ += bytes;
  if (s.copies.size() == 1) {
    busy_.push_back(sm);
    rebalance();
  }
}

void DramQueue::advance(double now) {
  const double dt = now - now_;
  if (dt <= 0) return;
  now_ = now;
  for (int i : busy_) {
    Sm& s = sms_[static_cast<size_t>(i)];
    const double served = std::min(s.copies.front().left, s.rate * dt);
    s.copies.front().left -= served;
    backlog_ -= served;
  }
}

double DramQueue::next_done() const {
  double t = std::numeric_limits<double>::infinity();
  for (int i : busy_) {
    const Sm& s = sms_[static_cast<size_t>(i)];
    if (s.rate > 0) t = std::min(t, now_ + s.copies.front().left / s.rate);
  }
  return t;
}

void DramQueue::take_done(std::vector<uint32_t>& out) {
  bool changed = false;
  for (size_t k = 0; k < busy_.size();) {
    Sm& s = sms_[static_cast<size_t>(busy_[k])];
    if (s.copies.front().left > kDoneBytes) {
      ++k;
      continue;
    }
    backlog_ -= s.copies.front().left;
    out.push_back(s.copies.front().token);
    s.copies.pop_front();
    changed = true;
    if (s.copies.empty()) {
      s.rate = 0;
      busy_.erase(busy_.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      ++k;
    }
  }
  if (changed) rebalance();
}

// Max-min fairness by weight: SMs whose cap is below their weighted share get their cap, the rest
// split what is left in proportion to their weights. A loaded DRAM caps no one (132 SMs share ~23 B/ns
// each against an intake of 180), so that case is one pass without sorting.
void DramQueue::rebalance() {
  ++generation_;
  double weights = 0;
  for (int i : busy_) weights += weight_[static_cast<size_t>(i)];
  const double fair = weights > 0 ? bw_ / weights : 0;  // bytes/ns per unit of weight, no one capped
  auto cap_per_weight = [&](int i) {
    const double c = sms_[static_cast<size_t>(i)].copies.front().cap;
    return c > 0 ? c / weight_[static_cast<size_t>(i)] : std::numeric_limits<double>::infinity();
  };
  if (std::all_of(busy_.begin(), busy_.end(), [&](int i) { return cap_per_weight(i) >= fair; })) {
    for (int i : busy_) sms_[static_cast<size_t>(i)].rate = weight_[static_cast<size_t>(i)] * fair;
    return;
  }
  std::vector<int>& order = order_;
  order = busy_;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return cap_per_weight(a) < cap_per_weight(b); });
  double left = bw_;
  for (int i : order) {
    Sm& s = sms_[static_cast<size_t>(i)];
    const double w = weight_[static_cast<size_t>(i)];
    const double share = weights > 0 ? left * w / weights : 0;
    s.rate = std::min(share, s.copies.front().cap > 0 ? s.copies.front().cap : share);
    left -= s.rate;
    weights -= w;
  }
}

}  // namespace pipesim::sim
