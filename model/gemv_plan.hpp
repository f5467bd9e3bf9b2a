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
#include <utility>

#include "model/arch.hpp"

namespace pipesim::model {

// Chunk claims the kernel's scheduler warp keeps in flight (its ticket ring has as many slots).
inline constexpr int kGemvClaims = 4;

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
  // Work split (see GemvPlan): the share of the flat rows split statically, in 1/1000 (-1: choose;
  // 0: every row in dynamically claimed chunks; 1000: the whole matrix static, no chunks).
  int static_permille = -1;
  int64_t chunk_bytes = 0;        // A bytes of one dynamic chunk (rounded to whole rows); 0: one stage
  int64_t first_stage_bytes = 0;  // A bytes of a CTA's first stage (multiple of 512); 0: a full stage
  int claim_lead_stages = 0;      // stages before the static range's end the first claims go out (0: 2 x stages)
  // Bytes per element of the decoded vector: 1 for the int8 decode (sm_90a), 2 for f16 (sm_100a);
  // 0: 2 (room for either).
  int vector_elem_bytes = 0;
};

struct GemvPlan {
  bool ok = false;
  std::string why;              // when !ok: the reason

  // Launch.
  int64_t grid = 0;             // CTAs
  int consumer_warps = 0;       // warps 1..consumer_warps consume; warp 0 is the producer
  int threads = 0;              // 32 * (2 + consumer_warps): the last warp is the chunk scheduler
  int64_t rows_total = 0;       // l * m
  int64_t rows_per_cta = 0;     // the most flat rows one CTA would own with an all-static split

  // Work split. Flat rows [0, static_rows) are split statically: CTA c owns
  // [c * static_rows / grid, (c + 1) * static_rows / grid) and streams it first. Rows
  // [static_rows, rows_total) form `chunks` chunks of at most chunk_rows rows that never cross a batch
  // edge (gemv_chunk_range), claimed at run time by the CTAs' producers from one counter (atomicAdd,
  // one claim ahead), so that CTAs which stream faster take more of them.
  int64_t batch_rows = 0;           // m
  int64_t static_rows = 0;
  int64_t static_rows_per_cta = 0;  // the most rows of one CTA's static range
  int64_t chunk_rows = 0;           // at most m
  int64_t chunks = 0;
  int64_t chunks_first_batch = 0;   // chunks in the batch static_rows lies in (its rows from static_rows on)
  int64_t chunks_per_batch = 0;     // chunks in each later batch: cdiv(m, chunk_rows)
  // Claims: a scheduler warp (the CTA's last) keeps claims_ahead atomicAdds in flight (under full load
  // an atomic queues behind the SM's own bulk reads, several microseconds) and hands the chunks to the
  // producer through a ticket ring of claims_ahead slots; it starts when the producer has
  // claim_lead_stages stages of its static range left ("go").
  int claims_ahead = 0;
  int64_t claim_lead_stages = 0;
  // The CTA's very first stage carries first_stage_bytes of A (<= stage_a_bytes), the rest
  // stage_a_bytes: a smaller first stage lands sooner.
  int64_t first_stage_bytes = 0;

  // One stage: A bytes (multiple of 512), and room for its scale bytes: A/8 plus 32 bytes of slack
  // (the scale copy starts at the 16-byte boundary at or below the first scale byte).
  int64_t stage_a_bytes = 0;
  int64_t stage_sf_bytes = 0;
  int stages = 0;
  int64_t stages_per_cta = 0;   // the most stages one CTA streams (its A bytes / stage, +1 per batch edge)

  // Vector buffers: b decoded (vector_elem_bytes per element: int8 on sm_90a, f16 on sm_100a) and sfb as
  // f32 (4 bytes per 16 elements); two buffers when a CTA can cross a batch boundary.
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
  int64_t off_hdr = 0;          // S x 16 B stage headers: the chunk's first row, rows (0: no more), batch
  int64_t off_tick = 0;         // claims_ahead x 16 B ticket slots (same record), scheduler -> producer
  int64_t off_tfull = 0;        // claims_ahead mbarriers (count 1)
  int64_t off_tempty = 0;       // claims_ahead mbarriers (count 1)
  int64_t off_go = 0;           // 1 mbarrier (count 1): the producer lets the scheduler start claiming
  int64_t off_done = 0;         // areas + 1 ints: warps done with the range in each row-sum area
  int64_t off_ring = 0;         // S stages of stage_a_bytes + stage_sf_bytes, 128-byte aligned each
  int64_t stage_stride = 0;
  int64_t off_b = 0;            // b_buffers buffers of b_buffer_bytes (128-byte aligned)
  // Per-warp row sums: the static range's (consumer_warps x area0_rows floats at off_rowsum,
  // area0_rows = static_rows_per_cta) and a ring of `areas` chunk areas (consumer_warps x area1_rows
  // floats each from off_rowsum1, area1_rows = chunk_rows; chunk n of a CTA uses area n % areas).
  // The last warp to finish a range sums its row sums and writes c (no CTA-wide barrier); areas =
  // stages + 1, so no warp can run far enough ahead to reuse an area whose sum is pending.
  int64_t off_rowsum = 0;
  int64_t off_rowsum1 = 0;
  int64_t area0_rows = 0;
  int64_t area1_rows = 0;
  int64_t areas = 0;
  int64_t smem_bytes = 0;       // total dynamic shared memory, including 128 bytes of base alignment slack

  // Data the kernel moves from device memory (A + sfa + b + sfb read, c written).
  int64_t bytes_moved = 0;
};

// Elements of the decoded vector take 1 byte (int8, the sm_90a code) below compute capability 10,
// 2 (f16, the Blackwell conversion) from 10 on: the kernel's kVecBytesPerElem (GemvHints::vector_elem_bytes).
int gemv_vector_elem_bytes(int compute_major);

// Bytes of A, sfa, b, sfb and c for a shape.
int64_t gemv_bytes_moved(const GemvShape& s);

// The plan for one shape on one architecture (cap.sms CTAs' worth of SMs, cap.smem_per_block).
GemvPlan plan_gemv(const GemvShape& s, const Capacity& cap, const GemvHints& hints = {});

// Flat rows [first, second) of chunk t < plan.chunks. The kernel (chunk_range in gemv_nvfp4.cu) and
// the scenarios compute the same: chunk t < chunks_first_batch is rows static_rows + t * chunk_rows
// on, up to that batch's end; later chunks count chunks_per_batch per batch from the next batch on.
std::pair<int64_t, int64_t> gemv_chunk_range(const GemvPlan& plan, int64_t t);

}  // namespace pipesim::model
