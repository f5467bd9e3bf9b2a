// The primitive operation: what one warp executes, one at a time. The engine runs a stream
// of these per warp, and the device interpreter (kernels/) executes the very same stream, so
// everything here is plain data with fixed meaning per field.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/arch.hpp"
#include "sim/state_hash.hpp"

namespace pipesim::sim {

enum class OpKind : uint8_t {
  Compute,         // a = nanoseconds the warp is busy; b > 0: of them, the ns issuing instructions,
                   // on its SM sub-partition's issue slot (warp % 4), after the other warps' queued
                   // there (the rest the warp waits for operands, the slot free to others)
  Wait,            // try_wait.parity loop on bar (own CTA); a = parity; b = target (see Op)
  TestWait,        // test_wait.parity, non-blocking; a = parity; b = the result the scenario expects
  Arrive,          // bar (maybe remote); a = count; b > 1: that many threads each arrive with a
                   // (a warp's arrive: one arrival of a x b, mbar_arrive_threads)
  ArriveExpectTx,  // bar (maybe remote); a = bytes; one arrival
  ExpectTx,        // bar (maybe remote); a = bytes
  CompleteTx,      // bar (maybe remote); a = bytes
  ArriveDrop,      // bar (maybe remote); a = count
  Init,            // bar (own CTA); a = arrival count
  Inval,           // bar (own CTA)
  FenceInit,       // fence.mbarrier_init.release.cluster
  TmaLoad,         // global -> shared; a = bytes; b = multicast CTA mask (0: own CTA only);
                   // complete_tx(a) lands on bar (same offset) in every destination CTA
  BulkStore,       // shared -> global; a = bytes; joins the warp's open bulk group;
                   // b = (pipeline id + 1) << 32 | stage of the staging buffer it reads, or 0
  CommitGroup,     // cp.async.bulk.commit_group
  WaitGroup,       // cp.async.bulk.wait_group; a = N; b = 1 for .read
  NamedSync,       // bar.sync; a = id; b = thread count
  NamedArrive,     // bar.arrive; a = id; b = thread count
  ClusterArrive,   // barrier.cluster.arrive; b: kClusterArrive* (scenarios: 0)
  ClusterWait,     // barrier.cluster.wait
  // tcgen05 (sm_100a / sm_103a). cta_group::2 is the kFlagCtaGroup2 flag.
  Mma,             // tcgen05.mma; a = packed MmaShape (pack_mma); b = how many instructions
  Commit,          // tcgen05.commit; bar; b = multicast CTA mask (0: own CTA)
  TmemAlloc,       // tcgen05.alloc; a = columns (power of two, 32..512)
  TmemDealloc,     // tcgen05.dealloc; a = columns
  TmemRelinquish,  // tcgen05.relinquish_alloc_permit
  TmemLoad,        // tcgen05.ld; a = columns (32-bit) per thread, asynchronous
  TmemStore,       // tcgen05.st; a = columns
  TmemWait,        // tcgen05.wait::ld (a = 0) / ::st (a = 1)
  StageWrite,      // threads write a staging buffer; a = pipeline id, b = stage: checked
                   // against bulk stores from it not yet retired by wait_group.read (WAR)
  // Hopper wgmma (kFlagWgmma on Mma): every warp of a warpgroup issues it; the warpgroup's MMA runs
  // on its SM's tensor pipe once all have; groups complete in commit order.
  MmaCommitGroup,  // wgmma.commit_group: the warp's MMAs since the last one form a group
  MmaWaitGroup,    // wgmma.wait_group; a = N: until at most N of the warp's groups are pending
  Fault,           // the warp's own code faulted (external programs: trap, a bad address ...):
                   // ExternalWarp::fault() says what
  ClcTryCancel,    // clusterlaunchcontrol.try_cancel: cancels the next cluster not yet launched (if
                   // any); the 16-byte response lands with complete_tx(16) on bar, in every CTA of the
                   // cluster when b = 1 (multicast). a: its shared offset (PTX: ExternalRun::clc_response
                   // writes it) or, in a scenario, its smem cell (flattened, as SmemStore's b)
  // Values through shared memory (scenarios): b = the cell (Kernel::smem, flattened: smem_cell), in
  // the CTA of cluster rank bar.rank (kOwnCta: the warp's own).
  SmemStore,       // st.shared(::cluster); a = the value
  SmemLoad,        // ld.shared; a = the warp's environment slot that receives the value
};

// ClusterArrive.b. A PTX kernel's arrive says whether it releases (its default) or is .relaxed; a
// scenario's cluster_arrive (0) publishes only fenced inits, as CUTLASS's relaxed arrive does.
inline constexpr int64_t kClusterArriveRelaxed = 1;
inline constexpr int64_t kClusterArriveRelease = 2;

using model::MmaKind;

struct MmaShape {
  MmaKind kind = MmaKind::F16;
  int m = 128, n = 128, k = 16;
};
inline int64_t pack_mma(MmaShape s) {
  return (static_cast<int64_t>(s.kind) << 48) | (static_cast<int64_t>(s.m) << 32) |
         (static_cast<int64_t>(s.n) << 16) | static_cast<int64_t>(s.k);
}
inline MmaShape unpack_mma(int64_t v) {
  return {static_cast<MmaKind>((v >> 48) & 0xff), static_cast<int>((v >> 32) & 0xffff),
          static_cast<int>((v >> 16) & 0xffff), static_cast<int>(v & 0xffff)};
}

std::string_view op_name(OpKind k);

// An mbarrier reference: element `index` of barrier array `array`, in the CTA of cluster rank
// `rank` (kOwnCta for the issuing CTA). Arrays are declared per CTA at the same offsets.
struct BarRef {
  static constexpr int32_t kOwnCta = -1;
  uint32_t array = 0;
  uint32_t index = 0;
  int32_t rank = kOwnCta;
};

// Flags on an op, set by the lowering.
enum OpFlag : uint8_t {
  kFlagNone = 0,
  kFlagPhaseTracked = 1 << 0,     // Wait.b holds the number of completed phases the wait needs
  kFlagStateOverridden = 1 << 1,  // came from a pipeline state the scenario overrode
  kFlagProducerSide = 1 << 2,     // came from a producer-side pipeline call
  kFlagFromPipeline = 1 << 3,     // expansion of a pipeline call (vs a raw operation)
  kFlagCtaGroup2 = 1 << 4,        // tcgen05 op / TMA issued with .cta_group::2
  kFlagMulticast = 1 << 5,        // TmaLoad / Commit: the scenario gave a multicast mask (b)
  kFlagAnswer = 1 << 6,           // the source wants the op's result (ExternalWarp::answer): TestWait
                                  // answers instead of asserting, a local Arrive gives its token, a Wait
                                  // is a time-limited peek answered 1 or 0 (Engine::do_wait)
  kFlagWgmma = 1 << 7,            // Mma: a Hopper wgmma.mma_async (a = packed shape of the warpgroup's MMA)
};

struct Op {
  OpKind kind = OpKind::Compute;
  uint8_t flags = kFlagNone;
  // TmaLoad: the boxes one miss brings into the L2 (its L2 promotion: the box key names the group,
  // and a miss reads that many times its bytes from the DRAM); 1 for every other op.
  uint8_t l2_fill_boxes = 1;
  // TmaLoad: the box's row in shared memory in 16-byte units (16 .. 4080 bytes), 0 when not known (rows
  // of 128 bytes assumed): what the SM's intake counts requests by (Timing::sm_copy_ns_per_request).
  uint8_t tma_row16 = 0;
  uint32_t site = 0;  // index into Kernel::sites: source location and the call it came from
  BarRef bar;
  int64_t a = 0;
  // Wait: when kFlagPhaseTracked, the count of completed phases the wait is for ("phase
  // t-1 has completed"): meaningful only while the barrier has completed t-1 or t phases.
  int64_t b = 0;
  // TmaLoad / BulkStore: the global box it reads or writes, a footprint key (sim/l2.hpp box_key);
  // 0 = not known (never an L2 hit).
  uint64_t box = 0;
};

// An op's fields for a state hash (the exhaustive search's states, sim/explore.hpp), in five words:
// kind, flags and site share one, the barrier's array and index one, its rank one with `with` (24
// bits of the caller's own, so that a warp's flags cost no word of their own); box is no state.
inline StateHash& hash_op(StateHash& h, const Op& o, uint32_t with = 0) {
  static_assert(sizeof(o.kind) == 1 && sizeof(o.flags) == 1 && sizeof(o.site) == 4 && sizeof(o.bar.index) == 4);
  return h.add(static_cast<uint64_t>(o.kind) | static_cast<uint64_t>(o.flags) << 8 | static_cast<uint64_t>(o.site) << 16)
      .add(static_cast<uint64_t>(o.bar.array) | static_cast<uint64_t>(o.bar.index) << 32)
      .add(static_cast<uint64_t>(static_cast<uint32_t>(o.bar.rank)) | static_cast<uint64_t>(with) << 32)
      .add(o.a)
      .add(o.b);
}

}  // namespace pipesim::sim
