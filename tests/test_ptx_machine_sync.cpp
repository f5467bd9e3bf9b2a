// The SIMT interpreter (verify/ptx/machine.hpp), part 2: every memory space, atomics, special
// registers, how synchronisation becomes requests (grouping, bytes, answers), errors with their
// positions, kernel faults, the project's GEMV kernel decoding for sm_90a and sm_100a (where nvcc
// exists), and the speed per warp-instruction.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <time.h>
#include <unistd.h>

#include "test_ptx_machine_harness.hpp"

namespace pipesim::ptx {
namespace {

using namespace testing;

// ---- Memory spaces ------------------------------------------------------------------------------------
TEST(PtxMachine, SharedStaticAndDynamic) {
  // Static: lanes write smem[tid] = 3 tid, then read their neighbour's. Dynamic: the extern array after
  // the statics, written through a generic address.
  const std::string decls =
      ".shared .align 4 .b8 stat[128];\n.extern .shared .align 16 .b8 dyn[];\n";
  Harness h(kernel("  mov.u32 %r1, stat;\n  shl.b32 %r2, %tx, 2;\n  add.u32 %r3, %r1, %r2;\n"
                   "  mul.lo.u32 %r4, %tx, 3;\n  st.shared.u32 [%r3], %r4;\n  bar.sync 0;\n"
                   "  add.u32 %r5, %tx, 1;\n  and.b32 %r5, %r5, 31;\n  shl.b32 %r5, %r5, 2;\n"
                   "  add.u32 %r5, %r5, %r1;\n  ld.shared.u32 %r6, [%r5];\n"
                   "  cvta.shared.u64 %rd1, dyn;\n  cvt.u64.u32 %rd2, %r2;\n  add.u64 %rd1, %rd1, %rd2;\n"
                   "  add.u32 %r7, %tx, 1000;\n  st.u32 [%rd1], %r7;\n  ld.shared.u32 %r8, [dyn+4];\n"
                   "  mov.u32 %r9, %dynamic_smem_size;\n  mov.u32 %r10, %total_smem_size;\n"
                   "  mov.u32 %r11, dyn;\n  cvt.u64.u32 %res, %r6;\n"
                   "  mad.lo.u32 %r12, %r8, 1, 0;\n  cvt.u64.u32 %rd3, %r12;\n  shl.b64 %rd3, %rd3, 16;\n"
                   "  add.u64 %res, %res, %rd3;\n  cvt.u64.u32 %rd4, %r9;\n  shl.b64 %rd4, %rd4, 32;\n"
                   "  add.u64 %res, %res, %rd4;\n  cvt.u64.u32 %rd5, %r10;\n  shl.b64 %rd5, %rd5, 48;\n"
                   "  add.u64 %res, %res, %rd5;\n  setp.ne.u32 %p1, %r11, 128;\n  @%p1 trap;\n",
                   decls),
            32, 1, 1, 256);
  h.run_all();
  for (uint32_t l = 0; l < 32; ++l) {
    const uint64_t want = 3 * ((l + 1) % 32) + (uint64_t{1001} << 16) + (uint64_t{256} << 32) + (uint64_t{384} << 48);
    EXPECT_EQ(h.out(l), want) << l;
  }
  ASSERT_FALSE(h.requests.empty());
  EXPECT_EQ(h.requests[0].kind, SyncKind::NamedSync);
  EXPECT_EQ(h.requests[0].a, 0);
  EXPECT_EQ(h.requests[0].b, 0);
  EXPECT_EQ(h.requests[0].lanes, 32u);
}

TEST(PtxMachine, LocalDepotParamAndGlobal) {
  // The local depot per thread (through %SPL and through a generic address), kernel parameters by symbol
  // and through the generic address `mov.u64 %rd, param` gives, the global buffer's contents.
  const std::string body =
      "  .local .align 8 .b8 __local_depot0[16];\n  .reg .b64 %SP;\n  .reg .b64 %SPL;\n"
      "  mov.u64 %SPL, __local_depot0;\n  cvta.local.u64 %SP, %SPL;\n"
      "  st.local.u32 [%SPL+4], %tx;\n  add.u64 %rd1, %SP, 4;\n  ld.u32 %r1, [%rd1];\n"
      "  ld.param.u32 %r2, [n];\n  mov.u64 %rd2, n;\n  ld.u32 %r3, [%rd2];\n  cvta.param.u64 %rd3, %rd2;\n"
      "  ld.param.u32 %r4, [%rd3];\n"
      "  ld.param.u64 %rd4, [aux];\n  cvt.u64.u32 %rd5, %tx;\n  add.u64 %rd6, %rd4, %rd5;\n"
      "  ld.global.u8 %r5, [%rd6];\n  ld.global.nc.L1::no_allocate.s8 %r6, [%rd6+100];\n"
      "  ld.global.v2.u32 {%r7, %r8}, [%rd4+200];\n"
      "  cvt.u64.u32 %res, %r1;\n  cvt.u64.u32 %rd7, %r2;\n  shl.b64 %rd7, %rd7, 8;\n  add.u64 %res, %res, %rd7;\n"
      "  setp.ne.u32 %p1, %r3, %r2;\n  @%p1 trap;\n  setp.ne.u32 %p1, %r4, %r2;\n  @%p1 trap;\n"
      "  cvt.u64.u32 %rd8, %r5;\n  shl.b64 %rd8, %rd8, 16;\n  add.u64 %res, %res, %rd8;\n"
      "  cvt.u64.u32 %rd9, %r6;\n  shl.b64 %rd9, %rd9, 32;\n  add.u64 %res, %res, %rd9;\n"
      "  add.u32 %r7, %r7, %r8;\n  setp.ne.u32 %p1, %r7, 0x33;\n  @%p1 trap;\n";
  Harness h(kernel(body));
  std::vector<uint8_t> bytes(256);
  for (int i = 0; i < 256; ++i) bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(i + 1);
  const uint32_t pair[2] = {0x11, 0x22};
  std::memcpy(bytes.data() + 200, pair, 8);
  h.write_aux(0, bytes.data(), bytes.size());
  h.run_all();
  for (uint32_t l = 0; l < 32; ++l) {
    const int8_t s8 = static_cast<int8_t>(bytes[100 + l]);
    const uint64_t want = l + (32u << 8) + (uint64_t{bytes[l]} << 16) + (uint64_t{static_cast<uint32_t>(s8)} << 32);
    EXPECT_EQ(h.out(l), want) << l;
  }
}

TEST(PtxMachine, ConstAndGlobalVariables) {
  const std::string decls =
      ".const .align 4 .u32 tab[4] = {10, 20, 30, 40};\n.global .align 8 .u64 counter = 5;\n";
  Harness h(kernel("  and.b32 %r1, %tx, 3;\n  shl.b32 %r1, %r1, 2;\n  cvt.u64.u32 %rd1, %r1;\n"
                   "  mov.u64 %rd2, tab;\n  add.u64 %rd2, %rd2, %rd1;\n  ld.const.u32 %r2, [%rd2];\n"
                   "  atom.global.add.u64 %rd3, [counter], 1;\n  ld.u32 %r3, [%rd2];\n"
                   "  add.u32 %r2, %r2, %r3;\n  cvt.u64.u32 %res, %r2;\n  shl.b64 %rd3, %rd3, 32;\n"
                   "  add.u64 %res, %res, %rd3;\n",
                   decls));
  h.run_all();
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(l), 2 * 10 * (l % 4 + 1) + (uint64_t{5 + l} << 32)) << l;
}

TEST(PtxMachine, DistributedSharedMemoryAcrossTheCluster) {
  // CTA rank 1 writes into rank 0's shared memory through mapa; rank 0 (run after it) reads its own.
  const std::string decls = ".shared .align 8 .b8 buf[256];\n";
  Harness h(kernel("  mov.u32 %r1, %cluster_ctarank;\n  mov.u32 %r2, buf;\n  shl.b32 %r3, %tx, 2;\n"
                   "  add.u32 %r2, %r2, %r3;\n  setp.eq.u32 %p1, %r1, 1;\n  @!%p1 bra READ;\n"
                   "  mapa.shared::cluster.u32 %r4, %r2, 0;\n  add.u32 %r5, %tx, 500;\n"
                   "  st.shared::cluster.u32 [%r4], %r5;\n  cvta.shared.u64 %rd1, buf;\n"
                   "  mapa.u64 %rd2, %rd1, 0;\n  getctarank.u64 %r6, %rd2;\n  cvt.u64.u32 %res, %r6;\n"
                   "  getctarank.shared::cluster.u32 %r7, %r4;\n  cvt.u64.u32 %rd3, %r7;\n"
                   "  shl.b64 %rd3, %rd3, 8;\n  add.u64 %res, %res, %rd3;\n  isspacep.shared::cta %p2, %rd2;\n"
                   "  selp.u64 %rd4, 0x10000, 0, %p2;\n  add.u64 %res, %res, %rd4;\n"
                   "  isspacep.shared::cluster %p2, %rd2;\n  selp.u64 %rd4, 0x20000, 0, %p2;\n"
                   "  add.u64 %res, %res, %rd4;\n  bra.uni END;\n"
                   "READ:\n  ld.shared.u32 %r8, [%r2];\n  cvt.u64.u32 %res, %r8;\nEND:\n",
                   decls),
            32, 2, 2);
  h.run(1, 0);
  h.run(0, 0);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(l), 500u + l) << l;
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(32 + l), 0x20000u) << l;
}

