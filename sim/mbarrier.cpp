#include "sim/mbarrier.hpp"

namespace pipesim::sim {
namespace {

// Completion: pending and tx both exactly zero flips the phase and re-arms pending.
MbarOutcome try_complete(MBarrier& b) {
  if (b.pending == 0 && b.tx == 0) {
    b.completed += 1;
    b.pending = b.expected;
    return {MbarViolation::None, 1};
  }
  return {};
}

// An arrival of `count`: measured on H100, one that would take pending below zero faults
// the kernel (h100-probes.md U1, U2). That includes an arrive while pending is already 0
// because bytes are still outstanding.
MbarOutcome arrive_n(MBarrier& b, int64_t count) {
  if (count > b.pending) return {MbarViolation::PendingUnderflow, 0};
  b.pending -= count;
  return try_complete(b);
}

}  // namespace

std::string_view violation_id(MbarViolation v) {
  switch (v) {
    case MbarViolation::None: return "none";
    case MbarViolation::PendingUnderflow: return "pending_underflow";
    case MbarViolation::TxRange: return "tx_range";
    case MbarViolation::CountRange: return "count_range";
    case MbarViolation::Uninit: return "uninit";
    case MbarViolation::Reinit: return "reinit";
  }
  return "?";
}

MbarOutcome mbar_init(MBarrier& b, int64_t count) {
  if (b.initialised) return {MbarViolation::Reinit, 0};
  if (!mbar_count_in_range(count)) return {MbarViolation::CountRange, 0};
  b = MBarrier{true, 0, count, count, 0};
  return {};
}

void mbar_inval(MBarrier& b) { b.initialised = false; }

MbarOutcome mbar_arrive(MBarrier& b, int64_t count) {
  if (!b.initialised) return {MbarViolation::Uninit, 0};
  if (!mbar_count_in_range(count)) return {MbarViolation::CountRange, 0};
  return arrive_n(b, count);
}

// A warp's arrive is one arrival of its lanes' counts together: two lanes arriving in one
// instruction with one arrival pending fault the H100 as a count-2 arrive does (kernels/interp/
// pollprobe.cu `lanes`, docs/runs/pollprobe-h100-2026-11-26.txt; U2), rather than completing a phase
// each.
MbarOutcome mbar_arrive_threads(MBarrier& b, int64_t count, int64_t threads) {
  if (!b.initialised) return {MbarViolation::Uninit, 0};
  if (!mbar_count_in_range(count)) return {MbarViolation::CountRange, 0};
  return arrive_n(b, count * threads);
}

MbarOutcome mbar_arrive_expect_tx(MBarrier& b, int64_t bytes) {
  if (!b.initialised) return {MbarViolation::Uninit, 0};
  // The arrival check comes first: the hardware applies expect-tx and the arrive as one op, and
  // an arrive.expect_tx with no arrival left faults like a plain arrive (crosscheck on H100,
  // 2026-11-21: scenarios/rules/pending_underflow_expect_tx_broken.scn faults on the device).
  if (b.pending < 1) return {MbarViolation::PendingUnderflow, 0};
  if (!mbar_tx_in_range(b.tx + bytes)) return {MbarViolation::TxRange, 0};
  b.tx += bytes;
  return arrive_n(b, 1);
}

MbarOutcome mbar_expect_tx(MBarrier& b, int64_t bytes) {
  if (!b.initialised) return {MbarViolation::Uninit, 0};
  if (!mbar_tx_in_range(b.tx + bytes)) return {MbarViolation::TxRange, 0};
  b.tx += bytes;
  // h100-probes.md U4b: an expect_tx that brings tx back to 0 while pending is 0 completes.
  return try_complete(b);
}

MbarOutcome mbar_complete_tx(MBarrier& b, int64_t bytes) {
  if (!b.initialised) return {MbarViolation::Uninit, 0};
  if (!mbar_tx_in_range(b.tx - bytes)) return {MbarViolation::TxRange, 0};
  b.tx -= bytes;  // may go negative: bytes may land before the expect (probe 8/9)
  return try_complete(b);
}

MbarOutcome mbar_arrive_drop(MBarrier& b, int64_t count) {
  if (!b.initialised) return {MbarViolation::Uninit, 0};
  // The expected count stays within 1 .. 2^20-1: dropping every participant leaves a barrier
  // that can never complete again.
  if (count < 1 || count >= b.expected) return {MbarViolation::CountRange, 0};
  if (count > b.pending) return {MbarViolation::PendingUnderflow, 0};
  b.expected -= count;  // for all later phases
  return arrive_n(b, count);
}

}  // namespace pipesim::sim
