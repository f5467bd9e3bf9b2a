// What one SM takes in from 2-D tensor copies as their rows narrow (issue 21). SemiAnalysis's public B200
// sweep of CUTLASS's 1-SM mainloop (microbench-blackwell, cutlass_gemm_mainloop) reaches a plateau
// where one SM takes one box row per ~0.78 ns whether the row is 32 or 64 bytes, and 128-byte rows at
// ~155 B/ns: the TMA unit is held per row, not per byte. Does the H100's do the same, and at what
// rate? Its per-SM intake in the model (195 B/ns) was measured with 1-D bulk copies, which have no rows.
//
// One CTA per SM; its lane 0 keeps `depth` copies of one box in flight (a ring: wait the oldest,
// reissue it) over a u8 tensor of 1024-byte rows, and the warp times 1536 copies after 512 of warm-up.
// Boxes W bytes wide (16 ... 256) and H rows, swizzled as CUTLASS would (W = 128: 128B, 64: 64B,
// 32: 32B, else none); the same bytes as one 1-D bulk copy for comparison. Windows: 4 MiB (read from
// the L2 after the first pass) and 1 GiB (every box from the DRAM). Grid: 1 SM alone, and every SM.
// Printed per case: ns per copy and per row, B/ns per SM (medians over CTAs and 3 launches).
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/tmaboxprobe.cu -lcuda -o tmaboxprobe && ./tmaboxprobe
#include <cuda.h>
#include <cuda/ptx>

#include "kernels/interp/probe.cuh"

namespace ptx = cuda::ptx;

namespace {

constexpr uint64_t kCols = 1024;  // bytes per row of the tensor
constexpr int kWarm = 512, kTimed = 1536;
constexpr int kMaxDepth = 12;
constexpr int kSmemMax = 200 * 1024;

struct CtaTime {
  unsigned long long ns, cyc;
};

// As CUTLASS's mainloop moves stages: warp 0's lane 0 (the producer) waits for stage j to be empty,
// arms full[j] and issues its copy; warp 1 (the consumer) waits for full[j] and arrives on empty[j].
// `tensor` = 0: 1-D bulk copies of the same bytes. Box coordinates advance without division.
__global__ void __launch_bounds__(64) ring(const __grid_constant__ CUtensorMap map, const uint8_t* base, int tensor, uint32_t w,
                                           uint32_t h, int depth, uint64_t rows, CtaTime* out, uint64_t* trace) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t full[kMaxDepth], empty[kMaxDepth];
  const int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
  const uint32_t bytes = w * h;
  const uint32_t per_row = uint32_t(kCols) / w, bands = uint32_t(rows / h);
  if (threadIdx.x == 0) {
    for (int j = 0; j < depth; ++j) {
      ptx::mbarrier_init(&full[j], 1u);
      ptx::mbarrier_init(&empty[j], 1u);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  constexpr int kAll = kWarm + kTimed;
  if (warp == 0) {
    if (lane != 0) return;
    // Each CTA starts in its own part of the window, so SMs do not read the same lines together.
    uint32_t col = 0, band = (blockIdx.x * (bands / gridDim.x)) % bands;
    for (int n = 0; n < kAll; ++n) {
      const int j = n % depth;
      if (n >= depth)
        while (!ptx::mbarrier_try_wait_parity(&empty[j], uint32_t(((n / depth) - 1) & 1))) {
        }
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[j], bytes);
      uint8_t* dst = smem + size_t(j) * bytes;
      if (tensor) {
        const int32_t at[2] = {int32_t(col * w), int32_t(band * h)};
        ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, dst, &map, at, &full[j]);
      } else {
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst, base + (uint64_t(band) * h * kCols + uint64_t(col) * bytes), bytes,
                           &full[j]);
      }
      if (++col == per_row) {
        col = 0;
        if (++band == bands) band = 0;
      }
    }
    return;
  }
  uint64_t g0 = 0, c0 = 0;
  for (int n = 0; n < kAll; ++n) {
    if (n == kWarm) {
      g0 = gt();
      c0 = clk();
    }
    const int j = n % depth;
    while (!ptx::mbarrier_try_wait_parity(&full[j], uint32_t((n / depth) & 1))) {
    }
    if (lane == 0) {
      const uint64_t now = clk();
      (void)ptx::mbarrier_arrive(&empty[j]);
      if (trace && blockIdx.x == 0 && n < 64) trace[n] = now;
    }
    __syncwarp();
  }
  if (lane == 0) out[blockIdx.x] = CtaTime{gt() - g0, clk() - c0};
}

