// The SIMT interpreter (verify/ptx/machine.hpp): small PTX programs run on one warp or a few, with the
// requests answered by hand, asserting exact results per lane: integer and bit operations at their
// edges, comparisons, divergence and reconvergence, warp collectives, every memory space, atomics,
// special registers, how synchronisation becomes requests, errors and faults. Where nvcc exists, the
// project's GEMV kernel (sm_90a and sm_100a) must decode; and the speed per warp-instruction.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "verify/ptx/machine.hpp"
#include "verify/ptx/machine_impl.hpp"
#include "verify/ptx/parser.hpp"

namespace pipesim::ptx {
namespace {

constexpr uint64_t kOut = kBufferBase;             // per thread: one u64 result
constexpr uint64_t kAux = kBufferBase + 0x100000;  // input data for the tests, 64 KiB
constexpr uint64_t kAuxBytes = 0x10000;

// A kernel: `decls` at module scope, `body` inside the entry (after the standard registers), then every
// thread stores %res to out[global thread index].
std::string kernel(const std::string& body, const std::string& decls = "", const std::string& entry_extra = "") {
  return ".version 8.3\n.target sm_90a\n.address_size 64\n" + decls +
         "\n.visible .entry test(.param .u64 out, .param .u64 aux, .param .u32 n)" + entry_extra + "\n{\n"
         "  .reg .pred %p<16>;\n  .reg .b16 %h<16>;\n  .reg .b32 %r<64>;\n  .reg .b64 %rd<64>;\n"
         "  .reg .f32 %f<16>;\n  .reg .f64 %fd<8>;\n  .reg .b64 %res;\n  .reg .b64 %outp;\n  .reg .b32 %tx;\n"
         "  .reg .b32 %gtid;\n"
         "  mov.u32 %tx, %tid.x;\n"
         "  mov.u64 %res, 0;\n" +
         body +
         "\n  mov.u32 %gtid, %ctaid.x;\n  mov.u32 %r63, %ntid.x;\n  mad.lo.u32 %gtid, %gtid, %r63, %tx;\n"
         "  ld.param.u64 %outp, [out];\n  mul.wide.u32 %rd63, %gtid, 8;\n  add.s64 %outp, %outp, %rd63;\n"
         "  st.global.u64 [%outp], %res;\n  ret;\n}\n";
}

struct Harness {
  Module module;
  std::shared_ptr<const Program> prog;
  std::unique_ptr<GridState> grid;
  Launch launch;
  std::vector<SyncRequest> requests;  // every non-Compute request, in order
  uint64_t computes = 0;

