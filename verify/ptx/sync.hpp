// What a PTX warp asks of the engine. The interpreter (machine.hpp) executes every instruction whose
// effect stays inside the warp or its memory itself; an instruction that synchronises with other
// warps or with an asynchronous unit becomes a SyncRequest, which verify/ptx/source.cpp turns into
// the engine's ops (sim/op.hpp). The mbarrier rules are the engine's (sim/mbarrier.cpp), never here.
//
// Addresses (docs/ptx.md, "Address spaces"): a shared::cta address is an offset below
// kClusterRankShift's window; a shared::cluster address of CTA rank r is (r + 1) << 24 | offset
// (mapa); an address below 1 << 24 names the issuing CTA.
#pragma once

#include <cstdint>

namespace pipesim::ptx {

inline constexpr uint32_t kClusterRankShift = 24;
inline constexpr uint64_t kSharedOffsetMask = (uint64_t{1} << kClusterRankShift) - 1;
// The cluster rank a shared::cluster address names, or -1 for the issuing CTA.
inline int32_t shared_rank(uint64_t addr) { return static_cast<int32_t>(addr >> kClusterRankShift) - 1; }
inline uint32_t shared_offset(uint64_t addr) { return static_cast<uint32_t>(addr & kSharedOffsetMask); }
inline uint64_t cluster_address(int32_t rank, uint32_t offset) {
  return (static_cast<uint64_t>(rank + 1) << kClusterRankShift) | offset;
}

enum class SyncKind : uint8_t {
  Compute,        // a = ns the warp spent executing instructions since its last request (no answer)
  MbarInit,       // bar, a = count
  MbarInval,      // bar
  MbarArrive,     // bar, a = count (lanes x the instruction's count); answer: the state token
  MbarArriveExpectTx,  // bar, a = bytes (one arrival; lanes of one group each make one: lanes requests)
  MbarExpectTx,   // bar, a = bytes
  MbarCompleteTx, // bar, a = bytes
  MbarArriveDrop, // bar, a = count
  MbarTestWait,   // bar, a = parity; answer: 1 if passed (never blocks)
  MbarTryWait,    // bar, a = parity; blocks until passed; answer: 1
  FenceInit,      // fence.mbarrier_init.release.cluster
  FenceProxyAsync,  // fence.proxy.async (accepted; recorded for rules that need it)
  TmaLoad,        // global -> shared::cluster; bar, a = bytes, b = multicast CTA mask (0: the dst CTA
                  // only, dst = shared address); cta_group2: the .cta_group::2 form
  BulkStore,      // shared -> global (cp.async.bulk / .tensor store or reduce); a = bytes
  BulkCommit,     // cp.async.bulk.commit_group
  BulkWait,       // cp.async.bulk.wait_group; a = N, b = 1 for .read
  NamedSync,      // bar.sync / barrier.sync; a = id, b = threads (0: the whole CTA)
  NamedArrive,    // bar.arrive / barrier.arrive; a = id, b = threads
  NamedRed,       // bar.red; a = id, b = threads; answer: the reduction (the interpreter combines)
  ClusterArrive,  // barrier.cluster.arrive (any of .release / .relaxed / .aligned)
  ClusterWait,    // barrier.cluster.wait
  WgmmaFence,     // wgmma.fence
  WgmmaMma,       // wgmma.mma_async; a = m, b = n, k in c; dtype in mma_kind
  WgmmaCommit,    // wgmma.commit_group
  WgmmaWait,      // wgmma.wait_group; a = N
  AsyncCopy,      // cp.async (Ampere), a = bytes
  AsyncCommit,    // cp.async.commit_group
  AsyncWait,      // cp.async.wait_group a = N (wait_all: 0)
  AsyncMbarArrive,  // cp.async.mbarrier.arrive[.noinc]: bar; b = 1 for .noinc
  Sleep,          // nanosleep: a = ns
  Trap,           // trap / brkpt: the kernel aborts
  SetMaxNreg,     // setmaxnreg.inc/dec: a = registers, b = 1 for inc
};

struct SyncRequest {
  SyncKind kind = SyncKind::Compute;
  uint32_t function = 0;   // Module::functions index of the executing function
  uint32_t instr = 0;      // instruction index in that function's body
  uint32_t lanes = 1;      // active lanes that issued it (a group of identical operands)
  uint64_t bar = 0;        // mbarrier address (shared::cluster form, see above)
  uint64_t dst = 0;        // TmaLoad: destination shared address
  int64_t a = 0, b = 0, c = 0;
  uint32_t tensormap = UINT32_MAX;  // TmaLoad / BulkStore through a tensor map: Launch::tensormaps index
  bool cta_group2 = false;
  uint8_t mma_kind = 0;    // WgmmaMma: model::MmaKind of the operands
};

}  // namespace pipesim::ptx
