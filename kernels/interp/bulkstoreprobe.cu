// Native bulk-store probe (no interpreter, issue 21): how fast the SMs' TMA stores (`cp.async.bulk`
// shared -> global, what CUTLASS's TMA epilogues issue) reach the L2, one SM alone and all together.
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/bulkstoreprobe.cu -o bulkstoreprobe && ./bulkstoreprobe
//
// Every CTA (grid = CTAS, one per SM) has one warp; its lane 0 stores one COPY-byte shared buffer to
// global memory N times (`cp.async.bulk.global.shared::cta.bulk_group`, one commit_group each, at most
// DEPTH groups in flight: `cp.async.bulk.wait_group.read DEPTH-1` before the next), into consecutive
// COPY-byte slots of a REGION-byte window of its own that it goes round, then waits for every write
// (`cp.async.bulk.wait_group 0`). Timed inside the kernel with %globaltimer, from the first CTA's first
// issue to the last CTA's end; printed per case, the median of 15 launches (after 3) and the bytes per
// ns it makes, per SM and in all. REGION 256 KiB: 132 windows fit in the L2; 8 MiB: they do not.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "probe.cuh"

namespace {

__global__ void bulk_stores(uint8_t* out, uint32_t copy, uint32_t n, uint32_t depth, uint64_t region, uint64_t* stamps) {
  extern __shared__ __align__(128) uint8_t buf[];
  for (uint32_t i = threadIdx.x; i < copy; i += blockDim.x) buf[i] = static_cast<uint8_t>(i);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the generic writes, visible to the copies
  __syncwarp();
  if (threadIdx.x != 0) return;
  uint8_t* base = out + blockIdx.x * region;
  const uint32_t src = static_cast<uint32_t>(__cvta_generic_to_shared(buf));
  const uint64_t t0 = gt();
  for (uint32_t k = 0; k < n; ++k) {
    uint8_t* dst = base + (uint64_t(k) * copy) % region;
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(src), "r"(copy) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    // At most `depth` groups in flight (the immediate must be a constant: the depths tried).
    switch (depth) {
      case 1: asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); break;
      case 2: asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory"); break;
      case 4: asm volatile("cp.async.bulk.wait_group.read 3;" ::: "memory"); break;
      default: asm volatile("cp.async.bulk.wait_group.read 7;" ::: "memory"); break;
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
  const uint64_t t1 = gt();
  stamps[2 * blockIdx.x] = t0;
  stamps[2 * blockIdx.x + 1] = t1;
}

}  // namespace

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const uint64_t max_region = uint64_t(8) << 20;
  uint8_t* out = nullptr;
  uint64_t* stamps = nullptr;
  CK(cudaMalloc(&out, max_region * sms));
  CK(cudaMalloc(&stamps, 2 * sizeof(uint64_t) * sms));
  CK(cudaFuncSetAttribute(bulk_stores, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 << 10));
  std::printf("# bulkstoreprobe: %d SMs, one warp a CTA, medians of 15 in-kernel spans\n", sms);
  for (uint64_t region : {uint64_t(256) << 10, max_region})
    for (int ctas : {1, sms})
      for (uint32_t copy : {4096u, 16384u, 32768u})
        for (uint32_t depth : {1u, 2u, 4u, 8u}) {
          const uint32_t n = uint32_t((uint64_t(4) << 20) / copy);  // 4 MiB a CTA
          std::vector<double> spans;
          for (int i = 0; i < 18; ++i) {
            bulk_stores<<<ctas, 32, copy>>>(out, copy, n, depth, region, stamps);
            CK(cudaGetLastError());
            const double span = launch_span_ns(stamps, ctas);
            if (i >= 3) spans.push_back(span);
          }
          std::sort(spans.begin(), spans.end());
          const double ns = spans[spans.size() / 2];
          const double bytes = double(n) * copy;
          std::printf("RESULT region_kib=%llu ctas=%d copy=%u depth=%u span_ns=%.0f bytes_per_ns_per_sm=%.1f bytes_per_ns=%.0f\n",
                      (unsigned long long)(region >> 10), ctas, copy, depth, ns, bytes / ns, bytes * ctas / ns);
        }
  return 0;
}
