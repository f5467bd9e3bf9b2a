#include "sim/l2.hpp"

#include <algorithm>

namespace pipesim::sim {

L2Cache::L2Cache(double capacity_bytes) : capacity_(capacity_bytes) {}

L2Cache::L2Cache(const L2Cache& o)
    : capacity_(o.capacity_), held_(o.held_), lru_(o.lru_), hit_bytes_(o.hit_bytes_), miss_bytes_(o.miss_bytes_),
      brought_bytes_(o.brought_bytes_) {
  for (auto it = lru_.begin(); it != lru_.end(); ++it) where_.emplace(it->key, it);
}

L2Cache& L2Cache::operator=(const L2Cache& o) {
  if (this != &o) *this = L2Cache(o);
  return *this;
}

void L2Cache::touch(uint64_t key, int64_t bytes, double filled_at) {
  if (auto it = where_.find(key); it != where_.end()) {
    held_ += static_cast<double>(bytes - it->second->bytes);  // a box stored again with another size
    it->second->bytes = bytes;
    it->second->filled_at = filled_at;
    lru_.splice(lru_.begin(), lru_, it->second);
  } else {
    lru_.push_front(Box{key, bytes, filled_at});
    where_.emplace(key, lru_.begin());
    held_ += static_cast<double>(bytes);
  }
  while (held_ > capacity_ && !lru_.empty()) {
    held_ -= static_cast<double>(lru_.back().bytes);
    where_.erase(lru_.back().key);
    lru_.pop_back();
  }
}

bool L2Cache::read(uint64_t key, int64_t bytes, int64_t fill_bytes) {
  const int64_t brought = std::max(bytes, fill_bytes);
  if (key == 0 || capacity_ <= 0) {
    miss_bytes_ += bytes;
    brought_bytes_ += brought;
    return false;
  }
  if (auto it = where_.find(key); it != where_.end()) {
    hit_bytes_ += bytes;
    lru_.splice(lru_.begin(), lru_, it->second);
    return true;
  }
  miss_bytes_ += bytes;
  brought_bytes_ += brought;
  touch(key, brought, kFilling);  // filling until the miss lands
  return false;
}

void L2Cache::write(uint64_t key, int64_t bytes) {
  if (key == 0 || capacity_ <= 0) return;
  touch(key, bytes, -kFilling);  // the store's bytes are there, whatever was filling
}

double L2Cache::filled_at(uint64_t key) const {
  const auto it = where_.find(key);
  return it == where_.end() ? -kFilling : it->second->filled_at;
}

void L2Cache::fill(uint64_t key, double at) {
  if (auto it = where_.find(key); it != where_.end() && it->second->filled_at == kFilling) it->second->filled_at = at;
}

uint64_t box_key(uint64_t tensor, const int64_t* coords, int n) {
  // FNV-1a over the words, then a final mix; 0 is kept for "unknown".
  uint64_t h = 0xcbf29ce484222325ull ^ (tensor * 0x9e3779b97f4a7c15ull);
  for (int i = 0; i < n; ++i) {
    h ^= static_cast<uint64_t>(coords[i]);
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  h ^= h >> 32;
  return h == 0 ? 1 : h;
}

}  // namespace pipesim::sim
