// The SIMT interpreter (verify/ptx/machine.hpp), part 1: small PTX programs run on one warp, asserting
// exact results per lane: integer and bit operations at their edges, comparisons, divergence and
// reconvergence, warp collectives, conversions and floats. Part 2 (test_ptx_machine_sync.cpp): memory
// spaces, atomics, special registers, requests, errors and faults, the GEMV's decode, speed.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "test_ptx_machine_harness.hpp"

namespace pipesim::ptx {
namespace {

using namespace testing;

TEST(PtxMachine, StoresEveryLane) {
  const auto v = lanes_of("  cvt.u64.u32 %res, %tx;\n  add.u64 %res, %res, 100;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], 100 + l);
}

// ---- Integer arithmetic at its edges ----------------------------------------------------------------
TEST(PtxMachine, AddSubWrapAndSaturate) {
  EXPECT_EQ(lane0("  mov.u32 %r1, 0xffffffff;\n  add.u32 %r2, %r1, 1;\n  cvt.u64.u32 %res, %r2;"), 0u);
  EXPECT_EQ(lane0("  mov.u32 %r1, 0x7fffffff;\n  add.s32 %r2, %r1, 1;\n  cvt.u64.u32 %res, %r2;"), 0x80000000u);
  EXPECT_EQ(lane0("  mov.u32 %r1, 0x7fffffff;\n  add.sat.s32 %r2, %r1, 1;\n  cvt.u64.u32 %res, %r2;"), 0x7fffffffu);
  EXPECT_EQ(lane0("  mov.u32 %r1, 0x80000000;\n  sub.sat.s32 %r2, %r1, 1;\n  cvt.u64.u32 %res, %r2;"), 0x80000000u);
  EXPECT_EQ(lane0("  mov.u16 %h1, 0xffff;\n  add.u16 %h2, %h1, 2;\n  cvt.u64.u16 %res, %h2;"), 1u);
  EXPECT_EQ(lane0("  mov.u64 %rd1, 0;\n  sub.u64 %res, %rd1, 1;"), ~0ull);
  // A 64-bit add through .cc / addc: 0x00000001_ffffffff + 1 = 0x00000002_00000000.
  EXPECT_EQ(lane0("  mov.u32 %r1, 0xffffffff;\n  mov.u32 %r2, 1;\n  add.cc.u32 %r3, %r1, 1;\n"
                  "  addc.u32 %r4, %r2, 0;\n  mov.b64 %res, {%r3, %r4};"),
            0x200000000ull);
  // sub.cc borrows: 0x00000002_00000000 - 1 = 0x00000001_ffffffff.
  EXPECT_EQ(lane0("  mov.u32 %r1, 0;\n  mov.u32 %r2, 2;\n  sub.cc.u32 %r3, %r1, 1;\n"
                  "  subc.u32 %r4, %r2, 0;\n  mov.b64 %res, {%r3, %r4};"),
            0x1ffffffffull);
}

TEST(PtxMachine, ShiftsPastTheWidth) {
  EXPECT_EQ(lane0("  shl.b32 %r1, 1, 32;\n  cvt.u64.u32 %res, %r1;"), 0u);
  EXPECT_EQ(lane0("  shl.b32 %r1, 1, 31;\n  cvt.u64.u32 %res, %r1;"), 0x80000000u);
  EXPECT_EQ(lane0("  shr.u32 %r1, 0x80000000, 40;\n  cvt.u64.u32 %res, %r1;"), 0u);
  EXPECT_EQ(lane0("  mov.u32 %r2, -8;\n  shr.s32 %r1, %r2, 40;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  mov.u32 %r2, -8;\n  shr.s32 %r1, %r2, 1;\n  cvt.u64.u32 %res, %r1;"), 0xfffffffcu);
  EXPECT_EQ(lane0("  shl.b64 %res, 1, 63;"), 0x8000000000000000ull);
  EXPECT_EQ(lane0("  mov.u64 %rd1, -5;\n  shr.s64 %res, %rd1, 64;"), ~0ull);
  EXPECT_EQ(lane0("  shl.b16 %h1, 1, 16;\n  cvt.u64.u16 %res, %h1;"), 0u);
  // The shift amount is the whole unsigned 32-bit register.
  EXPECT_EQ(lane0("  mov.u32 %r2, 0x100000001;\n  shl.b32 %r1, 1, %r2;\n  cvt.u64.u32 %res, %r1;"), 2u);
}

TEST(PtxMachine, MultiplyHighWideAndMad) {
  EXPECT_EQ(lane0("  mul.hi.u32 %r1, 0xffffffff, 0xffffffff;\n  cvt.u64.u32 %res, %r1;"), 0xfffffffeu);
  EXPECT_EQ(lane0("  mov.u32 %r2, -1;\n  mul.hi.s32 %r1, %r2, 1;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  mov.u32 %r2, -2;\n  mul.wide.s32 %res, %r2, 3;"), static_cast<uint64_t>(-6));
  EXPECT_EQ(lane0("  mul.wide.u32 %res, 0xffffffff, 2;"), 0x1fffffffeull);
  EXPECT_EQ(lane0("  mul.wide.u16 %r1, 0xffff, 0xffff;\n  cvt.u64.u32 %res, %r1;"), 0xfffe0001u);
  EXPECT_EQ(lane0("  mov.u64 %rd1, -1;\n  mul.hi.u64 %res, %rd1, 2;"), 1u);
  EXPECT_EQ(lane0("  mov.u64 %rd1, -1;\n  mul.hi.s64 %res, %rd1, %rd1;"), 0u);
  EXPECT_EQ(lane0("  mov.u64 %rd1, 0x100000001;\n  mul.lo.u64 %res, %rd1, %rd1;"), 0x200000001ull);
  EXPECT_EQ(lane0("  mad.wide.u32 %res, 0x80000000, 4, 5;"), 0x200000005ull);
  EXPECT_EQ(lane0("  mad.lo.s32 %r1, 7, -3, 100;\n  cvt.u64.u32 %res, %r1;"), 79u);
  EXPECT_EQ(lane0("  mad.hi.u32 %r1, 0x80000000, 4, 1;\n  cvt.u64.u32 %res, %r1;"), 3u);
  EXPECT_EQ(lane0("  mul24.lo.u32 %r1, 0x01000003, 2;\n  cvt.u64.u32 %res, %r1;"), 6u);
  EXPECT_EQ(lane0("  mov.u32 %r2, 0xffffff;\n  mul24.lo.s32 %r1, %r2, 5;\n  cvt.u64.u32 %res, %r1;"), 0xfffffffbu);
  EXPECT_EQ(lane0("  sad.u32 %r1, 3, 10, 100;\n  cvt.u64.u32 %res, %r1;"), 107u);
}

TEST(PtxMachine, DivideRemainderAndEdges) {
  EXPECT_EQ(lane0("  mov.u32 %r2, -7;\n  div.s32 %r1, %r2, 2;\n  cvt.u64.u32 %res, %r1;"), 0xfffffffdu);
  EXPECT_EQ(lane0("  mov.u32 %r2, -7;\n  rem.s32 %r1, %r2, 2;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  div.u32 %r1, 9, 0;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  mov.u32 %r2, 0x80000000;\n  div.s32 %r1, %r2, -1;\n  cvt.u64.u32 %res, %r1;"), 0x80000000u);
  EXPECT_EQ(lane0("  div.u64 %res, 1000000000000, 7;"), 142857142857ull);
  EXPECT_EQ(lane0("  mov.u32 %r2, 0x80000000;\n  abs.s32 %r1, %r2;\n  cvt.u64.u32 %res, %r1;"), 0x80000000u);
  EXPECT_EQ(lane0("  neg.s32 %r1, 5;\n  cvt.u64.u32 %res, %r1;"), 0xfffffffbu);
  EXPECT_EQ(lane0("  mov.u32 %r2, -5;\n  min.s32 %r1, %r2, 3;\n  cvt.u64.u32 %res, %r1;"), 0xfffffffbu);
  EXPECT_EQ(lane0("  mov.u32 %r2, -5;\n  min.u32 %r1, %r2, 3;\n  cvt.u64.u32 %res, %r1;"), 3u);
  EXPECT_EQ(lane0("  mov.u32 %r2, -5;\n  max.relu.s32 %r1, %r2, -3;\n  cvt.u64.u32 %res, %r1;"), 0u);
}

TEST(PtxMachine, BitFieldsPermutesAndFunnels) {
  EXPECT_EQ(lane0("  bfe.u32 %r1, 0xf0f0, 4, 8;\n  cvt.u64.u32 %res, %r1;"), 0x0fu);
  EXPECT_EQ(lane0("  bfe.s32 %r1, 0xf0, 4, 4;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  bfe.u32 %r1, 0xc0000000, 30, 8;\n  cvt.u64.u32 %res, %r1;"), 3u);
  EXPECT_EQ(lane0("  bfe.s32 %r1, 0xc0000000, 30, 8;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  bfe.s32 %r1, 0xffffffff, 4, 0;\n  cvt.u64.u32 %res, %r1;"), 0u);
  EXPECT_EQ(lane0("  bfe.u64 %res, 0xff00000000, 32, 4;"), 0xfu);
  EXPECT_EQ(lane0("  bfi.b32 %r1, 0xff, 0, 8, 4;\n  cvt.u64.u32 %res, %r1;"), 0xf00u);
  EXPECT_EQ(lane0("  bfi.b32 %r1, 0xf, 0, 30, 4;\n  cvt.u64.u32 %res, %r1;"), 0xc0000000u);
  EXPECT_EQ(lane0("  bfi.b32 %r1, 0, 0xffffffff, 4, 8;\n  cvt.u64.u32 %res, %r1;"), 0xfffff00fu);
  EXPECT_EQ(lane0("  prmt.b32 %r1, 0x33221100, 0x77665544, 0x4321;\n  cvt.u64.u32 %res, %r1;"), 0x44332211u);
  EXPECT_EQ(lane0("  prmt.b32 %r1, 0x80, 0, 0x8888;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  prmt.b32 %r1, 0x33221100, 0x77665544, 0x7654;\n  cvt.u64.u32 %res, %r1;"), 0x77665544u);
  EXPECT_EQ(lane0("  prmt.b32.f4e %r1, 0x33221100, 0x77665544, 1;\n  cvt.u64.u32 %res, %r1;"), 0x44332211u);
  EXPECT_EQ(lane0("  prmt.b32.b4e %r1, 0x33221100, 0x77665544, 0;\n  cvt.u64.u32 %res, %r1;"), 0x55667700u);
  EXPECT_EQ(lane0("  prmt.b32.rc16 %r1, 0x33221100, 0, 1;\n  cvt.u64.u32 %res, %r1;"), 0x33223322u);
  EXPECT_EQ(lane0("  lop3.b32 %r1, 0xf0, 0xcc, 0xaa, 0x96;\n  cvt.u64.u32 %res, %r1;"), (0xf0u ^ 0xccu ^ 0xaau));
  EXPECT_EQ(lane0("  lop3.b32 %r1, 0xf0, 0xcc, 0xaa, 0xe8;\n  cvt.u64.u32 %res, %r1;"), 0xe8u);
  EXPECT_EQ(lane0("  lop3.b32 %r1, 0xf0, 0xcc, 0xaa, 0x80;\n  cvt.u64.u32 %res, %r1;"), 0x80u);
  EXPECT_EQ(lane0("  shf.l.wrap.b32 %r1, 0x80000000, 1, 33;\n  cvt.u64.u32 %res, %r1;"), 3u);
  EXPECT_EQ(lane0("  shf.l.clamp.b32 %r1, 0x80000000, 1, 40;\n  cvt.u64.u32 %res, %r1;"), 0x80000000u);
  EXPECT_EQ(lane0("  shf.r.clamp.b32 %r1, 5, 0x1234, 40;\n  cvt.u64.u32 %res, %r1;"), 0x1234u);
  EXPECT_EQ(lane0("  shf.r.wrap.b32 %r1, 0x11223344, 0xaabbccdd, 40;\n  cvt.u64.u32 %res, %r1;"), 0xdd112233u);
  EXPECT_EQ(lane0("  clz.b32 %r1, 1;\n  cvt.u64.u32 %res, %r1;"), 31u);
  EXPECT_EQ(lane0("  clz.b32 %r1, 0;\n  cvt.u64.u32 %res, %r1;"), 32u);
  EXPECT_EQ(lane0("  popc.b64 %r1, -1;\n  cvt.u64.u32 %res, %r1;"), 64u);
  EXPECT_EQ(lane0("  brev.b32 %r1, 1;\n  cvt.u64.u32 %res, %r1;"), 0x80000000u);
  EXPECT_EQ(lane0("  bfind.u32 %r1, 0x10;\n  cvt.u64.u32 %res, %r1;"), 4u);
  EXPECT_EQ(lane0("  bfind.shiftamt.u32 %r1, 0x10;\n  cvt.u64.u32 %res, %r1;"), 27u);
  EXPECT_EQ(lane0("  bfind.s32 %r1, -1;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  bfind.s32 %r1, -2;\n  cvt.u64.u32 %res, %r1;"), 0u);
  EXPECT_EQ(lane0("  fns.b32 %r1, 0xaaaaaaaa, 2, -1;\n  cvt.u64.u32 %res, %r1;"), 1u);
  EXPECT_EQ(lane0("  fns.b32 %r1, 0xaaaaaaaa, 2, 3;\n  cvt.u64.u32 %res, %r1;"), 7u);
  EXPECT_EQ(lane0("  not.b32 %r1, 0x0f;\n  cnot.b32 %r2, 0;\n  add.u32 %r1, %r1, %r2;\n  cvt.u64.u32 %res, %r1;"),
            0xfffffff1u);
  // dp4a: bytes (3, 2, 1, -1) . (1, 1, 1, 1) + 10
  EXPECT_EQ(lane0("  dp4a.s32.s32 %r1, 0xff010203, 0x01010101, 10;\n  cvt.u64.u32 %res, %r1;"), 15u);
  EXPECT_EQ(lane0("  dp4a.u32.u32 %r1, 0xff010203, 0x01010101, 10;\n  cvt.u64.u32 %res, %r1;"), 271u);
  // dp2a.hi: halves (-1, 2) . bytes 2, 3 of b (3, 4)
  EXPECT_EQ(lane0("  dp2a.hi.s32.s32 %r1, 0x0002ffff, 0x04030000, 0;\n  cvt.u64.u32 %res, %r1;"), 5u);
}

// ---- Comparisons ------------------------------------------------------------------------------------
TEST(PtxMachine, SetpSelpAndFriends) {
  auto pred = [](const std::string& setp) {
    return lane0("  " + setp + "\n  selp.u64 %res, 1, 0, %p1;");
  };
  EXPECT_EQ(pred("setp.lt.s32 %p1, -1, 1;"), 1u);
  EXPECT_EQ(pred("setp.lt.u32 %p1, -1, 1;"), 0u);
  EXPECT_EQ(pred("setp.lo.u32 %p1, 1, -1;"), 1u);
  EXPECT_EQ(pred("setp.hs.u64 %p1, -1, 1;"), 1u);
  EXPECT_EQ(pred("setp.ne.b32 %p1, 3, 3;"), 0u);
  EXPECT_EQ(pred("setp.gt.s16 %p1, -1, 0;"), 0u);
  EXPECT_EQ(pred("mov.b32 %f1, 0f7FC00000;\n  setp.ne.f32 %p1, %f1, %f1;"), 0u);
  EXPECT_EQ(pred("mov.b32 %f1, 0f7FC00000;\n  setp.neu.f32 %p1, %f1, %f1;"), 1u);
  EXPECT_EQ(pred("mov.b32 %f1, 0f7FC00000;\n  setp.nan.f32 %p1, %f1, 0f00000000;"), 1u);
  EXPECT_EQ(pred("setp.num.f32 %p1, 0f3F800000, 0f00000000;"), 1u);
  EXPECT_EQ(pred("setp.gtu.f64 %p1, 0d4000000000000000, 0d3FF0000000000000;"), 1u);
  EXPECT_EQ(pred("setp.lt.f32 %p1, -1.5, 1.0;"), 1u);
  // The combine with c and the second destination.
  EXPECT_EQ(pred("setp.eq.u32 %p2, 0, 0;\n  setp.lt.and.s32 %p1, 5, 1, %p2;"), 0u);
  EXPECT_EQ(pred("setp.eq.u32 %p2, 0, 0;\n  setp.lt.or.s32 %p1, 5, 1, %p2;"), 1u);
  EXPECT_EQ(pred("setp.eq.u32 %p2, 0, 0;\n  setp.lt.xor.s32 %p1, 5, 1, !%p2;"), 0u);
  EXPECT_EQ(lane0("  setp.lt.s32 %p1|%p2, 5, 1;\n  selp.u64 %res, 1, 0, %p2;"), 1u);
  EXPECT_EQ(lane0("  set.lt.u32.s32 %r1, -1, 0;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  set.gt.f32.s32 %r1, -1, 0;\n  cvt.u64.u32 %res, %r1;"), 0u);
  EXPECT_EQ(lane0("  slct.u32.s32 %r1, 7, 9, -1;\n  cvt.u64.u32 %res, %r1;"), 9u);
  EXPECT_EQ(lane0("  selp.b32 %r1, -1, 0, 1;\n  cvt.u64.u32 %res, %r1;"), 0xffffffffu);
  EXPECT_EQ(lane0("  setp.eq.u32 %p1, 1, 1;\n  not.pred %p2, %p1;\n  or.pred %p3, %p2, %p1;\n"
                  "  and.pred %p4, %p3, %p2;\n  selp.u64 %res, 1, 2, %p4;"),
            2u);
}

// ---- Divergence and reconvergence --------------------------------------------------------------------
TEST(PtxMachine, IfElseReconverges) {
  const auto v = lanes_of(
      "  and.b32 %r1, %tx, 1;\n"
      "  setp.eq.u32 %p1, %r1, 0;\n"
      "  @%p1 bra EVEN;\n"
      "  mov.u64 %res, 100;\n"
      "  bra.uni JOIN;\n"
      "EVEN:\n"
      "  mov.u64 %res, 200;\n"
      "JOIN:\n"
      "  cvt.u64.u32 %rd1, %tx;\n"
      "  add.u64 %res, %res, %rd1;\n");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], (l % 2 ? 100u : 200u) + l) << l;
}

TEST(PtxMachine, NestedDivergence) {
  const auto v = lanes_of(
      "  setp.lt.u32 %p1, %tx, 16;\n"
      "  @!%p1 bra HIGH;\n"
      "  setp.lt.u32 %p2, %tx, 8;\n"
      "  @%p2 bra LOW8;\n"
      "  mov.u64 %res, 2;\n"
      "  bra.uni INNER;\n"
      "LOW8:\n"
      "  mov.u64 %res, 1;\n"
      "INNER:\n"
      "  add.u64 %res, %res, 10;\n"
      "  bra.uni JOIN;\n"
      "HIGH:\n"
      "  mov.u64 %res, 3;\n"
      "JOIN:\n"
      "  mul.lo.u64 %res, %res, 1000;\n");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], (l < 8 ? 11000u : l < 16 ? 12000u : 3000u)) << l;
}

