// What the DRAM delivers to every SM streaming 2-D tensor copies, by the order the copies walk memory
// (issue 21). Stream-K's 256x4096x8192 GEMM (CUTLASS 49) reads B's 64 MiB from the DRAM at 1.82 TB/s
// (Nsight Compute, 54 % of peak) where the model serves misses at 3.06 TB/s, a rate fitted to 1-D bulk
// copies of contiguous bytes. Its boxes are K-major: 128-byte rows 16 KiB apart (K = 8192 halves).
//
// Every CTA (one per SM) reads the same 2 MiB region of its own, 128 boxes of 128 B x H rows through a
// ring of `depth` copies. Only the order differs: the tensor's row pitch P
// is 128 B (each box is H*128 contiguous bytes, the region read front to back) up to 64 KiB (each box
// takes 128 B from each of H rows P bytes apart, the region read in column strips, as a K-major tile).
// `mcast`: the same in CTA pairs sharing each box by multicast (each loads half), as 49's 2x1 cluster
// shares B, at the same DRAM bytes as `own` boxes of H/2 rows.
// `hot` (the mix table): each stage also brings `hot` boxes from a 4 MiB window every CTA reads (a
// GEMM's A at M = 256, K-major, 16 KiB rows), which stays in the L2: do hits and misses share the L2's
// rate to the SMs (the model serves hits at l2_slow_bytes_per_ns and misses at the DRAM's, apart)? Not
// answered: the producer's loop (runtime divisions for the coordinates) sets the pace of these rings
// (docs/runs/dramprobe-mix-h100-2026-11-28.txt).
// Printed per case: the launch's span (first CTA start to last CTA end, median of 5 launches after one
// of warm-up) and the DRAM bytes (each byte once) over it, a CTA's median time and the latest CTA start; the regions of successive launches differ, so no launch finds its
// bytes in the 50 MB L2.
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/dramprobe.cu -lcuda -o dramprobe && ./dramprobe [mix]
#include <cuda.h>
#include <cuda/ptx>

#include <string_view>

#include "kernels/interp/probe.cuh"

namespace ptx = cuda::ptx;

namespace {

constexpr uint32_t kBoxW = 128;              // bytes per box row, as a 64-half K block
constexpr uint32_t kBoxes = 128;             // per CTA: 2 MiB at H = 128
constexpr uint64_t kRegionsBytes = 6ull << 30;  // regions for every launch: 6 GiB of fresh bytes
constexpr int kMaxDepth = 12;
constexpr uint32_t kHotPitch = 16384, kHotRows = 256;  // the mix table's hot window: 4 MiB

__host__ __device__ constexpr uint64_t bands_per_cta(uint32_t pitch) {
  return pitch / kBoxW >= kBoxes ? 1 : kBoxes / (pitch / kBoxW);
}

// The consumer's arrival on the peer CTA's empty barrier: as CUTLASS's ClusterBarrier::arrive(cta_id)
// (default semantics, release at CTA scope), or with release at cluster scope (`cluster_release`).
__device__ __forceinline__ void arrive_on_peer(uint64_t* bar, uint32_t rank, bool cluster_release) {
  uint32_t local = uint32_t(__cvta_generic_to_shared(bar)), remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
  if (cluster_release) asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
  else asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}

// Warp 0's lane 0 produces (waits for a slot to be free, arms its full barrier, issues the copy) and
// warp 1's lane 0 consumes (waits for the copy, frees the slot), as CUTLASS's producer and consumer.
// `mcast`: CTAs in pairs (clusters of 2) share each box, as CUTLASS's 2x1 cluster shares B: each CTA
// loads its half (h / 2 rows) multicast to both, and a slot is free once both CTAs' consumers saw it.
// `mcast` 2: the same pairs and handshake, each CTA loading both halves itself (no multicast); 3: as 1
// with the peer's release at cluster scope.
__global__ void __launch_bounds__(64) stream(const __grid_constant__ CUtensorMap map, const __grid_constant__ CUtensorMap hot_map,
                                             uint32_t pitch, uint32_t h, int depth, int mcast, uint32_t hot, uint64_t first_band,
                                             uint64_t* stamps) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t full[kMaxDepth], empty[kMaxDepth];
  const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    stamps[2 * blockIdx.x] = gt();
    for (int j = 0; j < depth; ++j) {
      ptx::mbarrier_init(&full[j], 1u);
      ptx::mbarrier_init(&empty[j], mcast ? 2u : 1u);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (mcast) {
    ptx::barrier_cluster_arrive();
    ptx::barrier_cluster_wait();
  }
  if (lane != 0) return;
  const uint32_t rank = mcast ? ptx::get_sreg_cluster_ctarank() : 0;
  const uint32_t bytes = kBoxW * h, per_band = pitch / kBoxW;  // boxes across one band of h rows
  const bool fresh = hot < 256;  // hot + 256: the stage's `hot` boxes only, no fresh one
  hot &= 255;
  const uint32_t slot = bytes * (fresh + hot);
  const uint32_t across = per_band > kBoxes ? kBoxes : per_band;
  // A pitch past 16 KiB: the CTA reads the first 16 KiB of each of its H rows (the same bytes).
  const uint64_t band0 = first_band + uint64_t(mcast ? blockIdx.x / 2 : blockIdx.x) * bands_per_cta(pitch);
  for (uint32_t n = 0; n < kBoxes; ++n) {
    const int j = int(n % uint32_t(depth));
    if (warp == 1) {
      while (!ptx::mbarrier_try_wait_parity(&full[j], (n / uint32_t(depth)) & 1)) {
      }
      (void)ptx::mbarrier_arrive(&empty[j]);
      if (mcast) arrive_on_peer(&empty[j], rank ^ 1, mcast == 3);
      continue;
    }
    if (n >= uint32_t(depth))
      while (!ptx::mbarrier_try_wait_parity(&empty[j], (n / uint32_t(depth) - 1) & 1)) {
      }
    (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[j], slot);
    uint8_t* dst = smem + size_t(j) * slot;
    for (uint32_t k = 0; k < hot; ++k) {  // the hot window: 128 columns of boxes, kHotRows / h bands
      const uint32_t i = n * hot + k + blockIdx.x * 7;
      const int32_t at[2] = {int32_t((i % 128) * kBoxW), int32_t((i / 128 % (kHotRows / h)) * h)};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, dst + bytes * (fresh + k), &hot_map, at, &full[j]);
    }
    if (!fresh) continue;
    const int32_t col = int32_t((n % across) * kBoxW), row = int32_t((band0 + n / across) * h);
    if (mcast == 2) {  // the pair's handshake without the multicast: each CTA loads both halves itself
      for (uint32_t half = 0; half < 2; ++half) {
        const int32_t at[2] = {col, row + int32_t(half * h / 2)};
        ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, dst + half * bytes / 2, &map, at, &full[j]);
      }
    } else if (mcast) {
      const int32_t at[2] = {col, row + int32_t(rank * h / 2)};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, dst + rank * bytes / 2, &map, at, &full[j], uint16_t(3));
    } else {
      const int32_t at[2] = {col, row};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, dst, &map, at, &full[j]);
    }
  }
  if (mcast) {  // the peer may still write into this CTA's slots and arrive on its barriers
    ptx::barrier_cluster_arrive();
    ptx::barrier_cluster_wait();
  }
  if (warp == 1) stamps[2 * blockIdx.x + 1] = gt();
}


}  // namespace

