// Unit tests of the mbarrier rules (../shared/spec/semantics.md, "mbarrier") and of every row
// measured on a real H100 (../shared/spec/h100-probes.md), against sim/mbarrier.hpp.
//
// Conventions: `completed` is the number of completed phases ("phase" in semantics.md). A
// test_wait.parity(P) is modelled by mbar_parity_passed(b, P). A TMA / bulk copy landing is
// mbar_complete_tx (the engine routes every copy there); a "hang" in the probe table is a
// barrier whose phase never completes with nothing left to deliver.
#include <gtest/gtest.h>

#include "sim/mbarrier.hpp"

namespace pipesim::sim {
namespace {

constexpr int64_t kMax = (int64_t{1} << 20) - 1;

MBarrier fresh(int64_t count) {
  MBarrier b;
  const MbarOutcome o = mbar_init(b, count);
  EXPECT_EQ(o.violation, MbarViolation::None);
  return b;
}

void expect_ok(const MbarOutcome& o, int completed_phases) {
  EXPECT_EQ(o.violation, MbarViolation::None);
  EXPECT_EQ(o.phases_completed, completed_phases);
}

// ------------------------------------------------------------------------ rules: init
TEST(MbarInit, SetsPhaseZeroPendingExpectedCountTxZero) {
  MBarrier b;
  expect_ok(mbar_init(b, 5), 0);
  EXPECT_TRUE(b.initialised);
  EXPECT_EQ(b.completed, 0);
  EXPECT_EQ(b.pending, 5);
  EXPECT_EQ(b.expected, 5);
  EXPECT_EQ(b.tx, 0);
}

TEST(MbarInit, CountRangeIsOneTo2Pow20Minus1) {
  MBarrier lo, hi, zero, over, neg;
  EXPECT_EQ(mbar_init(lo, 1).violation, MbarViolation::None);
  EXPECT_EQ(mbar_init(hi, kMax).violation, MbarViolation::None);
  EXPECT_EQ(hi.pending, kMax);
  EXPECT_EQ(mbar_init(zero, 0).violation, MbarViolation::CountRange);
  EXPECT_EQ(mbar_init(over, kMax + 1).violation, MbarViolation::CountRange);
  EXPECT_EQ(mbar_init(neg, -1).violation, MbarViolation::CountRange);
  EXPECT_FALSE(zero.initialised);
  EXPECT_FALSE(over.initialised);
}

TEST(MbarInit, ReinitOfLiveBarrierIsFlagged) {
  MBarrier b = fresh(2);
  EXPECT_EQ(mbar_init(b, 2).violation, MbarViolation::Reinit);
  // Also after it has made progress.
  MBarrier c = fresh(1);
  expect_ok(mbar_arrive(c, 1), 1);
  EXPECT_EQ(mbar_init(c, 1).violation, MbarViolation::Reinit);
}

TEST(MbarInit, InvalThenInitIsLegalAndStartsOver) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive(b, 1), 1);
  expect_ok(mbar_expect_tx(b, 64), 0);
  mbar_inval(b);
  EXPECT_FALSE(b.initialised);
  expect_ok(mbar_init(b, 3), 0);
  EXPECT_EQ(b.completed, 0);
  EXPECT_EQ(b.pending, 3);
  EXPECT_EQ(b.expected, 3);
  EXPECT_EQ(b.tx, 0);
  EXPECT_TRUE(mbar_parity_passed(b, 1));
  EXPECT_FALSE(mbar_parity_passed(b, 0));
}

// ---------------------------------------------------------------------- rules: uninit
TEST(MbarUninit, EveryOperationOnANeverInitialisedBarrierIsFlagged) {
  MBarrier b;
  EXPECT_EQ(mbar_arrive(b, 1).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_arrive_expect_tx(b, 16).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_expect_tx(b, 16).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_complete_tx(b, 16).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_arrive_drop(b, 1).violation, MbarViolation::Uninit);
}

TEST(MbarUninit, EveryOperationOnAnInvalidatedBarrierIsFlagged) {
  MBarrier b = fresh(4);
  mbar_inval(b);
  EXPECT_EQ(mbar_arrive(b, 1).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_arrive_expect_tx(b, 16).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_expect_tx(b, 16).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_complete_tx(b, 16).violation, MbarViolation::Uninit);
  EXPECT_EQ(mbar_arrive_drop(b, 1).violation, MbarViolation::Uninit);
}

