// What an untimed run (sim/explore.hpp) computes once and shares with every copy of itself: the
// program points of its warps (their continuations and futures) and the persistent sets found so far.
// Internal to sim/ (engine_impl.hpp); the search is single-threaded.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "sim/explore.hpp"
#include "sim/state_hash.hpp"

namespace pipesim::sim::detail {

// A footprint as bitsets over the objects of the run (Engine::densify), for the persistent-set
// closure's conflict checks, tens per state against whole-program futures: a few word operations
// instead of a walk of both touch lists. Exact: one bit per object, a CTA's objects in a block of
// their own (Engine::dense_cta_bits), kAnyIndex sets every bit of its group. `lasting`: the touches
// not marked last_exit, which a pinned CTA does not excuse (Footprint::conflicts). Not valid (the walk
// decides) for `everything`, an object out of the run's range, or a launch with more objects than
// the bits hold.
struct DenseFootprint {
  static constexpr size_t kWords = 4;
  using Bits = std::array<uint64_t, kWords>;
  bool valid = false;
  uint8_t words = 0;            // of each Bits in use: the run's objects / 64, rounded up
  Bits all[3]{}, lasting[3]{};  // per Footprint::Access
  enum class Clash : uint8_t { No, Yes, Unknown };
  // Footprint::conflicts of `a` with `o` where `pinned` holds the bits of the pinned CTAs.
  static Clash clash(const DenseFootprint& a, const DenseFootprint& o, const Bits& pinned);
};

// A warp's future (Engine::futures) with its bitsets.
struct Future {
  Footprint print;
  DenseFootprint dense;
  uint32_t id = 0;  // PersistentSetMemo::future_id: equal ids, equal prints
};

// Strings of words to strings of words, for keys built afresh at every state of the search: one
// open-addressing table over one pool of words, so that a lookup is a probe and a compare of
// contiguous words and an insertion allocates nothing of its own (std::unordered_map allocated a node
// and two vectors per key, and its lookups chased them: 7 % of the ws protocol's search).
class WordTable {
 public:
  static uint64_t hash(std::span<const uint64_t> key) {  // tens of words at every state
    LanedHash h;
    for (uint64_t v : key) h.add(v);
    return h.value();
  }
  // The value stored under `key` (whose hash() is `h`); false where there is none.
  bool find(std::span<const uint64_t> key, uint64_t h, std::span<const uint64_t>& value) const;
  // Stores `value` under `key`, which find() did not find.
  void insert(std::span<const uint64_t> key, uint64_t h, std::span<const uint64_t> value);
  size_t words() const { return pool_.size(); }
  void clear() {
    slots_.clear();
    pool_.clear();
    used_ = 0;
  }

 private:
  struct Slot {
    uint64_t hash = 0;  // 0: empty (a key's hash 0 is stored as 1)
    uint32_t at = 0, key_words = 0, value_words = 0;  // in pool_: the key, then the value
  };
  static uint64_t stored(uint64_t h) { return h == 0 ? 1 : h; }
  size_t home(uint64_t h) const { return static_cast<size_t>(h) & (slots_.size() - 1); }
  void grow();
  std::vector<Slot> slots_;
  std::vector<uint64_t> pool_;
  size_t used_ = 0;
};

// Persistent sets found before (Engine::persistent_set), by all that decides one: each choice's warp,
// whether it re-polls or sleeps, and its footprint; each waiting warp and what wakes it; the futures of
// those warps, by content (future_id numbers each distinct future once). A key is kept whole, so a hit
// is exact. The same situations recur all along a pipeline's loop: the closure runs once for each.
// Shared by every copy of an untimed run, as Engine::continuations_ is.
struct PersistentSetMemo {
  using Key = std::vector<uint64_t>;
  // Past 4 M words (32 MiB of keys and sets) the table starts over: a kernel whose situations seldom
  // recur (many warps, few hits) would otherwise grow it with every state.
  static constexpr size_t kMaxWords = size_t{1} << 22;
  WordTable sets;  // key -> the set's choice indices
  // Where situations seldom recur (many warps and choices: ws_gemm.scn), building keys costs more than
  // the hits save: after kTrial lookups with fewer than a quarter found, the memo is left unused.
  static constexpr uint64_t kTrial = 4096;
  uint64_t lookups = 0, hits = 0;
  bool in_use() const { return lookups < kTrial || 4 * hits >= lookups; }
  // The set remembered under `key` into `set`; false where there is none.
  bool recall(const Key& key, std::vector<size_t>& set);
  // After recall() found none.
  void remember(const Key& key, const std::vector<size_t>& set);
  WordTable futures;  // a future's key words -> its id
  uint64_t futures_seen = 0;
  // f as key words, appended to `out`: a word of flags and size, then a word per touch.
  static void append(const Footprint& f, Key& out);
  uint32_t future_id(const Footprint& f);
};

// A program point of an untimed run (Engine::continuations_, keyed by Engine::future_key): the steps a
// warp runs from there up to its next synchronising op (Engine::continuation) and its future
// (Engine::futures), each computed once.
struct ProgramPoint {
  Footprint steps;     // what those steps touch, exit aside
  bool exits = false;  // the program ends before a synchronising op: the warp exits
  bool steps_known = false, future_known = false;
  Future future;
};

// The program points by key: an open-addressing table of indices into a deque, whose entries keep
// their addresses as it grows (warps keep a pointer to theirs, WarpRt::point). std::unordered_map's
// lookups were 3 % of the ws protocol's search.
class ProgramPoints {
 public:
  // The point under `key`, created empty where new.
  ProgramPoint& operator[](uint64_t key);

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t index = 0;  // into points_, plus one (0: empty)
  };
  void grow();
  std::vector<Slot> slots_ = std::vector<Slot>(1024);
  std::deque<ProgramPoint> points_;
};

}  // namespace pipesim::sim::detail
