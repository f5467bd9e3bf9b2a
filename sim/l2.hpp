// The L2 between the SMs and the DRAM (docs/semantics.md, "The L2"): which global boxes it holds.
// A box is what one TMA copy reads, named by a footprint key (sim::Op::box: the tensor map and the
// box's coordinates for a PTX kernel, the scenario's `box =` for a scenario; 0 = not known). The L2
// keeps the most recently touched boxes up to its capacity (LRU by bytes, whole boxes: a box is
// evicted at once). A read of a box it holds is a hit; any other read is a miss that fills it; a
// store fills it too (write-back: its bytes still go to the DRAM). Where the bytes are served from
// and at what rate is the engine's and the DRAM's (sim/dram.hpp): this answers hit or miss, and
// since when a box's bytes are there: a box a miss brought in is filling until that miss lands, and
// a read that hits it meanwhile waits for those bytes (it cannot land before the miss it rides on).
#pragma once

#include <cstdint>
#include <limits>
#include <list>
#include <unordered_map>
#include <utility>

namespace pipesim::sim {

class L2Cache {
 public:
  // capacity_bytes <= 0: no L2, every read misses.
  explicit L2Cache(double capacity_bytes);
  // A copy's index points into its own list (the exhaustive search copies engines).
  L2Cache(const L2Cache& o);
  L2Cache& operator=(const L2Cache& o);
  L2Cache(L2Cache&&) noexcept = default;
  L2Cache& operator=(L2Cache&&) noexcept = default;

  // A read of `bytes` of box `key`: true when the L2 holds it (served from the L2). Key 0 (an
  // unknown box) always misses and is not kept: nothing could hit it. A miss brings in
  // `fill_bytes` (its L2 promotion's group of boxes; at least `bytes`).
  bool read(uint64_t key, int64_t bytes, int64_t fill_bytes);
  bool read(uint64_t key, int64_t bytes) { return read(key, bytes, bytes); }
  // A store of `bytes` to box `key` (0: unknown, not kept): the box is held from now on.
  void write(uint64_t key, int64_t bytes);
  // When the box's bytes are in the L2: kFilling while the miss that brought it in is in flight,
  // -infinity for a box written or filled long ago or not held (nothing to wait for).
  static constexpr double kFilling = std::numeric_limits<double>::infinity();
  double filled_at(uint64_t key) const;
  // The miss that brought box `key` in lands at `at`: reads of it land no earlier.
  void fill(uint64_t key, double at);

  int64_t hit_bytes() const { return hit_bytes_; }
  int64_t miss_bytes() const { return miss_bytes_; }          // the bytes the missing reads asked for
  int64_t brought_bytes() const { return brought_bytes_; }    // what their misses read from the DRAM
  double held_bytes() const { return held_; }
  double capacity() const { return capacity_; }

 private:
  struct Box {
    uint64_t key;
    int64_t bytes;
    double filled_at;  // L2Cache::filled_at
  };
  // Most recent with `bytes` and `filled_at` (inserted if new), then evicts to capacity. A read calls
  // it for a miss only (a hit keeps its box as it is); a store for any box.
  void touch(uint64_t key, int64_t bytes, double filled_at);

  double capacity_;
  double held_ = 0;
  std::list<Box> lru_;  // front: most recent
  std::unordered_map<uint64_t, std::list<Box>::iterator> where_;
  int64_t hit_bytes_ = 0, miss_bytes_ = 0, brought_bytes_ = 0;
};

// A footprint key from a tensor (or buffer) id and a box's coordinates: equal boxes, equal keys,
// never 0.
uint64_t box_key(uint64_t tensor, const int64_t* coords, int n);

}  // namespace pipesim::sim