// ---------------------------------------------------------------------- rules: arrive
TEST(MbarArrive, DecrementsPendingByCount) {
  MBarrier b = fresh(5);
  expect_ok(mbar_arrive(b, 2), 0);
  EXPECT_EQ(b.pending, 3);
  expect_ok(mbar_arrive(b, 1), 0);
  EXPECT_EQ(b.pending, 2);
  EXPECT_EQ(b.completed, 0);
}

TEST(MbarArrive, LastArrivalCompletesThePhaseAndRearmsPending) {
  MBarrier b = fresh(3);
  expect_ok(mbar_arrive(b, 1), 0);
  expect_ok(mbar_arrive(b, 2), 1);
  EXPECT_EQ(b.completed, 1);
  EXPECT_EQ(b.pending, 3);
  EXPECT_EQ(b.expected, 3);
  EXPECT_EQ(b.tx, 0);
}

TEST(MbarArrive, ArriveWithTheWholeCountCompletesAtOnce) {
  MBarrier b = fresh(256);
  expect_ok(mbar_arrive(b, 256), 1);
  EXPECT_EQ(b.completed, 1);
  EXPECT_EQ(b.pending, 256);
}

TEST(MbarArrive, CountRange) {
  MBarrier b = fresh(kMax);
  EXPECT_EQ(mbar_arrive(b, 0).violation, MbarViolation::CountRange);
  EXPECT_EQ(mbar_arrive(b, -3).violation, MbarViolation::CountRange);
  EXPECT_EQ(mbar_arrive(b, kMax + 1).violation, MbarViolation::CountRange);
  expect_ok(mbar_arrive(b, kMax), 1);
}

TEST(MbarArrive, ArrivalBeyondPendingIsUnderflow) {
  MBarrier b = fresh(4);
  expect_ok(mbar_arrive(b, 3), 0);
  EXPECT_EQ(mbar_arrive(b, 2).violation, MbarViolation::PendingUnderflow);
}

TEST(MbarArrive, ArriveWhilePendingZeroAndBytesOutstandingIsUnderflow) {
  MBarrier b = fresh(2);
  expect_ok(mbar_expect_tx(b, 128), 0);
  expect_ok(mbar_arrive(b, 2), 0);  // pending 0, tx 128: phase not complete
  EXPECT_EQ(b.pending, 0);
  EXPECT_EQ(mbar_arrive(b, 1).violation, MbarViolation::PendingUnderflow);
  // Same with negative tx outstanding (bytes landed early, more than expected).
  MBarrier c = fresh(1);
  expect_ok(mbar_complete_tx(c, 32), 0);
  expect_ok(mbar_arrive(c, 1), 0);
  EXPECT_EQ(mbar_arrive(c, 1).violation, MbarViolation::PendingUnderflow);
}

// ---------------------------------------------------------------- rules: expect_tx, tx
TEST(MbarExpectTx, AddsToTxWithoutArriving) {
  MBarrier b = fresh(1);
  expect_ok(mbar_expect_tx(b, 1024), 0);
  EXPECT_EQ(b.tx, 1024);
  EXPECT_EQ(b.pending, 1);
  expect_ok(mbar_expect_tx(b, 512), 0);
  EXPECT_EQ(b.tx, 1536);
}

TEST(MbarExpectTx, ArriveThenBytesCompletesOnlyWhenBothReachZero) {
  MBarrier b = fresh(1);
  expect_ok(mbar_expect_tx(b, 256), 0);
  expect_ok(mbar_arrive(b, 1), 0);  // pending 0 but tx 256
  EXPECT_EQ(b.completed, 0);
  expect_ok(mbar_complete_tx(b, 128), 0);
  EXPECT_EQ(b.tx, 128);
  expect_ok(mbar_complete_tx(b, 128), 1);
  EXPECT_EQ(b.completed, 1);
  EXPECT_EQ(b.tx, 0);
  EXPECT_EQ(b.pending, 1);
}

TEST(MbarExpectTx, BytesFirstThenArriveCompletesOnTheArrive) {
  MBarrier b = fresh(2);
  expect_ok(mbar_expect_tx(b, 64), 0);
  expect_ok(mbar_complete_tx(b, 64), 0);  // tx 0 but pending 2
  EXPECT_EQ(b.completed, 0);
  expect_ok(mbar_arrive(b, 1), 0);
  expect_ok(mbar_arrive(b, 1), 1);
}

