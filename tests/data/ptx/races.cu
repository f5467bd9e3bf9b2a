// Two races that only some schedules expose, written the way Hopper kernels write them (cuda::ptx,
// an elected lane, whole warps on named barriers): the CUDA versions of scenarios/races/
// a_named_count_small_{broken,fixed}.scn and c_elected_release_{broken,fixed}.scn. Each broken
// kernel runs to its end in the default order and hangs only when one warp comes late; its fixed
// twin never hangs. `pipesim check` runs their PTX (races.ptx, compiled from this file with
// `nvcc -arch=sm_90a -ptx -lineinfo -std=c++17`, the flags of tests/ptx_fresh.sh).
//
// Launch:
//   named_count_small_{broken,fixed}  block = 128 threads, no dynamic shared memory, params (out, seed)
//                                     (races_named.launch.json, the broken one)
//   elected_release_{broken,fixed}    block = 160 threads, dynamic shared memory = kStageBytes,
//                                     params (src, k_tiles); src holds k_tiles * kStageBytes bytes
//                                     (races_elected.launch.json, the broken one)
// The fixed twins: -D entry=named_count_small_fixed, -D entry=elected_release_fixed.
//   flag_handoff                      block = 64 threads, params (out, seed) (races_named.launch.json
//                                     with -D entry=flag_handoff -D block=64)
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

namespace {

__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

// ---------------------------------------------------------------------------------------------
// Race (a): an epilogue's named barrier counts fewer threads than use it.
//
// Warp 0 stands for the MMA warp: its lane 0 runs the mainloop into an accumulator in shared
// memory and signals acc_full. Warps 1..3 are the epilogue: they convert the accumulator subtile by
// subtile and meet at named barrier 2 after each subtile (the staging buffer is free again). The
// broken kernel gives bar.sync the thread count of a two-warp epilogue (64) while three warps use
// it: every two warps complete a phase. When the three arrive together they pair up differently at
// each subtile and all finish; when one warp comes a subtile late, the other two pair up at every
// subtile and leave, and the late warp then waits alone at the barrier forever. The fixed kernel
// counts every epilogue thread (96).
constexpr int kSubtiles = 4;
constexpr int kMainloopIters = 64;
constexpr int kEpilogueWarps = 3;
constexpr uint32_t kNamedBarEpilogue = 2;

template <bool kFixed>
__device__ void named_count_small(uint32_t* out, int seed) {
  constexpr uint32_t kEpilogueThreads = kFixed ? kEpilogueWarps * 32  // every epilogue warp
                                               : 64;                  // bug: two warps' worth
  __shared__ __align__(8) uint64_t acc_full;
  __shared__ uint32_t accum[kSubtiles];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&acc_full, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();

  if (warp == 0) {
    // The MMA warp: one lane runs the mainloop, then hands the accumulator to the epilogue.
    if (lane == 0) {
      uint32_t acc = static_cast<uint32_t>(seed);
#pragma unroll 1
      for (int i = 0; i < kMainloopIters; ++i) acc = acc * 1664525u + 1013904223u;
      for (int s = 0; s < kSubtiles; ++s) accum[s] = acc ^ (s * 0x9e3779b9u);
      ptx::mbarrier_arrive(&acc_full);
    }
  } else if (warp <= kEpilogueWarps) {
    // The epilogue warps.
    wait(&acc_full, 0);
    uint32_t acc = 0;
    for (int sub = 0; sub < kSubtiles; ++sub) {
      uint32_t v = accum[sub] + lane;  // accumulator subtile -> registers
      v ^= v >> 16;
      // The staging buffer is free: every epilogue warp must be here before any writes it again.
      asm volatile("bar.sync %0, %1;" ::"n"(kNamedBarEpilogue), "n"(kEpilogueThreads));
      acc = acc * 31u + v * 0x85ebca6bu;  // registers -> staging -> global
      acc ^= acc >> 13;
    }
    if (acc == 0xffffffffu) out[threadIdx.x] = acc;
  }
}

// ---------------------------------------------------------------------------------------------
// Race (c): an elected consumer warp releases a stage before its sibling warps have seen it filled.
//
// One stage of kStageBytes with a full and an empty barrier (count 1 each). Warp 0's lane 0 is the
// producer: wait for the stage to be empty, expect its bytes on full, copy one tile in. Warps 1..4
// are the consumer warpgroup: each waits for full, reads the stage, and one elected thread (warp 1,
// lane 0) releases it on empty. In the broken kernel the elected warp releases as soon as it has
// read, with no warpgroup sync first: a sibling warp that reaches its wait late finds the stage
// already refilled and full completed twice, its parity back where the sibling's wait started; the
// sibling misses that phase, reads the wrong tile, and at the last tile waits for a fill that never
// comes. The fixed kernel has the four consumer warps meet at named barrier 1 before the elected
// release, so the stage cannot be refilled until every sibling has passed its wait.
constexpr uint32_t kStageBytes = 4096;
constexpr int kConsumerWarps = 4;
constexpr uint32_t kNamedBarConsumers = 1;

template <bool kFixed>
__device__ void elected_release(const uint8_t* src, int k_tiles) {
  __shared__ __align__(8) uint64_t full[1];
  __shared__ __align__(8) uint64_t empty[1];
  extern __shared__ __align__(128) uint8_t stage[];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&full[0], 1);
    ptx::mbarrier_init(&empty[0], 1);  // one elected arrival per release
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();

