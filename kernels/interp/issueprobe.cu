// What a TMA copy costs the lane that issues it, on the H100, one factor at a time: from tmaprobe's
// case 1 (copies back to back, 37-46 ns a copy at any size) towards ringprobe's stage (a copy right
// after a 16 KiB copy: 121-170 ns). One warp on one SM (and a row on every SM); lane 0 issues
// `copies` copies of `bytes`, the whole warp then waits for each, and again for `iters` iterations.
// Columns, medians over iterations 4..: the first copy (from before its expect_tx), each later copy,
// the issue loop's whole span and the last copy's landing, all from lane 0's clock.
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/issueprobe.cu -lcuda -o issueprobe && ./issueprobe
#include <cuda/ptx>

#include "kernels/interp/probe.cuh"

namespace ptx = cuda::ptx;

namespace {

constexpr int kMaxCopies = 8, kMaxIters = 64;
constexpr uint64_t kRegionBytes = uint64_t{256} << 20;  // each of two source regions
constexpr uint32_t kPitch = 8192;                         // the tensor's row pitch (bytes)

// What differs from case 1 (variant bits).
enum : uint32_t {
  kStampEach = 1,    // lane 0 reads its clock after every copy (case 1: only around the loop)
  kTwoRegions = 2,   // copies alternate between two sources 256 MiB apart (a GEMM's A and B)
  kOneBarrier = 4,   // one arrive.expect_tx of every copy's bytes before them (case 1: one per copy)
  kHot = 8,          // every iteration re-reads the same bytes (from the L2); else the sources advance
  kTensor = 16,      // 2-D tensor copies, 128-byte rows, 128B swizzle (CUTLASS's K-major box)
  kPoll = 32,        // the whole warp polls a landed barrier right before the issue (a ring's wait)
};

// Every array here is indexed by constants only (kCopies is a template parameter, its loops unrolled),
// so that nothing goes to local memory: the probe's first form kept its cursors and stamps there and
// read ~85 ns a copy, most of it LDL / STL (runs/issueprobe-h100-2026-11-28.txt, call 1-2).
template <int kCopies>
__global__ void __launch_bounds__(32) walk(const __grid_constant__ CUtensorMap map, const uint8_t* src, uint32_t bytes, int iters,
                                           uint32_t variant, uint64_t* out) {
  constexpr int copies = kCopies;
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kMaxCopies + 1];
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    for (int j = 0; j <= kMaxCopies; ++j) ptx::mbarrier_init(&bars[j], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncwarp();
  // The spare barrier, landed once, for kPoll's wait.
  if (lane == 0) (void)ptx::mbarrier_arrive(&bars[kMaxCopies]);
  const uint64_t home = uint64_t(blockIdx.x) * (uint64_t{1} << 20);
  uint64_t cursor0 = home, cursor1 = home;
  uint64_t* mine = out + size_t(blockIdx.x) * kMaxIters * (kMaxCopies + 2);
  for (int it = 0; it < iters; ++it) {
    __syncwarp();
    if (variant & kPoll)
      while (!ptx::mbarrier_try_wait_parity(&bars[kMaxCopies], 0u)) {
      }
    __syncwarp();
    uint64_t stamp[kMaxCopies + 1];
    stamp[0] = clk();
    if (lane == 0) {
      if (variant & kOneBarrier)
        (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bars[0], bytes * uint32_t(copies));
#pragma unroll
      for (int j = 0; j < copies; ++j) {
        const int r = (variant & kTwoRegions) ? (j & 1) : 0;
        uint64_t* bar = (variant & kOneBarrier) ? &bars[0] : &bars[j];
        if (!(variant & kOneBarrier))
          (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, bar, bytes);
        // A tensor box is 128 bytes wide: the next one starts `bytes / 128` rows on. No 64-bit `%`
        // here: it is a called routine of ~150 ns, more than the copy (the probe's first form).
        const uint64_t step = (variant & kTensor) ? uint64_t(bytes / 128) * kPitch : bytes;
        uint64_t cursor = r ? cursor1 : cursor0;
        if (cursor + step > kRegionBytes) cursor = 0;
        const uint64_t off = uint64_t(r) * kRegionBytes + cursor;
        (r ? cursor1 : cursor0) = cursor + step;
        if (variant & kTensor) {
          const int32_t at[2] = {int32_t(off % kPitch), int32_t(off / kPitch)};
          ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, smem + size_t(j) * bytes, &map, at, bar);
        } else {
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem + size_t(j) * bytes, src + off, bytes, bar);
        }
        if (variant & kStampEach) stamp[j + 1] = clk();
      }
      if (variant & kHot) cursor0 = cursor1 = home;
    }
    const uint64_t issued = clk();
    __syncwarp();
    const int waits = (variant & kOneBarrier) ? 1 : copies;
#pragma unroll
    for (int j = 0; j < waits; ++j)
      while (!ptx::mbarrier_try_wait_parity(&bars[j], uint32_t(it & 1))) {
      }
    const uint64_t landed = clk();
    if (lane == 0 && it < kMaxIters) {
      uint64_t* row = mine + size_t(it) * (kMaxCopies + 2);
#pragma unroll
      for (int j = 0; j < copies; ++j) row[j] = (variant & kStampEach) ? stamp[j + 1] - stamp[j] : 0;
      row[kMaxCopies] = issued - stamp[0];
      row[kMaxCopies + 1] = landed - stamp[0];
    }
  }
}

}  // namespace

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  uint8_t* src = nullptr;
  uint64_t* out = nullptr;
  const uint64_t total = 2 * kRegionBytes;
  CK(cudaMalloc(&src, total));
  CK(cudaMemset(src, 1, total));
  CK(cudaMalloc(&out, sizeof(uint64_t) * size_t(sms) * kMaxIters * (kMaxCopies + 2)));
  CK(cudaFuncSetAttribute(walk<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(walk<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  CK(cudaFuncSetAttribute(walk<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  // Rows of kPitch bytes over both regions; boxes 128 bytes wide, `bytes / 128` rows tall.
  std::vector<std::pair<uint32_t, CUtensorMap>> maps;
  for (uint32_t b : {4096u, 16384u, 24576u})
    maps.emplace_back(b, u8_tensor_map(src, kPitch, total / kPitch, 128, b / 128, CU_TENSOR_MAP_SWIZZLE_128B));
  const double ghz = [] {
    int khz = 0;
    CK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0));
    return khz / 1e6;
  }();
  std::printf("== issueprobe: one lane issues `copies` copies, the warp waits each; ns at %.3f GHz (nominal), medians of iterations 4..%d\n",
              ghz, kMaxIters - 1);
  std::printf("   variant bits: 1 stamp each copy, 2 two source regions, 4 one barrier, 8 L2-hot, 16 tensor box, 32 poll before\n");
  std::printf(" CTAs variant  bytes copies    first    later(median, each)               issue    landed\n");
  const int iters = kMaxIters;
  struct Row {
    int ctas;
    uint32_t variant, bytes;
    int copies;
  };
  std::vector<Row> rows;
  for (uint32_t bytes : {4096u, 16384u})
    for (int copies : {2, 4, 8})
      for (uint32_t v : {0u, 1u, 1u | 2u, 1u | 4u, 1u | 8u, 1u | 16u, 1u | 32u, 1u | 2u | 4u | 16u | 32u, 2u | 4u | 16u | 32u})
        if (!(v & kTensor) || bytes <= 16384) rows.push_back({1, v, bytes, copies});
  for (uint32_t v : {1u, 1u | 2u | 4u | 16u | 32u}) rows.push_back({sms, v, 16384, 2}), rows.push_back({1, v, 24576, 2});
  for (const Row& r : rows) {
    if (size_t(r.bytes) * r.copies > 200 * 1024) continue;
    const CUtensorMap* map = nullptr;
    for (auto& [b, m] : maps)
      if (b == r.bytes) map = &m;
    if (!map) continue;
    const auto kernel = r.copies == 2 ? walk<2> : r.copies == 4 ? walk<4> : walk<8>;
    for (int rep = 0; rep < 2; ++rep) kernel<<<r.ctas, 32, 200 * 1024>>>(*map, src, r.bytes, iters, r.variant, out);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<uint64_t> h(size_t(r.ctas) * kMaxIters * (kMaxCopies + 2));
    CK(cudaMemcpy(h.data(), out, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
    std::vector<double> first, later[kMaxCopies], issue, landed;
    for (int c = 0; c < r.ctas; ++c)
      for (int it = 4; it < iters; ++it) {
        const uint64_t* row = h.data() + (size_t(c) * kMaxIters + size_t(it)) * (kMaxCopies + 2);
        first.push_back(double(row[0]) / ghz);
        for (int j = 1; j < r.copies; ++j) later[j].push_back(double(row[j]) / ghz);
        issue.push_back(double(row[kMaxCopies]) / ghz), landed.push_back(double(row[kMaxCopies + 1]) / ghz);
      }
    std::printf(" %4d %7u %6u %6d %8.1f   ", r.ctas, r.variant, r.bytes, r.copies, median(first));
    for (int j = 1; j < kMaxCopies; ++j)
      if (j < r.copies) std::printf("%6.1f", median(later[j]));
      else std::printf("      ");
    std::printf(" %9.1f %9.1f\n", median(issue), median(landed));
  }
  CK(cudaFree(src));
  CK(cudaFree(out));
  return 0;
}
