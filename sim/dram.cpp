#include "sim/dram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace pipesim::sim {

namespace {
// A copy with less than this left is done: finish times are rounded to picoseconds by the event queue.
constexpr double kDoneBytes = 1e-3;
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

DramQueue::DramQueue(double bytes_per_ns, std::vector<double> weights, double overlap)
    : bw_(bytes_per_ns), overlap_(overlap), weight_(std::move(weights)), sms_(weight_.size()) {}

double DramQueue::share(const Sm& s, std::size_t k) const {
  if (!s.overlapped) return k == 0 ? 1.0 : 0.0;
  return overlap_ / static_cast<double>(s.copies.size()) + (k == 0 ? 1.0 - overlap_ : 0.0);
}

double DramQueue::cap_per_weight(int i) const {
  const double c = sms_[static_cast<size_t>(i)].copies.front().cap;
  return c > 0 ? c / weight_[static_cast<size_t>(i)] : kInf;
}

void DramQueue::serve(Sm& s, double amount) {
  const size_t n = s.overlapped ? s.copies.size() : 1;
  for (size_t k = 0; k < n; ++k) s.copies[k].left -= std::min(s.copies[k].left, amount * share(s, k));
}

double DramQueue::finish_in(const Sm& s) const {
  double f = kInf;
  const size_t n = s.overlapped ? s.copies.size() : 1;
  for (size_t k = 0; k < n; ++k) f = std::min(f, s.copies[k].left / share(s, k));
  return f;
}

void DramQueue::sync(int i) {
  Sm& s = sms_[static_cast<size_t>(i)];
  serve(s, weight_[static_cast<size_t>(i)] * (vnow_ - s.vsync));
  s.vsync = vnow_;
}

void DramQueue::push_finish(int i) {
  Sm& s = sms_[static_cast<size_t>(i)];
  finish_.push(Finish{s.vsync + finish_in(s) / weight_[static_cast<size_t>(i)], i, ++s.version});
}

void DramQueue::add(int sm, double bytes, double cap, uint32_t token) {
  Sm& s = sms_[static_cast<size_t>(sm)];
  if (virtual_ && !s.copies.empty()) sync(sm);
  s.copies.push_back(Copy{bytes, cap, token});
  if (s.copies.size() == 1) {
    busy_.push_back(sm);
    s.vsync = vnow_;
    s.overlapped = overlap_ > 0;
    busy_changed();
    if (virtual_) push_finish(sm);
  } else if (s.overlapped) {
    ++generation_;  // the SM's copies split its rate anew
    if (virtual_) push_finish(sm);
  }
}

void DramQueue::advance(double now) {
  const double dt = now - now_;
  if (dt <= 0) return;
  now_ = now;
  if (virtual_) {
    vnow_ += dt * fair_;
    return;
  }
  for (int i : busy_) {
    Sm& s = sms_[static_cast<size_t>(i)];
    serve(s, s.rate * dt);
  }
}

double DramQueue::next_done() {
  if (virtual_) {
    while (!finish_.empty() && finish_.top().version != sms_[static_cast<size_t>(finish_.top().sm)].version) finish_.pop();
    if (finish_.empty() || fair_ <= 0) return kInf;
    return now_ + std::max(0.0, finish_.top().v - vnow_) / fair_;
  }
  double t = kInf;
  for (int i : busy_) {
    const Sm& s = sms_[static_cast<size_t>(i)];
    if (s.rate > 0) t = std::min(t, now_ + finish_in(s) / s.rate);
  }
  return t;
}

void DramQueue::take_done(std::vector<uint32_t>& out) {
  // The SMs that may have finished a copy: in virtual mode those whose finish is due on the clock.
  std::vector<int>& due = order_;
  due.clear();
  if (virtual_) {
    const double eps = 1e-9 * std::max(1.0, std::abs(vnow_));
    while (!finish_.empty()) {
      const Finish f = finish_.top();
      if (f.version != sms_[static_cast<size_t>(f.sm)].version) {
        finish_.pop();
        continue;
      }
      if (f.v > vnow_ + eps) break;
      finish_.pop();
      sync(f.sm);
      due.push_back(f.sm);
    }
  } else {
    due = busy_;
  }
  bool changed = false;
  for (int i : due) {
    Sm& s = sms_[static_cast<size_t>(i)];
    const double head_cap = s.copies.front().cap;
    const size_t before = s.copies.size();
    std::erase_if(s.copies, [&](const Copy& c) {
      if (c.left > kDoneBytes) return false;
      out.push_back(c.token);
      return true;
    });
    if (s.copies.empty()) {
      s.rate = 0;
      s.overlapped = false;
      ++s.version;
      busy_.erase(std::find(busy_.begin(), busy_.end(), i));
      changed = true;
    } else if (s.copies.front().cap != head_cap) {
      changed = true;  // its intake limit changed with its oldest copy
      if (virtual_) push_finish(i);
    } else if (virtual_) {
      push_finish(i);  // the next copy, or the same one where rounding left a few bytes
    }
    if (s.copies.size() != before && s.overlapped) ++generation_;
  }
  if (changed) busy_changed();
}

double DramQueue::backlog() {
  double b = 0;
  for (int i : busy_) {
    if (virtual_) sync(i);
    for (const Copy& c : sms_[static_cast<size_t>(i)].copies) b += c.left;
  }
  return b;
}

// Max-min fairness by weight: SMs whose cap is below their weighted share get their cap, the rest
// split what is left in proportion to their weights. When no cap binds, every SM runs at its weight
// times bw / (sum of weights): the virtual clock's rate.
void DramQueue::busy_changed() {
  ++generation_;
  double weights = 0, min_cap = kInf;
  for (int i : busy_) {
    weights += weight_[static_cast<size_t>(i)];
    min_cap = std::min(min_cap, cap_per_weight(i));
  }
  const double fair = weights > 0 ? bw_ / weights : 0;
  if (min_cap >= fair) {
    if (!virtual_) to_virtual();
    fair_ = fair;
    return;
  }
  if (virtual_) to_explicit();
  std::vector<int>& order = order_;
  order = busy_;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return cap_per_weight(a) < cap_per_weight(b); });
  double left = bw_;
  for (int i : order) {
    Sm& s = sms_[static_cast<size_t>(i)];
    const double w = weight_[static_cast<size_t>(i)];
    const double share = weights > 0 ? left * w / weights : 0;
    s.rate = std::min(share, s.copies.front().cap > 0 ? s.copies.front().cap : share);
    s.overlapped = overlap_ > 0 && (s.copies.front().cap <= 0 || s.rate < s.copies.front().cap);
    left -= s.rate;
    weights -= w;
  }
}

// The virtual clock serves lazily: every SM is brought up to it before the rates become explicit.
void DramQueue::to_explicit() {
  for (int i : busy_) sync(i);
  finish_ = {};
  virtual_ = false;
}

void DramQueue::to_virtual() {
  virtual_ = true;
  finish_ = {};
  for (int i : busy_) {
    Sm& s = sms_[static_cast<size_t>(i)];
    s.vsync = vnow_;
    s.overlapped = overlap_ > 0;
    push_finish(i);
  }
}

}  // namespace pipesim::sim