// A burst: lane 0 issues `depth` copies of distinct boxes back to back, then the warp waits for each in
// order; lane 0 keeps the cycle it saw each land. `iters` bursts; per burst, the first and last landing
// (cycles from its first issue). The spacing of the landings is the rate the SM's TMA unit takes them in.
__global__ void __launch_bounds__(32) burst(const __grid_constant__ CUtensorMap map, uint32_t w, uint32_t h, int depth, int iters,
                                            uint64_t rows, unsigned long long* first_last) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxDepth];
  const int lane = threadIdx.x & 31;
  const uint32_t bytes = w * h;
  const uint32_t per_row = uint32_t(kCols) / w, bands = uint32_t(rows / h);
  if (lane == 0) {
    for (int j = 0; j < depth; ++j) ptx::mbarrier_init(&bars[j], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncwarp();
  uint32_t col = 0, band = 0;
  for (int it = 0; it < iters; ++it) {
    const uint64_t c0 = clk();
    if (lane == 0)
      for (int j = 0; j < depth; ++j) {
        const int32_t at[2] = {int32_t(col * w), int32_t(band * h)};
        if (++col == per_row) {
          col = 0;
          if (++band == bands) band = 0;
        }
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[j], bytes);
        ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + size_t(j) * bytes, &map, at, &bars[j]);
      }
    __syncwarp();
    uint64_t first = 0, last = 0;
    for (int j = 0; j < depth; ++j) {
      while (!ptx::mbarrier_try_wait_parity(&bars[j], uint32_t(it & 1))) {
      }
      const uint64_t now = clk() - c0;
      if (j == 0) first = now;
      last = now;
    }
    if (lane == 0) {
      first_last[2 * it] = first;
      first_last[2 * it + 1] = last;
    }
    __syncwarp();
  }
}