TEST(PtxMachine, AtomicsInLaneOrder) {
  const std::string decls = ".shared .align 8 .b8 cnt[16];\n";
  Harness h(kernel("  mov.u32 %r1, cnt;\n  atom.shared.add.u32 %r2, [%r1], 2;\n"
                   "  atom.shared.inc.u32 %r3, [%r1+4], 9;\n  atom.shared.cas.b32 %r4, [%r1+8], %tx, 100;\n"
                   "  atom.shared.max.s32 %r5, [%r1+12], %tx;\n"
                   "  ld.param.u64 %rd1, [aux];\n  atom.global.exch.b32 %r6, [%rd1], %tx;\n"
                   "  atom.global.add.f32 %f1, [%rd1+4], 0f3F800000;\n"
                   "  cvt.u64.u32 %res, %r2;\n  cvt.u64.u32 %rd2, %r3;\n  shl.b64 %rd2, %rd2, 8;\n"
                   "  add.u64 %res, %res, %rd2;\n  cvt.u64.u32 %rd3, %r4;\n  shl.b64 %rd3, %rd3, 16;\n"
                   "  add.u64 %res, %res, %rd3;\n  cvt.u64.u32 %rd4, %r6;\n  shl.b64 %rd4, %rd4, 32;\n"
                   "  add.u64 %res, %res, %rd4;\n  cvt.rzi.u32.f32 %r7, %f1;\n  cvt.u64.u32 %rd5, %r7;\n"
                   "  shl.b64 %rd5, %rd5, 48;\n  add.u64 %res, %res, %rd5;\n",
                   decls));
  // A CTA's shared memory goes when its last warp exits: a second warp that never runs keeps it.
  Warp keep(*h.grid, h.place(0), 1);
  h.run(0, 0);
  for (uint32_t l = 0; l < 32; ++l) {
    const uint64_t inc = l % 10;                  // inc wraps to 0 after 9
    const uint64_t cas = l == 0 ? 0 : 100;         // lane 0 matches 0 and writes 100
    const uint64_t exch = l == 0 ? 0 : l - 1;      // each lane sees the previous lane's value
    EXPECT_EQ(h.out(l), 2 * l + (inc << 8) + (cas << 16) + (exch << 32) + (uint64_t{l} << 48)) << l;
  }
  uint32_t final_max = 0;
  ASSERT_TRUE(read_memory(*h.grid, 0, kSharedWindow + h.prog->symbols[0].addr + 12, &final_max, 4));
  EXPECT_EQ(final_max, 31u);
}

TEST(PtxMachine, ClocksFollowSimulatedTime) {
  Harness h(kernel("  mov.u64 %rd1, %globaltimer;\n  mov.u64 %rd2, %clock64;\n  mov.u32 %r1, %clock;\n"
                   "  cvt.u64.u32 %rd3, %r1;\n  sub.u64 %rd3, %rd3, %rd2;\n  setp.ne.u64 %p1, %rd3, 1;\n  @%p1 trap;\n"
                   "  shl.b64 %rd2, %rd2, 32;\n  or.b64 %res, %rd2, %rd1;\n"));
  set_clock_ghz(*h.grid, 2.0);
  Warp w(*h.grid, h.place(0), 0);
  SyncRequest r;
  while (w.step(r, 1000.0)) EXPECT_NE(r.kind, SyncKind::Trap);
  // The time of an instruction: now_ns plus 0.57 ns for it and each one before it in this step.
  // %globaltimer at the 3rd: 1001.71 ns; %clock64 at the 4th: 2 x 1002.28; %clock at the 5th: one more.
  const uint64_t v = h.out(0);
  EXPECT_EQ(v & 0xffffffffu, 1001u);
  EXPECT_EQ(v >> 32, 2004u);
}