  if (warp == 0) {
    // Producer: one elected lane fills the stage, tile after tile.
    if (lane == 0) {
      for (int k = 0; k < k_tiles; ++k) {
        wait(&empty[0], (k + 1) % 2);
        const uint32_t bytes = kStageBytes;  // cuda::ptx takes the sizes by reference
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &full[0], bytes);
        ptx::cp_async_bulk(ptx::space_cluster, ptx::space_global, stage, src + static_cast<uint64_t>(k) * kStageBytes,
                           bytes, &full[0]);
      }
    }
  } else if (warp <= kConsumerWarps) {
    // The consumer warpgroup: every lane of the four warps.
    uint32_t sum = 0;
    for (int k = 0; k < k_tiles; ++k) {
      wait(&full[0], k % 2);
      sum += stage[(warp - 1) * 32 + lane];  // the warpgroup's math on the stage
      if (kFixed) {
        // Every warp of the warpgroup is past its wait before the stage is released.
        asm volatile("bar.sync %0, %1;" ::"n"(kNamedBarConsumers), "n"(kConsumerWarps * 32));
      }
      // Bug (without the barrier above): the siblings may not have seen this fill yet.
      if (warp == 1 && lane == 0) ptx::mbarrier_arrive(&empty[0]);
    }
    if (sum == 0xffffffffu) asm volatile("trap;");
  }
}

// ---------------------------------------------------------------------------------------------
// Not a race: a hand-off through a flag in shared memory that one warp polls. Warp 1 says it has
// started (an mbarrier arrive), publishes a value and raises the flag, then waits for `done`; warp 0
// spins on the flag (a plain volatile load: nothing in the loop synchronises), then arrives on done
// and consumes `started`. Every order ends well, but where warp 0 spins while warp 1 is held at its
// arrive, a search must let warp 0 yield or it spins forever.
__device__ void handoff(uint32_t* out, int seed) {
  __shared__ __align__(8) uint64_t started;
  __shared__ __align__(8) uint64_t done;
  __shared__ volatile uint32_t flag;
  __shared__ uint32_t value;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    flag = 0;
    ptx::mbarrier_init(&started, 1);
    ptx::mbarrier_init(&done, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  if (warp == 0 && lane == 0) {
    while (flag == 0) {
    }
    __threadfence_block();
    if (value == 0xffffffffu) out[0] = value;
    ptx::mbarrier_arrive(&done);
    wait(&started, 0);
  } else if (warp == 1) {
    if (lane == 0) {
      ptx::mbarrier_arrive(&started);
      value = static_cast<uint32_t>(seed) * 2654435761u;
      __threadfence_block();
      flag = 1;
    }
    wait(&done, 0);
  }
}

}  // namespace

extern "C" __global__ void flag_handoff(uint32_t* out, int seed) { handoff(out, seed); }
extern "C" __global__ void named_count_small_broken(uint32_t* out, int seed) { named_count_small<false>(out, seed); }
extern "C" __global__ void named_count_small_fixed(uint32_t* out, int seed) { named_count_small<true>(out, seed); }
extern "C" __global__ void elected_release_broken(const uint8_t* src, int k_tiles) { elected_release<false>(src, k_tiles); }
extern "C" __global__ void elected_release_fixed(const uint8_t* src, int k_tiles) { elected_release<true>(src, k_tiles); }
