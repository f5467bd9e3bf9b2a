// What a PTX warp asks of the engine. The interpreter (machine.hpp) executes every instruction whose
// effect stays inside the warp or its memory itself; an instruction that synchronises with other
// warps or with an asynchronous unit becomes a SyncRequest, which verify/ptx/source.cpp turns into
// the engine's ops (sim/op.hpp). The mbarrier rules are the engine's (sim/mbarrier.cpp), never here.
//
// Addresses (docs/ptx.md, "Address spaces"): the shared::cta window of a CTA lies inside the
// shared::cluster window, as on the hardware: offset X of cluster rank r is r << 24 | X, and a CTA's
// own shared::cta addresses carry its own rank (kernels rely on it: CUTLASS clears the low rank bit of
// its own barrier's address to name the pair leader's, Sm100MmaPeerBitMask).
#pragma once

#include <cstdint>

namespace pipesim::ptx {

inline constexpr uint32_t kClusterRankShift = 24;
inline constexpr uint64_t kSharedOffsetMask = (uint64_t{1} << kClusterRankShift) - 1;
// The cluster rank a shared address names.
inline int32_t shared_rank(uint64_t addr) { return static_cast<int32_t>(addr >> kClusterRankShift); }
inline uint32_t shared_offset(uint64_t addr) { return static_cast<uint32_t>(addr & kSharedOffsetMask); }
inline uint64_t cluster_address(int32_t rank, uint32_t offset) {
  return (static_cast<uint64_t>(rank) << kClusterRankShift) | offset;
}

// clusterlaunchcontrol.try_cancel's 16-byte response as this interpreter writes it. The hardware's
// encoding is opaque (kernels read it only through query_cancel): here the low 8 bytes hold bit 63 =
// a cluster was cancelled, and its first CTA's ctaid x | y << 21 | z << 42; the high 8 bytes are zero
// (a .b128 register holds its low 64 bits, exec_mem.cpp).
inline uint64_t clc_encode(bool cancelled, uint32_t x, uint32_t y, uint32_t z) {
  if (!cancelled) return 0;
  return (uint64_t{1} << 63) | (uint64_t{z & 0x1fffff} << 42) | (uint64_t{y & 0x1fffff} << 21) | (x & 0x1fffff);
}
inline bool clc_cancelled(uint64_t r) { return (r >> 63) != 0; }
inline uint32_t clc_ctaid(uint64_t r, uint32_t dim) { return static_cast<uint32_t>((r >> (21 * dim)) & 0x1fffff); }

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
  ClusterArrive,  // barrier.cluster.arrive; b = 1 for .relaxed (no release semantics)
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
  // tcgen05 (sm_100a / sm_103a); cta_group2 for .cta_group::2. TMEM contents are not modelled.
  TmemAlloc,      // tcgen05.alloc: a = columns, dst = the shared address the TMEM address goes to;
                  // answer: the allocated column (written there as lane 0 << 16 | column)
  TmemDealloc,    // tcgen05.dealloc: a = columns
  TmemRelinquish, // tcgen05.relinquish_alloc_permit
  UmmaMma,        // tcgen05.mma (also .ws, .sp, block-scaled): a = M, b = N, c = K (from the
                  // instruction descriptor); mma_kind; lanes = instructions issued (one per lane)
  UmmaCommit,     // tcgen05.commit: bar; b = multicast CTA mask (0: the barrier's own CTA only)
  TmemLoad,       // tcgen05.ld: a = 32-bit registers per thread
  TmemStore,      // tcgen05.st: a = 32-bit registers per thread
  TmemWait,       // tcgen05.wait::ld (a = 0) / ::st (a = 1)
  Tcgen05Other,   // tcgen05.fence / .cp / .shift: accepted, not modelled (docs/ptx.md)
  ClcTryCancel,   // clusterlaunchcontrol.try_cancel: dst = the response's shared address, bar;
                  // multicast: .multicast::cluster::all
};

struct SyncRequest {
  SyncKind kind = SyncKind::Compute;
  uint32_t function = 0;   // Module::functions index of the executing function
  uint32_t instr = 0;      // instruction index in that function's body
  uint32_t lanes = 1;      // active lanes that issued it (a group of identical operands)
  uint64_t bar = 0;        // mbarrier address (shared::cluster form, see above)
  uint64_t dst = 0;        // TmaLoad: destination shared address; TmemAlloc: where the address goes
  int64_t a = 0, b = 0, c = 0;
  uint32_t tensormap = UINT32_MAX;  // TmaLoad / BulkStore through a tensor map: Launch::tensormaps index
  uint64_t box = 0;        // TmaLoad / BulkStore from or to global memory: its box (sim::Op::box)
  uint8_t l2_fill_boxes = 1;  // TmaLoad: sim::Op::l2_fill_boxes
  uint8_t tma_row16 = 0;      // TmaLoad: sim::Op::tma_row16
  bool cta_group2 = false;
  uint8_t mma_kind = 0;    // WgmmaMma / UmmaMma: model::MmaKind of the operands
  bool multicast = false;  // UmmaCommit / ClcTryCancel: the .multicast::cluster form
  bool yield = false;      // Compute: the step ran to its budget without a request (a spin, a long loop)
  bool peek = false;       // MbarTryWait: no loop repeats it (F_PEEK): it may return false at its time limit
  bool fence = false;      // MbarArrive*: released at cluster scope (F_FENCE), a MEMBAR came first
};

}  // namespace pipesim::ptx