TEST(PtxMachine, LoopWithDivergentExits) {
  // Each lane sums 0 .. tid: the loop runs tid + 1 times per lane.
  const auto v = lanes_of(
      "  mov.u32 %r1, 0;\n"
      "  mov.u32 %r2, 0;\n"
      "LOOP:\n"
      "  add.u32 %r2, %r2, %r1;\n"
      "  add.u32 %r1, %r1, 1;\n"
      "  setp.le.u32 %p1, %r1, %tx;\n"
      "  @%p1 bra LOOP;\n"
      "  cvt.u64.u32 %res, %r2;\n"
      "  mul.lo.u64 %res, %res, 10;\n");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], 10u * l * (l + 1) / 2) << l;
}

TEST(PtxMachine, BreakOutOfNestedLoopsAndEarlyExit) {
  // Lanes >= 24 exit early; the others break out of an inner loop at a lane-dependent point.
  const auto v = lanes_of(
      "  setp.ge.u32 %p3, %tx, 24;\n"
      "  @%p3 bra OUT;\n"
      "  mov.u32 %r1, 0;\n"
      "  mov.u32 %r3, 0;\n"
      "OUTER:\n"
      "  mov.u32 %r2, 0;\n"
      "INNER:\n"
      "  add.u32 %r3, %r3, 1;\n"
      "  add.u32 %r2, %r2, 1;\n"
      "  setp.eq.u32 %p1, %r2, %tx;\n"
      "  @%p1 bra DONE;\n"
      "  setp.lt.u32 %p2, %r2, 4;\n"
      "  @%p2 bra INNER;\n"
      "  add.u32 %r1, %r1, 1;\n"
      "  setp.lt.u32 %p2, %r1, 3;\n"
      "  @%p2 bra OUTER;\n"
      "DONE:\n"
      "  cvt.u64.u32 %res, %r3;\n"
      "  bra.uni END;\n"
      "OUT:\n"
      "  mov.u64 %res, 777;\n"
      "END:\n");
  for (uint32_t l = 0; l < 32; ++l) {
    uint64_t want;
    if (l >= 24) want = 777;
    else if (l >= 1 && l <= 4) want = l;  // breaks in the first inner loop
    else want = 12;                       // 3 outer x 4 inner, never equal (0 or > 4)
    EXPECT_EQ(v[l], want) << l;
  }
}

