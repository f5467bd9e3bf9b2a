// Native instruction-latency probe (no interpreter, issue 21): how long a warp waits for the result of
// one instruction before an instruction that reads it can issue, per class of PTX instruction. These
// are the latencies of docs/calibration.md's `ptx_latency_*` rows (the PTX interpreter's scoreboard).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/latprobe.cu -o latprobe && ./latprobe
//
// One CTA of one warp; lane 0 times a chain of N dependent instructions of one class (each reads the
// previous one's result) with clock64, in inline PTX so that the compiler cannot fold the chain.
// Operands the compiler cannot know come from kernel parameters. Printed per class: SM cycles per
// link (the chain's cycles / N, less the loop's own cost measured on an empty chain) and ns per link
// at the SM clock read during the run (clock64 over %globaltimer). Memory chains chase pointers: shared
// (a 4 KiB ring), global through L1 (`ld.global.ca`, a 4 KiB ring, L1-resident after one lap), global
// from the L2 (`ld.global.cg`, a 32 KiB ring) and from DRAM (`ld.global.cg`, a 1 GiB ring, 4 KiB
// strides, after 256 MiB of other writes have evicted it from the L2). Last, 64-bit integer multiplies
// (mul.lo.u64; mul.hi.u64 with an add.s64), which the SM runs as sequences of 32-bit IMADs.
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#include "probe.cuh"

namespace {

constexpr int kLinks = 256;  // links per timed chain (one unrolled block)
constexpr int kReps = 8;     // the block, repeated in a loop

enum Chain {
  Empty, AddXor, Imad, Ffma, Add64, MulWide, CvtF16, CvtInt, SetpSelp, Shfl, Rcp, Ex2, Prmt, DivS32, RemS32, DivU32,
  LdShared, LdGlobalL1, LdGlobalL2, LdGlobalDram, Mul64, MulHi64, kChains
};
const char* const kName[] = {"empty", "add.s32+xor.b32", "mad.lo.s32", "fma.rn.f32", "add.s64",
                             "mul.wide.s32", "cvt.rn.f16.f32+cvt.f32.f16", "cvt.rn.f32.s32+cvt.rzi.s32.f32",
                             "setp.ne.s32+selp.s32", "shfl.sync.idx.b32", "rcp.approx.f32", "ex2.approx.ftz.f32",
                             "prmt.b32", "div.s32+add.s32", "rem.s32+add.s32", "div.u32+add.u32",
                             "ld.shared.u32", "ld.global.ca.u64", "ld.global.cg.u64 (L2)",
                             "ld.global.cg.u64 (DRAM)", "mul.lo.u64", "mul.hi.u64+add.s64"};
// Instructions per link (a link of two instructions reports per instruction too). The divisions are
// one link each with an add that keeps the dividend from reaching zero: less one add.s32 (AddXor's
// per-instruction figure) for the division alone.
const int kPerLink[] = {1, 2, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

struct Out {
  unsigned long long cycles, ns, sink;
};

template <int C>
__device__ __forceinline__ void link(uint32_t& r, uint64_t& p, float& f, uint32_t a, uint32_t b, float fa) {
  if constexpr (C == AddXor) {
    asm volatile("add.s32 %0, %0, %1;\n\txor.b32 %0, %0, %2;" : "+r"(r) : "r"(a), "r"(b));
  } else if constexpr (C == Imad) {
    asm volatile("mad.lo.s32 %0, %0, %1, %2;" : "+r"(r) : "r"(a), "r"(b));
  } else if constexpr (C == Ffma) {
    asm volatile("fma.rn.f32 %0, %0, %1, %1;" : "+f"(f) : "f"(fa));
  } else if constexpr (C == Add64) {
    asm volatile("add.s64 %0, %0, %1;" : "+l"(p) : "l"(uint64_t(a) << 32 | b));
  } else if constexpr (C == MulWide) {
    asm volatile("{ .reg .s64 t; mul.wide.s32 t, %0, %1; cvt.u32.u64 %0, t; }" : "+r"(r) : "r"(a));
  } else if constexpr (C == CvtF16) {
    asm volatile("{ .reg .b16 h; cvt.rn.f16.f32 h, %0; cvt.f32.f16 %0, h; }" : "+f"(f));
  } else if constexpr (C == CvtInt) {
    asm volatile("{ .reg .f32 t; cvt.rn.f32.s32 t, %0; cvt.rzi.s32.f32 %0, t; }" : "+r"(r));
  } else if constexpr (C == SetpSelp) {
    asm volatile("{ .reg .pred q; setp.ne.s32 q, %0, %1; selp.s32 %0, %2, %1, q; }" : "+r"(r) : "r"(a), "r"(b));
  } else if constexpr (C == Shfl) {
    asm volatile("shfl.sync.idx.b32 %0, %0, %1, 31, -1;" : "+r"(r) : "r"(a));
  } else if constexpr (C == Rcp) {
    asm volatile("rcp.approx.f32 %0, %0;" : "+f"(f));
  } else if constexpr (C == Ex2) {
    asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f));
  } else if constexpr (C == Prmt) {
    asm volatile("prmt.b32 %0, %0, %1, 0x1032;" : "+r"(r) : "r"(a));
  } else if constexpr (C == DivS32) {
    asm volatile("div.s32 %0, %0, %1;\n\tadd.s32 %0, %0, %2;" : "+r"(r) : "r"(a), "r"(b));
  } else if constexpr (C == RemS32) {
    asm volatile("rem.s32 %0, %0, %1;\n\tadd.s32 %0, %0, %2;" : "+r"(r) : "r"(a), "r"(b));
  } else if constexpr (C == DivU32) {
    asm volatile("div.u32 %0, %0, %1;\n\tadd.u32 %0, %0, %2;" : "+r"(r) : "r"(a), "r"(b));
  } else if constexpr (C == LdShared) {
    asm volatile("ld.shared.u32 %0, [%0];" : "+r"(r));
  } else if constexpr (C == LdGlobalL1) {
    asm volatile("ld.global.ca.u64 %0, [%0];" : "+l"(p));
  } else if constexpr (C == LdGlobalL2 || C == LdGlobalDram) {
    asm volatile("ld.global.cg.u64 %0, [%0];" : "+l"(p));
  } else if constexpr (C == Mul64) {
    // 64-bit integer multiplies (CUTLASS's tile schedulers' FastDivmod): emulated by 32-bit IMADs.
    asm volatile("mul.lo.u64 %0, %0, %1;" : "+l"(p) : "l"(uint64_t(a) << 32 | b));
  } else if constexpr (C == MulHi64) {
    asm volatile("mul.hi.u64 %0, %0, %1;\n\tadd.s64 %0, %0, %1;" : "+l"(p) : "l"(uint64_t(a) << 32 | b));
  }
}