  explicit Harness(const std::string& text, uint32_t threads = 32, uint32_t ctas = 1, uint32_t cluster = 1,
                   uint64_t dynamic_smem = 0, std::function<void(Launch&)> tweak = {}) {
    module = parse_module("test.ptx", text);
    launch.grid = {ctas, 1, 1};
    launch.block = {threads, 1, 1};
    launch.cluster = {cluster, 1, 1};
    launch.dynamic_smem = dynamic_smem;
    launch.buffers.push_back(BufferDesc{"out", 8ull * threads * ctas, kOut, ""});
    launch.buffers.push_back(BufferDesc{"aux", kAuxBytes, kAux, ""});
    launch.param_bytes.resize(20);
    const uint64_t o = kOut, a = kAux;
    std::memcpy(launch.param_bytes.data(), &o, 8);
    std::memcpy(launch.param_bytes.data() + 8, &a, 8);
    const uint32_t n = threads;
    std::memcpy(launch.param_bytes.data() + 16, &n, 4);
    if (tweak) tweak(launch);
    prog = decode(module, module.functions.front().is_entry ? module.functions.front() : *entry_of(module));
    grid = make_grid(prog, launch);
  }
  static const Function* entry_of(const Module& m) {
    for (const Function& f : m.functions)
      if (f.is_entry) return &f;
    return nullptr;
  }
  CtaPlace place(uint32_t cta) const {
    const uint32_t cs = launch.cluster[0];
    return CtaPlace{cta, cta / cs, cta % cs, cta};
  }
  // Runs one warp to its end; `on` answers requests (default: arrive token 0, waits pass).
  void run(uint32_t cta, uint32_t warp, const std::function<uint64_t(const SyncRequest&)>& on = {}) {
    Warp w(*grid, place(cta), warp);
    run(w, on);
  }
  bool allow_faults = false;
  void run(Warp& w, const std::function<uint64_t(const SyncRequest&)>& on = {}) {
    SyncRequest r;
    int guard = 0;
    while (w.step(r, 0.0)) {
      ASSERT_LT(++guard, 1000000) << "runaway warp";
      if (r.kind == SyncKind::Compute) {
        ++computes;
        continue;
      }
      if (r.kind == SyncKind::Trap && !allow_faults) {
        ADD_FAILURE() << "the warp faulted: " << (w.fault() ? w.fault()->kind + ": " + w.fault()->message : "?")
                      << " at instruction " << r.instr;
      }
      requests.push_back(r);
      uint64_t v = 1;
      if (on) v = on(r);
      else if (r.kind == SyncKind::MbarArrive) v = 0;
      w.answer(v);
    }
  }
  void run_all(const std::function<uint64_t(const SyncRequest&)>& on = {}) {
    const uint32_t warps = (launch.threads() + 31) / 32;
    for (uint32_t c = 0; c < launch.ctas(); ++c)
      for (uint32_t w = 0; w < warps; ++w) run(c, w, on);
  }
  uint64_t out(uint32_t gtid) const {
    uint64_t v = 0;
    EXPECT_TRUE(read_memory(*grid, 0, kOut + 8ull * gtid, &v, 8));
    return v;
  }
  void write_aux(uint64_t off, const void* p, uint64_t n) { grid->global.write(kAux + off, p, n); }
};

// One warp of 32 threads; the results per lane.
std::vector<uint64_t> lanes_of(const std::string& body, const std::string& decls = "", uint32_t threads = 32) {
  Harness h(kernel(body, decls), threads);
  h.run_all();
  std::vector<uint64_t> v;
  for (uint32_t i = 0; i < threads; ++i) v.push_back(h.out(i));
  return v;
}
uint64_t lane0(const std::string& body, const std::string& decls = "") { return lanes_of(body, decls)[0]; }

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
  Warp w(*h.grid, h.place(0), 0);  // kept alive: a CTA's shared memory goes with its last warp
  h.run(w);
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
  expect(4, SyncKind::MbarArrive, bar, 32, 16);      // the even lanes, count 2 each
  expect(5, SyncKind::MbarArrive, bar + 8, 32, 16);  // the odd lanes
  expect(6, SyncKind::MbarArriveExpectTx, bar + 16, 4096, 1);
  expect(7, SyncKind::MbarTestWait, bar, 1, 32);
  expect(8, SyncKind::MbarTryWait, bar, 1, 32);      // the token's parity
  expect(9, SyncKind::MbarExpectTx, bar + 24, 128 * 32, 32);
  expect(10, SyncKind::MbarCompleteTx, bar + 24, 64 * 32, 32);
  expect(11, SyncKind::MbarArrive, cluster_address(0, static_cast<uint32_t>(bar)), 1, 1);
  expect(12, SyncKind::MbarArriveDrop, bar + 24, 32, 32);
  expect(13, SyncKind::MbarInval, bar + 8, 0, 1);
  for (uint32_t l = 0; l < 32; ++l) EXPECT_EQ(h.out(l), 2u + (7u << 8)) << l;
  EXPECT_EQ(r[2].instr + 1, r[3].instr);
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
                   "DONE:\n",
                   decls),
            32, 2, 2, 0, tweak);
  h.run(0, 0);
  const auto& r = h.requests;
  const uint64_t tile = h.prog->symbols[0].addr, full = h.prog->symbols[1].addr;
  ASSERT_EQ(r.size(), 7u);
  EXPECT_EQ(r[0].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[0].a, 4096);
  EXPECT_EQ(r[0].b, 0);
  EXPECT_EQ(r[0].dst, tile);
  EXPECT_EQ(r[0].bar, full);
  EXPECT_EQ(r[0].tensormap, 0u);
  EXPECT_EQ(r[0].lanes, 1u);
  EXPECT_EQ(r[1].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[1].b, 3);
  EXPECT_EQ(r[2].kind, SyncKind::TmaLoad);
  EXPECT_EQ(r[2].a, 256);
  EXPECT_EQ(r[2].dst, tile + 4096);
  EXPECT_EQ(r[2].tensormap, UINT32_MAX);
  EXPECT_EQ(r[3].kind, SyncKind::BulkStore);
  EXPECT_EQ(r[3].a, 256);
  EXPECT_EQ(r[4].kind, SyncKind::BulkStore);
  EXPECT_EQ(r[4].a, 4096);
  EXPECT_EQ(r[4].tensormap, 0u);
  EXPECT_EQ(r[5].kind, SyncKind::BulkCommit);
  EXPECT_EQ(r[6].kind, SyncKind::BulkWait);
  EXPECT_EQ(r[6].a, 0);
  EXPECT_EQ(r[6].b, 1);
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
  expect_decode_error("tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;",
                      "unsupported instruction 'tcgen05.alloc");
  expect_decode_error("add.u64 %rd1, %r1, 1;", "too narrow", "%r1");
  expect_decode_error("add.u32 %r1, %p1, 1;", "is a predicate", "%p1");
  expect_decode_error("ld.global.v4.u32 {%r1, %r2}, [%rd1];", "elements");
  expect_decode_error("mul.u32 %r1, %r1, 1;", "needs .lo");
  expect_decode_error("bar.warp.sync;", "operands");
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
  EXPECT_EQ(lane0("  testp.notanumber.f32 %p1, 0f7FC00000;\n  selp.u64 %res, 1, 0, %p1;"), 1u);
  EXPECT_EQ(lane0("  testp.subnormal.f32 %p1, 0f00000001;\n  selp.u64 %res, 1, 0, %p1;"), 1u);
  EXPECT_EQ(lane0("  add.f64 %fd1, 0d3FF0000000000000, 0d3FF0000000000000;\n  mov.b64 %res, %fd1;"),
            0x4000000000000000ull);
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
  const auto t0 = std::chrono::steady_clock::now();
  while (w.step(r, 0.0)) {
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const double per = ns / static_cast<double>(w.instructions());
  std::printf("[ speed    ] %.1f ns per warp-instruction (%llu instructions, 32 lanes)\n", per,
              static_cast<unsigned long long>(w.instructions()));
  RecordProperty("ns_per_warp_instruction", std::to_string(per));
  EXPECT_GE(w.instructions(), 5ull * kIters);
  EXPECT_LT(per, 1000.0);  // a sanity bound (sanitizer builds); the target is <= 30 ns in a release build
}

}  // namespace
}  // namespace pipesim::ptx
