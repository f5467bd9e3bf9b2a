// A GEMM's mainloop loads with nothing else: each CTA of a persistent grid walks its output tiles
// (tile t = blockIdx.x + j * gridDim.x, m fastest) and, per k-block, loads its A box and its B box
// into a ring of stages (1 to 6), waits for the stage and refills it at once (or, as a batch, waits
// for every stage before it issues the next batch). No MMA, no epilogue. Run through
// `pipesim crosscheck` (docs/ptx.md), it asks one question of the L2 model: how fast do the SMs
// receive the A and B tiles of a GEMM when the tensor pipes do not hold them back?
//
//   nvcc -arch=sm_90a -ptx -lineinfo -std=c++20 kernels/interp/gemmloads.cu -o gemmloads.ptx
//   tools/gemmloads_launch.py DIR MxNxK ...      (one launch file per entry and shape)
//
// Two entries read the same bytes in the same order:
//   gemm_loads_tensor: 2-D tensor-map copies of a row-major fp16 A (M x K) and B (N x K), box
//                      64 x 128 elements (128 B x 128 rows), 128-byte swizzle, as CUTLASS's 49 loads;
//   gemm_loads_bulk:   1-D bulk copies of the same 16 KiB per box from A and B pre-tiled (each box's
//                      bytes contiguous), so the two differ only in the copy's kind and its addresses;
//                      its last parameter splits each box into copies of that many bytes (16384: one).
#include <cuda.h>
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

