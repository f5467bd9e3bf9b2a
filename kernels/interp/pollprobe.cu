// What a polling warp sees when its mbarrier completes twice quickly (issue 20, docs/semantics.md
// "Polling and missed phases"). One CTA, count-1 barrier: warp 1 waits for parity 0 in a
// try_wait.parity loop (or a test_wait.parity spin); once it is inside the loop, warp 0's lane 0
// completes phase 0 and phase 1 `gap_ns` apart (gap 0: two arrive instructions back to back), which
// leaves the parity where the wait started, and completes phase 2 only `kLateNs` later. A poller
// that leaves its loop before phase 2 saw phase 0 (the hardware woke it on that completion, or a
// poll fell between the two); one that leaves after phase 2 missed it: the barrier's parity is
// all a try_wait reads, the model's rule (sim/mbarrier.hpp mbar_parity_passed at each poll).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/pollprobe.cu -o pollprobe
//   ./pollprobe [trials]   the table below (default 50 trials per row)
//   ./pollprobe lanes      a second question, in its own process (a fault is sticky): two lanes of
//                          one warp arrive in one instruction on a count-1 barrier
// History: the first H100 run (2026-11-25) printed the header and then `kernel: unspecified launch
// failure`. Its gap-0 case had two lanes arrive in one instruction with one arrival pending; if the
// H100 applies a warp's arrivals as one count-2 arrive, that is the pending underflow that faults
// (spec/h100-probes.md U2). Gap 0 is now two instructions of one lane, and the two-lane form is the
// `lanes` mode: the model lands a warp's lanes one after another (sim/mbarrier.cpp
// mbar_arrive_threads, docs/ptx.md), so `lanes` tests that assumption too. Every spin has a
// deadline (kTimeoutNs): a trial that times out is counted, never a hang.
// Output: one line per (wait form, gap): trials where the poller saw phase 0 / missed it / timed out,
// mean polls, and how long after the phase-1 stamp the poller left (mean over the trials that saw
// phase 0; negative: before it).
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ptx = cuda::ptx;

namespace {

constexpr uint64_t kLateNs = 20'000;        // phase 2 comes this long after phase 1
constexpr uint64_t kSettleNs = 2'000;       // the arriver waits this long once the poller is in its loop
constexpr uint64_t kTimeoutNs = 10'000'000; // no spin lasts longer than this (the whole trial: < 3x)

// The result words a trial writes (one buffer of kOutWords, written by lane 0s only).
enum Out : int {
  kLeft = 0,   // when the poller left its loop
  kPhase1,     // when phase 1 had completed (the arriver's stamp after its second arrive)
  kPhase2,     // when phase 2 was released
  kPolls,      // polls the poller's lane 0 made
  kTimedOut,   // bit 0: the arriver never saw the poller start; bit 1: the poller gave up
  kOutWords
};

__device__ __forceinline__ uint64_t gt() { return ptx::get_sreg_globaltimer(); }
__device__ __forceinline__ void spin_until(uint64_t t) {
  while (gt() < t) {
  }
}

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
    const uint64_t deadline = gt() + kTimeoutNs;
    uint64_t polls = 0;
    bool passed = false;
    while (!passed) {
      passed = form == 0 ? ptx::mbarrier_try_wait_parity(&bar, 0u) : ptx::mbarrier_test_wait_parity(&bar, 0u);
      if (passed) break;
      ++polls;
      if (gt() > deadline) break;
    }
    if (lane == 0) {
      out[kLeft] = gt();
      out[kPolls] = polls;
      if (!passed) atomicOr(reinterpret_cast<unsigned long long*>(&out[kTimedOut]), 2ull);
    }
  } else if (warp == 0) {  // the arriver
    const uint64_t deadline = gt() + kTimeoutNs;
    while (polling == 0 && gt() < deadline) {
    }
    if (lane == 0) {
      if (polling == 0) atomicOr(reinterpret_cast<unsigned long long*>(&out[kTimedOut]), 1ull);
      spin_until(gt() + kSettleNs);
      (void)ptx::mbarrier_arrive(&bar);  // phase 0
      if (gap_ns > 0) spin_until(gt() + gap_ns);
      (void)ptx::mbarrier_arrive(&bar);  // phase 1: parity back where the wait began
      out[kPhase1] = gt();
      spin_until(out[kPhase1] + kLateNs);
      out[kPhase2] = gt();
      (void)ptx::mbarrier_arrive(&bar);  // phase 2: lets a poller that missed phase 0 out
    }
    __syncwarp();
  }
}