TEST(PtxMachine, SpecialRegisters) {
  Harness h(kernel("  mov.u32 %r1, %laneid;\n  mov.u32 %r2, %warpid;\n  mov.u32 %r3, %ctaid.x;\n"
                   "  mov.u32 %r4, %nctaid.x;\n  mov.u32 %r5, %ntid.x;\n  mov.u32 %r6, %lanemask_lt;\n"
                   "  mov.u32 %r7, %nsmid;\n  mov.u32 %r8, %cluster_ctarank;\n  mov.u32 %r9, %cluster_nctarank;\n"
                   "  mov.u32 %r10, %clusterid.x;\n  mov.u32 %r11, %smid;\n  mov.u32 %r12, %is_explicit_cluster;\n"
                   "  popc.b32 %r6, %r6;\n  setp.ne.u32 %p1, %r6, %r1;\n  @%p1 trap;\n"
                   "  mov.u64 %rd1, %clock64;\n  mov.u32 %r13, %tid.y;\n"
                   "  cvt.u64.u32 %res, %r1;\n"
                   "  mad.lo.u32 %r20, %r2, 100, %r3;\n  mad.lo.u32 %r20, %r20, 100, %r4;\n"
                   "  mad.lo.u32 %r20, %r20, 100, %r5;\n  mad.lo.u32 %r20, %r20, 1000, %r7;\n"
                   "  cvt.u64.u32 %rd2, %r20;\n  shl.b64 %rd2, %rd2, 8;\n  add.u64 %res, %res, %rd2;\n"
                   "  mad.lo.u32 %r21, %r8, 10, %r9;\n  mad.lo.u32 %r21, %r21, 10, %r10;\n"
                   "  mad.lo.u32 %r21, %r21, 10, %r11;\n  mad.lo.u32 %r21, %r21, 10, %r12;\n"
                   "  mad.lo.u32 %r21, %r21, 10, %r13;\n"
                   "  ld.param.u64 %rd3, [aux];\n  mul.wide.u32 %rd4, %gtid, 4;\n"
                   "  mov.u32 %gtid, %ctaid.x;\n  mov.u32 %r22, %ntid.x;\n  mad.lo.u32 %gtid, %gtid, %r22, %tx;\n"
                   "  mul.wide.u32 %rd4, %gtid, 4;\n  add.u64 %rd3, %rd3, %rd4;\n  st.global.u32 [%rd3], %r21;\n"),
            64, 4, 2);
  h.run_all();
  for (uint32_t c = 0; c < 4; ++c)
    for (uint32_t t = 0; t < 64; ++t) {
      const uint32_t g = c * 64 + t;
      const uint64_t a = (((uint64_t{t / 32} * 100 + c) * 100 + 4) * 100 + 64) * 1000 + 132;
      EXPECT_EQ(h.out(g), (t % 32) + (a << 8)) << g;
      uint32_t b = 0;
      ASSERT_TRUE(read_memory(*h.grid, 0, kAux + 4ull * g, &b, 4));
      // rank, cluster size, cluster id, smid (the harness's = cta), explicit, tid.y
      EXPECT_EQ(b, (((((c % 2) * 10 + 2) * 10 + c / 2) * 10 + c) * 10 + 1) * 10 + 0) << g;
    }
}

// ---- Synchronisation becomes requests ----------------------------------------------------------------
std::vector<SyncRequest> requests_of(Harness& h, const std::function<uint64_t(const SyncRequest&)>& on = {}) {
  h.run_all(on);
  return h.requests;
}

TEST(PtxMachine, MbarrierRequestsAreGroupedByAddress) {
  const std::string decls = ".shared .align 8 .b64 bars[4];\n";
  Harness h(kernel("  mov.u32 %r1, bars;\n  setp.eq.u32 %p1, %tx, 0;\n"
                   "  @%p1 mbarrier.init.shared::cta.b64 [%r1], 32;\n  fence.mbarrier_init.release.cluster;\n"
                   "  mbarrier.arrive.shared::cta.b64 %rd1, [%r1];\n"
                   "  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0;\n"
                   "  and.b32 %r2, %tx, 1;\n  shl.b32 %r2, %r2, 3;\n  add.u32 %r3, %r1, %r2;\n"
                   "  mbarrier.arrive.release.cta.shared::cta.b64 %rd2, [%r3], 2;\n"
                   "  elect.sync %r4|%p3, -1;\n"
                   "  @%p3 mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 %rd3, [%r1+16], 4096;\n"
                   "  mbarrier.test_wait.parity.shared::cta.b64 %p4, [%r1], 1;\n"
                   "  mbarrier.try_wait.shared::cta.b64 %p5, [%r1], %rd1;\n"
                   "  cvta.shared.u64 %rd4, bars;\n  mbarrier.expect_tx.relaxed.cta.b64 [%rd4+24], 128;\n"
                   "  mbarrier.complete_tx.shared::cta.b64 [%r1+24], 64;\n"
                   "  mapa.shared::cluster.u32 %r5, %r1, 0;\n"
                   "  @%p3 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r5];\n"
                   "  mbarrier.arrive_drop.shared::cta.b64 %rd5, [%r1+24];\n"
                   "  @%p3 mbarrier.inval.shared::cta.b64 [%r1+8];\n"
                   "  selp.u64 %res, 1, 0, %p4;\n  selp.u64 %rd6, 2, 0, %p5;\n  add.u64 %res, %res, %rd6;\n"
                   "  shl.b64 %rd1, %rd1, 8;\n  add.u64 %res, %res, %rd1;\n",
                   decls));
  const auto r = requests_of(h, [](const SyncRequest& q) -> uint64_t {
    if (q.kind == SyncKind::MbarArrive) return 7;  // the token: phase parity 1
    if (q.kind == SyncKind::MbarTestWait) return 0;
    return 1;
  });
  const uint64_t bar = h.prog->symbols[0].addr;
  ASSERT_EQ(r.size(), 14u);
  auto expect = [&](size_t i, SyncKind k, uint64_t b, int64_t a, uint32_t lanes) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r[i].kind, k);
    EXPECT_EQ(r[i].bar, b);
    EXPECT_EQ(r[i].a, a);
    EXPECT_EQ(r[i].lanes, lanes);
  };
  expect(0, SyncKind::MbarInit, bar, 32, 1);
  EXPECT_EQ(r[1].kind, SyncKind::FenceInit);
  expect(2, SyncKind::MbarArrive, bar, 32, 32);
  expect(3, SyncKind::MbarTryWait, bar, 0, 32);
  EXPECT_TRUE(r[3].peek);  // no branch loops back on it
  expect(4, SyncKind::MbarArrive, bar, 32, 16);      // the even lanes, count 2 each
  expect(5, SyncKind::MbarArrive, bar + 8, 32, 16);  // the odd lanes
  expect(6, SyncKind::MbarArriveExpectTx, bar + 16, 4096, 1);
  expect(7, SyncKind::MbarTestWait, bar, 1, 32);
  expect(8, SyncKind::MbarTryWait, bar, 1, 32);      // the token's parity (a peek too)
  EXPECT_TRUE(r[8].peek);
  expect(9, SyncKind::MbarExpectTx, bar + 24, 128 * 32, 32);
  expect(10, SyncKind::MbarCompleteTx, bar + 24, 64 * 32, 32);
  expect(11, SyncKind::MbarArrive, cluster_address(0, static_cast<uint32_t>(bar)), 1, 1);
  expect(12, SyncKind::MbarArriveDrop, bar + 24, 32, 32);
  expect(13, SyncKind::MbarInval, bar + 8, 0, 1);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(l), 2u + (7u << 8)) << l;
  EXPECT_EQ(r[2].instr + 1, r[3].instr);
}