TEST(MbarArriveExpectTx, AddsTxFirstThenArrivesOnce) {
  MBarrier b = fresh(3);
  expect_ok(mbar_arrive_expect_tx(b, 4096), 0);
  EXPECT_EQ(b.tx, 4096);
  EXPECT_EQ(b.pending, 2);
  EXPECT_EQ(b.completed, 0);
}

TEST(MbarArriveExpectTx, ZeroBytesIsAPlainArrive) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 0), 1);
  EXPECT_EQ(b.completed, 1);
}

// Crosscheck on an H100 (2026-11-21): a second arrive.expect_tx with no arrival left faults
// (scenarios/rules/pending_underflow_expect_tx_broken.scn), like a plain arrive (probe U1).
TEST(MbarArriveExpectTx, AtPendingZeroIsUnderflow) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 256), 0);  // pending 0, tx 256
  EXPECT_EQ(mbar_arrive_expect_tx(b, 256).violation, MbarViolation::PendingUnderflow);
  EXPECT_EQ(b.tx, 256);  // nothing applied
}

TEST(MbarCompleteTx, CompletionNeedsTxExactlyZero) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 256), 0);
  expect_ok(mbar_complete_tx(b, 255), 0);
  EXPECT_EQ(b.tx, 1);
  expect_ok(mbar_complete_tx(b, 2), 0);  // overshoot: tx -1, not zero
  EXPECT_EQ(b.tx, -1);
  EXPECT_EQ(b.completed, 0);
  // Only a further expect brings it back to exactly zero.
  expect_ok(mbar_expect_tx(b, 1), 1);
}

TEST(MbarCompleteTx, NegativeTxIsLegal) {
  MBarrier b = fresh(1);
  expect_ok(mbar_complete_tx(b, 4096), 0);
  EXPECT_EQ(b.tx, -4096);
  EXPECT_EQ(b.pending, 1);
  EXPECT_EQ(b.completed, 0);
}

TEST(MbarTx, RangeIsPlusMinus2Pow20Minus1) {
  MBarrier b = fresh(1);
  expect_ok(mbar_expect_tx(b, kMax), 0);
  EXPECT_EQ(b.tx, kMax);
  EXPECT_EQ(mbar_expect_tx(b, 1).violation, MbarViolation::TxRange);
  MBarrier c = fresh(2);
  expect_ok(mbar_arrive_expect_tx(c, kMax), 0);
  EXPECT_EQ(mbar_arrive_expect_tx(c, 1).violation, MbarViolation::TxRange);
  MBarrier d = fresh(1);
  EXPECT_EQ(mbar_arrive_expect_tx(d, kMax + 1).violation, MbarViolation::TxRange);
  MBarrier e = fresh(1);
  expect_ok(mbar_complete_tx(e, kMax), 0);
  EXPECT_EQ(e.tx, -kMax);
  EXPECT_EQ(mbar_complete_tx(e, 1).violation, MbarViolation::TxRange);
  MBarrier f = fresh(1);
  EXPECT_EQ(mbar_complete_tx(f, kMax + 1).violation, MbarViolation::TxRange);
}

TEST(MbarTx, OvershootPositiveThenNegativeStaysLegalWhileInRange) {
  // A transaction count may swing from +max to -max across operations without a violation.
  MBarrier b = fresh(1);
  expect_ok(mbar_expect_tx(b, kMax), 0);
  expect_ok(mbar_complete_tx(b, kMax), 0);
  expect_ok(mbar_complete_tx(b, kMax), 0);
  EXPECT_EQ(b.tx, -kMax);
}

// ------------------------------------------------------------------ rules: arrive_drop
TEST(MbarArriveDrop, ArrivesAndLowersExpectedForLaterPhases) {
  MBarrier b = fresh(3);
  expect_ok(mbar_arrive_drop(b, 1), 0);
  EXPECT_EQ(b.pending, 2);
  EXPECT_EQ(b.expected, 2);
  expect_ok(mbar_arrive(b, 2), 1);
  EXPECT_EQ(b.completed, 1);
  EXPECT_EQ(b.pending, 2);  // re-armed with the lowered count
  expect_ok(mbar_arrive(b, 1), 0);
  expect_ok(mbar_arrive(b, 1), 1);
  EXPECT_EQ(b.completed, 2);
}

TEST(MbarArriveDrop, CanCompleteThePhaseItself) {
  MBarrier b = fresh(2);
  expect_ok(mbar_arrive(b, 1), 0);
  expect_ok(mbar_arrive_drop(b, 1), 1);
  EXPECT_EQ(b.completed, 1);
  EXPECT_EQ(b.expected, 1);
  EXPECT_EQ(b.pending, 1);
}