CUtensorMap encode(void* base, uint64_t rows, uint32_t w, uint32_t h) {
  const CUtensorMapSwizzle sw = w == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                : w == 64  ? CU_TENSOR_MAP_SWIZZLE_64B
                                : w == 32  ? CU_TENSOR_MAP_SWIZZLE_32B
                                           : CU_TENSOR_MAP_SWIZZLE_NONE;
  return u8_tensor_map(base, kCols, rows, w, h, sw);
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const uint64_t big_rows = (uint64_t{1} << 30) / kCols, small_rows = (uint64_t{4} << 20) / kCols;
  uint8_t* src = nullptr;
  CK(cudaMalloc(&src, big_rows * kCols));
  CK(cudaMemset(src, 1, big_rows * kCols));
  CtaTime* out = nullptr;
  CK(cudaMalloc(&out, sizeof(CtaTime) * size_t(sms)));
  uint64_t* trace = nullptr;
  CK(cudaMalloc(&trace, 65 * sizeof(uint64_t)));
  CK(cudaFuncSetAttribute(ring, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax));
  std::printf("== tmaboxprobe on %s, %d SMs\n", prop.name, sms);
  // One CTA, W 128 x H 32, depth 8: the cycle each of the first 64 copies is seen landed, from the first issue.
  for (int tensor : {1, 0}) {
    const CUtensorMap map = encode(src, small_rows, 128, 32);
    ring<<<1, 64, 8 * 4096>>>(map, src, tensor, 128, 32, 8, small_rows, out, trace);
    CK(cudaDeviceSynchronize());
    uint64_t t[64];
    CK(cudaMemcpy(t, trace, sizeof t, cudaMemcpyDeviceToHost));
    std::printf("%s landings (cycles after the first):", tensor ? "tensor" : "bulk");
    for (int n = 1; n < 64; ++n) std::printf(" %llu", (unsigned long long)(t[n] - t[0]));
    std::printf("\n");
  }
  {
    // Bursts: one SM, boxes from the 4 MiB window (L2 after the first burst), 20 bursts, median spacing.
    constexpr int kIters = 20;
    unsigned long long* fl = nullptr;
    CK(cudaMalloc(&fl, 2 * kIters * sizeof(unsigned long long)));
    CK(cudaFuncSetAttribute(burst, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemMax));
    std::printf("bursts on one SM: %5s %5s %6s %5s %12s %14s %12s %10s\n", "W B", "H", "bytes", "depth", "first ns", "spacing ns", "ns/row", "B/ns");
    for (uint32_t bytes : {2048u, 4096u, 8192u, 16384u})
      for (uint32_t w : {16u, 32u, 64u, 128u, 256u})
        if (bytes / w <= 256 && bytes / w >= 8) {
          const int depth = std::min(12, int(kSmemMax / bytes));
          const CUtensorMap map = encode(src, small_rows, w, bytes / w);
          burst<<<1, 32, size_t(depth) * bytes>>>(map, w, bytes / w, depth, kIters, small_rows, fl);
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          unsigned long long h[2 * kIters];
          CK(cudaMemcpy(h, fl, sizeof h, cudaMemcpyDeviceToHost));
          std::vector<double> f, sp;
          for (int it = 1; it < kIters; ++it) {
            f.push_back(double(h[2 * it]) / 1.98);
            sp.push_back(double(h[2 * it + 1] - h[2 * it]) / 1.98 / (depth - 1));
          }
          const double s = median(sp);
          std::printf("                   %5u %5u %6u %5d %12.1f %14.1f %12.3f %10.1f\n", w, bytes / w, bytes, depth, median(f), s, s / (bytes / w),
                      bytes / s);
        }
  }
  std::printf("%-6s %5s %5s %6s %5s %5s %8s %10s %10s %9s %7s\n", "copy", "W B", "H", "bytes", "depth", "grid", "window", "ns/copy",
              "ns/row", "B/ns/SM", "GHz");
  struct Case {
    uint32_t w, h;
    int depth;
  };
  std::vector<Case> cases;
  for (uint32_t bytes : {4096u, 16384u})
    for (uint32_t w : {16u, 32u, 64u, 128u, 256u})
      if (bytes / w <= 256)
        for (int depth : {4, 8, 12})
          if (depth * bytes <= uint32_t(kSmemMax)) cases.push_back({w, bytes / w, depth});
  for (uint64_t rows : {small_rows, big_rows})
    for (int grid : {1, sms})
      for (const Case& c : cases)
        for (int tensor : {1, 0}) {
          if (!tensor && c.w != 128) continue;  // one 1-D row per box size is enough
          const CUtensorMap map = encode(src, rows, c.w, c.h);
          std::vector<double> per_copy, ghz;
          for (int rep = 0; rep < 3; ++rep) {
            ring<<<grid, 64, size_t(c.depth) * c.w * c.h>>>(map, src, tensor, c.w, c.h, c.depth, rows, out, nullptr);
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            std::vector<CtaTime> t(static_cast<size_t>(grid));
            CK(cudaMemcpy(t.data(), out, sizeof(CtaTime) * size_t(grid), cudaMemcpyDeviceToHost));
            for (auto& x : t) {
              per_copy.push_back(double(x.ns) / kTimed);
              ghz.push_back(double(x.cyc) / double(x.ns));
            }
          }
          const double pc = median(per_copy);
          std::printf("%-6s %5u %5u %6u %5d %5d %7lluM %10.1f %10.3f %9.1f %7.3f\n", tensor ? "tensor" : "bulk", c.w, c.h, c.w * c.h,
                      c.depth, grid, (unsigned long long)(rows * kCols >> 20), pc, pc / c.h, c.w * c.h / pc, median(ghz));
        }
  return 0;
}