// Lanes that leave early inside a nested if do not hold back the reconvergence of the others: the outer
// if's join point sees every lane still running (what a warp-wide bar.sync or shuffle there needs).
TEST(PtxMachine, EarlyLeaversDoNotSplitTheJoin) {
  for (const char* leave : {"  @%p2 bra RETB;\n", "  @%p2 exit;\n"}) {
    SCOPED_TRACE(leave);
    const std::string text = std::string(".version 8.3\n.target sm_90a\n.address_size 64\n"
        ".visible .entry test(.param .u64 out)\n{\n"
        "  .reg .pred %p<4>;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n"
        "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, 0;\n"
        "  setp.lt.u32 %p1, %r1, 16;\n  @!%p1 bra JOIN;\n"
        "  setp.eq.u32 %p2, %r1, 3;\n") + leave +
        "  add.u32 %r2, %r2, 1;\n"
        "JOIN:\n  activemask.b32 %r3;\n  bar.sync 0;\n"
        "  ld.param.u64 %rd1, [out];\n  mul.wide.u32 %rd2, %r1, 8;\n  add.s64 %rd1, %rd1, %rd2;\n"
        "  cvt.u64.u32 %rd3, %r3;\n  shl.b64 %rd3, %rd3, 8;\n  cvt.u64.u32 %rd4, %r2;\n  add.u64 %rd3, %rd3, %rd4;\n"
        "  st.global.u64 [%rd1], %rd3;\nRETB:\n  ret;\n}\n";
    Harness h(text);
    h.run_all();
    for (uint32_t l = 0; l < 32; ++l) {
      if (l == 3) continue;
      EXPECT_EQ(h.out(l), (uint64_t{0xfffffff7u} << 8) | (l < 16 ? 1u : 0u)) << l;
    }
    EXPECT_EQ(h.out(3), 0u);
    ASSERT_EQ(h.requests.size(), 1u);  // one bar.sync for the warp, not one per path
    EXPECT_EQ(h.requests[0].lanes, 31u);
  }
}

