// How long one mbarrier.try_wait holds a warp when its phase does not complete (issue 21): CUTLASS's
// producer_try_acquire and consumer_try_wait peek with a single try_wait and no time hint, and take its
// answer as a token. The PTX ISA leaves the time limit to the system. Printed: for a try_wait with no hint
// and with hints of 100 ns .. 100 us, on a barrier whose phase never completes, the time it took to return
// (false), and for phases that another warp completes 0.2 .. 20 us later, how long the try_wait took and
// whether it returned true (median of 21 trials, ns of %globaltimer; one CTA of 2 warps).
//   nvcc -std=c++20 -O3 -I. -gencode arch=compute_90a,code=sm_90a kernels/interp/peekprobe.cu -o peekprobe && ./peekprobe
#include <string>

#include "kernels/interp/probe.cuh"

namespace {

// hint_ns 0: no hint. complete_after_ns < 0: the phase never completes while the peek runs.
__global__ void peek(int64_t complete_after_ns, uint32_t hint_ns, unsigned long long* took, int* passed) {
  __shared__ __align__(8) uint64_t bar;
  __shared__ unsigned long long t0;
  const uint32_t b = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b));
  __syncthreads();
  if (threadIdx.x == 0) t0 = gt();
  __syncthreads();
  if (threadIdx.x / 32 == 1) {  // warp 1 completes phase 0 `complete_after_ns` after t0
    if (complete_after_ns >= 0 && threadIdx.x == 32) {
      while (gt() < t0 + uint64_t(complete_after_ns)) {
      }
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(b) : "memory");
    }
    return;
  }
  uint32_t ok = 0;
  const uint64_t s = gt();
  if (hint_ns == 0)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(b) : "memory");
  else
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0, %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok) : "r"(b), "r"(hint_ns) : "memory");
  const uint64_t e = gt();
  if (threadIdx.x == 0) {
    *took = e - s;
    *passed = int(ok);
  }
}

}  // namespace

int main() {
  unsigned long long* took = nullptr;
  int* passed = nullptr;
  CK(cudaMalloc(&took, sizeof *took));
  CK(cudaMalloc(&passed, sizeof *passed));
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("== peekprobe on %s\n%12s %14s %12s %8s\n", prop.name, "hint ns", "completes at", "took ns", "true");
  for (uint32_t hint : {0u, 100u, 1000u, 10000u, 100000u})
    for (int64_t after : {int64_t(-1), int64_t(200), int64_t(2000), int64_t(20000)}) {
      std::vector<double> t;
      int trues = 0;
      for (int i = 0; i < 21; ++i) {
        peek<<<1, 64>>>(after, hint, took, passed);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        unsigned long long h = 0;
        int p = 0;
        CK(cudaMemcpy(&h, took, sizeof h, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&p, passed, sizeof p, cudaMemcpyDeviceToHost));
        t.push_back(double(h));
        trues += p;
      }
      std::printf("%12u %14s %12.0f %5d/21\n", hint, after < 0 ? "never" : std::to_string(after).c_str(), median(t), trues);
    }
  return 0;
}
