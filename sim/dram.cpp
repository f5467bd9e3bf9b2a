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

double DramQueue::cap_per_weight(int i) const {
  const double c = sms_[static_cast<size_t>(i)].copies.front().cap;
  return c > 0 ? c / weight_[static_cast<size_t>(i)] : kInf;
}

double DramQueue::total_rate() const {
  if (hit_bw_ <= 0) return bw_;
  if (miss_weights_ <= 0) return hit_bw_;
  return std::min(hit_bw_, bw_ * weights_ / miss_weights_);
}

bool DramQueue::note_head(int i) {
  Sm& s = sms_[static_cast<size_t>(i)];
  const bool miss = !s.copies.empty() && !s.copies.front().hit;
  if (miss == s.head_miss) return false;
  miss_weights_ += (miss ? 1.0 : -1.0) * weight_[static_cast<size_t>(i)];
  s.head_miss = miss;
  return true;
}

void DramQueue::set_hit_rate(double bytes_per_ns) {
  if (bytes_per_ns == hit_bw_) return;
  hit_bw_ = bytes_per_ns;
  if (!caps_.empty()) rebalance();
}

// A DRAM-limited SM spreads `overlap` of its rate evenly over its queued copies; a capped one takes
// them strictly in order.
void DramQueue::reshare(Sm& s) const {
  const bool spread = overlap_ > 0 && !s.capped && !s.copies.empty();
  const double n = static_cast<double>(std::max<size_t>(1, s.copies.size()));
  s.share_head = spread ? 1.0 - overlap_ + overlap_ / n : 1.0;
  s.share_rest = spread ? overlap_ / n : 0.0;
}

void DramQueue::serve(Sm& s, double amount) {
  s.copies.front().left = std::max(0.0, s.copies.front().left - amount * s.share_head);
  if (s.share_rest > 0)
    for (size_t k = 1; k < s.copies.size(); ++k) s.copies[k].left = std::max(0.0, s.copies[k].left - amount * s.share_rest);
}