// A persistent loop whose only way out is the shared `ret` block (nvcc's shape of CUTLASS's tile loop),
// with a divergent skip and an early return inside: the joins inside the loop still gather every lane
// that is running, iteration after iteration.
TEST(PtxMachine, JoinsInsideALoopThatEndsByLeaving) {
  const std::string text = ".version 8.3\n.target sm_90a\n.address_size 64\n"
      ".visible .entry test(.param .u64 out)\n{\n"
      "  .reg .pred %p<8>;\n  .reg .b32 %r<12>;\n  .reg .b64 %rd<8>;\n"
      "  mov.u32 %r1, %tid.x;\n  mov.u32 %r2, 0;\n  mov.u32 %r9, 0;\n  ld.param.u64 %rd1, [out];\n"
      "LOOP:\n  and.b32 %r3, %r1, 1;\n  setp.eq.u32 %p1, %r3, 0;\n  @%p1 bra JOIN;\n  add.u32 %r9, %r9, 1;\n"
      "JOIN:\n  setp.eq.u32 %p2, %r1, 5;\n  setp.eq.u32 %p3, %r2, 1;\n  and.pred %p4, %p2, %p3;\n  @%p4 bra RETB;\n"
      "  activemask.b32 %r4;\n  bar.sync 0;\n"
      "  mad.lo.u32 %r5, %r1, 3, %r2;\n  mul.wide.u32 %rd2, %r5, 8;\n  add.s64 %rd3, %rd1, %rd2;\n"
      "  cvt.u64.u32 %rd4, %r4;\n  shl.b64 %rd4, %rd4, 8;\n  cvt.u64.u32 %rd5, %r9;\n  add.u64 %rd4, %rd4, %rd5;\n"
      "  st.global.u64 [%rd3], %rd4;\n"
      "  add.u32 %r2, %r2, 1;\n  setp.ge.u32 %p5, %r2, 3;\n  @%p5 bra RETB;\n  bra.uni LOOP;\n"
      "RETB:\n  ret;\n}\n";
  Harness h(text);
  h.run_all();
  ASSERT_EQ(h.requests.size(), 3u);
  EXPECT_EQ(h.requests[0].lanes, 32u);
  EXPECT_EQ(h.requests[1].lanes, 31u);
  EXPECT_EQ(h.requests[2].lanes, 31u);
  for (uint32_t l = 0; l < 32; ++l)
    for (uint32_t it = 0; it < 3; ++it) {
      if (l == 5 && it > 0) continue;
      const uint64_t mask = it == 0 ? 0xffffffffu : 0xffffffdfu;
      EXPECT_EQ(h.out(3 * l + it), (mask << 8) | (l % 2 ? it + 1 : 0)) << l << " " << it;
    }
  // What the warp stored counts every lane that ran each st.global (the L2's footprint, sim/engine).
  EXPECT_EQ(ptx::global_bytes_stored(*h.grid), (32u + 31u + 31u) * 8u);
}

