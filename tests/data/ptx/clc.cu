// A persistent kernel on cluster launch control (sm_100a), the way CUTLASS's sm100 tile schedulers
// use it: the grid has one CTA per tile; each running CTA works on its own tile, then asks the
// hardware for a CTA that has not launched yet (clusterlaunchcontrol.try_cancel, whose 16-byte
// response lands in shared memory with complete_tx on an mbarrier), takes over that CTA's tile, and
// stops when no CTA is left. Variants carry one bug each. `pipesim check` runs their PTX (clc.ptx:
// `nvcc -arch=sm_100a -ptx -lineinfo`). No Blackwell GPU exists for this project: compiled and
// modelled, never run.
//
// Launch: block = 128 threads, params (out, an int per tile).
#include <cuda/ptx>

#include <cstdint>

namespace ptx = cuda::ptx;

namespace {

enum Bug : int {
  kNone = 0,
  kNoExpectTx,       // the scheduler thread never arms the barrier for the response's 16 bytes
  kParityNotFlipped, // the wait keeps parity 0: the second wait passes on the first response
};

__device__ __forceinline__ void wait(uint64_t* bar, uint32_t parity) {
  while (!ptx::mbarrier_try_wait_parity(bar, parity)) {
  }
}

template <int kBug>
__device__ void persistent(int* out) {
  __shared__ __align__(16) longlong2 response;
  __shared__ __align__(8) uint64_t bar;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1);
    ptx::fence_mbarrier_init(ptx::sem_release, ptx::scope_cluster);
  }
  __syncthreads();
  uint32_t phase = 0;
  int tile = static_cast<int>(blockIdx.x);
  while (true) {
    if (threadIdx.x == 0) out[tile] += tile + 1;  // this tile's work
    __syncthreads();  // everyone is done with the previous response before it is overwritten
    if (threadIdx.x == 0) {
      if (kBug != kNoExpectTx) {
        const uint32_t bytes = sizeof(response);
        ptx::mbarrier_arrive_expect_tx(ptx::sem_release, ptx::scope_cta, ptx::space_shared, &bar, bytes);
      }
      ptx::clusterlaunchcontrol_try_cancel(&response, &bar);
    }
    wait(&bar, phase);
    if (kBug != kParityNotFlipped) phase ^= 1;
    const longlong2 r = response;
    if (!ptx::clusterlaunchcontrol_query_cancel_is_canceled(r)) break;
    tile = static_cast<int>(ptx::clusterlaunchcontrol_query_cancel_get_first_ctaid_x<uint32_t>(r));
  }
}

}  // namespace

extern "C" __global__ void clc_ok(int* out) { persistent<kNone>(out); }
extern "C" __global__ void clc_no_expect_tx(int* out) { persistent<kNoExpectTx>(out); }
extern "C" __global__ void clc_parity_not_flipped(int* out) { persistent<kParityNotFlipped>(out); }
