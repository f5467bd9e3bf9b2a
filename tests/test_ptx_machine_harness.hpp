// The test harness of the SIMT interpreter's tests (test_ptx_machine*.cpp): a kernel template whose
// threads store one u64 result each, and a runner that drives warps to their end answering requests.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "verify/ptx/machine.hpp"
#include "verify/ptx/machine_impl.hpp"
#include "verify/ptx/parser.hpp"

namespace pipesim::ptx::testing {

constexpr uint64_t kOut = kBufferBase;             // per thread: one u64 result
constexpr uint64_t kAux = kBufferBase + 0x100000;  // input data for the tests, 64 KiB
constexpr uint64_t kAuxBytes = 0x10000;

// A kernel: `decls` at module scope, `body` inside the entry (after the standard registers), then every
// thread stores %res to out[global thread index].
inline std::string kernel(const std::string& body, const std::string& decls = "", const std::string& entry_extra = "") {
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
    launch.buffers.push_back(BufferDesc{"out", 32ull * threads * ctas, kOut, ""});  // room for 4 results a thread
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
inline std::vector<uint64_t> lanes_of(const std::string& body, const std::string& decls = "", uint32_t threads = 32) {
  Harness h(kernel(body, decls), threads);
  h.run_all();
  std::vector<uint64_t> v;
  for (uint32_t i = 0; i < threads; ++i) v.push_back(h.out(i));
  return v;
}
inline uint64_t lane0(const std::string& body, const std::string& decls = "") { return lanes_of(body, decls)[0]; }

}  // namespace pipesim::ptx::testing
