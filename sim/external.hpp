// A second source of ops for the same engine: a front end that runs each warp's own code (the PTX
// front end, verify/ptx/) instead of a scenario's roles lowered by sim/lowering. The engine asks it
// for each warp's next op exactly as it asks a WarpProgram, and tells it what the ops that return a
// value returned (a test_wait's answer, an arrive's token). Such a kernel's mbarriers are words of
// shared memory found as the kernel initialises them, so their slots are numbered as they appear.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "model/arch.hpp"
#include "sim/op.hpp"
#include "sim/state_hash.hpp"

namespace pipesim::sim {

// One warp of an external program.
class ExternalWarp {
 public:
  virtual ~ExternalWarp() = default;
  // The warp's next op at simulated time `now_ns`; false when the warp exits.
  virtual bool next(Op& op, double now_ns) = 0;
  // What the op just executed returned (ops flagged kFlagAnswer): test_wait 1/0, a wait 1 once it
  // passes, an arrive the phase parity before it.
  virtual void answer(int64_t value) = 0;
  // After a Fault op: the rule id and one sentence (what the warp's code did).
  virtual std::pair<std::string, std::string> fault() const = 0;
  // Instructions the warp has executed (warp-level: one per instruction, whatever its lanes).
  virtual uint64_t instructions() const = 0;
  // Whether the op next() returned last is a Compute that only ends a step the warp ran to its budget
  // without synchronising (a spin, a long loop): an untimed run lets the explorer order it.
  virtual bool yielded() const = 0;
  // For the exhaustive search (sim/explore.hpp): everything that decides what the warp does next
  // (its registers, stack, local memory, the answer it awaits), none of its timing.
  virtual void hash_into(StateHash& h) const = 0;
};

// One run of an external program: its memory, its warps and the barriers it has discovered so far.
// The run owns its warps, so that a copy of the run (clone) is a copy of all of it at once.
class ExternalRun {
 public:
  virtual ~ExternalRun() = default;
  // The op source of the engine's warp `id` (warp `warp` of CTA `cta`), made when its CTA starts on SM
  // `sm`; the run keeps it, and warp(id) finds it again: to run or answer it (a run may first copy a
  // warp it shares with a copy of itself), or, const, only to read it.
  virtual ExternalWarp& start_warp(uint32_t id, int cta, int warp, int sm) = 0;
  virtual ExternalWarp& warp(uint32_t id) = 0;
  virtual const ExternalWarp& warp(uint32_t id) const = 0;
  // Barrier slots discovered so far: a BarRef's index (array 0) is a slot below this.
  virtual uint32_t barrier_slots() const = 0;
  virtual std::string barrier_name(uint32_t slot) const = 0;
  // clusterlaunchcontrol.try_cancel's response for CTA `cta` at its shared offset `offset`: the
  // cluster it cancelled (engine numbering: cluster c holds CTAs c * size .. c * size + size - 1),
  // or -1 when every cluster had already launched.
  virtual void clc_response(int cta, uint32_t offset, int cluster) = 0;
  // The exhaustive search (sim/explore.hpp) runs with no clock: a warp's own steps cost nothing, and
  // a warp that runs long without synchronising (a spin on memory) yields to the explorer
  // (ExternalWarp::yielded). Called once, before any warp starts.
  virtual void set_untimed() = 0;
  // A deep copy: memory, warps, barriers discovered (the search copies the run at each choice).
  virtual std::unique_ptr<ExternalRun> clone() const = 0;
  // The memory and the discovered barriers' numbering, and every warp started (hash_into of each).
  virtual void hash_into(StateHash& h) const = 0;
  // Bytes the warps stored to global memory by their own instructions (st.global), not by the
  // engine's copies: they pass through the L2 and count in the launch's footprint there.
  virtual double global_bytes_stored() const { return 0; }
};

class ExternalProgram {
 public:
  virtual ~ExternalProgram() = default;
  // Fresh state for one run (an interleaving search runs the program many times), timed by the
  // run's timing table (the architecture's with --timing overrides).
  virtual std::unique_ptr<ExternalRun> start_run(const model::Timing& timing) const = 0;
};

}  // namespace pipesim::sim
