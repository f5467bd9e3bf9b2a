// What a warp's shared-memory load or store costs on the H100 by how many wavefronts (passes of the
// 32 banks) it takes: 1-, 4- and 16-byte accesses, conflict-free and 2- to 32-way conflicted, and
// ldmatrix / stmatrix .x1 and .x4, from
// 1 to 32 warps of one CTA on one SM. Each warp runs `iters` rounds of 16 unrolled accesses to one
// pattern; columns: cycles per access for one warp (median over warps) and the SM's wavefronts per
// cycle (all warps' accesses x the pattern's wavefronts / the longest warp's cycles).
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/smemprobe.cu -o smemprobe && ./smemprobe
#include <string>

#include "kernels/interp/probe.cuh"

namespace {

constexpr int kUnroll = 16, kIters = 64, kMaxWarps = 32;

// Pattern: the byte address of lane l is l * stride; access k of a round adds k * 1024 (whole bank
// rows, so every access meets the same banks).
// kBytes 1, 4, 16: ld / st of that many bytes a lane; -1, -4: ldmatrix / stmatrix .x1 / .x4 (lane l
// gives row l's address; .x1 uses lanes 0-7).
// kFmas: independent fma.rn.f32 after each access (the mix table: does an access hold its sub-partition's
// issue slot, or only its own warp?).
template <int kBytes, bool kStore, int kFmas = 0>
__global__ void access(uint32_t stride, uint64_t* cycles) {
  extern __shared__ __align__(16) uint8_t smem[];
  const uint32_t lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const uint32_t base = uint32_t(__cvta_generic_to_shared(smem)) + lane * stride;
  uint32_t v = lane, acc = 0;
  float f[8];
  for (int i = 0; i < 8; ++i) f[i] = float(lane + i);
  __syncthreads();
  const uint64_t c0 = clk();
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const uint32_t a = base + uint32_t(k) * 1024;
      if constexpr (kStore) {
        if constexpr (kBytes == 1) asm volatile("st.shared.u8 [%0], %1;" ::"r"(a), "r"(v) : "memory");
        if constexpr (kBytes == 4) asm volatile("st.shared.u32 [%0], %1;" ::"r"(a), "r"(v) : "memory");
        if constexpr (kBytes == 16) asm volatile("st.shared.v4.u32 [%0], {%1, %1, %1, %1};" ::"r"(a), "r"(v) : "memory");
        if constexpr (kBytes == -1) asm volatile("stmatrix.sync.aligned.m8n8.x1.shared.b16 [%0], {%1};" ::"r"(a), "r"(v) : "memory");
        if constexpr (kBytes == -4)
          asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %1, %1, %1};" ::"r"(a), "r"(v) : "memory");
      } else {
        uint32_t r = 0;
        if constexpr (kBytes == 1) asm volatile("ld.volatile.shared.u8 %0, [%1];" : "=r"(r) : "r"(a) : "memory");
        if constexpr (kBytes == 4) asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(r) : "r"(a) : "memory");
        if constexpr (kBytes == 16) {
          uint32_t q1, q2, q3;
          asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r), "=r"(q1), "=r"(q2), "=r"(q3) : "r"(a) : "memory");
          r ^= q1 ^ q2 ^ q3;
        }
        if constexpr (kBytes == -1) asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(a) : "memory");
        if constexpr (kBytes == -4) {
          uint32_t q1, q2, q3;
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];" : "=r"(r), "=r"(q1), "=r"(q2), "=r"(q3) : "r"(a) : "memory");
          r ^= q1 ^ q2 ^ q3;
        }
        acc += r;  // independent loads: only their issue is timed (.volatile: ptxas would hoist plain ones
                   // out of the loop, as it did in this probe's first form)
      }
#pragma unroll
      for (int i = 0; i < kFmas; ++i) f[i % 8] = fmaf(f[i % 8], 1.0001f, 0.5f);
    }
    v += 1;
  }
  const uint64_t c1 = clk();
  if (lane == 0) cycles[warp] = c1 - c0;
  if (acc == 0xdeadbeef) cycles[kMaxWarps] = acc;  // keeps the loads
  float s = 0;
  for (int i = 0; i < 8; ++i) s += f[i];
  if (s == -1.0f) cycles[kMaxWarps] = 1;  // keeps the fmas
}

struct Pattern {
  const char* what;
  int bytes;
  uint32_t stride;
  int wavefronts;  // the CUDA C++ Programming Guide's rule: passes of the banks the access needs
};