namespace {

constexpr int kTileRows = 128;                              // of A per tile (M) and of B (N)
constexpr int kBlockK = 64;                                 // fp16 elements per k-block: 128 B
constexpr uint32_t kBoxBytes = kTileRows * kBlockK * 2;     // 16 KiB
constexpr int kStages = 6;                                  // at most 6 x 32 KiB, as 49's ping-pong
// With a stamp buffer (kernels/interp/ringprobe.cu; the PTX entries pass none), lane 0 of each CTA
// records its clock at the start and end, and for each of the first kStampItems stages before and
// after the wait, after the expect_tx, after the first copy and after the last.
constexpr int kStampItems = 64;
constexpr int kStampHead = 4;                               // global timer and clock, start and end
constexpr int kStampsPerItem = 5;
constexpr int kStampsPerCta = kStampHead + kStampsPerItem * kStampItems;

template <bool kTensor>
__device__ __forceinline__ void mainloop(const CUtensorMap* a_map, const CUtensorMap* b_map, const uint8_t* a_tiles,
                                         const uint8_t* b_tiles, int m_tiles, int n_tiles, int k_blocks,
                                         uint32_t piece, uint32_t poll, int stages, uint32_t batch,
                                         uint64_t* stamps = nullptr, bool handoff = false, uint32_t order = 0,
                                         bool divide_each_item = false) {
  extern __shared__ __align__(1024) uint8_t smem[];
  __shared__ __align__(8) uint64_t full[kStages];
  __shared__ __align__(8) uint64_t empty[kStages];  // handoff only
  __shared__ __align__(8) uint64_t full_b[kStages];  // order 3 only: B's box on a barrier of its own
  const int lane = threadIdx.x & 31;
  if (lane == 0) {
    for (int s = 0; s < kStages; ++s) ptx::mbarrier_init(&full[s], 1u), ptx::mbarrier_init(&empty[s], 1u), ptx::mbarrier_init(&full_b[s], 1u);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncwarp();
  uint64_t* my_stamps = stamps && lane == 0 ? stamps + size_t(blockIdx.x) * kStampsPerCta : nullptr;
  if (my_stamps) my_stamps[0] = ptx::get_sreg_globaltimer(), my_stamps[1] = ptx::get_sreg_clock64();
  const int tiles = m_tiles * n_tiles;
  const int my_tiles = int(blockIdx.x) < tiles ? (tiles - int(blockIdx.x) + int(gridDim.x) - 1) / int(gridDim.x) : 0;
  const int items = my_tiles * k_blocks;
  // Where the next copies go and come from. As CUTLASS's producer does, the stage and the k-block
  // advance by one and wrap, and the tile's m and n are divided out once per tile; where asked
  // (ringprobe.cu's first form), every item divides them out of its index instead.
  int next_s = 0, next_kb = 0, next_t = int(blockIdx.x), next_m = next_t % m_tiles, next_n = next_t / m_tiles;
  auto issue = [&](int i, uint64_t* at) {
    int s = next_s, kb = next_kb, m = next_m, n = next_n;
    if (divide_each_item) {
      s = i % stages, kb = i % k_blocks;
      const int t = int(blockIdx.x) + (i / k_blocks) * int(gridDim.x);
      m = t % m_tiles, n = t / m_tiles;
    } else {
      if (++next_s == stages) next_s = 0;
      if (++next_kb == k_blocks) {
        next_kb = 0, next_t += int(gridDim.x);
        next_m = next_t % m_tiles, next_n = next_t / m_tiles;
      }
    }
    uint8_t* dst = smem + size_t(s) * 2 * kBoxBytes;
    // order 0: the arrive with its expect_tx, then the copies (as CUTLASS); 1: the copies first (their
    // complete_tx may come before the expect_tx: the phase still waits for the arrival); 2: a relaxed
    // expect_tx, the copies, then the arrive (ringprobe.cu's question: which of them stalls the lane).
    // Whole boxes only (piece = box), ringprobe's question of what a copy right after a copy waits
    // for: 3: each box's arrive.expect_tx right before its copy, B's box on a barrier of its own;
    // 4: one barrier, a relaxed expect_tx right before each box's copy, then the arrive.
    const uint32_t tx_first = order >= 3 ? kBoxBytes : 2 * kBoxBytes;
    if (order == 0 || order == 3)
      (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], tx_first);
    if (order == 2 || order == 4) ptx::mbarrier_expect_tx(ptx::sem_relaxed, ptx::scope_cta, ptx::space_shared, &full[s], tx_first);
    uint64_t* b_bar = order == 3 ? &full_b[s] : &full[s];
    const uint32_t tx_b = kBoxBytes;
    auto before_b = [&] {
      if (order == 3) (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, b_bar, tx_b);
      if (order == 4) ptx::mbarrier_expect_tx(ptx::sem_relaxed, ptx::scope_cta, ptx::space_shared, b_bar, tx_b);
    };
    if (at) at[2] = ptx::get_sreg_clock64();
    if constexpr (kTensor) {
      const int32_t a_at[2] = {kb * kBlockK, m * kTileRows}, b_at[2] = {kb * kBlockK, n * kTileRows};
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, dst, a_map, a_at, &full[s]);
      if (at) at[3] = ptx::get_sreg_clock64();
      before_b();
      ptx::cp_async_bulk_tensor(ptx::space_cluster, ptx::space_global, dst + kBoxBytes, b_map, b_at, b_bar);
    } else {
      // Each box as box_bytes / piece copies of `piece` bytes (piece = the box: two copies a stage).
      const uint8_t* a_box = a_tiles + (size_t(m) * k_blocks + kb) * kBoxBytes;
      const uint8_t* b_box = b_tiles + (size_t(n) * k_blocks + kb) * kBoxBytes;
      for (uint32_t off = 0; off < kBoxBytes; off += piece) {
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst + off, a_box + off, piece, &full[s]);
        if (at && off == 0) at[3] = ptx::get_sreg_clock64();
        before_b();
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, dst + kBoxBytes + off, b_box + off, piece, b_bar);
      }
    }
    if (order == 1) (void)ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[s], 2 * kBoxBytes);
    if (order == 2 || order == 4) (void)ptx::mbarrier_arrive(&full[s]);
  };
  if (lane == 0)
    for (int i = 0; i < items && i < stages; ++i) issue(i, nullptr);
  int wait_s = 0;
  uint32_t parity = 0;
  for (int i = 0; i < items; ++i) {
    // poll 0: the whole warp polls with try_wait, as CUTLASS's consumer_wait does; 1: lane 0 alone;
    // 2: lane 0 alone, test_wait with a 64 ns sleep between polls.
    if (divide_each_item) wait_s = i % stages, parity = uint32_t(i / stages) & 1u;
    uint64_t* at = my_stamps && i < kStampItems ? my_stamps + kStampHead + kStampsPerItem * i : nullptr;
    if (at) at[0] = ptx::get_sreg_clock64();
    if (poll == 0) {
      while (!ptx::mbarrier_try_wait_parity(&full[wait_s], parity)) {
      }
      while (order == 3 && !ptx::mbarrier_try_wait_parity(&full_b[wait_s], parity)) {
      }
    } else if (lane == 0) {
      if (poll == 1) {
        while (!ptx::mbarrier_try_wait_parity(&full[wait_s], parity)) {
        }
      } else {
        while (!ptx::mbarrier_test_wait_parity(&full[wait_s], parity)) __nanosleep(64);
      }
    }
    __syncwarp();
    if (at) at[1] = ptx::get_sreg_clock64();
    // handoff: the stage goes back through an `empty` barrier before it is refilled, as CUTLASS's
    // consumer_release and producer_acquire hand it over (here the same lane does both).
    if (handoff && lane == 0) {
      (void)ptx::mbarrier_arrive(&empty[wait_s]);
      while (!ptx::mbarrier_try_wait_parity(&empty[wait_s], parity)) {
      }
    }
    // A ring refills each stage as soon as it lands; a batch waits for all its stages, then issues
    // the next batch (as one SM's burst, tmaprobe case 1).
    if (lane == 0 && !batch && i + stages < items) issue(i + stages, at);
    if (lane == 0 && batch && (i + 1) % stages == 0)
      for (int j = i + 1; j < items && j < i + 1 + stages; ++j) issue(j, j == i + 1 ? at : nullptr);
    if (at) at[4] = ptx::get_sreg_clock64();
    if (!divide_each_item && ++wait_s == stages) wait_s = 0, parity ^= 1u;
  }
  if (my_stamps) my_stamps[2] = ptx::get_sreg_globaltimer(), my_stamps[3] = ptx::get_sreg_clock64();
}

}  // namespace

extern "C" __global__ void __launch_bounds__(32) gemm_loads_tensor(const __grid_constant__ CUtensorMap a,
                                                                   const __grid_constant__ CUtensorMap b,
                                                                   int m_tiles, int n_tiles, int k_blocks, uint32_t poll,
                                                                   int stages, uint32_t batch) {
  mainloop<true>(&a, &b, nullptr, nullptr, m_tiles, n_tiles, k_blocks, kBoxBytes, poll, stages, batch);
}

extern "C" __global__ void __launch_bounds__(32) gemm_loads_bulk(const uint8_t* a_tiles, const uint8_t* b_tiles,
                                                                 int m_tiles, int n_tiles, int k_blocks, uint32_t piece,
                                                                 uint32_t poll, int stages, uint32_t batch) {
  mainloop<false>(nullptr, nullptr, a_tiles, b_tiles, m_tiles, n_tiles, k_blocks, piece, poll, stages, batch);
}