TEST(PtxMachine, ExitDeactivatesLanesForGood) {
  Harness h(kernel("  setp.lt.u32 %p1, %tx, 4;\n  @%p1 exit;\n  mov.u64 %res, 5;\n"));
  h.run_all();
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(l), l < 4 ? 0u : 5u) << l;
}

TEST(PtxMachine, PartialWarp) {
  Harness h(kernel("  activemask.b32 %r1;\n  cvt.u64.u32 %res, %r1;"), 40);
  h.run_all();
  for (uint32_t t = 0; t < 32; ++t) EXPECT_EQ(h.out(t), 0xffffffffu);
  for (uint32_t t = 32; t < 40; ++t) EXPECT_EQ(h.out(t), 0xffu);
}

TEST(PtxMachine, DeviceFunctionCall) {
  const std::string fn =
      ".func (.param .b32 ret) twice_plus(.param .b32 a, .param .b32 b)\n{\n"
      "  .reg .b32 %q<4>;\n  .reg .pred %qp;\n  ld.param.b32 %q1, [a];\n  ld.param.b32 %q2, [b];\n"
      "  setp.lt.u32 %qp, %q1, 8;\n  @%qp bra SMALL;\n  shl.b32 %q3, %q1, 1;\n  add.u32 %q3, %q3, %q2;\n"
      "  st.param.b32 [ret], %q3;\n  ret;\nSMALL:\n  st.param.b32 [ret], 1000;\n  ret;\n}\n";
  const auto v = lanes_of(
      "  {\n  .param .b32 pa;\n  .param .b32 pb;\n  .param .b32 pr;\n"
      "  st.param.b32 [pa], %tx;\n  st.param.b32 [pb], 7;\n"
      "  call.uni (pr), twice_plus, (pa, pb);\n  ld.param.b32 %r1, [pr];\n  }\n"
      "  cvt.u64.u32 %res, %r1;\n",
      fn);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], l < 8 ? 1000u : 2 * l + 7) << l;
}

