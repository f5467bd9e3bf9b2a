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
//   u16d, f32d  the same into a 2048 × 2048 M-major D (a pitch of 4 or 8 KiB), each CTA one 128 × 128
//        tile of it a pass, as CUTLASS 49's and 48's epilogues write (`gstprobe burst` only)
// A CTA's passes go round REGIONS tiles of its own (1: the same tile every pass, so every line stays in
// the L2; 64: 132 CTAs × 64 tiles exceed it). By default the row-major forms at 1 and 64 and the
// M-major ones at 1; `gstprobe major`: the M-major forms at 1, 8 and 64. Printed per case: the CUDA-event median of 15 launches
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
enum Form { U16 = 0, F32 = 1, U32 = 2, V4 = 3, U16M = 4, F32M = 5, U16D = 6, F32D = 7 };
const char* const kFormName[] = {"u16", "f32", "u32", "v4", "u16m", "f32m", "u16d", "f32d"};
constexpr int kGemm = 2048;  // u16d / f32d: a 2048 x 2048 M-major D of 16 x 16 tiles, CTA c's pass p tile (c + 132 p) % 256
constexpr int kMajorPitchTiles = 132;  // M-major: the tiles side by side along M
int elem_bytes(int form) { return form == F32 || form == F32M || form == F32D ? 4 : 2; }
int stores_per_thread(int form) { return form == U32 ? 32 : form == V4 ? 8 : 64; }
int sectors_per_store(int form) { return form == V4 ? 16 : form >= U16M ? 4 : 8; }

__device__ __forceinline__ void store_body(uint8_t* out, int form, int passes, int regions, int rows) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int eb = form == F32 || form == F32M || form == F32D ? 4 : 2;
  const int warp_m = (warp / 4) * 64 + (warp % 4) * 16 + lane / 4;  // M-major: this lane's first m
  if (form >= U16M) {
    const bool gemm = form >= U16D;
    const size_t pitch = size_t(gemm ? kGemm : kMajorPitchTiles * 128) * eb;  // bytes per column (n)
    for (int p = 0; p < passes; ++p) {
      const int tile = (blockIdx.x + 132 * p) % ((kGemm / 128) * (kGemm / 128));
      uint8_t* t = gemm ? out + size_t(tile % (kGemm / 128)) * 128 * eb + size_t(tile / (kGemm / 128)) * 128 * pitch
                        : out + size_t(blockIdx.x) * 128 * eb + size_t(p % regions) * kCols * pitch;
#pragma unroll
      for (int j = 0; j < kCols / 8; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            uint8_t* a = t + size_t(2 * (lane % 4) + e + 8 * j) * pitch + size_t(warp_m + 8 * h) * eb;
            if (form == U16M || form == U16D)
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

__global__ void store_tiles(uint8_t* out, int form, int passes, int regions, int rows) {
  store_body(out, form, passes, regions, rows);
}

// Per CTA, %globaltimer before its first store and after its warps' last one (the stores may still be
// draining then): `gstprobe burst`.
__global__ void stamped_store_tiles(uint8_t* out, int form, int passes, int regions, int rows, uint64_t* stamps) {
  __syncthreads();
  if (threadIdx.x == 0) stamps[2 * blockIdx.x] = gt();
  store_body(out, form, passes, regions, rows);
  __syncthreads();
  if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = gt();
}

// The median over 15 launches (after 3) of the span from the first CTA's first store to the last CTA's
// last, in ns.
double median_span_ns(int ctas, int warps, int form, int passes, int regions, uint8_t* buf, uint64_t* stamps) {
  std::vector<double> t;
  for (int i = 0; i < 18; ++i) {
    stamped_store_tiles<<<ctas, warps * 32>>>(buf, form, passes, regions, 16 * warps, stamps);
    CK(cudaGetLastError());
    const double span = launch_span_ns(stamps, ctas);
    if (i >= 3) t.push_back(span);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
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

int main(int argc, char** argv) {
  // `gstprobe major`: the M-major forms only, each pass into a new tile of REGIONS (1, 8, 64).
  const bool major_only = argc > 1 && std::strcmp(argv[1], "major") == 0;
  // `gstprobe burst`: how a short burst of stores fares against a long one: the M-major forms into
  // new lines (64 regions), 1 to 64 passes, timed inside the kernel (%globaltimer spans).
  if (argc > 1 && std::strcmp(argv[1], "burst") == 0) {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const size_t bytes = size_t(kMajorPitchTiles) * 128 * 4 * kCols * 64;
    uint8_t* buf = nullptr;
    uint64_t* stamps = nullptr;
    CK(cudaMalloc(&buf, bytes));
    CK(cudaMalloc(&stamps, 2 * sizeof(uint64_t) * size_t(sms)));
    std::printf("# gstprobe burst: %d SMs, 8 warps a CTA, medians of 15 in-kernel spans (first store to last CTA's last)\n", sms);
    for (int ctas : {1, sms})
      for (int form : {U16M, F32M, U16D, F32D})
        for (int passes : {1, 2, 4, 8, 16, 32, 64}) {
          const double ns = median_span_ns(ctas, 8, form, passes, 64, buf, stamps);
          const double instrs = 8.0 * stores_per_thread(form) * passes;
          std::printf("RESULT burst form=%s ctas=%d warps=8 passes=%d span_ns=%.0f ns_per_warp_store=%.3f\n",
                      kFormName[form], ctas, passes, ns, ns / instrs);
        }
    return 0;
  }
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
      for (int regions : {1, 8, 64})
        for (int form : {U16, F32, U32, V4, U16M, F32M}) {
          if (major_only != (form >= U16M) || (!major_only && regions == 8)) continue;
          if (!major_only && form >= U16M && regions > 1) continue;
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
