// A small warp-specialized TMA pipeline, written the way Hopper kernels write it (cuda::ptx, a
// PipelineState with index and phase, an elected producer lane, whole consumer warps), in variants
// that each carry one bug of ../shared/spec/bug-catalog.md. `pipesim check` runs their PTX
// (pipeline.ptx, compiled from this file with `nvcc -arch=sm_90a -ptx -lineinfo`; tests/CMakeLists.txt
// recompiles and compares it where nvcc exists).
//
// Launch: block = 32 * (1 + kConsumers) threads (+ 32 for the variant with a spare warp), dynamic
// shared memory = kStages * kStageBytes, params (src, tiles).
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

namespace {

constexpr int kStages = 4;
constexpr int kConsumers = 2;           // consumer warps; each lane arrives on empty
constexpr uint32_t kStageBytes = 4096;  // one stage: two 2 KiB copies

enum Bug : int {
  kNone = 0,
  kProducerPhaseZero,   // the producer's state starts at phase 0: waits for a phase that never completes
  kExpectOneTileMore,   // arrive.expect_tx expects one copy more than it issues
  kNamedCountOff,       // the consumers meet on bar.sync 1 with a count one warp larger than theirs
  kSkipLastRelease,     // the consumers skip their release on the last tile; the producer's tail waits
  kClusterSyncOneWarp,  // only the producer warp runs the cluster barrier
  kPeeledFirstWait,     // the consumers peel their first wait out of the loop: a CTA given no tiles hangs
  kReadPastSource,      // a consumer reads one stage past the end of the source: a bad address
};

struct PipeState {
  uint32_t index, phase;
  __device__ void advance() {
    if (++index == kStages) {
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
__device__ void pipeline(const uint8_t* src, int tiles) {
  __shared__ __align__(8) uint64_t full[kStages];
  __shared__ __align__(8) uint64_t empty[kStages];
  extern __shared__ __align__(128) uint8_t ring[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const uint32_t consumers = kConsumers * 32;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) {
      ptx::mbarrier_init(&full[i], 1);
      ptx::mbarrier_init(&empty[i], consumers);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();

  if (warp == 0) {
    // Producer: one elected lane issues the copies.
    if (kBug == kClusterSyncOneWarp) {
      ptx::barrier_cluster_arrive();
      ptx::barrier_cluster_wait();
    }
    if (lane == 0) {
      PipeState ps{0, kBug == kProducerPhaseZero ? 0u : 1u};
      for (int t = 0; t < tiles; ++t) {
        wait(&empty[ps.index], ps.phase);
        const uint32_t expect = kBug == kExpectOneTileMore ? kStageBytes + kStageBytes / 2 : kStageBytes;
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[ps.index], expect);
        for (uint32_t half = 0; half < 2; ++half)
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, ring + ps.index * kStageBytes + half * kStageBytes / 2,
                             src + (static_cast<uint64_t>(t) * kStageBytes + half * kStageBytes / 2), kStageBytes / 2,
                             &full[ps.index]);
        ps.advance();
      }
      // producer_tail: every stage released before the CTA exits.
      for (int i = 0; i < kStages; ++i) {
        wait(&empty[ps.index], ps.phase);
        ps.advance();
      }
    }
  } else if (warp <= kConsumers) {
    PipeState cs{0, 0};
    uint32_t sum = 0;
    if (kBug == kPeeledFirstWait) wait(&full[0], 0);  // as if tiles >= 1
    for (int t = 0; t < tiles; ++t) {
      if (!(kBug == kPeeledFirstWait && t == 0)) wait(&full[cs.index], cs.phase);
      sum += ring[cs.index * kStageBytes + lane];
      if (!(kBug == kSkipLastRelease && t == tiles - 1)) ptx::mbarrier_arrive(&empty[cs.index]);
      cs.advance();
    }
    if (kBug == kReadPastSource && lane == 0) sum += src[static_cast<uint64_t>(tiles + 1) * kStageBytes];
    if (kBug == kNamedCountOff) {
      // The consumers meet on named barrier 1 with a count that leaves one warp out.
      asm volatile("bar.sync 1, %0;" ::"r"(kConsumers * 32 + 32));
    }
    if (sum == 0xffffffffu) asm volatile("trap;");
  }
}

}  // namespace

extern "C" __global__ void pipeline_ok(const uint8_t* src, int tiles) { pipeline<kNone>(src, tiles); }
extern "C" __global__ void pipeline_producer_phase_zero(const uint8_t* src, int tiles) { pipeline<kProducerPhaseZero>(src, tiles); }
extern "C" __global__ void pipeline_expect_one_tile_more(const uint8_t* src, int tiles) { pipeline<kExpectOneTileMore>(src, tiles); }
extern "C" __global__ void pipeline_named_count_off(const uint8_t* src, int tiles) { pipeline<kNamedCountOff>(src, tiles); }
extern "C" __global__ void pipeline_skip_last_release(const uint8_t* src, int tiles) { pipeline<kSkipLastRelease>(src, tiles); }
extern "C" __global__ void pipeline_cluster_sync_one_warp(const uint8_t* src, int tiles) { pipeline<kClusterSyncOneWarp>(src, tiles); }
extern "C" __global__ void pipeline_read_past_source(const uint8_t* src, int tiles) { pipeline<kReadPastSource>(src, tiles); }
extern "C" __global__ void pipeline_peeled_first_wait(const uint8_t* src, int tiles) { pipeline<kPeeledFirstWait>(src, tiles); }