template <int C>
__global__ void chain(Out* out, const uint64_t* ring, uint32_t a, uint32_t b, float fa) {
  __shared__ uint32_t sring[1024];
  for (int i = threadIdx.x; i < 1024; i += 32) sring[i] = static_cast<uint32_t>(__cvta_generic_to_shared(&sring[(i + 33) % 1024]));
  __syncwarp();
  uint32_t r = C == LdShared ? sring[0] : a ^ threadIdx.x;
  uint64_t p = C >= LdGlobalL1 ? ring[0] : b;
  float f = fa + threadIdx.x;
  // shfl reads lane (own + a) % 32: a chain of the same source lane would fold (idempotent).
  if constexpr (C == Shfl) a = (threadIdx.x + a) & 31;
  // One untimed lap warms the caches (and the instruction cache).
  for (int i = 0; i < kLinks; ++i) link<C>(r, p, f, a, b, fa);
  __syncwarp();
  const uint64_t c0 = clk(), t0 = gt();
  for (int k = 0; k < kReps; ++k) {
#pragma unroll
    for (int i = 0; i < kLinks; ++i) link<C>(r, p, f, a, b, fa);
  }
  // Read the chain's end before the clock so the last link is waited for.
  const uint64_t dep = r + p + static_cast<uint64_t>(f);
  asm volatile("" ::"l"(dep));
  const uint64_t c1 = clk(), t1 = gt();
  if (threadIdx.x == 0) *out = {c1 - c0, t1 - t0, dep};
}

using Kernel = void (*)(Out*, const uint64_t*, uint32_t, uint32_t, float);
template <int... C>
constexpr auto table(std::integer_sequence<int, C...>) {
  return std::array<Kernel, sizeof...(C)>{chain<C>...};
}

// A pointer ring of `bytes` bytes at `stride` bytes per hop (device memory).
uint64_t* make_ring(size_t bytes, size_t stride) {
  uint64_t* d = nullptr;
  CK(cudaMalloc(&d, bytes));
  const size_t n = bytes / stride, step = stride / sizeof(uint64_t);
  std::vector<uint64_t> h(bytes / sizeof(uint64_t), 0);
  for (size_t i = 0; i < n; ++i) h[i * step] = reinterpret_cast<uint64_t>(d + ((i + 1) % n) * step);
  CK(cudaMemcpy(d, h.data(), bytes, cudaMemcpyHostToDevice));
  return d;
}

}  // namespace

int main() {
  const auto kernels = table(std::make_integer_sequence<int, kChains>{});
  uint64_t* l1 = make_ring(4096, 128);
  uint64_t* l2 = make_ring(size_t(32) << 10, 128);  // 256 hops: the warm-up lap covers it
  uint64_t* dram = make_ring(size_t(1) << 30, 4096);
  const size_t flush_bytes = size_t(256) << 20;
  void* flush = nullptr;
  CK(cudaMalloc(&flush, flush_bytes));
  Out* out = nullptr;
  CK(cudaMalloc(&out, sizeof(Out)));
  std::printf("# latprobe: one warp, chains of %d x %d dependent links, cycles per link less the empty loop's\n",
              kReps, kLinks);
  double empty = 0;
  for (int c = 0; c < kChains; ++c) {
    const uint64_t* ring = c == LdGlobalL1 ? l1 : c == LdGlobalL2 ? l2 : c == LdGlobalDram ? dram : l1;
    if (c == LdGlobalDram) CK(cudaMemset(flush, c, flush_bytes));  // evict the ring from the L2
    std::vector<double> cyc;
    Out o{};
    for (int rep = 0; rep < 5; ++rep) {
      kernels[c]<<<1, 32>>>(out, ring, 3u, 5u, 1.0001f);
      CK(cudaGetLastError());
      CK(cudaMemcpy(&o, out, sizeof o, cudaMemcpyDeviceToHost));
      cyc.push_back(double(o.cycles) / (kReps * kLinks));
    }
    std::sort(cyc.begin(), cyc.end());
    const double per_link = cyc[cyc.size() / 2];
    if (c == Empty) empty = per_link;
    const double ghz = double(o.cycles) / double(o.ns);
    const double net = c == Empty ? per_link : per_link - empty;
    std::printf("RESULT chain=\"%s\" cycles_per_link=%.2f net_cycles_per_link=%.2f per_instruction=%.2f "
                "sm_ghz=%.3f ns_per_link=%.2f\n",
                kName[c], per_link, net, net / kPerLink[c], ghz, net / ghz);
  }
  CK(cudaFree(out));
  return 0;
}