TEST(MbarArriveDrop, BeyondPendingIsUnderflowAndZeroIsCountRange) {
  MBarrier b = fresh(4);
  expect_ok(mbar_arrive(b, 3), 0);
  EXPECT_EQ(mbar_arrive_drop(b, 2).violation, MbarViolation::PendingUnderflow);
  EXPECT_EQ(mbar_arrive_drop(b, 0).violation, MbarViolation::CountRange);
  MBarrier c = fresh(2);
  EXPECT_EQ(mbar_arrive_drop(c, 3).violation, MbarViolation::CountRange);  // expected below zero
}

// -------------------------------------------------------------- rules: parity, phases
TEST(MbarParity, PassesIffParityDiffersFromCurrentPhase) {
  MBarrier b = fresh(1);
  for (int64_t k = 0; k < 6; ++k) {
    ASSERT_EQ(b.completed, k);
    // "the phase with parity P has completed": the current (incomplete) phase has parity k&1.
    EXPECT_EQ(mbar_parity_passed(b, k & 1), false) << "phase " << k;
    EXPECT_EQ(mbar_parity_passed(b, (k + 1) & 1), true) << "phase " << k;
    expect_ok(mbar_arrive(b, 1), 1);
  }
}

TEST(MbarParity, FreshBarrierParity1PassesParity0Blocks) {
  MBarrier b = fresh(7);
  EXPECT_TRUE(mbar_parity_passed(b, 1));   // why CUTLASS producers start at phase 1
  EXPECT_FALSE(mbar_parity_passed(b, 0));  // and consumers at 0
}

TEST(MbarParity, OverArriveSkipsPhasesSilently) {
  MBarrier b = fresh(1);
  for (int i = 0; i < 5; ++i) expect_ok(mbar_arrive(b, 1), 1);
  EXPECT_EQ(b.completed, 5);
  EXPECT_EQ(b.pending, 1);
  EXPECT_EQ(b.expected, 1);
}

// A wait for "phase t-1 has completed" (the barrier must have completed t phases): meaningful
// only while the barrier has completed t-1 (blocks, correctly) or t (passes, correctly).
TEST(MbarWaitDistance, MeaningfulOnlyForCurrentOrJustCompletedPhase) {
  MBarrier b = fresh(1);
  for (int i = 0; i < 4; ++i) expect_ok(mbar_arrive(b, 1), 1);
  ASSERT_EQ(b.completed, 4);
  EXPECT_EQ(mbar_wait_distance(b, 4), 0);  // just completed
  EXPECT_EQ(mbar_wait_distance(b, 5), 0);  // waits on the current phase
  EXPECT_GT(mbar_wait_distance(b, 3), 0);  // stale: two phases behind the current phase 4
  EXPECT_EQ(mbar_wait_distance(b, 3), 1);
  EXPECT_EQ(mbar_wait_distance(b, 1), 3);
  EXPECT_LT(mbar_wait_distance(b, 6), 0);  // runs ahead
  EXPECT_EQ(mbar_wait_distance(b, 6), -1);
}

TEST(MbarWaitDistance, NonZeroDistanceIsExactlyWhereParityAliases) {
  // Whenever the distance is 0, the parity answer equals the true answer "completed >= t";
  // the aliasing cases (distance != 0) are exactly where they can disagree.
  MBarrier b = fresh(1);
  for (int64_t c = 0; c < 6; ++c) {
    ASSERT_EQ(b.completed, c);
    for (int64_t t = 1; t < 9; ++t) {
      const bool parity_says = mbar_parity_passed(b, (t - 1) & 1);
      const bool truth = b.completed >= t;
      if (mbar_wait_distance(b, t) == 0) {
        EXPECT_EQ(parity_says, truth) << "completed " << c << " target " << t;
      } else if (c == t + 1 || c == t - 2) {
        EXPECT_NE(parity_says, truth) << "completed " << c << " target " << t;
      }
    }
    expect_ok(mbar_arrive(b, 1), 1);
  }
}

TEST(MbarViolationId, MatchesExpectKinds) {
  EXPECT_EQ(violation_id(MbarViolation::PendingUnderflow), "pending_underflow");
  EXPECT_EQ(violation_id(MbarViolation::TxRange), "tx_range");
  EXPECT_EQ(violation_id(MbarViolation::CountRange), "count_range");
  EXPECT_EQ(violation_id(MbarViolation::Uninit), "uninit");
  EXPECT_EQ(violation_id(MbarViolation::Reinit), "reinit");
}

