// One run of a kernel with no clock: the exhaustive search (verify/search.hpp) steps it choice by
// choice and copies it to try each alternative. Same engine, same rules (sim/engine*.cpp); only the
// order of synchronising actions is left open. Times still advance as the engine computes them, but
// nothing is decided by them: any poised warp may act next and any copy, remote arrival or
// tcgen05.commit may land next. Assumption (docs/semantics.md "Exhaustive search"): a warp's steps
// between two synchronising ops are invisible to other warps, so they run at once and are never
// interleaved (the search's partial-order reduction). A PTX kernel's warps run their own code
// (sim/external.hpp): the run, its memory and registers are copied and hashed with the engine, and a
// warp that runs long without synchronising yields to the explorer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/engine.hpp"

namespace pipesim::sim {

namespace detail {
class Engine;
}

// What a choice of an untimed run touches, for the search's partial-order reduction (sleep sets and
// persistent sets, verify/search_exhaustive.cpp). The engine derives it (sim/engine_footprint.cpp) from
// the op the poised warp executes or the event that lands, plus the steps that run with it before the
// next choice: the warp's own steps up to its next synchronising op and those of the warps the choice
// may wake. Two choices are independent when their footprints do not conflict: no shared object that
// one writes while the other reads or writes. `Add` is an update that commutes with itself (a count of
// copies in flight or of live warps, a flag set to 1) and conflicts with reads and writes only. A wait
// is a read of its barrier: the waiter set it may join is kept as a set (the state hash ignores the
// order) and only what writes the barrier reads it.
struct Footprint {
  enum class Object : uint8_t {
    Mbarrier,      // a barrier slot's state (phase, pending, tx) and its waiters; scope: CTA
    MbarrierInit,  // whether a slot is initialised (init / inval); scope: CTA
    InitVisible,   // fence.mbarrier_init / cluster-published state of a CTA's slots (index: any)
    Named,         // a named barrier (index: its id); scope: CTA
    Cluster,       // the cluster barrier and the cluster's live warps; scope: cluster
    CtaLife,       // whether the CTA runs (its live warps, exited); scope: CTA
    CopiesInFlight,// TMA loads into the CTA not landed yet; scope: CTA
    BulkStores,    // bulk stores of a warp (index) and their groups; scope: CTA
    Cell,          // a shared-memory value cell (index); scope: CTA
    Releases,      // warps' release records (read by a load's ordering rule)
    CtaGroup,      // the kernel's tcgen05 cta_group, fixed by its first tcgen05 op
  };
  enum class Access : uint8_t { Read, Add, Write };
  static constexpr uint32_t kAnyIndex = UINT32_MAX;
  struct Touch {
    uint64_t object;  // Object << 56 | scope << 32 | index
    Access access;
    bool last_exit = false;  // only the CTA's last exit does this (it ends the CTA, checks what is in flight)
  };
  std::vector<Touch> touches;
  bool everything = false;  // touches what no object names (TMEM, a launch, a value-dependent branch)
  bool sorted = true;       // touches sorted by object, one each (compact): conflicts() merges them

  void add(Object o, uint32_t scope, uint32_t index, Access a, bool last_exit = false) {
    touches.push_back({static_cast<uint64_t>(o) << 56 | static_cast<uint64_t>(scope & 0xffffffu) << 32 | index, a, last_exit});
    sorted = touches.size() == 1;
  }
  // No touches (the vector keeps its capacity).
  void clear() {
    touches.clear();
    everything = false;
    sorted = true;
  }
  // Keeps a sorted footprint sorted (merging two sorted ones in linear time).
  void merge(const Footprint& o);
  // `pinned` (indexed by CTA): CTAs that do not end on the paths `o` stands for (one of their warps
  // does not move there): what only their last exit would do in `o` clashes with nothing here
  // (Engine::persistent_set).
  bool conflicts(const Footprint& o, const std::vector<uint8_t>* pinned = nullptr) const;
  // Sorted, one touch per object with the strongest access (keeps whole-program futures small).
  void compact();
};

class UntimedRun {
 public:
  // What a choice is, for a counterexample trail.
  struct Choice {
    enum class Kind : uint8_t {
      Op,      // warp (cta, warp) executes its synchronising op `op` at `site`
      Land,    // a copy issued at `site` by (from_cta, from_warp) lands its bytes on `barrier` of CTA `cta`
      Remote,  // an operation `op` from (from_cta, from_warp) reaches `barrier` of CTA `cta`
      Commit,  // a tcgen05.commit's arrival from (from_cta, from_warp) reaches `barrier` of CTA `cta`
    };
    Kind kind = Kind::Op;
    int cta = -1, warp = -1, role = -1;
    uint32_t site = 0;
    OpKind op = OpKind::Compute;
    std::string barrier;  // "" when the op names none (named or cluster barriers)
    int from_cta = -1, from_warp = -1;
  };

  UntimedRun(const Kernel& kernel, RunOptions options);
  UntimedRun(const UntimedRun& other);
  // Copies `other` into this run's storage: what it had allocated is reused (the search recycles the
  // runs it has finished with instead of allocating each copy afresh).
  UntimedRun& operator=(const UntimedRun& other);
  UntimedRun(UntimedRun&&) noexcept;
  UntimedRun& operator=(UntimedRun&&) noexcept;
  ~UntimedRun();

  // Runs every step no choice decides and returns how many choices are open; 0: the run ended.
  size_t settle();
  // How many choices the last settle() left open.
  size_t choice_count() const;
  // Choice i of the last settle (0 <= i < settle()), oldest first.
  Choice describe(size_t i) const;
  void take(size_t i);
  // Partial-order reduction (verify/search_exhaustive.cpp). The choice's identity among this state's
  // choices, the same in every state where the same transition is open: the warp for a poised op,
  // the event's content for an arrival (two pending events of equal content are one transition).
  uint64_t choice_id(size_t i) const;
  // What choice i touches in this state (Footprint), into `out` (replaced; its capacity is reused).
  void footprint(size_t i, Footprint& out) const;
  // A persistent set of this state's choices (their footprints `prints`; `asleep`: not to be
  // taken): no order of the other choices and what follows them, up to one of the set, conflicts
  // with the set, so only the set need be tried here. Indices, ascending, into `set` (replaced; its
  // capacity is reused); empty: none smaller than all choices. Rests on each warp's remaining program
  // (its future, cached by program state).
  void persistent_set(const std::vector<Footprint>& prints, const std::vector<uint8_t>& asleep, std::vector<size_t>& set) const;
  // Equal states (what can happen next, not when), equal hashes.
  uint64_t state_hash() const;
  // The run's result, as sim::run reports it (call once, after settle() returned 0).
  RunResult finish() &&;

 private:
  uint64_t choice_seq(size_t i) const;
  std::unique_ptr<detail::Engine> e_;
};

}  // namespace pipesim::sim
