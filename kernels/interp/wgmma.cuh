// The wgmma pieces the native probes share (kernels/interp/mmaprobe.cu, startprobe.cu): a plain
// shared-memory descriptor, the accumulators pinned across asm statements, fence / commit / wait, and
// three shapes. Operands are whatever shared memory holds (the values do not change the timing).
#pragma once

#include <cstdint>

namespace wgmma_probe {

// A shared-memory matrix descriptor (no swizzle): start address >> 4, leading and stride byte offsets >> 4.
__device__ __forceinline__ uint64_t desc(const void* smem) {
  const uint32_t a = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  return uint64_t((a >> 4) & 0x3fff) | (uint64_t(128 >> 4) << 16) | (uint64_t(256 >> 4) << 32);
}

// Pins the accumulators in their registers across the asm statements (CUTLASS's warpgroup_fence_operand).
__device__ __forceinline__ void pin(uint32_t (&d)[64]) {
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+r"(d[i])::"memory");
}
__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

#define R8(i) "+r"(d[i + 0]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3]), "+r"(d[i + 4]), "+r"(d[i + 5]), "+r"(d[i + 6]), "+r"(d[i + 7])

// m64n128k16 f16 += f16 x f16: 32 f16x2 accumulator registers per thread.
__device__ __forceinline__ void mma_n128_f16(uint32_t (&d)[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n128k16.f16.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "%32, %33, p, 1, 1, 0, 0; }"
      : R8(0), R8(8), R8(16), R8(24)
      : "l"(da), "l"(db));
}
// m64n128k32 f16 += e4m3 x e4m3.
__device__ __forceinline__ void mma_n128_e4m3(uint32_t (&d)[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n128k32.f16.e4m3.e4m3 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}, "
      "%32, %33, p, 1, 1; }"
      : R8(0), R8(8), R8(16), R8(24)
      : "l"(da), "l"(db));
}
// m64n256k16 f16 += f16 x f16: 64 registers.
__device__ __forceinline__ void mma_n256_f16(uint32_t (&d)[64], uint64_t da, uint64_t db) {
  asm volatile(
      "{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16 "
      "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,"
      "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}, "
      "%64, %65, p, 1, 1, 0, 0; }"
      : R8(0), R8(8), R8(16), R8(24), R8(32), R8(40), R8(48), R8(56)
      : "l"(da), "l"(db));
}

// One k-block of a 64 x 256 tile's warpgroup: fence, 4 x m64n256k16 out of (da, db), commit, wait.
__device__ __forceinline__ void kblock_n256(uint32_t (&d)[64], uint64_t da, uint64_t db) {
  pin(d);
  fence();
#pragma unroll
  for (int k = 0; k < 4; ++k) mma_n256_f16(d, da + 2 * k, db + 2 * k);
  commit();
  wait<0>();
  pin(d);
}

// Keeps the accumulators live, so that the compiler drops no MMA: their sum goes to `sink` only if it is
// a value it never is.
__device__ __forceinline__ void keep_live(const uint32_t (&d)[64], uint64_t* sink) {
  uint32_t sum = 0;
  for (int i = 0; i < 64; ++i) sum += d[i];
  if (sum == 0x12345678u) *sink = sum;
}

}  // namespace wgmma_probe