// ===================================================== h100-probes.md, first program (one thread)
// Rows 0..5 share one count-1 barrier, as in h100-probe.cu.
TEST(H100Probe, Row00_FreshCount1_Parity1_True) {
  MBarrier b = fresh(1);
  EXPECT_TRUE(mbar_parity_passed(b, 1));
}

TEST(H100Probe, Row01_Fresh_Parity0_False) {
  MBarrier b = fresh(1);
  EXPECT_FALSE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row02_OneArrive_Parity0_True) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive(b, 1), 1);
  EXPECT_TRUE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row03_OneArrive_Parity1_False) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive(b, 1), 1);
  EXPECT_FALSE(mbar_parity_passed(b, 1));
}

TEST(H100Probe, Row04_TwoMoreArrivesOnCount1_Parity0_True) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive(b, 1), 1);
  expect_ok(mbar_arrive(b, 1), 1);  // over-arrive: completes phase 1
  expect_ok(mbar_arrive(b, 1), 1);  // and phase 2
  EXPECT_EQ(b.completed, 3);
  EXPECT_TRUE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row05_SameState_Parity1_False) {
  MBarrier b = fresh(1);
  for (int i = 0; i < 3; ++i) expect_ok(mbar_arrive(b, 1), 1);
  EXPECT_FALSE(mbar_parity_passed(b, 1));
}

TEST(H100Probe, Row06_Count2_ArriveExpectTx256PlusArrive_NothingDelivered_Parity0_False) {
  MBarrier b = fresh(2);
  expect_ok(mbar_arrive_expect_tx(b, 256), 0);
  expect_ok(mbar_arrive(b, 1), 0);
  EXPECT_EQ(b.pending, 0);
  EXPECT_EQ(b.tx, 256);
  EXPECT_FALSE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row07_Then256ByteBulkCopy_Completes) {
  MBarrier b = fresh(2);
  expect_ok(mbar_arrive_expect_tx(b, 256), 0);
  expect_ok(mbar_arrive(b, 1), 0);
  expect_ok(mbar_complete_tx(b, 256), 1);
  EXPECT_TRUE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row08_Count1_128BytesBeforeAnyArrive_Parity0_False) {
  MBarrier b = fresh(1);
  expect_ok(mbar_complete_tx(b, 128), 0);
  EXPECT_EQ(b.tx, -128);
  EXPECT_FALSE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row09_ThenArriveExpectTx128_Completes) {
  MBarrier b = fresh(1);
  expect_ok(mbar_complete_tx(b, 128), 0);
  expect_ok(mbar_arrive_expect_tx(b, 128), 1);
  EXPECT_TRUE(mbar_parity_passed(b, 0));
  EXPECT_EQ(b.tx, 0);
}

TEST(H100Probe, Row10_ArriveExpectTx256_128Delivered_Hang) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 256), 0);
  expect_ok(mbar_complete_tx(b, 128), 0);
  EXPECT_EQ(b.tx, 128);
  EXPECT_EQ(b.completed, 0);
  EXPECT_FALSE(mbar_parity_passed(b, 0));  // nothing else will come: the wait never passes
}

TEST(H100Probe, Row11_ArriveExpectTx128_256DeliveredInOneCopy_Hang_TxStuckAtMinus128) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 128), 0);
  expect_ok(mbar_complete_tx(b, 256), 0);
  EXPECT_EQ(b.tx, -128);
  EXPECT_EQ(b.completed, 0);
  EXPECT_FALSE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row13_ArriveExpectTx384_Copies256And128_Completes) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 384), 0);
  expect_ok(mbar_complete_tx(b, 256), 0);
  expect_ok(mbar_complete_tx(b, 128), 1);
  EXPECT_TRUE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, Row13_EitherLandingOrderCompletes) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 384), 0);
  expect_ok(mbar_complete_tx(b, 128), 0);
  expect_ok(mbar_complete_tx(b, 256), 1);
}

// ========================================================= h100-probes.md, second program
TEST(H100Probe, U1_ArriveWhileBytesOutstanding_Faults) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive_expect_tx(b, 256), 0);  // pending 0, tx 256
  EXPECT_EQ(b.pending, 0);
  EXPECT_EQ(b.tx, 256);
  EXPECT_EQ(mbar_arrive(b, 1).violation, MbarViolation::PendingUnderflow);
}

