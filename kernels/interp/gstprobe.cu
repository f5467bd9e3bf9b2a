// Native global-store probe (no interpreter, issue 21): what a CUTLASS epilogue that writes its
// accumulators straight from registers (DefaultEpilogue: `st.global` per element) costs an SM.
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a kernels/interp/gstprobe.cu -o gstprobe && ./gstprobe
//
// Every CTA (grid = CTAS, one per SM) has WARPS warps, grouped in warpgroups of 4 as a wgmma
// accumulator is: warp w of a warpgroup holds rows 16w .. 16w+15 of the warpgroup's 64-row slice, lane l
// rows l/4 and l/4 + 8, columns 2(l%4) + {0, 1} + 8j. One pass writes the CTA's whole 64·(WARPS/4) × 128
// tile once, in one of these forms (inline PTX, so the compiler cannot merge them):
//   u16  64 `st.global.u16` per thread (an f16/bf16 output, element by element: CUTLASS 49's epilogue)
//   f32  64 `st.global.f32` per thread (a float output, element by element: CUTLASS 48's)
//   u32  32 `st.global.u32` per thread (an f16 pair per store)
//   v4   the same bytes as u16, coalesced: 16 contiguous bytes per lane, a warp's 512 B in a row
//   u16m, f32m  as u16 and f32 into an M-major (column-major) output, CUTLASS 49's and 48's layout:
//        a warp's 8 lanes of one column write 8 consecutive elements (16 or 32 B), its 4 columns sit
//        one pitch apart (the 132 CTAs' tiles side by side: a pitch of 132 × 256 B); 4 sectors per store
// Row-major forms go round REGIONS tiles of the CTA's own (1: the same tile every pass, so every line
// stays in the L2; 64: 132 CTAs × 64 tiles exceed it); M-major forms rewrite one tile. Printed per case: the CUDA-event median of 15 launches
// (after 3 warm-up) less an empty launch's, per pass per CTA, per warp store instruction per SM, and
// the 32-byte sectors those instructions touch per ns per SM (u16/f32: 8 per instruction, u32 8, v4 16).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "probe.cuh"

namespace {

constexpr int kCols = 128;                     // the tile's columns (elements)
enum Form { U16 = 0, F32 = 1, U32 = 2, V4 = 3, U16M = 4, F32M = 5 };
const char* const kFormName[] = {"u16", "f32", "u32", "v4", "u16m", "f32m"};
constexpr int kMajorPitchTiles = 132;  // M-major: the tiles side by side along M
int elem_bytes(int form) { return form == F32 || form == F32M ? 4 : 2; }
int stores_per_thread(int form) { return form == U32 ? 32 : form == V4 ? 8 : 64; }
int sectors_per_store(int form) { return form == V4 ? 16 : form >= U16M ? 4 : 8; }

__global__ void store_tiles(uint8_t* out, int form, int passes, int regions, int rows) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int eb = form == F32 || form == F32M ? 4 : 2;
  const int warp_m = (warp / 4) * 64 + (warp % 4) * 16 + lane / 4;  // M-major: this lane's first m
  if (form >= U16M) {
    const size_t pitch = size_t(kMajorPitchTiles) * 128 * eb;  // bytes per column (n)
    uint8_t* t = out + size_t(blockIdx.x) * 128 * eb;
    for (int p = 0; p < passes; ++p) {
#pragma unroll
      for (int j = 0; j < kCols / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            uint8_t* a = t + size_t(2 * (lane % 4) + e + 8 * j) * pitch + size_t(warp_m + 8 * h) * eb;
            if (form == U16M)
              asm volatile("st.global.u16 [%0], %1;" ::"l"(a), "h"((unsigned short)p) : "memory");
            else
              asm volatile("st.global.f32 [%0], %1;" ::"l"(a), "f"(float(p)) : "memory");
          }
    }
    return;
  }
  const size_t pitch = size_t(kCols) * eb;       // bytes per row
  const size_t tile = pitch * rows;
  uint8_t* cta_base = out + size_t(blockIdx.x) * regions * tile;
  const int r0 = (warp / 4) * 64 + (warp % 4) * 16 + lane / 4;
  const int c0 = 2 * (lane % 4);
  for (int p = 0; p < passes; ++p) {
    uint8_t* t = cta_base + size_t(p % regions) * tile;
    if (form == V4) {
      // The same warp's 16 rows × 256 B (u16 tile bytes), 512 contiguous bytes per instruction.
      const int wr = (warp / 4) * 64 + (warp % 4) * 16;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        uint8_t* a = t + size_t(wr + 2 * i + lane / 16) * pitch + (lane % 16) * 16;
        asm volatile("st.global.v4.u32 [%0], {%1, %1, %1, %1};" ::"l"(a), "r"(p) : "memory");
      }
      continue;
    }
#pragma unroll
    for (int j = 0; j < kCols / 8; ++j) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        uint8_t* row = t + size_t(r0 + 8 * h) * pitch;
        if (form == U32) {
          asm volatile("st.global.u32 [%0], %1;" ::"l"(row + (c0 + 8 * j) * 2), "r"(p) : "memory");
        } else if (form == U16) {
#pragma unroll
          for (int e = 0; e < 2; ++e)
            asm volatile("st.global.u16 [%0], %1;" ::"l"(row + (c0 + e + 8 * j) * 2), "h"((unsigned short)p)
                         : "memory");
        } else {
#pragma unroll
          for (int e = 0; e < 2; ++e)
            asm volatile("st.global.f32 [%0], %1;" ::"l"(row + (c0 + e + 8 * j) * 4), "f"(float(p)) : "memory");
        }
      }
    }
  }
}