template <int kBytes, bool kStore, int kFmas = 0>
void run(const Pattern& p, uint64_t* d_cycles, int sm_clock_khz) {
  auto kernel = access<kBytes, kStore, kFmas>;
  const int smem = 16 * 1024 + 32 * 1024;
  CK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::printf(" %-5s %-42s %3d ", kStore ? "st" : "ld", kFmas ? (std::string(p.what) + " + " + std::to_string(kFmas) + " fma").c_str() : p.what,
              p.wavefronts);
  for (int warps : {1, 4, 8, 16, 32}) {
    kernel<<<1, 32 * warps, smem>>>(p.stride, d_cycles);
    kernel<<<1, 32 * warps, smem>>>(p.stride, d_cycles);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<uint64_t> h(static_cast<size_t>(warps));
    CK(cudaMemcpy(h.data(), d_cycles, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    std::vector<double> per;
    uint64_t longest = 0;
    for (uint64_t c : h) per.push_back(double(c) / (kIters * kUnroll)), longest = std::max(longest, c);
    const double sm_rate = double(warps) * kIters * kUnroll * p.wavefronts / double(longest);
    std::printf("  %7.1f %5.2f", median(per), sm_rate);
  }
  std::printf("\n");
  (void)sm_clock_khz;
}

}  // namespace

int main() {
  uint64_t* d_cycles = nullptr;
  CK(cudaMalloc(&d_cycles, sizeof(uint64_t) * (kMaxWarps + 1)));
  int khz = 0;
  CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
  std::printf("== smemprobe: one CTA, W warps, each 64 x 16 accesses of one pattern; cyc = SM cycles per access a warp\n");
  std::printf("   (median over warps), wf/c = the SM's wavefronts per cycle\n");
  std::printf(" op    pattern                                     wf    W=1 cyc wf/c    W=4 cyc wf/c    W=8 cyc wf/c   W=16 cyc wf/c   W=32 cyc wf/c\n");
  const Pattern u8[] = {{"u8, lanes 1 B apart", 1, 1, 1},   {"u8, lanes 4 B apart", 1, 4, 1},
                        {"u8, lanes 16 B apart (4-way)", 1, 16, 4}, {"u8, lanes 128 B apart (32-way)", 1, 128, 32}};
  const Pattern u32[] = {{"u32, lanes 4 B apart", 4, 4, 1}, {"u32, lanes 8 B apart (2-way)", 4, 8, 2},
                         {"u32, lanes 32 B apart (8-way)", 4, 32, 8}};
  const Pattern v4[] = {{"v4.u32, lanes 16 B apart", 16, 16, 4}, {"v4.u32, lanes 32 B apart (2-way)", 16, 32, 8}};
  for (const Pattern& p : u8) run<1, true>(p, d_cycles, khz), run<1, false>(p, d_cycles, khz);
  for (const Pattern& p : u32) run<4, true>(p, d_cycles, khz), run<4, false>(p, d_cycles, khz);
  for (const Pattern& p : v4) run<16, true>(p, d_cycles, khz), run<16, false>(p, d_cycles, khz);
  const Pattern x1{"matrix .x1, rows 16 B apart", -1, 16, 1}, x4{"matrix .x4, rows 16 B apart", -4, 16, 4};
  run<-1, true>(x1, d_cycles, khz), run<-1, false>(x1, d_cycles, khz);
  run<-4, true>(x4, d_cycles, khz), run<-4, false>(x4, d_cycles, khz);
  // The mix: each access followed by independent fmas. If an access held its sub-partition's issue
  // slot for its 4 cycles, two warps a sub-partition would take (4 + F) x 2 cycles an access each;
  // if only its own warp, (1 + F) x 2 (the fmas' issue) or the access's own 4.2, whichever is more.
  const Pattern u32c{"u32, lanes 4 B apart", 4, 4, 1}, v4c{"v4.u32, lanes 16 B apart", 16, 16, 4};
  run<4, true, 4>(u32c, d_cycles, khz), run<4, true, 8>(u32c, d_cycles, khz), run<4, false, 8>(u32c, d_cycles, khz);
  run<16, true, 8>(v4c, d_cycles, khz), run<16, false, 8>(v4c, d_cycles, khz), run<16, false, 16>(v4c, d_cycles, khz);
  CK(cudaFree(d_cycles));
  return 0;
}
