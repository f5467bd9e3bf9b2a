// What the native probes share (kernels/interp/*probe.cu): a check of every CUDA call that ends the
// program with the file, line and error, and the two clocks a probe reads.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));           \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// The SM's cycle counter and the global nanosecond timer (coarse: it ticks in steps of ~32 ns).
__device__ __forceinline__ uint64_t clk() {
  uint64_t c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
  return c;
}
__device__ __forceinline__ uint64_t gt() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
