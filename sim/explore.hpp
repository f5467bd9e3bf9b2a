// One run of a scenario kernel with no clock: the exhaustive search (verify/search.hpp) steps it
// choice by choice and copies it to try each alternative. Same engine, same rules (sim/engine*.cpp);
// only the order of synchronising actions is left open. Times still advance as the engine computes
// them, but nothing is decided by them: any poised warp may act next and any copy, remote arrival or
// tcgen05.commit may land next. Assumption (docs/semantics.md "Exhaustive search"): a warp's steps
// between two synchronising ops are invisible to other warps, so they run at once and are never
// interleaved (the search's partial-order reduction).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "sim/engine.hpp"

namespace pipesim::sim {

namespace detail {
class Engine;
}

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

  // Throws std::invalid_argument for a kernel with external (PTX) warps.
  UntimedRun(const Kernel& kernel, RunOptions options);
  UntimedRun(const UntimedRun& other);
  UntimedRun& operator=(const UntimedRun&) = delete;
  UntimedRun(UntimedRun&&) noexcept;
  UntimedRun& operator=(UntimedRun&&) noexcept;
  ~UntimedRun();

  // Runs every step no choice decides and returns how many choices are open; 0: the run ended.
  size_t settle();
  // Choice i of the last settle (0 <= i < settle()), oldest first.
  Choice describe(size_t i) const;
  void take(size_t i);
  // Equal states (what can happen next, not when), equal hashes.
  uint64_t state_hash() const;
  // The run's result, as sim::run reports it (call once, after settle() returned 0).
  RunResult finish() &&;

 private:
  uint64_t choice_seq(size_t i) const;
  std::unique_ptr<detail::Engine> e_;
};

}  // namespace pipesim::sim
