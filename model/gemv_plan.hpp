// Planning for the NVFP4 GEMV kernel (kernels/gemv_nvfp4/): pure host C++, no CUDA dependency.
//
// The kernel streams the flat A matrix (all batches, rows of K/2 bytes, K contiguous) and its scales
// (K/16 bytes per row) through a ring of shared-memory stages. Every CTA owns a contiguous range of
// flat rows (row g = batch * m + row-in-batch); a stage is a contiguous slice of A bytes of that range
// (it may span rows) plus the matching scale bytes (one scale byte per 8 A bytes). This function
// decides the grid, the stage size and count, and the shared-memory layout the kernel uses.
#pragma once

#include <cstdint>
#include <string>

#include "model/arch.hpp"

namespace pipesim::model {

struct GemvShape {
  int64_t m = 0;  // rows of A per batch
  int64_t k = 0;  // reduction length (elements); multiple of 64
  int64_t l = 0;  // batch
};

// Optional overrides (benchmark sweeps); 0 means "choose".
struct GemvHints {
  int64_t stage_a_bytes = 0;
  int consumer_warps = 0;
  int max_stages = 0;
  int ctas_per_sm = 0;
  int waves = 0;  // grid = SMs x ctas_per_sm x waves (the hardware scheduler balances the waves)
};

struct GemvPlan {
  bool ok = false;
  std::string why;              // when !ok: the reason

  // Launch.
  int64_t grid = 0;             // CTAs
  int consumer_warps = 0;       // warps 1..consumer_warps consume; warp 0 is the producer
  int threads = 0;              // 32 * (1 + consumer_warps)
  int64_t rows_total = 0;       // l * m
  int64_t rows_per_cta = 0;     // the most flat rows one CTA owns

  // One stage: A bytes (multiple of 512), and room for its scale bytes: A/8 plus 32 bytes of slack
  // (the scale copy starts at the 16-byte boundary at or below the first scale byte).
  int64_t stage_a_bytes = 0;
  int64_t stage_sf_bytes = 0;
  int stages = 0;
  int64_t stages_per_cta = 0;   // the most stages one CTA streams (its A bytes / stage, +1 per batch edge)

  // Vector buffers: b decoded to f16 (2 bytes per element) and sfb as f32 (4 bytes per 16 elements);
  // two buffers when a CTA can cross a batch boundary.
  int b_buffers = 0;
  int64_t b_buffer_bytes = 0;
  // Raw vector staging (b_buffers slots, filled by TMA in stream order): k/2 bytes of b, then the sfb bytes
  // from the 16-byte boundary at or below the batch's first one (k/16 + 32 bytes of room).
  int64_t off_vraw = 0;
  int64_t vraw_bytes = 0;

  // Shared-memory layout (byte offsets from a 128-byte aligned base).
  int64_t off_full = 0;         // S mbarriers (8 bytes each)
  int64_t off_empty = 0;        // S mbarriers
  int64_t off_vfull = 0;        // 2 mbarriers: the vector pipeline (raw b + sfb per batch, by TMA)
  int64_t off_vempty = 0;       // 2 mbarriers
  int64_t off_flag = 0;         // one 16-byte word (the kernel's abort flag)
  int64_t off_ring = 0;         // S stages of stage_a_bytes + stage_sf_bytes, 128-byte aligned each
  int64_t stage_stride = 0;
  int64_t off_b = 0;            // b_buffers buffers of b_buffer_bytes (128-byte aligned)
  int64_t off_rowsum = 0;       // consumer_warps x rows_per_cta floats (per-warp row sums)
  int64_t smem_bytes = 0;       // total dynamic shared memory, including 128 bytes of base alignment slack

  // Data the kernel moves from device memory (A + sfa + b + sfb read, c written).
  int64_t bytes_moved = 0;
};

// Bytes of A, sfa, b, sfb and c for a shape.
int64_t gemv_bytes_moved(const GemvShape& s);

// The plan for one shape on one architecture (cap.sms CTAs' worth of SMs, cap.smem_per_block).
GemvPlan plan_gemv(const GemvShape& s, const Capacity& cap, const GemvHints& hints = {});

}  // namespace pipesim::model