// `lanes`: lanes 0 and 1 of one warp arrive in one instruction on a count-1 barrier (one arrival
// pending). out[0] = 1 once past the arrive; out[1] / out[2] = test_wait.parity(0) / (1) after it.
// Two phases completed (lanes one after another, the model): false / true. One phase: true / false.
__global__ void two_lane_arrive(uint64_t* out) {
  __shared__ alignas(8) uint64_t bar;
  const int lane = threadIdx.x % 32;
  if (threadIdx.x == 0) ptx::mbarrier_init(&bar, 1u);
  __syncthreads();
  if (lane < 2) (void)ptx::mbarrier_arrive(&bar);
  __syncwarp();
  if (threadIdx.x == 0) {
    out[0] = 1;
    out[1] = ptx::mbarrier_test_wait_parity(&bar, 0u) ? 1 : 0;
    out[2] = ptx::mbarrier_test_wait_parity(&bar, 1u) ? 1 : 0;
  }
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "pollprobe: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

int run_lanes(uint64_t* d) {
  uint64_t h[kOutWords] = {};
  check(cudaMemset(d, 0, sizeof h), "cudaMemset");
  two_lane_arrive<<<1, 32>>>(d);
  check(cudaGetLastError(), "launch");
  const cudaError_t e = cudaDeviceSynchronize();
  if (e != cudaSuccess) {
    std::printf("lanes: two lanes arriving in one instruction with one arrival pending faulted: %s\n"
                "lanes: the warp's arrivals act as one count-2 arrive (pending underflow), not one after another\n",
                cudaGetErrorString(e));
    return 3;
  }
  check(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy");
  std::printf("lanes: no fault; reached=%llu test_wait.parity(0)=%llu parity(1)=%llu -> %s\n",
              static_cast<unsigned long long>(h[0]), static_cast<unsigned long long>(h[1]),
              static_cast<unsigned long long>(h[2]),
              h[1] == 0 && h[2] == 1 ? "two phases completed (the lanes landed one after another)"
              : h[1] == 1 && h[2] == 0 ? "one phase completed (one of the two arrivals was lost)"
                                       : "neither pattern");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t* d = nullptr;
  check(cudaMalloc(&d, kOutWords * sizeof(uint64_t)), "cudaMalloc");
  if (argc > 1 && std::strcmp(argv[1], "lanes") == 0) return run_lanes(d);
  const int trials = argc > 1 ? std::atoi(argv[1]) : 50;
  if (trials < 1 || trials > 100'000) {
    std::fprintf(stderr, "pollprobe: trials must be 1 .. 100000 (got %s)\n", argv[1]);
    return 2;
  }
  const uint64_t gaps[] = {0, 1, 50, 200, 1000, 5000};
  std::printf("form          gap_ns  saw_phase0  missed  timed_out  mean_polls  left_after_phase1_ns\n");
  for (int form = 0; form < 2; ++form) {
    for (uint64_t gap : gaps) {
      int saw = 0, missed = 0, timed_out = 0;
      uint64_t polls_sum = 0;
      double left_sum = 0;
      for (int t = 0; t < trials; ++t) {
        uint64_t h[kOutWords] = {};
        check(cudaMemset(d, 0, sizeof h), "cudaMemset");
        double_flip<<<1, 64>>>(gap, form, d);
        check(cudaGetLastError(), "launch");
        check(cudaDeviceSynchronize(), "kernel");
        check(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "cudaMemcpy");
        polls_sum += h[kPolls];
        if (h[kTimedOut] != 0) {
          ++timed_out;
        } else if (h[kLeft] < h[kPhase2]) {
          ++saw;
          left_sum += static_cast<double>(static_cast<int64_t>(h[kLeft] - h[kPhase1]));
        } else {
          ++missed;
        }
      }
      std::printf("%-12s  %6llu  %10d  %6d  %9d  %10llu  %20.0f\n", form == 0 ? "try_wait" : "test_wait",
                  static_cast<unsigned long long>(gap), saw, missed, timed_out,
                  static_cast<unsigned long long>(polls_sum / static_cast<uint64_t>(trials)), saw ? left_sum / saw : 0.0);
    }
  }
  check(cudaFree(d), "cudaFree");
  return 0;
}