double DramQueue::finish_in(const Sm& s) const {
  double f = s.copies.front().left / s.share_head;
  if (s.share_rest > 0)
    for (size_t k = 1; k < s.copies.size(); ++k) f = std::min(f, s.copies[k].left / s.share_rest);
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

void DramQueue::add(int sm, double bytes, double cap, uint32_t token, bool hit) {
  Sm& s = sms_[static_cast<size_t>(sm)];
  if (!s.copies.empty() && !s.capped) sync(sm);
  s.copies.push_back(Copy{bytes, cap, token, hit});
  if (s.copies.size() == 1) {
    weights_ += weight_[static_cast<size_t>(sm)];
    note_head(sm);
    s.cap_key = caps_.insert({cap_per_weight(sm), sm});
    s.capped = false;
    s.vsync = vnow_;
    reshare(s);
    rebalance();
    if (!s.capped) push_finish(sm);
  } else {
    reshare(s);
    if (s.share_rest > 0) push_finish(sm);  // its copies split its rate anew
  }
}

void DramQueue::advance(double now) {
  const double dt = now - now_;
  if (dt <= 0) return;
  now_ = now;
  vnow_ += dt * fair_;
  for (int i : capped_) {
    Sm& s = sms_[static_cast<size_t>(i)];
    serve(s, s.rate * dt);
  }
}

double DramQueue::next_done() {
  auto stale = [&](const Finish& f) {
    const Sm& s = sms_[static_cast<size_t>(f.sm)];
    return f.version != s.version || s.capped || s.copies.empty();
  };
  while (!finish_.empty() && stale(finish_.top())) finish_.pop();
  double t = kInf;
  if (!finish_.empty() && fair_ > 0) t = now_ + std::max(0.0, finish_.top().v - vnow_) / fair_;
  for (int i : capped_) {
    const Sm& s = sms_[static_cast<size_t>(i)];
    t = std::min(t, now_ + finish_in(s) / s.rate);
  }
  return t;
}

void DramQueue::take_done(std::vector<uint32_t>& out) {
  std::vector<int>& due = scratch_;
  due.clear();
  const double eps = 1e-9 * std::max(1.0, std::abs(vnow_));
  while (!finish_.empty()) {
    const Finish f = finish_.top();
    const Sm& s = sms_[static_cast<size_t>(f.sm)];
    if (f.version != s.version || s.capped || s.copies.empty()) {
      finish_.pop();
      continue;
    }
    if (f.v > vnow_ + eps) break;
    finish_.pop();
    sync(f.sm);
    due.push_back(f.sm);
  }
  for (int i : capped_)
    if (sms_[static_cast<size_t>(i)].copies.front().left <= kDoneBytes) due.push_back(i);
  bool changed = false;
  for (int i : due) {
    Sm& s = sms_[static_cast<size_t>(i)];
    const double head_cap = s.copies.front().cap;
    std::erase_if(s.copies, [&](const Copy& c) {
      if (c.left > kDoneBytes) return false;
      out.push_back(c.token);
      return true;
    });
    if (note_head(i) && hit_bw_ > 0) changed = true;  // the rate the SMs share changed with it
    if (s.copies.empty()) {
      weights_ -= weight_[static_cast<size_t>(i)];
      caps_.erase(s.cap_key);
      if (s.capped) {
        capped_.erase(std::find(capped_.begin(), capped_.end(), i));
        s.capped = false;
      }
      ++s.version;
      changed = true;
      continue;
    }
    reshare(s);
    if (s.copies.front().cap != head_cap) {
      caps_.erase(s.cap_key);
      s.cap_key = caps_.insert({cap_per_weight(i), i});
      if (s.capped) s.rate = s.copies.front().cap;
      changed = true;  // its intake limit changed with its oldest copy
    }
    if (!s.capped) push_finish(i);  // the next copy, or the same one where rounding left a few bytes
  }
  if (caps_.empty()) weights_ = miss_weights_ = 0;  // no drift from the sums
  if (changed) rebalance();
}

double DramQueue::backlog() {
  double b = 0;
  for (const CapKey& k : caps_) {
    if (!sms_[static_cast<size_t>(k.second)].capped) sync(k.second);
    for (const Copy& c : sms_[static_cast<size_t>(k.second)].copies) b += c.left;
  }
  return b;
}

void DramQueue::set_capped(int i, bool capped) {
  Sm& s = sms_[static_cast<size_t>(i)];
  if (capped) {
    sync(i);  // served on the virtual clock up to now
    s.capped = true;
    ++s.version;
  } else {
    s.capped = false;  // served explicitly up to now
    s.vsync = vnow_;
  }
  reshare(s);
  if (!capped) push_finish(i);
}

// Max-min fairness by weight: in ascending order of cap per weight, an SM whose cap is below its
// weighted share of what is left takes its cap; the rest split what is left by weight, which is the
// virtual clock's rate. The scan stops at the first SM its cap does not hold back.
void DramQueue::rebalance() {
  double left = total_rate(), weights = weights_;
  size_t uncapped = caps_.size();
  std::vector<int>& next = next_capped_;
  next.clear();
  for (const auto& [key, i] : caps_) {
    if (uncapped == 0 || key >= left / weights) break;
    next.push_back(i);
    left -= sms_[static_cast<size_t>(i)].copies.front().cap;
    weights -= weight_[static_cast<size_t>(i)];
    --uncapped;
  }
  fair_ = uncapped > 0 && weights > 0 ? left / weights : 0;
  for (int i : next) sms_[static_cast<size_t>(i)].rate = -1;  // mark: capped from now on
  for (int i : capped_)
    if (sms_[static_cast<size_t>(i)].rate >= 0) set_capped(i, false);
  for (int i : next) {
    Sm& s = sms_[static_cast<size_t>(i)];
    s.rate = s.copies.front().cap;
    if (!s.capped) set_capped(i, true);
  }
  capped_.swap(next);
}

}  // namespace pipesim::sim
