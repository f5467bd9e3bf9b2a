// Native issue-throughput probe (no interpreter, issue 21): how many SM cycles one warp instruction of
// each class of PTX instruction holds its SM sub-partition for, when nothing waits on latency. These are
// the per-class issue costs of docs/calibration.md (the PTX interpreter's scoreboard); latprobe.cu
// measures the latencies.
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/tputprobe.cu -o tputprobe && ./tputprobe
//
// One CTA of W warps (W / 4 per sub-partition) on one SM; every thread runs 8 independent chains of one
// class (each instruction reads its own chain's last result), unrolled, in inline PTX so that the
// compiler cannot fold them. With 8 chains and 2 or more warps per sub-partition no instruction waits
// for its operands, so the time is the sub-partition's: cycles per warp instruction per sub-partition =
// the CTA's cycles x 4 / (warps x instructions per warp), less the loop's own share (an empty body).
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "probe.cuh"

namespace {

constexpr int kUnroll = 32;  // iterations of the 8 chains per loop body
constexpr int kIters = 64;   // loop trips

enum Class {
  Empty, AddS32, XorB32, ShlB32, Lop3, Prmt, MadLo, SetpSelp, MinS32, AddF32, FmaF32, FmaF16x2, CvtF16x2F32,
  CvtE4m3x2F32, CvtF16x2E4m3x2, CvtF32F16, CvtF32S32, CvtS32F32, Popc, Shfl, Ex2, kClasses
};
const char* const kName[] = {"empty", "add.s32", "xor.b32", "shl.b32", "lop3.b32", "prmt.b32", "mad.lo.s32",
                             "setp.lt.s32+selp.b32", "min.s32", "add.f32", "fma.rn.f32", "fma.rn.f16x2",
                             "cvt.rn.f16x2.f32", "cvt.rn.satfinite.e4m3x2.f32", "cvt.rn.f16x2.e4m3x2",
                             "cvt.f32.f16", "cvt.rn.f32.s32", "cvt.rzi.s32.f32", "popc.b32", "shfl.sync.idx.b32",
                             "ex2.approx.ftz.f32"};
const int kPerStep[] = {1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

// One step of one chain: r (integer) or f (float) is the chain's value; a, b come from parameters.
template <int C>
__device__ __forceinline__ void step(uint32_t& r, float& f, uint32_t a, uint32_t b) {
  if constexpr (C == AddS32) asm volatile("add.s32 %0, %0, %1;" : "+r"(r) : "r"(a));
  else if constexpr (C == XorB32) asm volatile("xor.b32 %0, %0, %1;" : "+r"(r) : "r"(a));
  else if constexpr (C == ShlB32) asm volatile("shl.b32 %0, %0, %1;" : "+r"(r) : "r"(b));
  else if constexpr (C == Lop3) asm volatile("lop3.b32 %0, %0, %1, %2, 0x96;" : "+r"(r) : "r"(a), "r"(b));
  else if constexpr (C == Prmt) asm volatile("prmt.b32 %0, %0, %1, 0x5140;" : "+r"(r) : "r"(a));
  else if constexpr (C == MadLo) asm volatile("mad.lo.s32 %0, %0, %1, %2;" : "+r"(r) : "r"(a), "r"(b));
  else if constexpr (C == SetpSelp)
    asm volatile("{ .reg .pred q; setp.lt.s32 q, %0, %1; selp.b32 %0, %2, %0, q; }" : "+r"(r) : "r"(a), "r"(b));
  else if constexpr (C == MinS32) asm volatile("min.s32 %0, %0, %1;" : "+r"(r) : "r"(a));
  else if constexpr (C == AddF32) asm volatile("add.f32 %0, %0, %0;" : "+f"(f));
  else if constexpr (C == FmaF32) asm volatile("fma.rn.f32 %0, %0, %0, %0;" : "+f"(f));
  else if constexpr (C == FmaF16x2) asm volatile("fma.rn.f16x2 %0, %0, %1, %0;" : "+r"(r) : "r"(a));
  else if constexpr (C == CvtF16x2F32)
    asm volatile("{ .reg .f32 t; mov.b32 t, %0; cvt.rn.f16x2.f32 %0, t, t; }" : "+r"(r));
  else if constexpr (C == CvtE4m3x2F32)
    asm volatile("{ .reg .f32 t; .reg .b16 h; mov.b32 t, %0; cvt.rn.satfinite.e4m3x2.f32 h, t, t; mov.b32 %0, {h, h}; }" : "+r"(r));
  else if constexpr (C == CvtF16x2E4m3x2)
    asm volatile("{ .reg .b16 h, g; mov.b32 {h, g}, %0; cvt.rn.f16x2.e4m3x2 %0, h; }" : "+r"(r));
  else if constexpr (C == CvtF32F16)
    asm volatile("{ .reg .b16 h, g; mov.b32 {h, g}, %1; cvt.f32.f16 %0, h; }" : "=f"(f) : "r"(__float_as_uint(f)));
  else if constexpr (C == CvtF32S32) asm volatile("cvt.rn.f32.s32 %0, %1;" : "=f"(f) : "r"(__float_as_uint(f)));
  else if constexpr (C == CvtS32F32) asm volatile("cvt.rzi.s32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(r)));
  else if constexpr (C == Popc) asm volatile("popc.b32 %0, %0;" : "+r"(r));
  else if constexpr (C == Shfl) asm volatile("shfl.sync.idx.b32 %0, %0, %1, 31, -1;" : "+r"(r) : "r"(a));
  else if constexpr (C == Ex2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(f));
}

struct Out {
  unsigned long long cycles, sink;
};

template <int C>
__global__ void run(Out* out, uint32_t a, uint32_t b) {
  uint32_t r[8];
  float f[8];
  for (int k = 0; k < 8; ++k) {
    r[k] = a * (threadIdx.x + k);
    f[k] = 1.0f + 1e-3f * float(threadIdx.x + k);
  }
  __syncthreads();
  const uint64_t c0 = clk();
  for (int i = 0; i < kIters; ++i) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int k = 0; k < 8; ++k) step<C>(r[k], f[k], a, b);
    }
  }
  uint64_t dep = 0;
  for (int k = 0; k < 8; ++k) dep += r[k] + __float_as_uint(f[k]);
  __syncthreads();
  const uint64_t c1 = clk();
  if (threadIdx.x == 0) *out = {c1 - c0, dep};
}

