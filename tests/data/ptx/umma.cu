// A Blackwell (sm_100a) UMMA pipeline, written the way CUTLASS's and FA4's sm100 kernels are: a TMA
// warp, an MMA warp that also owns the TMEM allocation, four epilogue warps; a smem ring (full/empty)
// between TMA and MMA and a TMEM accumulator ring (acc_full/acc_empty) between MMA and epilogue,
// persistent over the CTA's tiles. Variants carry one bug each (../shared/spec/bug-catalog.md).
// `pipesim check` runs their PTX (umma.ptx: `nvcc -arch=sm_100a -ptx -lineinfo`; tests/CMakeLists.txt
// recompiles and compares it where nvcc exists). No Blackwell GPU exists for this project: this
// kernel is compiled and modelled, never run.
//
// Launch: block = 192 threads, dynamic shared memory = kStages * kStageBytes, params (src, tiles, kblocks).
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

namespace {

constexpr int kStages = 4;
constexpr int kAccStages = 2;
constexpr uint32_t kStageBytes = 8192;  // one stage: A and B, 4 KiB each
constexpr uint32_t kAccColumns = 128;   // one accumulator: 128 lanes x 128 f32 columns
constexpr int kMmasPerStage = 4;        // K = 64 per stage, 16 per tcgen05.mma (kind::f16)
constexpr uint32_t kEpilogueThreads = 128;

// Instruction descriptor of a kind::f16 MMA, M = 128, N = 128, f16 inputs, f32 accumulator.
constexpr uint32_t kIdesc = (1u << 4) | ((128u >> 3) << 17) | ((128u >> 4) << 24);

enum Bug : int {
  kNone = 0,
  kAccPhaseZero,     // the MMA warp's accumulator-empty state starts at phase 0: it waits on a phase
                     // no epilogue will ever complete (the seed's 9-minute hang)
  kSkipLastCommit,   // the MMA warp does not commit the last k-block's stage: the TMA warp's tail waits
  kNoDealloc,        // the TMEM allocation is never given back before the CTA exits
  kAllocNotPow2,     // 192 columns: tcgen05.alloc takes a power of two in 32..512
  kAccEmptyCountOff, // acc_empty is initialised for one epilogue warp more than arrives
};

struct PipeState {
  uint32_t index, phase;
  __device__ void advance(uint32_t stages) {
    if (++index == stages) {
      index = 0;
      phase ^= 1;
    }
  }
};

__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

template <int kBug>
__device__ void umma(const uint8_t* src, int tiles, int kblocks) {
  __shared__ __align__(8) uint64_t full[kStages];
  __shared__ __align__(8) uint64_t empty[kStages];
  __shared__ __align__(8) uint64_t acc_full[kAccStages];
  __shared__ __align__(8) uint64_t acc_empty[kAccStages];
  __shared__ uint32_t tmem_base;
  extern __shared__ __align__(1024) uint8_t ring[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) {
      ptx::mbarrier_init(&full[i], 1);
      ptx::mbarrier_init(&empty[i], 1);  // one tcgen05.commit
    }
    for (int i = 0; i < kAccStages; ++i) {
      ptx::mbarrier_init(&acc_full[i], 1);
      ptx::mbarrier_init(&acc_empty[i], kBug == kAccEmptyCountOff ? kEpilogueThreads + 32 : kEpilogueThreads);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  if (warp == 1) {
    const uint32_t columns = kBug == kAllocNotPow2 ? 192 : kAccStages * kAccColumns;
    ptx::tcgen05_alloc(ptx::cta_group_1, &tmem_base, columns);
    ptx::tcgen05_relinquish_alloc_permit(ptx::cta_group_1);
  }
  // The allocation's address is in shared memory for everyone after this barrier.
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  ptx::tcgen05_fence_after_thread_sync();
  const uint32_t tmem = tmem_base;

  if (warp == 0) {
    if (lane == 0) {
      PipeState ps{0, 1};
      for (int t = 0; t < tiles; ++t)
        for (int k = 0; k < kblocks; ++k) {
          wait(&empty[ps.index], ps.phase);
          const uint32_t bytes = kStageBytes;
          ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[ps.index], bytes);
          for (uint32_t half = 0; half < 2; ++half)
            ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, ring + ps.index * kStageBytes + half * kStageBytes / 2,
                               src + (static_cast<uint64_t>(k) * kStageBytes + half * kStageBytes / 2), kStageBytes / 2,
                               &full[ps.index]);
          ps.advance(kStages);
        }
      // producer_tail: every stage released before the CTA exits.
      for (int i = 0; i < kStages; ++i) {
        wait(&empty[ps.index], ps.phase);
        ps.advance(kStages);
      }
    }
  } else if (warp == 1) {
    if (lane == 0) {
      PipeState ps{0, 0};
      PipeState acc{0, kBug == kAccPhaseZero ? 0u : 1u};
      for (int t = 0; t < tiles; ++t) {
        wait(&acc_empty[acc.index], acc.phase);
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t d = tmem + acc.index * kAccColumns;
        for (int k = 0; k < kblocks; ++k) {
          wait(&full[ps.index], ps.phase);
          ptx::tcgen05_fence_after_thread_sync();
          const uint64_t a_desc = static_cast<uint64_t>(ps.index) << 8, b_desc = a_desc | 1;
          for (int m = 0; m < kMmasPerStage; ++m)
            ptx::tcgen05_mma(ptx::kind_f16, ptx::cta_group_1, d, a_desc + m, b_desc + m, kIdesc, k > 0 || m > 0);
          if (!(kBug == kSkipLastCommit && t == tiles - 1 && k == kblocks - 1))
            ptx::tcgen05_commit(ptx::cta_group_1, &empty[ps.index]);
          ps.advance(kStages);
        }
        ptx::tcgen05_commit(ptx::cta_group_1, &acc_full[acc.index]);
        acc.advance(kAccStages);
      }
    }
  } else {
    // Epilogue: each warp reads its 32 TMEM lanes of the accumulator.
    PipeState acc{0, 0};
    uint32_t sum = 0;
    for (int t = 0; t < tiles; ++t) {
      wait(&acc_full[acc.index], acc.phase);
      ptx::tcgen05_fence_after_thread_sync();
      const uint32_t lanes = static_cast<uint32_t>((warp % 4) * 32) << 16;
      for (uint32_t c = 0; c < kAccColumns; c += 16) {
        uint32_t v[16];
        ptx::tcgen05_ld_32x32b(v, tmem + lanes + acc.index * kAccColumns + c);
        ptx::tcgen05_wait_ld();
        for (uint32_t i = 0; i < 16; ++i) sum += v[i];
      }
      ptx::tcgen05_fence_before_thread_sync();
      ptx::mbarrier_arrive(&acc_empty[acc.index]);
      acc.advance(kAccStages);
    }
    if (sum == 0xffffffffu) asm volatile("trap;");
  }
  // Every warp is past its last TMEM access before the allocation goes back.
  ptx::tcgen05_fence_before_thread_sync();
  __syncthreads();
  if (warp == 1 && kBug != kNoDealloc) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc(ptx::cta_group_1, tmem, kBug == kAllocNotPow2 ? 192 : kAccStages * kAccColumns);
  }
}

}  // namespace

extern "C" __global__ void umma_ok(const uint8_t* src, int tiles, int kblocks) { umma<kNone>(src, tiles, kblocks); }
extern "C" __global__ void umma_acc_phase_zero(const uint8_t* src, int tiles, int kblocks) { umma<kAccPhaseZero>(src, tiles, kblocks); }
extern "C" __global__ void umma_skip_last_commit(const uint8_t* src, int tiles, int kblocks) { umma<kSkipLastCommit>(src, tiles, kblocks); }
extern "C" __global__ void umma_no_dealloc(const uint8_t* src, int tiles, int kblocks) { umma<kNoDealloc>(src, tiles, kblocks); }
extern "C" __global__ void umma_alloc_not_pow2(const uint8_t* src, int tiles, int kblocks) { umma<kAllocNotPow2>(src, tiles, kblocks); }
extern "C" __global__ void umma_acc_empty_count_off(const uint8_t* src, int tiles, int kblocks) { umma<kAccEmptyCountOff>(src, tiles, kblocks); }