// A try_wait that a branch within the next few instructions loops back on is a wait loop: the warp is
// held until the phase completes. Any other is a peek whose answer the code takes as it comes (CUTLASS's
// producer_try_acquire token): SyncRequest::peek, which the engine may answer false at its time limit
// (test_ptx_check.cpp, PtxPeek).
TEST(PtxMachine, ATryWaitIsAPeekUnlessABranchLoopsBackOnIt) {
  const std::string decls = ".shared .align 8 .b64 bars[2];\n";
  Harness h(kernel("  mov.u32 %r1, bars;\n  setp.eq.u32 %p1, %tx, 0;\n"
                   "  @%p1 mbarrier.init.shared::cta.b64 [%r1], 1;\n  fence.mbarrier_init.release.cluster;\n"
                   // CUTLASS's ClusterBarrier::wait
                   "LAB_WAIT:\n  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r1], 0, 1000;\n"
                   "  @%p2 bra DONE;\n  bra LAB_WAIT;\nDONE:\n"
                   // nvcc's while (!try_wait(...)) {}
                   "SPIN:\n  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r1+8], 1;\n  selp.u32 %r2, 1, 0, %p3;\n"
                   "  setp.eq.u32 %p4, %r2, 0;\n  @%p4 bra SPIN;\n"
                   // CUTLASS's try_wait token, then its own branch forward
                   "  mbarrier.try_wait.parity.shared::cta.b64 %p5, [%r1], 1;\n  selp.u32 %r3, 1, 0, %p5;\n"
                   "  setp.ne.u32 %p6, %r3, 0;\n  @%p6 bra SKIP;\n  add.u32 %r3, %r3, 2;\nSKIP:\n"
                   "  cvt.u64.u32 %res, %r3;\n",
                   decls));
  // The peek answered 0 (its time limit), the loops 1.
  const auto r = requests_of(h, [](const SyncRequest& q) -> uint64_t { return q.peek ? 0 : 1; });
  const uint64_t bar = h.prog->symbols[0].addr;
  std::vector<std::tuple<SyncKind, uint64_t, bool>> waits;
  for (const SyncRequest& q : r)
    if (q.kind == SyncKind::MbarTryWait || q.kind == SyncKind::MbarTestWait) waits.emplace_back(q.kind, q.bar, q.peek);
  ASSERT_EQ(waits.size(), 3u);
  EXPECT_EQ(waits[0], std::make_tuple(SyncKind::MbarTryWait, bar, false));
  EXPECT_EQ(waits[1], std::make_tuple(SyncKind::MbarTryWait, bar + 8, false));
  EXPECT_EQ(waits[2], std::make_tuple(SyncKind::MbarTryWait, bar, true));
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(l), 2u) << l;  // the peek's false took the path past SKIP's branch
}

TEST(PtxMachine, CopiesAndTheirBytes) {
  // A tensor map in the parameter space at offset 64 (what nvcc passes for a __grid_constant__
  // CUtensorMap), a 64 x 32 box of 16-bit elements: 4096 bytes.
  auto tweak = [](Launch& l) {
    l.param_bytes.resize(192, 0);
    std::memcpy(l.param_bytes.data() + 64, &kTensorMapTag, 8);
    TensorMapDesc t;
    t.name = "tma_a";
    t.rank = 2;
    t.elem_bits = 16;
    t.box = {64, 32, 1, 1, 1};
    t.dims = {1024, 1024, 1, 1, 1};
    l.tensormaps.push_back(t);
  };
  const std::string decls = ".shared .align 128 .b8 tile[8192];\n.shared .align 8 .b64 full;\n";
  Harness h(kernel("  mov.u32 %r1, tile;\n  mov.u32 %r2, full;\n  mov.u64 %rd1, n;\n  add.u64 %rd1, %rd1, 48;\n"
                   "  ld.param.u64 %rd2, [aux];\n  elect.sync _|%p1, -1;\n  @!%p1 bra DONE;\n"
                   "  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r3, %r4}], [%r2];\n"
                   "  mov.u16 %h1, 3;\n  mov.u64 %rd3, 0;\n"
                   "  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint [%r1], [%rd1, {%r3, %r4}], [%r2], %h1, %rd3;\n"
                   "  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r1+4096], [%rd2], 256, [%r2];\n"
                   "  cp.async.bulk.global.shared::cta.bulk_group [%rd2+512], [%r1], 256;\n"
                   "  cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {0, 0}], [%r1];\n"
                   "  cp.async.bulk.commit_group;\n  cp.async.bulk.wait_group.read 0;\n"
                   "  cp.async.bulk.prefetch.tensor.2d.L2.global [%rd1, {0, 0}];\n  prefetch.tensormap [%rd1];\n"
                   "DONE:\n"
                   // The whole warp: one copy per distinct set of operands (lanes 0-15 and 16-31 differ).
                   "  cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {0, 0}], [%r1];\n"
                   "  shr.u32 %r5, %tx, 4;\n  shl.b32 %r5, %r5, 5;\n"
                   "  cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r5, 0}], [%r2];\n",
                   decls),
            32, 2, 2, 0, tweak);
  h.run(0, 0);
  const auto& r = h.requests;
  const uint64_t tile = h.prog->symbols[0].addr, full = h.prog->symbols[1].addr;
  ASSERT_EQ(r.size(), 10u);
  EXPECT_EQ(r[0].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[0].a, 4096);
  EXPECT_EQ(r[0].b, 0);
  EXPECT_EQ(r[0].dst, tile);
  EXPECT_EQ(r[0].bar, full);
  EXPECT_EQ(r[0].tensormap, 0u);
  EXPECT_EQ(r[0].lanes, 1u);
  EXPECT_EQ(r[0].tma_row16, 8u);  // rows of 64 x 16 bits: the SM's intake counts its 32 requests
  EXPECT_EQ(r[1].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[1].b, 3);
  EXPECT_EQ(r[2].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[2].a, 256);
  EXPECT_EQ(r[2].dst, tile + 4096);
  EXPECT_EQ(r[2].tensormap, UINT32_MAX);
  EXPECT_EQ(r[2].tma_row16, 0u);  // a bulk copy has no rows
  EXPECT_EQ(r[3].kind, SyncKind::BulkStore);
  EXPECT_EQ(r[3].a, 256);
  EXPECT_EQ(r[4].kind, SyncKind::BulkStore);
  EXPECT_EQ(r[4].a, 4096);
  EXPECT_EQ(r[4].tensormap, 0u);
  EXPECT_EQ(r[5].kind, SyncKind::BulkCommit);
  EXPECT_EQ(r[6].kind, SyncKind::BulkWait);
  EXPECT_EQ(r[6].a, 0);
  EXPECT_EQ(r[6].b, 1);
  EXPECT_EQ(r[7].kind, SyncKind::BulkStore);
  EXPECT_EQ(r[7].lanes, 32u);
  EXPECT_EQ(r[8].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[8].lanes, 16u);
  EXPECT_EQ(r[9].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[9].lanes, 16u);
}