int main(int argc, char** argv) {
  const bool mix_only = argc > 1 && std::string_view(argv[1]) == "mix";  // the mix table alone
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  uint8_t* src = nullptr;
  CK(cudaMalloc(&src, kRegionsBytes));
  CK(cudaMemset(src, 1, kRegionsBytes));
  uint64_t* stamps = nullptr;
  CK(cudaMalloc(&stamps, 2 * sizeof(uint64_t) * size_t(sms)));
  CK(cudaFuncSetAttribute(stream, cudaFuncAttributeMaxDynamicSharedMemorySize, kMaxDepth * kBoxW * 128));
  uint8_t* hot_src = nullptr;
  CK(cudaMalloc(&hot_src, size_t(kHotPitch) * kHotRows));
  CK(cudaMemset(hot_src, 2, size_t(kHotPitch) * kHotRows));
  std::printf("== dramprobe on %s, %d SMs\n", prop.name, sms);
  std::printf("%6s %8s %5s %5s %5s %10s %10s %10s %10s %10s\n", "mode", "pitch B", "H", "depth", "CTAs", "MiB", "span us", "GB/s", "CTA us",
              "late us");
  // mcast H: pairs of CTAs each load H/2 rows multicast; the same DRAM bytes as "own" at H/2.
  for (int mcast : {0, 1, 2, 3})
    for (uint32_t h : {128u, 64u})
      if (!mix_only)
      for (int grid : {sms, sms / 2})
        for (int depth : {4, 8, 12})
          for (uint32_t pitch : {128u, 1024u, 4096u, 16384u, 65536u}) {
            if (mcast && (depth == 12 || pitch == 1024u || pitch == 4096u)) continue;
            const uint64_t rows = kRegionsBytes / pitch;
            const CUtensorMap map = u8_tensor_map(src, pitch, rows, kBoxW, mcast ? h / 2 : h, CU_TENSOR_MAP_SWIZZLE_128B);
            const uint64_t bands_per_launch = uint64_t(mcast ? grid / 2 : grid) * bands_per_cta(pitch);
            const uint64_t launches = rows / h / bands_per_launch;
            std::vector<double> span, cta, late;
            for (int rep = 0; rep < 6; ++rep) {
              // A fresh region each launch (and each case starts elsewhere in the cycle).
              const uint64_t first = (uint64_t(rep) + uint64_t(pitch) + uint64_t(depth) * 7 + h) % launches * bands_per_launch;
              ClusterLaunch l(unsigned(grid), 64, size_t(depth) * kBoxW * h, mcast ? 2 : 1);
              CK(cudaLaunchKernelEx(&l.cfg, stream, map, map, pitch, h, depth, mcast, 0u, first, stamps));
              CK(cudaDeviceSynchronize());
              if (rep == 0) continue;
              span.push_back(launch_span_ns(stamps, grid));
              std::vector<uint64_t> t(2 * size_t(grid));
              CK(cudaMemcpy(t.data(), stamps, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
              const uint64_t first_start = *std::min_element(t.begin(), t.end());
              for (int c = 0; c < grid; ++c) {
                cta.push_back(double(t[2 * size_t(c) + 1] - t[2 * size_t(c)]));
                late.push_back(double(t[2 * size_t(c)] - first_start));
              }
            }
            const double unique = double(mcast ? grid / 2 : grid) * kBoxes * kBoxW * h, us = median(span) / 1e3;
            std::printf("%6s %8u %5u %5d %5d %10.0f %10.2f %10.0f %10.2f %10.2f\n", mcast == 3 ? "mc/rc" : mcast == 2 ? "pair" : mcast ? "mcast" : "own", pitch, h, depth,
                        grid, unique / (1 << 20), us, unique / us / 1e3, median(cta) / 1e3, *std::max_element(late.begin(), late.end()) / 1e3);
          }
  // The mix: K-major boxes of 64 rows (8 KiB) fresh from the DRAM, each stage with `hot` more from the
  // 4 MiB window; 6 stages; DRAM and hot bytes over the span, and their sum (what the L2 gave the SMs).
  std::printf("\n== mix: each stage one fresh box (K-major, 16 KiB rows, 64 rows: 8 KiB) and `hot` boxes of the 4 MiB window\n");
  std::printf("%6s %5s %5s %5s %10s %10s %10s %10s %10s %9s\n", "mode", "hot", "depth", "CTAs", "span us", "DRAM GB/s", "hot GB/s", "sum GB/s",
              "CTA us", "stage ns");
  // Rows: (mcast, hot, fresh, SMs); fresh 0: the hot boxes alone.
  struct Mix {
    int mcast;
    uint32_t hot;
    bool fresh;
    int grid;
  };
  std::vector<Mix> mixes;
  for (int grid : {sms, sms / 4 & ~1})  // even: clusters of 2
    for (int mcast : {0, 1})
      for (uint32_t hot : {0u, 1u, 3u}) mixes.push_back({mcast, hot, true, grid});
  for (int grid : {sms, sms / 4 & ~1})  // even: clusters of 2
    for (uint32_t hot : {1u, 3u}) mixes.push_back({0, hot, false, grid});
  for (const Mix& m : mixes) {
    const int depth = 6, mcast = m.mcast;
    const uint32_t pitch = 16384, h = 64, grid = uint32_t(m.grid), hot = m.hot;
    const uint64_t rows = kRegionsBytes / pitch;
    const CUtensorMap map = u8_tensor_map(src, pitch, rows, kBoxW, mcast ? h / 2 : h, CU_TENSOR_MAP_SWIZZLE_128B);
    const CUtensorMap hot_map = u8_tensor_map(hot_src, kHotPitch, kHotRows, kBoxW, h, CU_TENSOR_MAP_SWIZZLE_128B);
    const uint64_t bands_per_launch = uint64_t(mcast ? grid / 2 : grid) * bands_per_cta(pitch);
    const uint64_t launches = rows / h / bands_per_launch;
    std::vector<double> span, cta;
    for (int rep = 0; rep < 6; ++rep) {
      const uint64_t first = (uint64_t(rep) + hot * 3 + uint64_t(grid) * 7 + uint64_t(mcast) * 11) % launches * bands_per_launch;
      ClusterLaunch l(grid, 64, size_t(depth) * kBoxW * h * (m.fresh + hot), mcast ? 2 : 1);
      CK(cudaLaunchKernelEx(&l.cfg, stream, map, hot_map, pitch, h, depth, mcast, hot + (m.fresh ? 0u : 256u), first, stamps));
      CK(cudaDeviceSynchronize());
      if (rep == 0) continue;
      span.push_back(launch_span_ns(stamps, int(grid)));
      std::vector<uint64_t> t(2 * size_t(grid));
      CK(cudaMemcpy(t.data(), stamps, t.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
      for (uint32_t c = 0; c < grid; ++c) cta.push_back(double(t[2 * size_t(c) + 1] - t[2 * size_t(c)]));
    }
    const double fresh = m.fresh ? double(mcast ? grid / 2 : grid) * kBoxes * kBoxW * h : 0;
    const double hot_bytes = double(grid) * kBoxes * hot * kBoxW * h, ns = median(span);
    const double stage_ns = median(cta) / kBoxes;
    std::printf("%6s %5u %5d %5u %10.2f %10.0f %10.0f %10.0f %10.2f %9.0f\n", mcast ? "mcast" : m.fresh ? "own" : "hot", hot, depth, grid,
                ns / 1e3, fresh / ns, hot_bytes / ns, (fresh + hot_bytes) / ns, median(cta) / 1e3, stage_ns);
  }
  return 0;
}
