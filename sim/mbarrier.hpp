// The mbarrier rules of ../shared/spec/semantics.md, and nothing else. Every state change of
// a modelled mbarrier goes through these functions; the engine only routes operations here
// and reacts to the outcome (wake waiters, report violations).
#pragma once

#include <cstdint>
#include <string_view>

namespace pipesim::sim {

inline constexpr int64_t kMbarMaxCount = (int64_t{1} << 20) - 1;  // arrival count and |tx| bound
inline bool mbar_count_in_range(int64_t count) { return count >= 1 && count <= kMbarMaxCount; }
inline bool mbar_tx_in_range(int64_t tx) { return tx >= -kMbarMaxCount && tx <= kMbarMaxCount; }

struct MBarrier {
  bool initialised = false;
  int64_t completed = 0;  // phases completed; the hardware exposes only completed & 1
  int64_t pending = 0;    // arrivals still missing in the current phase
  int64_t expected = 0;   // arrival count re-armed at each phase
  int64_t tx = 0;         // signed transaction count
};

// Which rule an operation broke. None: the operation took effect.
enum class MbarViolation : uint8_t {
  None,
  PendingUnderflow,  // arrival larger than pending, or arrive at pending 0 with bytes outstanding
  TxRange,           // |tx| would leave -(2^20-1) .. 2^20-1
  CountRange,        // init / arrive count 0 or above 2^20-1, or arrive_drop below zero expected
  Uninit,            // operation on a barrier that was never initialised (or was invalidated)
  Reinit,            // init of a live barrier
};

std::string_view violation_id(MbarViolation v);  // "pending_underflow", ... (expect kinds)

struct MbarOutcome {
  MbarViolation violation = MbarViolation::None;
  int phases_completed = 0;  // phases this operation completed (0 or 1)
};

MbarOutcome mbar_init(MBarrier& b, int64_t count);
void mbar_inval(MBarrier& b);
MbarOutcome mbar_arrive(MBarrier& b, int64_t count);
// `threads` threads each arriving with `count` (one instruction of a warp): the arrivals land one
// after another, so those past a phase's last arrival count in the next phase (over-arrival skips
// phases, as on the H100) rather than underflow; phases_completed may exceed 1.
MbarOutcome mbar_arrive_threads(MBarrier& b, int64_t count, int64_t threads);
MbarOutcome mbar_arrive_expect_tx(MBarrier& b, int64_t bytes);
MbarOutcome mbar_expect_tx(MBarrier& b, int64_t bytes);
MbarOutcome mbar_complete_tx(MBarrier& b, int64_t bytes);
MbarOutcome mbar_arrive_drop(MBarrier& b, int64_t count);

// test_wait.parity / try_wait.parity: "the phase with parity P has completed", i.e. P differs
// from the parity of the current (incomplete) phase.
inline bool mbar_parity_passed(const MBarrier& b, int64_t parity) {
  return (parity & 1) != (b.completed & 1);
}

// One look at a parity wait: passes iff the barrier's current parity says so (mbar_parity_passed).
// A try_wait suspended in the hardware when the phase completes is woken by that completion and
// returns true, however soon the next completion follows (H100, kernels/interp/pollprobe.cu,
// docs/semantics.md "Polling and missed phases"): the engine passes a blocked waiter at the
// completion. A test_wait spin reads only the parity at each read and can miss a phase that came
// and went between two reads. `consumed` is the completed count at which this warp's previous wait
// on the barrier returned (-1: none): a look that passes while the barrier still has that count
// passes on that same completion again, i.e. its phase bit did not flip (rule phase_reused, if the
// warp released that phase in between: Engine::wait_passed).
enum class MbarPoll : uint8_t { Blocked, Passed, PassedOnConsumed };
inline MbarPoll mbar_poll(const MBarrier& b, int64_t parity, int64_t consumed) {
  if (!mbar_parity_passed(b, parity)) return MbarPoll::Blocked;
  return b.completed == consumed ? MbarPoll::PassedOnConsumed : MbarPoll::Passed;
}

// A wait that knows which completion it needs (the barrier must have completed `target`
// phases) is meaningful only while the barrier has completed target-1 or target phases;
// anywhere else the parity bit aliases. Returns how far off it is: 0 = meaningful.
inline int64_t mbar_wait_distance(const MBarrier& b, int64_t target) {
  if (b.completed < target - 1) return b.completed - (target - 1);  // negative: runs ahead
  if (b.completed > target) return b.completed - target;            // positive: stale
  return 0;
}

}  // namespace pipesim::sim
