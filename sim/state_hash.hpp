// A running 64-bit hash of a model state, for the exhaustive search's visited set (sim/explore.hpp).
// Equal states hash equal; distinct states collide with probability about n^2 / 2^65 over n
// states (the search reports that bound).
#pragma once

#include <cstdint>
#include <type_traits>

namespace pipesim::sim {

class StateHash {
 public:
  template <class T>
    requires std::is_integral_v<T> || std::is_enum_v<T>
  StateHash& add(T v) {
    // One multiply per word (the search hashes every state it reaches); value() mixes fully.
    h_ = ((h_ << 5 | h_ >> 59) ^ static_cast<uint64_t>(v)) * 0x9e3779b97f4a7c15ull;
    return *this;
  }
  StateHash& add_ptr(const void* p) { return add(reinterpret_cast<uintptr_t>(p)); }
  uint64_t value() const { return mix(h_); }
  // splitmix64's finaliser: every input bit reaches every output bit.
  static uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    return x ^ (x >> 31);
  }

 private:
  uint64_t h_ = 0x243f6a8885a308d3ull;
};

// A StateHash in four chains fed in turn, for long runs of words: one chain of dependent multiplies
// costs a multiply's latency per word; four run side by side.
class LanedHash {
 public:
  template <class T>
    requires std::is_integral_v<T> || std::is_enum_v<T>
  LanedHash& add(T v) {
    lanes_[words_++ % 4].add(v);
    return *this;
  }
  uint64_t value() const {
    StateHash h = lanes_[0];
    return h.add(lanes_[1].value()).add(lanes_[2].value()).add(lanes_[3].value()).add(words_).value();
  }

 private:
  StateHash lanes_[4];
  uint64_t words_ = 0;
};

}  // namespace pipesim::sim