TEST(PtxMachine, BarriersWgmmaAndOtherRequests) {
  const std::string decls = ".shared .align 16 .b8 sm[1024];\n";
  Harness h(kernel("  bar.sync 1, 64;\n  bar.arrive 2, 128;\n  barrier.sync.aligned 3;\n"
                   "  barrier.cluster.arrive.release.aligned;\n  barrier.cluster.wait.acquire.aligned;\n"
                   "  wgmma.fence.sync.aligned;\n  mov.u64 %rd1, 0;\n"
                   "  wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%f1, %f2}, %rd1, %rd1, 1, 1, 1, 0, 0;\n"
                   "  wgmma.commit_group.sync.aligned;\n  wgmma.wait_group.sync.aligned 1;\n"
                   "  nanosleep.u32 100;\n  setmaxnreg.inc.sync.aligned.u32 240;\n  fence.proxy.async.shared::cta;\n"
                   "  fence.acq_rel.gpu;\n  membar.cta;\n"
                   "  mov.u32 %r1, sm;\n  shl.b32 %r2, %tx, 4;\n  add.u32 %r1, %r1, %r2;\n  ld.param.u64 %rd2, [aux];\n"
                   "  cp.async.ca.shared.global [%r1], [%rd2], 16;\n  cp.async.commit_group;\n  cp.async.wait_all;\n"
                   "  cp.async.mbarrier.arrive.noinc.shared.b64 [sm];\n"
                   "  setp.lt.u32 %p1, %tx, 5;\n  bar.red.popc.u32 %r3, 0, %p1;\n  bar.red.and.pred %p2, 0, %p1;\n"
                   "  cvt.u64.u32 %res, %r3;\n  selp.u64 %rd3, 1000, 0, %p2;\n  add.u64 %res, %res, %rd3;\n",
                   decls));
  const auto r = requests_of(h, [](const SyncRequest& q) -> uint64_t { return q.kind == SyncKind::NamedRed ? 40 : 1; });
  std::vector<SyncKind> kinds;
  for (const SyncRequest& q : r) kinds.push_back(q.kind);
  const std::vector<SyncKind> want = {
      SyncKind::NamedSync, SyncKind::NamedArrive, SyncKind::NamedSync, SyncKind::ClusterArrive, SyncKind::ClusterWait,
      SyncKind::WgmmaFence, SyncKind::WgmmaMma, SyncKind::WgmmaCommit, SyncKind::WgmmaWait, SyncKind::Sleep,
      SyncKind::SetMaxNreg, SyncKind::FenceProxyAsync, SyncKind::AsyncCopy, SyncKind::AsyncCommit,
      SyncKind::AsyncWait, SyncKind::AsyncMbarArrive, SyncKind::NamedRed, SyncKind::NamedRed};
  ASSERT_EQ(kinds, want);
  EXPECT_EQ(r[0].a, 1);
  EXPECT_EQ(r[0].b, 64);
  EXPECT_EQ(r[1].a, 2);
  EXPECT_EQ(r[1].b, 128);
  EXPECT_EQ(r[2].a, 3);
  EXPECT_EQ(r[2].b, 0);
  EXPECT_EQ(r[6].a, 64);
  EXPECT_EQ(r[6].b, 128);
  EXPECT_EQ(r[6].c, 16);
  EXPECT_EQ(r[6].mma_kind, 0);
  EXPECT_EQ(r[8].a, 1);
  EXPECT_EQ(r[9].a, 100);
  EXPECT_EQ(r[10].a, 240);
  EXPECT_EQ(r[10].b, 1);
  EXPECT_EQ(r[12].a, 32 * 16);
  EXPECT_EQ(r[12].lanes, 32u);
  EXPECT_EQ(r[14].a, 0);
  EXPECT_EQ(r[15].b, 1);
  EXPECT_EQ(r[15].lanes, 32u);
  EXPECT_EQ(r[16].c, 5);  // this warp's lanes with a true predicate
  // popc: the engine's sum (40); and: 40 of 32 threads is not "all" -> holds (40 >= 32).
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(l), 1040u) << l;
}

TEST(PtxMachine, StAsyncStoresRemotelyAndCompletesBytes) {
  // Rank 1 stores 8 bytes per lane into rank 0's buffer and counts them on rank 0's barrier.
  const std::string decls = ".shared .align 16 .b8 buf[512];\n.shared .align 8 .b64 bar;\n";
  Harness h(kernel("  mov.u32 %r1, %cluster_ctarank;\n  setp.ne.u32 %p1, %r1, 1;\n  @%p1 bra END;\n"
                   "  mov.u32 %r2, buf;\n  shl.b32 %r3, %tx, 3;\n  add.u32 %r2, %r2, %r3;\n"
                   "  mapa.shared::cluster.u32 %r4, %r2, 0;\n  mov.u32 %r5, bar;\n"
                   "  mapa.shared::cluster.u32 %r6, %r5, 0;\n  add.u32 %r7, %tx, 7;\n"
                   "  st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.b32 [%r4], {%tx, %r7}, [%r6];\n"
                   "END:\n",
                   decls),
            32, 2, 2);
  Warp w0(*h.grid, h.place(0), 0);  // rank 0's shared memory lives while its warp does
  h.run(1, 0);
  ASSERT_EQ(h.requests.size(), 1u);
  EXPECT_EQ(h.requests[0].kind, SyncKind::MbarCompleteTx);
  EXPECT_EQ(h.requests[0].a, 256);
  EXPECT_EQ(h.requests[0].lanes, 32u);
  EXPECT_EQ(h.requests[0].bar, cluster_address(0, static_cast<uint32_t>(h.prog->symbols[1].addr)));
  for (uint32_t l = 0; l < 32; ++l) {
    uint32_t v[2] = {};
    ASSERT_TRUE(read_memory(*h.grid, 0, kSharedWindow + h.prog->symbols[0].addr + 8 * l, v, 8));
    EXPECT_EQ(v[0], l);
    EXPECT_EQ(v[1], l + 7);
  }
}

