// What the native probes share (kernels/interp/*probe.cu): a check of every CUDA call that ends the
// program with the file, line and error, the two clocks a probe reads, a median, and a launch's span
// from its CTAs' stamps.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                    \
  do {                                                                                           \
    cudaError_t e_ = (x);                                                                        \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));           \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// The same for a driver API call (cuTensorMapEncodeTiled: link with -lcuda).
#define CU(x)                                                                          \
  do {                                                                                 \
    CUresult r_ = (x);                                                                 \
    if (r_ != CUDA_SUCCESS) {                                                          \
      std::fprintf(stderr, "%s:%d: CUresult %d\n", __FILE__, __LINE__, int(r_));       \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

// A 2-D tensor map over `rows` rows of `cols` bytes (u8 elements, rows `cols` apart) with boxes of
// `box_w` bytes x `box_h` rows, promoted to the L2 in 128-byte lines (tmaboxprobe, dramprobe).
inline CUtensorMap u8_tensor_map(void* base, uint64_t cols, uint64_t rows, uint32_t box_w, uint32_t box_h, CUtensorMapSwizzle swizzle) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {cols, rows}, strides[1] = {cols};
  const cuuint32_t box[2] = {box_w, box_h}, elem[2] = {1, 1};
  CU(cuTensorMapEncodeTiled(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 2, base, dims, strides, box, elem, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
  return map;
}

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

// The median of a probe's samples (0 for none).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A launch's span from the %globaltimer stamps its CTAs wrote (per CTA: start, end, in device memory):
// the last end less the first start, in ns.
inline double launch_span_ns(const uint64_t* device_stamps, int ctas) {
  std::vector<uint64_t> h(2 * size_t(ctas));
  CK(cudaMemcpy(h.data(), device_stamps, h.size() * sizeof(uint64_t), cudaMemcpyDeviceToHost));
  uint64_t lo = ~uint64_t{0}, hi = 0;
  for (int c = 0; c < ctas; ++c) {
    lo = std::min(lo, h[2 * size_t(c)]);
    hi = std::max(hi, h[2 * size_t(c) + 1]);
  }
  return double(hi - lo);
}

// A launch configuration for `grid` CTAs of `block` threads in clusters of `cluster` CTAs along x (for
// cudaLaunchKernelEx: cfg). Not copyable: cfg points at its own attribute.
struct ClusterLaunch {
  cudaLaunchConfig_t cfg{};
  cudaLaunchAttribute attr[1]{};
  ClusterLaunch(unsigned grid, unsigned block, size_t smem, unsigned cluster) {
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(block);
    cfg.dynamicSmemBytes = smem;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
  ClusterLaunch& operator=(const ClusterLaunch&) = delete;
};
