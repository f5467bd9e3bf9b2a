// What a polling warp sees when its mbarrier completes twice quickly (issue 20, docs/semantics.md
// "Polling and missed phases"). One CTA, count-1 barrier: warp 1 waits for parity 0 in a
// try_wait.parity loop (or a test_wait.parity spin); once it is inside the loop, warp 0 completes
// phase 0 and phase 1 `gap_ns` apart (gap 0: both in one instruction, two lanes arriving), which
// leaves the parity where the wait started, and completes phase 2 only `kLateNs` later. A poller
// that leaves its loop before phase 2 saw phase 0 (the hardware woke it on that completion, or a
// poll fell between the two); one that leaves after phase 2 missed it: the barrier's parity is
// all a try_wait reads, the model's rule (sim/mbarrier.hpp mbar_parity_passed at each poll).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/pollprobe.cu -o pollprobe && ./pollprobe
// Status: its one H100 run (2026-11-25) printed the header and then `pollprobe: kernel: unspecified
// launch failure`: a bug in this probe, not yet found; the polling rule stays an assumption until it runs.
// Output: one line per (wait form, gap): trials where the poller saw phase 0 / missed it.
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace ptx = cuda::ptx;

namespace {

constexpr uint64_t kLateNs = 20'000;   // phase 2 comes this long after phase 1
constexpr uint64_t kSettleNs = 2'000;  // the arriver waits this long once the poller is in its loop

__device__ __forceinline__ uint64_t gt() { return ptx::get_sreg_globaltimer(); }
__device__ __forceinline__ void spin_until(uint64_t t) {
  while (gt() < t) {
  }
}

// out[0]: when the poller left its loop; out[1]: when phase 1 completed; out[2]: when phase 2 was
// released; out[3]: polls the poller made.
__global__ void double_flip(uint64_t gap_ns, int form, uint64_t* out) {
  __shared__ alignas(8) uint64_t bar;
  __shared__ volatile int polling;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    ptx::mbarrier_init(&bar, 1u);
    polling = 0;
  }
  __syncthreads();
  if (warp == 1) {  // the poller: the whole warp, as CUTLASS's consumer_wait
    if (lane == 0) polling = 1;
    __syncwarp();
    uint64_t polls = 0;
    if (form == 0) {
      while (!ptx::mbarrier_try_wait_parity(&bar, 0u)) ++polls;
    } else {
      while (!ptx::mbarrier_test_wait_parity(&bar, 0u)) ++polls;
    }
    if (lane == 0) {
      out[0] = gt();
      out[3] = polls;
    }
  } else {  // the arriver
    while (polling == 0) {
    }
    spin_until(gt() + kSettleNs);
    if (gap_ns == 0) {
      if (lane < 2) (void)ptx::mbarrier_arrive(&bar);  // two arrivals, one instruction: phases 0 and 1
    } else if (lane == 0) {
      (void)ptx::mbarrier_arrive(&bar);                // phase 0
      spin_until(gt() + gap_ns);
      (void)ptx::mbarrier_arrive(&bar);                // phase 1: parity back where the wait began
    }
    __syncwarp();
    if (lane == 0) {
      out[1] = gt();
      spin_until(out[1] + kLateNs);
      out[2] = gt();
      (void)ptx::mbarrier_arrive(&bar);                // phase 2: lets a poller that missed phase 0 out
    }
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "pollprobe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int trials = argc > 1 ? std::atoi(argv[1]) : 50;
  uint64_t* d = nullptr;
  check(cudaMalloc(&d, 4 * sizeof(uint64_t)), "cudaMalloc");
  const uint64_t gaps[] = {0, 1, 50, 200, 1000, 5000};
  std::printf("form          gap_ns  saw_phase0  missed    mean_polls\n");
  for (int form = 0; form < 2; ++form) {
    for (uint64_t gap : gaps) {
      int saw = 0, missed = 0;
      uint64_t polls_sum = 0;
      for (int t = 0; t < trials; ++t) {
        uint64_t h[4] = {};
        check(cudaMemset(d, 0, sizeof h), "cudaMemset");
        double_flip<<<1, 64>>>(gap, form, d);
        check(cudaGetLastError(), "launch");
        check(cudaDeviceSynchronize(), "kernel");
        check(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy");
        (h[0] < h[2] ? saw : missed) += 1;
        polls_sum += h[3];
      }
      std::printf("%-12s  %6llu  %10d  %6d  %12llu\n", form == 0 ? "try_wait" : "test_wait", static_cast<unsigned long long>(gap), saw, missed,
                  static_cast<unsigned long long>(polls_sum / static_cast<uint64_t>(trials)));
    }
  }
  check(cudaFree(d), "cudaFree");
  return 0;
}