TEST(PtxMachine, ComputeIsChargedBeforeRequestsAndSpinsYield) {
  Harness h(kernel("  add.u32 %r1, 1, 2;\n  add.u32 %r1, 1, 2;\n  bar.sync 0;\nSPIN:\n  bra.uni SPIN;\n"));
  Warp w(*h.grid, h.place(0), 0);
  SyncRequest r;
  ASSERT_TRUE(w.step(r, 0.0));
  EXPECT_EQ(r.kind, SyncKind::Compute);
  EXPECT_EQ(r.a, 3);  // 5 instructions x 0.57 ns, rounded
  ASSERT_TRUE(w.step(r, 0.0));
  EXPECT_EQ(r.kind, SyncKind::NamedSync);
  ASSERT_TRUE(w.step(r, 0.0, 100));
  EXPECT_EQ(r.kind, SyncKind::Compute);
  EXPECT_EQ(r.a, 57);
  ASSERT_TRUE(w.step(r, 0.0, 100));
  EXPECT_EQ(r.kind, SyncKind::Compute);
  EXPECT_EQ(w.instructions(), 205u);  // 5 before the barrier, 100 + 100 spinning
}

TEST(PtxMachine, ExitedWarpsGiveTheirMemoryBack) {
  // Registers are allocated on first touch and given back at exit (the engine keeps every warp).
  Harness h(kernel("  mov.u32 %r40, 1;\n  mov.u32 %r41, 2;\n  add.u32 %r42, %r40, %r41;\n  cvt.u64.u32 %res, %r42;\n"));
  Warp w(*h.grid, h.place(0), 0);
  const uint64_t before = w.memory_bytes();
  SyncRequest r;
  ASSERT_TRUE(w.step(r, 0.0, 4));  // 4 instructions, then the budget's Compute
  EXPECT_EQ(r.kind, SyncKind::Compute);
  EXPECT_GT(w.memory_bytes(), before);
  EXPECT_FALSE(w.done());
  while (w.step(r, 0.0)) {
  }
  EXPECT_TRUE(w.done());
  EXPECT_LT(w.memory_bytes(), before);
  EXPECT_EQ(h.out(0), 3u);
}

