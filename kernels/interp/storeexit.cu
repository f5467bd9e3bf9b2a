// Probe of the model's assumption `store-outlives-exit` (docs/semantics.md): does a CTA that issues a
// bulk store (shared -> global) and exits without `cp.async.bulk.wait_group.read` still store what its
// shared memory held, even when the next CTA on the SM takes that shared memory and overwrites it at
// once? Each CTA fills its tile with a pattern of its own, stores it, and exits: with `wait` it first
// waits for the store to have read shared memory (the control), without it does not. The next wave
// of CTAs lands on the same SMs and writes its own pattern into the same shared memory straight away.
// Every CTA's global tile is then checked word by word. A mismatch in the no-wait case means the
// hardware released the shared memory before the store read it (the assumption is false there).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/storeexit.cu -o storeexit && ./storeexit
#include <cuda/ptx>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace ptx = cuda::ptx;

namespace {

__device__ __forceinline__ uint32_t pattern(uint32_t cta, uint32_t round, uint32_t word) {
  return (cta * 0x9E3779B1u) ^ (round * 0x85EBCA77u) ^ (word * 0xC2B2AE3Du) ^ 0x5bd1e995u;
}

// One CTA of 128 threads: fill `bytes` of shared memory, fence it for the copy engine, one thread issues
// the bulk store in `parts` copies and commits them; then the CTA waits (or not) and exits.
__global__ void store_and_exit(uint32_t* out, uint32_t bytes, uint32_t parts, uint32_t round, bool wait) {
  extern __shared__ __align__(128) uint32_t tile[];
  const uint32_t words = bytes / 4;
  for (uint32_t i = threadIdx.x; i < words; i += blockDim.x) tile[i] = pattern(blockIdx.x, round, i);
  ptx::fence_proxy_async(ptx::space_shared);
  __syncthreads();
  if (threadIdx.x == 0) {
    uint8_t* dst = reinterpret_cast<uint8_t*>(out) + size_t(blockIdx.x) * bytes;
    const uint32_t part = bytes / parts;
    for (uint32_t p = 0; p < parts; ++p)
      ptx::cp_async_bulk(ptx::space_global, ptx::space_shared, dst + size_t(p) * part,
                         reinterpret_cast<uint8_t*>(tile) + size_t(p) * part, part);
    ptx::cp_async_bulk_commit_group();
    if (wait) ptx::cp_async_bulk_wait_group_read(ptx::n32_t<0>{});
  }
}

__global__ void count_mismatches(const uint32_t* out, uint32_t words_per_cta, uint32_t ctas, uint32_t round,
                                 unsigned long long* bad, unsigned long long* bad_ctas) {
  for (uint32_t c = blockIdx.x; c < ctas; c += gridDim.x) {
    __shared__ int any;
    if (threadIdx.x == 0) any = 0;
    __syncthreads();
    unsigned long long n = 0;
    for (uint32_t i = threadIdx.x; i < words_per_cta; i += blockDim.x)
      n += out[size_t(c) * words_per_cta + i] != pattern(c, round, i);
    if (n) {
      atomicAdd(bad, n);
      any = 1;
    }
    __syncthreads();
    if (threadIdx.x == 0 && any) atomicAdd(bad_ctas, 1ull);
    __syncthreads();
  }
}

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e = (x);                                                                      \
    if (e != cudaSuccess) {                                                                   \
      std::printf("RESULT storeexit error=%s at=%s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); \
      return 1;                                                                               \
    }                                                                                         \
  } while (0)

}  // namespace

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("# storeexit on %s, %d SMs\n", prop.name, sms);
  CHECK(cudaFuncSetAttribute(store_and_exit, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  unsigned long long *bad = nullptr, *bad_ctas = nullptr;
  CHECK(cudaMalloc(&bad, 8));
  CHECK(cudaMalloc(&bad_ctas, 8));
  struct Case { uint32_t bytes, parts; };
  // 2 CTAs an SM at 96 KiB, 1 at 200 KiB (the next CTA waits for the whole SM), 7 at 32 KiB.
  const Case cases[] = {{96 * 1024, 1}, {96 * 1024, 12}, {200 * 1024, 1}, {32 * 1024, 1}, {32 * 1024, 32}};
  for (const Case& cs : cases) {
    const uint32_t ctas = uint32_t(sms) * 64;  // many waves: every CTA but the last wave's is followed on its SM
    uint32_t* out = nullptr;
    CHECK(cudaMalloc(&out, size_t(ctas) * cs.bytes));
    for (int wait = 1; wait >= 0; --wait) {
      unsigned long long total_bad = 0, total_bad_ctas = 0, stores = 0;
      const int rounds = 20;
      for (int round = 1; round <= rounds; ++round) {
        CHECK(cudaMemset(out, 0, size_t(ctas) * cs.bytes));
        CHECK(cudaMemset(bad, 0, 8));
        CHECK(cudaMemset(bad_ctas, 0, 8));
        store_and_exit<<<ctas, 128, cs.bytes>>>(out, cs.bytes, cs.parts, uint32_t(round), wait != 0);
        CHECK(cudaGetLastError());
        count_mismatches<<<sms * 4, 256>>>(out, cs.bytes / 4, ctas, uint32_t(round), bad, bad_ctas);
        CHECK(cudaDeviceSynchronize());
        unsigned long long b = 0, bc = 0;
        CHECK(cudaMemcpy(&b, bad, 8, cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(&bc, bad_ctas, 8, cudaMemcpyDeviceToHost));
        total_bad += b;
        total_bad_ctas += bc;
        stores += ctas;
      }
      std::printf("RESULT storeexit bytes=%u parts=%u wait=%s ctas_stored=%llu bad_ctas=%llu bad_words=%llu\n", cs.bytes,
                  cs.parts, wait ? "yes" : "no", stores, total_bad_ctas, total_bad);
    }
    CHECK(cudaFree(out));
  }
  return 0;
}