TEST(H100Probe, U2_Count2_ArriveWithCount3_Faults) {
  MBarrier b = fresh(2);
  EXPECT_EQ(mbar_arrive(b, 3).violation, MbarViolation::PendingUnderflow);
}

TEST(H100Probe, U3_TwoArrivesOnCount1_Parity0False_Parity1True) {
  MBarrier b = fresh(1);
  expect_ok(mbar_arrive(b, 1), 1);
  expect_ok(mbar_arrive(b, 1), 1);
  EXPECT_EQ(b.completed, 2);
  EXPECT_FALSE(mbar_parity_passed(b, 0));
  EXPECT_TRUE(mbar_parity_passed(b, 1));
  // A waiter for phase 0 (target 1) is now stale: its parity 0 aliases the current phase 2.
  EXPECT_GT(mbar_wait_distance(b, 1), 0);
}

TEST(H100Probe, U4_BytesFirstThenArrive_Parity0_False) {
  MBarrier b = fresh(1);
  expect_ok(mbar_complete_tx(b, 128), 0);
  expect_ok(mbar_arrive(b, 1), 0);
  EXPECT_EQ(b.pending, 0);
  EXPECT_EQ(b.tx, -128);
  EXPECT_FALSE(mbar_parity_passed(b, 0));
}

TEST(H100Probe, U4b_StandaloneExpectTxBringingTxToZeroAtPendingZero_Completes) {
  MBarrier b = fresh(1);
  expect_ok(mbar_complete_tx(b, 128), 0);
  expect_ok(mbar_arrive(b, 1), 0);
  expect_ok(mbar_expect_tx(b, 128), 1);
  EXPECT_TRUE(mbar_parity_passed(b, 0));
  EXPECT_EQ(b.pending, 1);
  EXPECT_EQ(b.tx, 0);
}

// M1 at the barrier level: a multicast copy of 256 bytes to mask 0b11 delivers complete_tx of
// the full size to the same-offset barrier of each destination CTA.
TEST(H100Probe, M1_Multicast256ToBothCtas_BothBarriersComplete) {
  MBarrier cta0 = fresh(1), cta1 = fresh(1);
  expect_ok(mbar_arrive_expect_tx(cta0, 256), 0);
  expect_ok(mbar_arrive_expect_tx(cta1, 256), 0);
  for (MBarrier* dst : {&cta0, &cta1}) expect_ok(mbar_complete_tx(*dst, 256), 1);
  EXPECT_TRUE(mbar_parity_passed(cta0, 0));
  EXPECT_TRUE(mbar_parity_passed(cta1, 0));
}

// M2 at the barrier level: two remote arrivals (one from each CTA) on CTA 0's count-2 barrier.
TEST(H100Probe, M2_RemoteArrivesFromBothCtasOnCount2Barrier_Completes) {
  MBarrier b = fresh(2);
  expect_ok(mbar_arrive(b, 1), 0);  // from CTA 0 (local)
  expect_ok(mbar_arrive(b, 1), 1);  // from CTA 1 (via mapa)
  EXPECT_TRUE(mbar_parity_passed(b, 0));
}

// A warp's arrive is one arrival of all its lanes (H100, pollprobe `lanes`: two lanes on a barrier
// with one arrival pending fault): on a barrier expecting 64 two warps complete the phase; on one
// expecting 48 the second warp's 32 lanes are more than the 16 pending, a pending underflow.
TEST(WarpArrive, AWarpsLanesArriveAsOneArrival) {
  MBarrier b = fresh(64);
  expect_ok(mbar_arrive_threads(b, 1, 32), 0);
  EXPECT_EQ(b.pending, 32);
  expect_ok(mbar_arrive_threads(b, 1, 32), 1);
  EXPECT_EQ(b.completed, 1);
  MBarrier b48 = fresh(48);
  expect_ok(mbar_arrive_threads(b48, 1, 32), 0);
  EXPECT_EQ(mbar_arrive_threads(b48, 1, 32).violation, MbarViolation::PendingUnderflow);
  MBarrier one = fresh(1);
  EXPECT_EQ(mbar_arrive_threads(one, 1, 2).violation, MbarViolation::PendingUnderflow);
  // With bytes outstanding and no arrival pending, the next lane's arrive underflows (probe U2).
  MBarrier tx = fresh(2);
  expect_ok(mbar_arrive_expect_tx(tx, 64), 0);
  EXPECT_EQ(mbar_arrive_threads(tx, 1, 2).violation, MbarViolation::PendingUnderflow);
}

}  // namespace
}  // namespace pipesim::sim