// Instruction forms no other test runs: each must decode (never be skipped) and the lot must run
// without a fault on one warp.
TEST(PtxMachine, ManyFormsDecodeAndRun) {
  const std::string decls = ".shared .align 16 .b8 sm[4096];\n.shared .align 8 .b64 mb;\n";
  const std::string body =
      "  ld.param.u64 %rd1, [aux];\n  mov.u32 %r1, sm;\n  mov.u32 %r2, mb;\n"
      "  ldu.global.u32 %r3, [%rd1];\n  prefetchu.L1 [%rd1];\n  prefetch.global.L2::evict_last [%rd1];\n"
      "  ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%r4, %r5, %r6, %r7}, [%rd1+16];\n"
      "  createpolicy.fractional.L2::evict_last.b64 %rd2, 1.0;\n"
      "  ld.global.L2::cache_hint.u32 %r8, [%rd1], %rd2;\n  st.global.L1::no_allocate.v2.u32 [%rd1+64], {%r4, %r5};\n"
      "  ld.relaxed.gpu.global.u32 %r9, [%rd1];\n  ld.acquire.cluster.shared.u32 %r9, [%r1];\n"
      "  st.release.gpu.global.u32 [%rd1+4], %r9;\n  st.volatile.shared.u16 [%r1+2], %h1;\n"
      "  ld.global.v8.f32 {%f1, %f2, %f3, %f4, %f5, %f6, %f7, %f8}, [%rd1+128];\n"
      "  red.global.add.f32 [%rd1+8], 0f3F800000;\n  red.relaxed.gpu.global.add.s32 [%rd1+12], 1;\n"
      "  atom.global.add.noftz.f16x2 %r10, [%rd1+16], %r4;\n  atom.global.add.noftz.bf16x2 %r10, [%rd1+20], %r4;\n"
      "  atom.global.cas.b64 %rd3, [%rd1+24], 0, 1;\n  atom.shared::cta.or.b32 %r11, [%r1], 1;\n"
      "  atom.acq_rel.gpu.global.min.s64 %rd3, [%rd1+32], -1;\n  atom.shared.dec.u32 %r11, [%r1+4], 3;\n"
      "  tanh.approx.f32 %f1, %f1;\n  sin.approx.f32 %f2, %f2;\n  cos.approx.ftz.f32 %f3, %f3;\n"
      "  mul24.hi.u32 %r12, %r4, %r5;\n  mad24.lo.s32 %r12, %r4, %r5, %r12;\n  madc.hi.cc.u32 %r12, %r4, %r5, %r12;\n"
      "  mad.lo.cc.u64 %rd4, %rd1, 3, %rd1;\n  addc.cc.u64 %rd4, %rd4, 0;\n  subc.u64 %rd4, %rd4, 0;\n"
      "  min.relu.s32 %r13, %r4, %r5;\n  max.NaN.f32 %f4, %f4, %f5;\n  min.f16x2 %r13, %r4, %r5;\n  neg.bf16x2 %r13, %r13;\n"
      "  abs.f64 %fd1, %fd1;\n  div.full.f32 %f5, %f5, 0f40000000;\n  div.rn.f64 %fd1, %fd1, %fd1;\n"
      "  rcp.approx.ftz.f64 %fd2, %fd1;\n  sqrt.approx.f32 %f6, %f6;\n  ex2.approx.f16 %h2, %h2;\n"
      "  fma.rn.relu.bf16x2 %r14, %r4, %r5, %r6;\n  fma.rn.sat.f32 %f7, %f7, %f7, %f7;\n"
      "  cvt.rzi.f32.f32 %f8, %f8;\n  cvt.rn.tf32.f32 %r15, %f8;\n  cvt.rna.tf32.f32 %r15, %f8;\n"
      "  cvt.rn.bf16x2.f32 %r16, %f1, %f2;\n  cvt.rn.satfinite.e4m3x2.f16x2 %h3, %r16;\n"
      "  cvt.rn.satfinite.e2m1x2.f32 %h4, %f1, %f2;\n  cvt.rn.bf16x2.ue8m0x2 %r17, %h4;\n"
      "  cvt.rz.satfinite.ue8m0x2.f32 %h5, %f1, %f2;\n  cvt.rn.satfinite.e3m2x2.f32 %h6, %f1, %f2;\n"
      "  cvt.s16.s64 %h7, %rd1;\n  cvt.sat.u16.s16 %h8, %h7;\n  cvt.rpi.s64.f64 %rd5, %fd1;\n"
      "  cvta.to.shared.u32 %r18, %r1;\n  cvta.to.global.u64 %rd6, %rd1;\n  cvta.global.u64 %rd6, %rd6;\n"
      "  isspacep.global %p1, %rd1;\n  isspacep.local %p2, %rd1;\n  isspacep.param %p3, %rd1;\n  isspacep.const %p4, %rd1;\n"
      "  shfl.up.b32 %r19, %r1, 1, 0;\n  vote.ballot.b32 %r20, %p1;\n  vote.all.pred %p5, %p1;\n"
      "  match.any.sync.b64 %r21, %rd1, -1;\n  redux.sync.max.u32 %r22, %tx, -1;\n  redux.sync.or.b32 %r22, %tx, -1;\n"
      "  bar.warp.sync -1;\n  bar.cta.sync 0;\n  barrier.sync 0, 32;\n  barrier.arrive.aligned 1, 64;\n"
      "  bar.red.or.pred %p6, 2, !%p1;\n"
      "  membar.gl;\n  membar.sys;\n  fence.sc.cluster;\n  fence.proxy.alias;\n  fence.proxy.async;\n"
      "  fence.proxy.async.global;\n  fence.proxy.tensormap::generic.release.gpu;\n"
      "  fence.proxy.tensormap::generic.acquire.gpu [%rd1], 128;\n"
      "  griddepcontrol.launch_dependents;\n  griddepcontrol.wait;\n  pmevent 1;\n  pmevent.mask 3;\n"
      "  setmaxnreg.dec.sync.aligned.u32 40;\n  nanosleep.u32 %r3;\n"
      "  mbarrier.init.b64 [mb], 1;\n  mbarrier.arrive.noComplete.shared.b64 %rd7, [%r2], 1;\n"
      "  mbarrier.arrive_drop.release.cta.shared::cta.b64 %rd7, [%r2];\n"
      "  mbarrier.pending_count.b64 %r23, %rd7;\n  mbarrier.test_wait.shared.b64 %p7, [%r2], %rd7;\n"
      "  mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 %p7, [%r2], 0, 1000;\n"
      "  cp.async.cg.shared.global.L2::128B [%r1], [%rd1], 16;\n  cp.async.wait_group 0;\n"
      "  cp.async.mbarrier.arrive.shared::cta.b64 [%r2];\n"
      "  cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%r1+1024], [%r1], 64, [%r2];\n"
      "  cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%rd1+256], [%r1], 64;\n"
      "  cp.async.bulk.prefetch.L2.global [%rd1], 256;\n  cp.async.bulk.commit_group;\n  cp.async.bulk.wait_group 0;\n"
      "  ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r24, %r25}, [%r1];\n"
      "  stmatrix.sync.aligned.m8n8.x1.trans.shared.b16 [%r1+512], {%r24};\n"
      "  wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 {%f1, %f2}, %rd1, %rd1, 1, 1, 1;\n"
      "  wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.u8.satfinite {%r1, %r2}, %rd1, %rd1, 0;\n";
  Harness h(kernel(body, decls));
  std::vector<uint8_t> zeros(4096, 0);
  h.write_aux(0, zeros.data(), zeros.size());
  h.run_all();
  bool saw_mma_kinds = false;
  for (const SyncRequest& r : h.requests)
    if (r.kind == SyncKind::WgmmaMma && r.mma_kind == 3 && r.b == 32 && r.c == 32) saw_mma_kinds = true;
  EXPECT_TRUE(saw_mma_kinds);
}

// ---- Errors and faults --------------------------------------------------------------------------------
TextPos position_at(const std::string& text, size_t at) {
  TextPos p;
  p.line = 1 + static_cast<uint32_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  const size_t line_start = text.rfind('\n', at);
  p.col = static_cast<uint32_t>(at - (line_start == std::string::npos ? 0 : line_start + 1) + 1);
  return p;
}

// `at`: the text the error points at (the instruction, or the operand at fault).
void expect_decode_error(const std::string& line, const std::string& message, const std::string& at = "") {
  const std::string text = kernel("  " + line + "\n");
  Module m = parse_module("bad.ptx", text);
  try {
    decode(m, m.functions.back());
    ADD_FAILURE() << "decoded: " << line;
  } catch (const PtxError& e) {
    const TextPos want = position_at(text, text.find(line) + (at.empty() ? 0 : line.find(at)));
    EXPECT_EQ(e.pos.line, want.line) << line;
    EXPECT_EQ(e.pos.col, want.col) << line;
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    EXPECT_EQ(e.path, "bad.ptx");
  }
}

TEST(PtxMachine, UnsupportedInstructionsAreErrorsWithTheirPosition) {
  expect_decode_error("frobnicate.u32 %r1, 1;", "unsupported instruction 'frobnicate.u32'");
  expect_decode_error("add.zz.u32 %r1, %r1, 1;", "unsupported instruction 'add.zz.u32'");
  expect_decode_error("tensormap.replace.tile.global_address.global.b1024.b64 [%rd1], %rd2;",
                      "unsupported instruction 'tensormap.replace");
  expect_decode_error("add.u64 %rd1, %r1, 1;", "too narrow", "%r1");
  expect_decode_error("add.u32 %r1, %p1, 1;", "is a predicate", "%p1");
  expect_decode_error("ld.global.v4.u32 {%r1, %r2}, [%rd1];", "elements");
  expect_decode_error("mul.u32 %r1, %r1, 1;", "needs .lo");
  expect_decode_error("bar.warp.sync;", "operands");
}