// ---- Warp collectives -------------------------------------------------------------------------------
TEST(PtxMachine, ShuffleModesExact) {
  // down 1: lane 31 keeps its own value (the source would be past the end).
  auto v = lanes_of("  mul.lo.u32 %r1, %tx, 10;\n  shfl.sync.down.b32 %r2|%p1, %r1, 1, 0x1f, -1;\n"
                    "  selp.u32 %r3, 1, 0, %p1;\n  mul.wide.u32 %res, %r2, 2;\n  cvt.u64.u32 %rd1, %r3;\n"
                    "  add.u64 %res, %res, %rd1;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], l < 31 ? 2 * 10 * (l + 1) + 1 : 2 * 310u) << l;
  // up 3: lanes 0..2 keep theirs.
  v = lanes_of("  shfl.sync.up.b32 %r2, %tx, 3, 0, -1;\n  cvt.u64.u32 %res, %r2;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], l < 3 ? l : l - 3) << l;
  // bfly 5
  v = lanes_of("  shfl.sync.bfly.b32 %r2, %tx, 5, 0x1f, -1;\n  cvt.u64.u32 %res, %r2;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], l ^ 5u) << l;
  // idx: broadcast of lane 5
  v = lanes_of("  shfl.sync.idx.b32 %r2, %tx, 5, 0x1f, -1;\n  cvt.u64.u32 %res, %r2;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], 5u) << l;
  // Segments of 8 (c = (32 - 8) << 8 | 0x1f): idx 2 within each segment, down 1 stays inside it.
  v = lanes_of("  shfl.sync.idx.b32 %r2, %tx, 2, 0x181f, -1;\n  cvt.u64.u32 %res, %r2;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], (l & ~7u) | 2u) << l;
  v = lanes_of("  shfl.sync.down.b32 %r2, %tx, 1, 0x181f, -1;\n  cvt.u64.u32 %res, %r2;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], (l % 8 == 7) ? l : l + 1) << l;
  v = lanes_of("  shfl.sync.up.b32 %r2, %tx, 1, 0x1800, -1;\n  cvt.u64.u32 %res, %r2;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], (l % 8 == 0) ? l : l - 1) << l;
}

TEST(PtxMachine, VoteMatchReduxElect) {
  auto v = lanes_of("  and.b32 %r1, %tx, 1;\n  setp.ne.u32 %p1, %r1, 0;\n  vote.sync.ballot.b32 %r2, %p1, -1;\n"
                    "  cvt.u64.u32 %res, %r2;");
  EXPECT_EQ(v[0], 0xaaaaaaaau);
  v = lanes_of("  setp.lt.u32 %p1, %tx, 32;\n  vote.sync.all.pred %p2, %p1, -1;\n  vote.sync.any.pred %p3, !%p1, -1;\n"
               "  setp.lt.u32 %p4, %tx, 3;\n  vote.sync.uni.pred %p5, %p4, -1;\n"
               "  selp.u64 %res, 1, 0, %p2;\n  selp.u64 %rd1, 2, 0, %p3;\n  add.u64 %res, %res, %rd1;\n"
               "  selp.u64 %rd1, 4, 0, %p5;\n  add.u64 %res, %res, %rd1;");
  EXPECT_EQ(v[7], 1u);
  v = lanes_of("  shr.u32 %r1, %tx, 2;\n  match.any.sync.b32 %r2, %r1, -1;\n  cvt.u64.u32 %res, %r2;");
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(v[l], 0xfull << (4 * (l / 4))) << l;
  v = lanes_of("  match.all.sync.b32 %r2|%p1, 7, -1;\n  selp.u64 %res, 1, 0, %p1;\n  cvt.u64.u32 %rd1, %r2;\n"
               "  shl.b64 %rd1, %rd1, 1;\n  add.u64 %res, %res, %rd1;");
  EXPECT_EQ(v[3], 0x1ffffffffull);
  v = lanes_of("  redux.sync.add.u32 %r1, %tx, -1;\n  mov.u32 %r3, -100;\n  add.u32 %r3, %r3, %tx;\n"
               "  redux.sync.min.s32 %r2, %r3, -1;\n  cvt.u64.u32 %res, %r1;\n  cvt.u64.u32 %rd1, %r2;\n"
               "  shl.b64 %rd1, %rd1, 32;\n  or.b64 %res, %res, %rd1;");
  EXPECT_EQ(v[9], (uint64_t{0xffffff9cu} << 32) | 496u);
  v = lanes_of("  redux.sync.xor.b32 %r1, %tx, 0xff;\n  cvt.u64.u32 %res, %r1;");
  EXPECT_EQ(v[0], 0u ^ 1 ^ 2 ^ 3 ^ 4 ^ 5 ^ 6 ^ 7);
  // elect.sync inside a branch taken by the odd lanes only: the leader is lane 1.
  v = lanes_of("  and.b32 %r1, %tx, 1;\n  setp.eq.u32 %p1, %r1, 0;\n  @%p1 bra SKIP;\n"
               "  elect.sync %r2|%p2, -1;\n  activemask.b32 %r3;\n  selp.u64 %res, 1, 0, %p2;\n"
               "  cvt.u64.u32 %rd1, %r2;\n  shl.b64 %rd1, %rd1, 8;\n  add.u64 %res, %res, %rd1;\n"
               "  cvt.u64.u32 %rd2, %r3;\n  shl.b64 %rd2, %rd2, 16;\n  add.u64 %res, %res, %rd2;\nSKIP:\n");
  for (uint32_t l = 0; l < 32; ++l)
    EXPECT_EQ(v[l], l % 2 ? ((uint64_t{0xaaaaaaaau} << 16) | (1u << 8) | (l == 1 ? 1u : 0u)) : 0u) << l;
}

// ---- Conversions and floats ------------------------------------------------------------------------
TEST(PtxMachine, Conversions) {
  auto u32 = [](const std::string& body) { return lane0(body + "\n  cvt.u64.u32 %res, %r1;"); };
  EXPECT_EQ(u32("  cvt.rzi.s32.f32 %r1, 0fC02CCCCD;"), static_cast<uint32_t>(-2));  // -2.7
  EXPECT_EQ(u32("  cvt.rmi.s32.f32 %r1, 0fC02CCCCD;"), static_cast<uint32_t>(-3));
  EXPECT_EQ(u32("  cvt.rpi.s32.f32 %r1, 0fC02CCCCD;"), static_cast<uint32_t>(-2));
  EXPECT_EQ(u32("  cvt.rni.s32.f32 %r1, 0f40200000;"), 2u);  // 2.5 -> 2 (ties to even)
  EXPECT_EQ(u32("  cvt.rni.s32.f32 %r1, 0f40600000;"), 4u);  // 3.5 -> 4
  EXPECT_EQ(u32("  cvt.rzi.s32.f32 %r1, 0f501502F9;"), 0x7fffffffu);  // 1e10 saturates
  EXPECT_EQ(u32("  cvt.rzi.u32.f32 %r1, 0fBF800000;"), 0u);           // -1 -> 0
  EXPECT_EQ(u32("  cvt.rzi.u32.f32 %r1, 0f7FC00000;"), 0u);           // NaN -> 0
  EXPECT_EQ(u32("  cvt.sat.u8.s32 %r1, 300;"), 255u);
  EXPECT_EQ(u32("  cvt.sat.s8.s32 %r1, -300;"), 0xffffff80u);
  EXPECT_EQ(u32("  cvt.s32.s8 %r1, 0x80;"), 0xffffff80u);
  EXPECT_EQ(u32("  cvt.u32.u8 %r1, 0x180;"), 0x80u);
  EXPECT_EQ(u32("  cvt.u16.u32 %h1, 0x12345;\n  cvt.u32.u16 %r1, %h1;"), 0x2345u);
  EXPECT_EQ(lane0("  cvt.s64.s32 %res, -1;"), ~0ull);
  EXPECT_EQ(lane0("  cvt.u64.u32 %res, -1;"), 0xffffffffull);
  EXPECT_EQ(u32("  cvt.rn.f16.f32 %h1, 0f3F800000;\n  cvt.u32.u16 %r1, %h1;"), 0x3c00u);
  EXPECT_EQ(u32("  cvt.rn.f16.f32 %h1, 0f477FF000;\n  cvt.u32.u16 %r1, %h1;"), 0x7c00u);  // 65520 -> inf
  EXPECT_EQ(u32("  cvt.rn.f16.f32 %h1, 0f33800000;\n  cvt.u32.u16 %r1, %h1;"), 0x0001u);  // 2^-24
  EXPECT_EQ(u32("  mov.b16 %h1, 0x3555;\n  cvt.f32.f16 %f1, %h1;\n  mov.b32 %r1, %f1;"), 0x3eaaa000u);
  EXPECT_EQ(u32("  cvt.rn.bf16.f32 %h1, 0f3F808000;\n  cvt.u32.u16 %r1, %h1;"), 0x3f80u);  // tie to even
  EXPECT_EQ(u32("  cvt.rn.f16x2.f32 %r1, 0f3F800000, 0f40000000;"), 0x3c004000u);
  EXPECT_EQ(u32("  cvt.rn.f32.s32 %f1, -3;\n  mov.b32 %r1, %f1;"), 0xc0400000u);
  EXPECT_EQ(u32("  cvt.rn.f32.u64 %f1, 16777217;\n  mov.b32 %r1, %f1;"), 0x4b800000u);
  EXPECT_EQ(u32("  cvt.rni.f32.f32 %f1, 0f40200000;\n  mov.b32 %r1, %f1;"), 0x40000000u);
  EXPECT_EQ(lane0("  cvt.f64.f32 %fd1, 0f3FC00000;\n  mov.b64 %res, %fd1;"), 0x3ff8000000000000ull);
  EXPECT_EQ(u32("  cvt.rn.f32.f64 %f1, 0d3FF8000000000000;\n  mov.b32 %r1, %f1;"), 0x3fc00000u);
  // fp8 / fp4: 1.0 and -2.0 packed, then back to f16x2.
  EXPECT_EQ(u32("  cvt.rn.satfinite.e4m3x2.f32 %h1, 0f3F800000, 0fC0000000;\n  cvt.u32.u16 %r1, %h1;"), 0x38c0u);
  EXPECT_EQ(u32("  cvt.rn.satfinite.e4m3x2.f32 %h1, 0f3F800000, 0fC0000000;\n  cvt.rn.f16x2.e4m3x2 %r1, %h1;"),
            0x3c00c000u);
  EXPECT_EQ(u32("  cvt.rn.satfinite.e5m2x2.f32 %h1, 0f47800000, 0f3F800000;\n  cvt.u32.u16 %r1, %h1;"), 0x7b3cu);
  EXPECT_EQ(u32("  mov.b16 %h1, 0x2c;\n  .reg .b8 %b<2>;\n  mov.b16 {%b0, %b1}, %h1;\n"
                "  cvt.rn.f16x2.e2m1x2 %r1, %b0;"),
            0x3c00c000u);  // 0x2c: low nibble 0xc (-2.0) to the low half, high nibble 2 (1.0) to the high
}

TEST(PtxMachine, FloatArithmetic) {
  auto f32 = [](const std::string& body) {
    return std::bit_cast<float>(static_cast<uint32_t>(lane0(body + "\n  mov.b32 %r1, %f1;\n  cvt.u64.u32 %res, %r1;")));
  };
  EXPECT_EQ(f32("  add.f32 %f1, 1.5, 2.25;"), 3.75f);
  EXPECT_EQ(f32("  sub.rn.ftz.f32 %f1, 1.5, 2.25;"), -0.75f);
  EXPECT_EQ(f32("  fma.rn.f32 %f1, 2.0, 3.0, 0.5;"), 6.5f);
  EXPECT_EQ(f32("  mul.f32 %f1, 0f7F7FFFFF, 2.0;"), INFINITY);
  EXPECT_EQ(f32("  mov.b32 %f2, 0f7FC00000;\n  min.f32 %f1, %f2, 1.0;"), 1.0f);
  EXPECT_TRUE(std::isnan(f32("  mov.b32 %f2, 0f7FC00000;\n  max.NaN.f32 %f1, %f2, 1.0;")));
  EXPECT_EQ(f32("  add.sat.f32 %f1, 0.75, 0.5;"), 1.0f);
  EXPECT_EQ(f32("  neg.f32 %f1, 2.0;"), -2.0f);
  EXPECT_EQ(f32("  abs.f32 %f1, -2.0;"), 2.0f);
  EXPECT_EQ(f32("  ex2.approx.ftz.f32 %f1, 3.0;"), 8.0f);
  EXPECT_EQ(f32("  lg2.approx.f32 %f1, 8.0;"), 3.0f);
  EXPECT_EQ(f32("  rcp.rn.f32 %f1, 4.0;"), 0.25f);
  EXPECT_EQ(f32("  sqrt.rn.f32 %f1, 16.0;"), 4.0f);
  EXPECT_EQ(f32("  rsqrt.approx.f32 %f1, 16.0;"), 0.25f);
  EXPECT_EQ(f32("  div.rn.f32 %f1, 1.0, 8.0;"), 0.125f);
  EXPECT_EQ(f32("  copysign.f32 %f1, -1.0, 3.0;"), -3.0f);
  EXPECT_EQ(lane0("  add.rn.f16x2 %r1, 0x3c004000, 0x3c003c00;\n  cvt.u64.u32 %res, %r1;"), 0x40004200u);
  EXPECT_EQ(lane0("  fma.rn.bf16 %h1, 0x3f80, 0x4000, 0x3f80;\n  cvt.u64.u16 %res, %h1;"), 0x4040u);
  // sm_100's f32x2: two f32 in a 64-bit register, low half first (1*2+1 = 3, 2*3+1 = 7).
  EXPECT_EQ(lane0("  fma.rn.f32x2 %res, 0x400000003F800000, 0x4040000040000000, 0x3F8000003F800000;"),
            0x40E0000040400000ull);
  // A .b128 register (cluster launch control's response) packs two 64-bit halves; it keeps the low one.
  EXPECT_EQ(lane0("  .reg .b128 %q<2>;\n  mov.b64 %rd1, 77;\n  mov.b64 %rd2, 0;\n  mov.b128 %q1, {%rd1, %rd2};\n"
                  "  mov.b128 {%res, %rd3}, %q1;"),
            77u);
  EXPECT_EQ(lane0("  testp.notanumber.f32 %p1, 0f7FC00000;\n  selp.u64 %res, 1, 0, %p1;"), 1u);
  EXPECT_EQ(lane0("  testp.subnormal.f32 %p1, 0f00000001;\n  selp.u64 %res, 1, 0, %p1;"), 1u);
  EXPECT_EQ(lane0("  add.f64 %fd1, 0d3FF0000000000000, 0d3FF0000000000000;\n  mov.b64 %res, %fd1;"),
            0x4000000000000000ull);
}

// The exhaustive search copies a run's memory at every choice: a copy shares the global pages until
// either side writes one, through any path (a cached page-table entry included), and the digest
// follows every write.
TEST(GlobalMemoryCopy, ACopySharesPagesUntilEitherSideWritesThem) {
  GlobalMemory a;
  a.add_region(kOut, 3 * GlobalMemory::kPageBytes, "out");
  const uint64_t one = 1, two = 2;
  a.write(kOut + 8, &one, 8);
  const GlobalMemory::Region* ra = a.find(kOut, 8);
  ASSERT_NE(ra, nullptr);
  ASSERT_NE(a.page_for_write(*ra, kOut), nullptr);  // a writable entry in a's page table
  GlobalMemory b(a);
  EXPECT_EQ(a.digest(), b.digest());
  b.write(kOut + 8, &two, 8);
  uint64_t got = 0;
  a.read(kOut + 8, &got, 8);
  EXPECT_EQ(got, 1u) << "the copy's write reached the original";
  b.read(kOut + 8, &got, 8);
  EXPECT_EQ(got, 2u);
  EXPECT_NE(a.digest(), b.digest());
  // The original reads through its region's table (caching the page it shares), then writes there
  // after the copy: the copy must not see it, and the original's next read must.
  GlobalMemory c(a);  // shares a's page again
  const GlobalMemory::Region& r = *a.find(kOut, 8);
  EXPECT_EQ(a.page_for_read(r, kOut)[16], 0);
  std::memcpy(a.page_for_write(r, kOut) + 16, &two, 8);
  c.read(kOut + 16, &got, 8);
  EXPECT_EQ(got, 0u) << "the original's write reached the copy";
  EXPECT_EQ(a.page_for_read(r, kOut)[16], 2) << "the original reads a stale page";
  // Overlapping regions (a buffer given twice): a page one region's table caches for reading, taken
  // for writing through the other's, is read fresh through both.
  GlobalMemory o;
  constexpr uint64_t kP = GlobalMemory::kPageBytes;
  o.add_region(kOut, 2 * kP, "x");
  o.add_region(kOut + kP, 2 * kP, "y");
  const GlobalMemory::Region* rx = o.find(kOut, 2 * kP);
  const GlobalMemory::Region* ry = o.find(kOut + kP, 2 * kP);
  ASSERT_TRUE(rx && ry && rx != ry);
  o.write(kOut + kP, &one, 8);
  GlobalMemory shares(o);
  EXPECT_EQ(o.page_for_read(*ry, kOut + kP)[0], 1);
  o.page_for_write(*rx, kOut + kP)[0] = 2;
  EXPECT_EQ(o.page_for_read(*ry, kOut + kP)[0], 2) << "a region's table kept the page the copy shares";
  EXPECT_EQ(shares.page_for_read(*shares.find(kOut + kP, 8), kOut + kP)[0], 1);
  // A digest taken, then a write through the cached path: the next digest sees it.
  const uint64_t d = a.digest();
  std::memcpy(a.page_for_write(*a.find(kOut, 8), kOut) + 24, &two, 8);
  EXPECT_NE(a.digest(), d);
}

}  // namespace
}  // namespace pipesim::ptx
