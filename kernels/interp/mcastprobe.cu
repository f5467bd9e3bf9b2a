// Native probe: which SM pays for a TMA copy's ~70 ns, the one that issues it or the ones it lands in?
// (docs/calibration.md, tma_copy_min_ns: one SM's back-to-back small copies land ~70 ns apart whatever
// their size; in that probe the SM that issues is the SM that receives.)
//
// A cluster of C CTAs, one per SM. Every CTA receives `copies` copies of `bytes` in one burst, into
// distinct buffers, completing on one mbarrier:
//   self:  each CTA issues all of its own copies (C x `rounds`);
//   mcast: each CTA issues one copy per round, multicast to the whole cluster (as CUTLASS splits a box
//          that a cluster shares: each CTA loads a slice and multicasts it), so it issues 1/C of what
//          it receives.
// If a copy costs its receiver the 70 ns, both take copies x 70 ns; if it costs its issuer, mcast takes
// 1/C of self. The source is an L2-resident window (warmed by the first launch), few clusters at once,
// so neither the DRAM nor the L2's rate limits.
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/mcastprobe.cu -o mcastprobe && ./mcastprobe
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.cuh"

namespace ptx = cuda::ptx;

namespace {

constexpr size_t kWindow = size_t{4} << 20;  // L2-resident source
constexpr int kSmemMax = 200 * 1024;

struct Stat {
  unsigned long long t0, t1, issue_cyc;
};

__global__ void burst(const uint8_t* src, uint32_t bytes, int rounds, int multicast, Stat* out) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bar;
  const uint32_t c = ptx::get_sreg_cluster_nctarank();
  const uint32_t r = ptx::get_sreg_cluster_ctarank();
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  // Every CTA's barrier is initialised before any copy may complete bytes on it.
  ptx::barrier_cluster_arrive();
  ptx::barrier_cluster_wait();
  unsigned long long t0 = 0, issue = 0;
  if (threadIdx.x == 0) {
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar,
                                         uint32_t(rounds) * c * bytes);
    t0 = gt();
    const uint64_t c0 = clk();
    const uint64_t base = uint64_t(blockIdx.x) * rounds * c * bytes;
    for (int i = 0; i < rounds; ++i) {
      if (multicast) {
        // Slice r of round i lands at the same offset in every CTA of the cluster.
        const uint64_t slot = uint64_t(i) * c + r;
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem + slot * bytes,
                           src + (base + slot * bytes) % kWindow, bytes, &bar, uint16_t((1u << c) - 1));
      } else {
        for (uint32_t q = 0; q < c; ++q) {
          const uint64_t slot = uint64_t(i) * c + q;
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem + slot * bytes,
                             src + (base + slot * bytes) % kWindow, bytes, &bar);
        }
      }
    }
    issue = clk() - c0;
    while (!ptx::mbarrier_try_wait_parity(&bar, 0u)) {
    }
    out[blockIdx.x] = Stat{t0, gt(), issue};
  }
  __syncthreads();
  // No CTA leaves while copies it issued may still land in another.
  ptx::barrier_cluster_arrive();
  ptx::barrier_cluster_wait();
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("== mcastprobe on %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  uint8_t* src = nullptr;
  CK(cudaMalloc(&src, kWindow));
  CK(cudaMemset(src, 1, kWindow));
  CK(cudaFuncSetAttribute(burst, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax));
  CK(cudaFuncSetAttribute(burst, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  Stat* out = nullptr;
  CK(cudaMalloc(&out, sizeof(Stat) * 132));
  std::printf("%7s %8s %6s %7s %6s %12s %12s %14s\n", "mode", "cluster", "CTAs", "bytes", "copies", "burst ns",
              "ns per copy", "issue ns (lane)");
  std::printf("   copies: what each CTA receives; burst: its first issue to its barrier's completion (median CTA,\n"
              "   median of 5 launches after 1 warm-up); ns per copy: burst / copies\n");
  for (int ctas : {8, 32})
    for (uint32_t bytes : {2048u, 4096u})  // 32 copies of 8 KiB would not fit a CTA's 200 KiB
      for (int c : {1, 2, 4})
        for (int mc : {0, 1}) {
          if (c == 1 && mc) continue;
          const int copies = 32;
          const int rounds = copies / c;
          if (size_t(copies) * bytes > size_t(kSmemMax)) continue;
          const ClusterLaunch launch(unsigned(ctas), 32, size_t(copies) * bytes, unsigned(c));
          const cudaLaunchConfig_t& cfg = launch.cfg;
          std::vector<double> burst_ns, issue_ns;
          for (int rep = 0; rep < 6; ++rep) {
            CK(cudaLaunchKernelEx(&cfg, burst, static_cast<const uint8_t*>(src), bytes, rounds, mc, out));
            CK(cudaDeviceSynchronize());
            if (rep == 0) continue;
            std::vector<Stat> h(static_cast<size_t>(ctas));
            CK(cudaMemcpy(h.data(), out, sizeof(Stat) * size_t(ctas), cudaMemcpyDeviceToHost));
            std::vector<double> b, is;
            for (auto& s : h) {
              b.push_back(double(s.t1 - s.t0));
              is.push_back(double(s.issue_cyc));
            }
            burst_ns.push_back(median(b));
            issue_ns.push_back(median(is));
          }
          const double bn = median(burst_ns);
          std::printf("%7s %8d %6d %7u %6d %12.0f %12.1f %14.0f\n", mc ? "mcast" : "self", c, ctas, bytes, copies, bn,
                      bn / copies, median(issue_ns) / 1.98);
        }
  return 0;
}