// A body that can run past its last instruction is refused at decode time (fuzz_ptx_kernel found the
// interpreter reading past the decoded code), as is a branch to a label after the last instruction.
TEST(PtxMachine, ABodyThatRunsPastItsEndIsRefusedAtItsLastInstruction) {
  const auto decode_error = [](const std::string& text) -> std::string {
    Module m = parse_module("bad.ptx", text);
    try {
      decode(m, m.functions.back());
    } catch (const PtxError& e) {
      return std::to_string(e.pos.line) + ": " + e.what();
    }
    return "decoded";
  };
  const std::string head = ".version 8.3\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n  .reg .pred %p<2>;\n";
  EXPECT_NE(decode_error(head + "  setp.eq.u32 %p1, 1, 1;\n}\n").find("7: "), std::string::npos);
  EXPECT_NE(decode_error(head + "  setp.eq.u32 %p1, 1, 1;\n}\n").find("can run past its last instruction"), std::string::npos);
  EXPECT_NE(decode_error(head + "  @%p1 ret;\n}\n").find("can run past its last instruction"), std::string::npos);
  EXPECT_NE(decode_error(head + "  @%p1 bra $L_end;\n  ret;\n$L_end:\n}\n").find("branch target is past the last instruction"),
            std::string::npos);
  EXPECT_EQ(decode_error(head + "  @%p1 bra $L_end;\n$L_end:\n  ret;\n}\n"), "decoded");
}

struct FaultCase {
  const char* body;
  const char* kind;
};

TEST(PtxMachine, KernelFaultsBecomeTrapRequests) {
  const FaultCase cases[] = {
      {"  mov.u64 %rd1, 0;\n  ld.global.u32 %r1, [%rd1];", "bad_address"},
      {"  ld.param.u64 %rd1, [aux];\n  ld.global.u32 %r1, [%rd1+2];", "misaligned"},
      {"  ld.param.u64 %rd1, [aux];\n  ld.global.u32 %r1, [%rd1+0x10000];", "bad_address"},
      {"  mov.u32 %r1, 0x100000;\n  st.shared.u32 [%r1], 1;", "bad_address"},
      {"  mov.u64 %rd1, 0x7b0000000000;\n  ld.u32 %r1, [%rd1];", "bad_address"},
      {"  trap;", "trap"},
      {"  ld.param.u64 %rd1, [aux];\n  cp.async.bulk.tensor.1d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2}], [%r1];",
       "bad_tensormap"},
      {"  mapa.shared::cluster.u32 %r1, 0, 4;", "bad_address"},
  };
  for (const FaultCase& fc : cases) {
    SCOPED_TRACE(fc.body);
    Harness h(kernel(std::string(fc.body) + "\n"));
    Warp w(*h.grid, h.place(0), 0);
    SyncRequest r;
    bool trapped = false;
    while (w.step(r, 0.0)) {
      if (r.kind == SyncKind::Trap) {
        trapped = true;
        break;
      }
    }
    ASSERT_TRUE(trapped);
    ASSERT_NE(w.fault(), nullptr);
    EXPECT_EQ(w.fault()->kind, fc.kind) << w.fault()->message;
    EXPECT_EQ(w.fault()->instr, r.instr);
    EXPECT_FALSE(w.step(r, 0.0));  // a faulted warp is done
  }
}

// ---- The project's GEMV kernel decodes (where nvcc exists) -------------------------------------------
std::string find_nvcc() {
  if (const char* e = std::getenv("PIPESIM_NVCC"); e && *e) return e;
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (std::filesystem::exists(p)) return p;
  if (std::system("command -v nvcc > /dev/null 2>&1") == 0) return "nvcc";
  return "";
}

void decode_gemv(const std::string& arch) {
  const std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not found (set PIPESIM_NVCC): the GEMV's " << arch << " PTX cannot be compiled here";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("pipesim_machine_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::filesystem::path out = dir / ("gemv_" + arch + ".ptx");
  const std::string src = PIPESIM_SOURCE_DIR;
  const std::string cmd = nvcc + " -arch=" + arch + " -ptx -lineinfo -std=c++20 -I" + src + " " + src +
                          "/kernels/gemv_nvfp4/gemv_nvfp4.cu -o " + out.string() + " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream f(out);
  std::stringstream text;
  text << f.rdbuf();
  const Module m = parse_module(out.string(), text.str());
  std::filesystem::remove_all(dir);
  int entries = 0;
  for (const Function& fn : m.functions) {
    if (!fn.is_entry) continue;
    ++entries;
    try {
      const auto prog = decode(m, fn);
      EXPECT_GT(prog->fn(prog->entry).code.size(), 0u);
    } catch (const PtxError& e) {
      ADD_FAILURE() << arch << " " << fn.name << ": " << e.pos.line << ":" << e.pos.col << ": " << e.what();
    }
  }
  EXPECT_GE(entries, 2);
}

TEST(PtxMachine, GemvKernelDecodesForSm90a) { decode_gemv("sm_90a"); }
TEST(PtxMachine, GemvKernelDecodesForSm100a) { decode_gemv("sm_100a"); }

// ---- Speed --------------------------------------------------------------------------------------------
TEST(PtxMachine, NanosecondsPerWarpInstruction) {
  // 5 instructions per iteration: add, xor, add, setp, bra; 32 lanes each.
  constexpr uint32_t kIters = 200000;
  Harness h(kernel("  mov.u32 %r1, 0;\n  mov.u32 %r2, 0;\nLOOP:\n  add.u32 %r2, %r2, %r1;\n"
                   "  xor.b32 %r3, %r2, %tx;\n  add.u32 %r1, %r1, 1;\n  setp.lt.u32 %p1, %r1, " +
                   std::to_string(kIters) + ";\n  @%p1 bra LOOP;\n  cvt.u64.u32 %res, %r3;\n"));
  Warp w(*h.grid, h.place(0), 0);
  SyncRequest r;
  // The thread's CPU time: what the interpreter costs, not what other processes on the host take.
  auto cpu_ns = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
  };
  const double t0 = cpu_ns();
  while (w.step(r, 0.0)) {
  }
  const double ns = cpu_ns() - t0;
  const double per = ns / static_cast<double>(w.instructions());
  std::printf("[ speed    ] %.1f ns per warp-instruction (%llu instructions, 32 lanes)\n", per,
              static_cast<unsigned long long>(w.instructions()));
  RecordProperty("ns_per_warp_instruction", std::to_string(per));
  EXPECT_GE(w.instructions(), 5ull * kIters);
  // Sanity bounds, 10x and ~4x what this VM measures (20 ns optimised, 700-860 ns under ASan + UBSan in
  // Debug, where a bound of 1000 failed once with the other core busy); the target is <= 30 ns in a release build.
#if defined(PIPESIM_SANITIZE) || !defined(NDEBUG)  // instrumented or unoptimised
  EXPECT_LT(per, 3000.0);
#else
  EXPECT_LT(per, 200.0);
#endif
}

}  // namespace
}  // namespace pipesim::ptx
