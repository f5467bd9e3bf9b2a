// A two-stage TMA ring (one producer lane, one consumer warp) in three kernels for the budget that
// `pipesim check` reads from a kernel's run (docs/ptx.md, "Budget from the run"):
//   ring_headroom  the ring alone: shared memory has room for 12 more stages (stages_lost);
//   ring_full      a staging area the consumer writes takes all but 11232 B: no stage more fits;
//   ring_stores    the consumer's results leave through 4 rotating bulk-store buffers: 8 more stages
//                  fit, and the stage solver, giving the ring the room of the buffers above two, 10.
// `pipesim check` runs their PTX (ring_budget.ptx: `nvcc -arch=sm_90a -ptx -lineinfo`).
//
// Launch: block = 64 threads, dynamic shared memory = kStages * kStageBytes + the kernel's extra
// (ring_budget.launch.json is ring_headroom's; -D entry=ring_full -D smem=221184, -D entry=ring_stores
// -D smem=98304), params (src, out, tiles).
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

namespace {

constexpr int kStages = 2;
constexpr uint32_t kStageBytes = 16384;  // two 8 KiB copies
constexpr uint32_t kStoreBytes = 16384;  // one store buffer

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

// kStagingBytes: a buffer after the ring the consumer writes at its end; kStoreBuffers: buffers after
// the ring the consumer's results leave from by bulk store, in rotation.
template <uint32_t kStagingBytes, uint32_t kStoreBuffers>
__device__ void ring(const uint8_t* src, uint8_t* out, int tiles) {
  __shared__ __align__(8) uint64_t full[kStages];
  __shared__ __align__(8) uint64_t empty[kStages];
  extern __shared__ __align__(128) uint8_t smem[];
  uint8_t* after_ring = smem + kStages * kStageBytes;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int i = 0; i < kStages; ++i) {
      ptx::mbarrier_init(&full[i], 1);
      ptx::mbarrier_init(&empty[i], 32);
    }
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();

  if (warp == 0) {
    if (lane == 0) {
      PipeState ps{0, 1};
      for (int t = 0; t < tiles; ++t) {
        wait(&empty[ps.index], ps.phase);
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[ps.index], uint32_t{kStageBytes});
        const uint64_t tile = (static_cast<uint64_t>(blockIdx.x) * tiles + t) * kStageBytes;
        for (uint32_t half = 0; half < 2; ++half)
          ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, smem + ps.index * kStageBytes + half * kStageBytes / 2,
                             src + tile + half * kStageBytes / 2, kStageBytes / 2, &full[ps.index]);
        ps.advance();
      }
      for (int i = 0; i < kStages; ++i) {  // producer_tail
        wait(&empty[ps.index], ps.phase);
        ps.advance();
      }
    }
  } else {
    PipeState cs{0, 0};
    uint32_t sum = 0;
    for (int t = 0; t < tiles; ++t) {
      wait(&full[cs.index], cs.phase);
      sum += reinterpret_cast<const uint32_t*>(smem + cs.index * kStageBytes)[lane];
      ptx::mbarrier_arrive(&empty[cs.index]);
      cs.advance();
      if constexpr (kStoreBuffers > 0) {
        // This tile's result leaves from buffer t % kStoreBuffers once its previous store read it.
        uint8_t* buffer = after_ring + (t % kStoreBuffers) * kStoreBytes;
        if (lane == 0) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<kStoreBuffers - 1>{});
        __syncwarp();
        reinterpret_cast<uint32_t*>(buffer)[lane] = sum;
        ptx::fence_proxy_async(ptx::space_shared);
        __syncwarp();
        if (lane == 0) {
          ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, out + (static_cast<uint64_t>(blockIdx.x) * tiles + t) * kStoreBytes,
                             buffer, uint32_t{kStoreBytes});
          ptx::cp_async_bulk_commit_group();
        }
      }
    }
    if constexpr (kStoreBuffers > 0) {
      if (lane == 0) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
    } else if constexpr (kStagingBytes > 0) {
      reinterpret_cast<uint32_t*>(after_ring + kStagingBytes)[lane - 32] = sum;  // the staging area's last 128 B
    } else {
      reinterpret_cast<uint32_t*>(out)[blockIdx.x * 32 + lane] = sum;
    }
  }
}

}  // namespace

extern "C" __global__ void ring_headroom(const uint8_t* src, uint8_t* out, int tiles) { ring<0, 0>(src, out, tiles); }
extern "C" __global__ void ring_full(const uint8_t* src, uint8_t* out, int tiles) { ring<188416, 0>(src, out, tiles); }
extern "C" __global__ void ring_stores(const uint8_t* src, uint8_t* out, int tiles) { ring<0, 4>(src, out, tiles); }
