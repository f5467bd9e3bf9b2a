// The UMMA pipeline of umma.cu on a CTA pair (cta_group::2), as CUTLASS's 2-SM kernels and FA4 write
// it: both CTAs of the pair load their half of each stage with the .cta_group::2 TMA, whose bytes
// complete on the leader CTA's full barrier; only the leader arms it (expecting both halves) and only
// the leader's MMA warp issues the pair's tcgen05.mma, whose commits reach both CTAs (multicast mask
// 0b11); the epilogue warps of both CTAs release the leader's accumulator. TMEM is allocated by both
// CTAs of the pair (cta_group::2: one warp of each issues the collective tcgen05.alloc). Variants carry one bug each (../shared/spec/bug-catalog.md).
// `pipesim check` runs their PTX (umma_pair.ptx: `nvcc -arch=sm_100a -ptx -lineinfo`). No Blackwell
// GPU exists for this project: this kernel is compiled and modelled, never run.
//
// Launch: cluster 2, block = 192 threads, dynamic shared memory = kStages * kStageBytes, params
// (tensor map of a [kblocks * 64] x 256 f16 matrix with a 64 x 128 box, tiles, kblocks).
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

namespace {

constexpr int kStages = 4;
constexpr int kAccStages = 2;
constexpr uint32_t kStageBytes = 64 * 128 * 2;  // one CTA's half of a stage: one TMA box
constexpr uint32_t kAccColumns = 128;
constexpr int kMmasPerStage = 4;
constexpr uint32_t kEpilogueThreads = 128;
// kind::f16, M = 256 (the pair's), N = 128.
constexpr uint32_t kIdesc = (1u << 4) | ((128u >> 3) << 17) | ((256u >> 4) << 24);

enum Bug : int {
  kNone = 0,
  kFollowerExpectTx,     // the follower also arms the leader's full barrier: arrivals counted twice (bug 2)
  kTxWithoutPair,        // the leader expects only its own half of the stage (bug 3, the x2 forgotten)
  kCommitLeaderOnly,     // the stage release commit reaches only the leader: the follower's TMA warp waits
  kAllocLeaderOnly,      // only the leader issues the pair's tcgen05.alloc: it waits for its peer (bug 12)
};

struct alignas(64) TensorMap {
  unsigned char bytes[128];
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

__device__ __forceinline__ uint32_t smem_address(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// The same barrier in the CTA of cluster rank `rank` (a shared::cluster address).
__device__ __forceinline__ uint32_t in_rank(const uint64_t* bar, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_address(bar)), "r"(rank));
  return remote;
}

__device__ __forceinline__ void cluster_sync() {
  ptx::barrier_cluster_arrive();
  ptx::barrier_cluster_wait();
}

template <int kBug>
__device__ void umma_pair(const TensorMap& tmap, int tiles, int kblocks) {
  __shared__ __align__(8) uint64_t full[kStages];
  __shared__ __align__(8) uint64_t empty[kStages];
  __shared__ __align__(8) uint64_t acc_full[kAccStages];
  __shared__ __align__(8) uint64_t acc_empty[kAccStages];
  __shared__ uint32_t tmem_base;
  extern __shared__ __align__(1024) uint8_t ring[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t rank = ptx::get_sreg_cluster_ctarank();
  const bool leader = rank == 0;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) {
      ptx::mbarrier_init(&full[i], 1);   // the leader's arrive.expect_tx
      ptx::mbarrier_init(&empty[i], 1);  // the leader's tcgen05.commit
    }
    for (int i = 0; i < kAccStages; ++i) {
      ptx::mbarrier_init(&acc_full[i], 1);
      ptx::mbarrier_init(&acc_empty[i], 2 * kEpilogueThreads);  // both CTAs' epilogues
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  // The barriers' inits are visible to the peer before either is used.
  cluster_sync();
  if (warp == 1 && (leader || kBug != kAllocLeaderOnly)) ptx::tcgen05_alloc(ptx::cta_group_2, &tmem_base, kAccStages * kAccColumns);
  if (warp == 1) ptx::tcgen05_relinquish_alloc_permit(ptx::cta_group_2);
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
          if (leader) {
            const uint32_t bytes = kBug == kTxWithoutPair ? kStageBytes : 2 * kStageBytes;
            ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[ps.index], bytes);
          } else if (kBug == kFollowerExpectTx) {
            const uint32_t bytes = 2 * kStageBytes;
            asm volatile("mbarrier.arrive.expect_tx.release.cluster.shared::cluster.b64 _, [%0], %1;"
                         ::"r"(in_rank(&full[ps.index], 0)), "r"(bytes) : "memory");
          }
          // This CTA's half of the stage; its bytes complete on the leader's full barrier.
          const int32_t coords[2] = {k * 64, static_cast<int32_t>(rank) * 128};
          ptx::cp_async_bulk_tensor(ptx::space_shared, ptx::space_global, ptx::cta_group_2, ring + ps.index * kStageBytes,
                                    &tmap, coords, &full[ps.index]);
          ps.advance(kStages);
        }
      for (int i = 0; i < kStages; ++i) {  // producer_tail
        wait(&empty[ps.index], ps.phase);
        ps.advance(kStages);
      }
    }
  } else if (warp == 1) {
    if (leader && lane == 0) {
      PipeState ps{0, 0};
      PipeState acc{0, 1};
      const uint16_t stage_mask = kBug == kCommitLeaderOnly ? 0b01 : 0b11;
      for (int t = 0; t < tiles; ++t) {
        wait(&acc_empty[acc.index], acc.phase);
        ptx::tcgen05_fence_after_thread_sync();
        const uint32_t d = tmem + acc.index * kAccColumns;
        for (int k = 0; k < kblocks; ++k) {
          wait(&full[ps.index], ps.phase);
          ptx::tcgen05_fence_after_thread_sync();
          const uint64_t a_desc = static_cast<uint64_t>(ps.index) << 8, b_desc = a_desc | 1;
          for (int m = 0; m < kMmasPerStage; ++m)
            ptx::tcgen05_mma(ptx::kind_f16, ptx::cta_group_2, d, a_desc + m, b_desc + m, kIdesc, k > 0 || m > 0);
          ptx::tcgen05_commit_multicast(ptx::cta_group_2, &empty[ps.index], stage_mask);
          ps.advance(kStages);
        }
        ptx::tcgen05_commit_multicast(ptx::cta_group_2, &acc_full[acc.index], uint16_t{0b11});
        acc.advance(kAccStages);
      }
    }
  } else {
    PipeState acc{0, 0};
    uint32_t sum = 0;
    for (int t = 0; t < tiles; ++t) {
      wait(&acc_full[acc.index], acc.phase);
      ptx::tcgen05_fence_after_thread_sync();
      const uint32_t lanes = static_cast<uint32_t>((warp % 4) * 32) << 16;
      for (uint32_t c = 0; c < kAccColumns; c += 32) {
        uint32_t v[32];
        ptx::tcgen05_ld_32x32b(v, tmem + lanes + acc.index * kAccColumns + c);
        ptx::tcgen05_wait_ld();
        for (uint32_t i = 0; i < 32; ++i) sum += v[i];
      }
      ptx::tcgen05_fence_before_thread_sync();
      // Release the leader's accumulator stage (the MMA warp waits there), at the CTA's scope as
      // CUTLASS's ClusterBarrier::arrive(cta_id) does: released at cluster scope, every arrival would
      // be a fence (pipesim's cluster_scope_arrive warning, which this kernel drew until 2026-11-28).
      asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(in_rank(&acc_empty[acc.index], 0)) : "memory");
      acc.advance(kAccStages);
    }
    if (sum == 0xffffffffu) asm volatile("trap;");
  }
  // Neither CTA gives back the pair's TMEM or exits while the other may still use it.
  ptx::tcgen05_fence_before_thread_sync();
  cluster_sync();
  if (warp == 1) {
    ptx::tcgen05_fence_after_thread_sync();
    ptx::tcgen05_dealloc(ptx::cta_group_2, tmem, kAccStages * kAccColumns);
  }
}

}  // namespace

#define UMMA_PAIR_ENTRY(name, bug)                                                                       \
  extern "C" __global__ void __cluster_dims__(2, 1, 1)                                                   \
      name(const __grid_constant__ TensorMap tmap, int tiles, int kblocks) {                             \
    umma_pair<bug>(tmap, tiles, kblocks);                                                                \
  }
UMMA_PAIR_ENTRY(umma_pair_ok, kNone)
UMMA_PAIR_ENTRY(umma_pair_follower_expect_tx, kFollowerExpectTx)
UMMA_PAIR_ENTRY(umma_pair_tx_without_pair, kTxWithoutPair)
UMMA_PAIR_ENTRY(umma_pair_commit_leader_only, kCommitLeaderOnly)
UMMA_PAIR_ENTRY(umma_pair_alloc_leader_only, kAllocLeaderOnly)