float median_ms(int ctas, int warps, int form, int passes, int regions, uint8_t* buf) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  std::vector<float> t;
  for (int i = 0; i < 18; ++i) {
    CK(cudaEventRecord(a));
    store_tiles<<<ctas, warps * 32>>>(buf, form, passes, regions, 16 * warps);
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    if (i >= 3) t.push_back(ms);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  return t[t.size() / 2];
}

}  // namespace

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int max_regions = 64, max_warps = 8;
  const size_t bytes = size_t(sms) * max_regions * (16 * max_warps) * kCols * 4;
  uint8_t* buf = nullptr;
  CK(cudaMalloc(&buf, bytes));
  CK(cudaMemset(buf, 0, bytes));
  std::printf("# gstprobe: %d SMs, CUDA-event medians of 15 launches, less an empty launch's\n", sms);
  const int passes = 64;
  for (int ctas : {1, sms})
    for (int warps : {4, 8})
      for (int regions : {1, 64})
        for (int form : {U16, F32, U32, V4, U16M, F32M}) {
          if (form >= U16M && regions > 1) continue;
          const float empty = median_ms(ctas, warps, form, 0, regions, buf);
          const float full = median_ms(ctas, warps, form, passes, regions, buf);
          const double ns = (full - empty) * 1e6;
          const double per_pass = ns / passes;
          const double instrs = double(warps) * stores_per_thread(form);  // warp instructions per pass per CTA
          const double sectors = instrs * sectors_per_store(form);
          const double tile_bytes = 16.0 * warps * kCols * elem_bytes(form);
          std::printf(
              "RESULT form=%s ctas=%d warps=%d regions=%d passes=%d empty_us=%.2f us=%.2f ns_per_pass=%.1f "
              "ns_per_warp_store=%.3f sectors_per_ns_per_sm=%.3f tile_bytes_per_ns_per_sm=%.1f\n",
              kFormName[form], ctas, warps, regions, passes, empty * 1e3, full * 1e3, per_pass, per_pass / instrs,
              sectors / per_pass, tile_bytes / per_pass);
        }
  CK(cudaFree(buf));
  return 0;
}