using Kernel = void (*)(Out*, uint32_t, uint32_t);
template <int... C>
constexpr auto table(std::integer_sequence<int, C...>) {
  return std::array<Kernel, sizeof...(C)>{run<C>...};
}

}  // namespace

int main() {
  const auto kernels = table(std::make_integer_sequence<int, kClasses>{});
  Out* out = nullptr;
  CK(cudaMalloc(&out, sizeof(Out)));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("== tputprobe on %s: one CTA, 8 independent chains per thread, %d x %d steps each\n", prop.name,
              kIters, kUnroll);
  for (const int warps : {8, 16, 32}) {
    double empty = 0;
    for (int c = 0; c < kClasses; ++c) {
      std::vector<double> v;
      Out o{};
      for (int rep = 0; rep < 5; ++rep) {
        kernels[c]<<<1, 32 * warps>>>(out, 3u, 1u);
        CK(cudaGetLastError());
        CK(cudaMemcpy(&o, out, sizeof o, cudaMemcpyDeviceToHost));
        // Warp instructions per sub-partition: warps / 4 x steps x 8 chains x instructions per step.
        const double per_smsp = double(warps) / 4 * kIters * kUnroll * 8 * kPerStep[c];
        v.push_back(double(o.cycles) / per_smsp);
      }
      const double cyc = median(v);
      if (c == Empty) empty = cyc;
      std::printf("RESULT class=\"%s\" warps=%d cycles_per_warp_instruction=%.2f net=%.2f\n", kName[c], warps, cyc,
                  c == Empty ? cyc : cyc - empty);
    }
  }
  CK(cudaFree(out));
  return 0;
}
