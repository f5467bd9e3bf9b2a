// Operand footprints derived from shapes — never typed in.
//
// Every rule here is written down in docs/budget.md with where it comes from; the short version:
//   - the MMA tile (mma_m × mma_n × tile_k) belongs to the CTA pair under cta_group 2; per CTA, A holds
//     mma_m / cta_group rows (split along M) and B holds mma_n / cta_group rows (split along N);
//   - scale factors are stored in 128-row × 4-scale atoms of 512 bytes (tcgen05 block-scaled layout):
//     SFA covers the CTA's M rows, SFB covers roundup(mma_n, 128) rows and is *not* split by cta_group;
//   - the epilogue stages C through shared memory in sub-tiles chosen like CUTLASS's
//     compute_epilogue_tile_shape;
//   - buffers of the shared-storage struct start on 1024-byte boundaries.
#pragma once

#include "model/arch.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pipesim::model {

// Element types the budget knows. Bits are the storage width of one element in global memory.
enum class Dtype {
  f32,
  tf32,
  f16,
  bf16,
  e4m3,   // float8_e4m3fn
  e5m2,   // float8_e5m2
  e3m2,   // float6_e3m2fn
  e2m3,   // float6_e2m3fn
  e2m1,   // float4_e2m1fn
  ue8m0,  // float8_e8m0fnu (MX scale factors)
  ue4m3,  // E4M3 used as an (unsigned) NVFP4 scale factor
};

int dtype_bits(Dtype t);
std::string_view dtype_name(Dtype t);
// Accepts the usual spellings: f32 fp32 float32, f16 fp16 half, bf16, e4m3 fp8 f8 float8_e4m3fn,
// e5m2, e3m2 fp6, e2m3, e2m1 fp4 f4, ue8m0 e8m0, ue4m3. nullopt when unknown.
std::optional<Dtype> parse_dtype(std::string_view s);

// A named operand format: nvfp4 = e2m1 data + e4m3 scale per 16; mxfp4 = e2m1 + ue8m0 per 32;
// mxf8 = e4m3 + ue8m0 per 32; mxf6 = e3m2 + ue8m0 per 32; or a plain dtype (no scale factor).
struct OperandFormat {
  Dtype data = Dtype::f16;
  std::optional<Dtype> sf;  // nullopt: no block scaling
  int sf_vec = 0;           // elements along K per scale factor; 0 when no block scaling
};
std::optional<OperandFormat> parse_operand_format(std::string_view s);

// tcgen05.mma kinds: model::MmaKind in arch.hpp. "kind::mxf4nvf4" as PTX spells it:
std::string mma_kind_ptx(MmaKind k);

// The MMA kind a pair of operand types selects, and its K per instruction.
struct MmaInfo {
  MmaKind kind = MmaKind::F16;
  int inst_k = 0;        // K elements per tcgen05.mma instruction
  int a_smem_bits = 0;   // bits one A element occupies in shared memory
  int b_smem_bits = 0;
  bool block_scaled = false;
};
// Errors (as text) when the combination has no tcgen05 kind.
std::optional<MmaInfo> select_mma(Dtype a, Dtype b, std::optional<Dtype> sf, int sf_vec,
                                  std::string* error);

// The shapes a footprint depends on.
struct TileShape {
  int mma_m = 0;      // MMA tile M (the CTA pair's M under cta_group 2)
  int mma_n = 0;      // MMA tile N
  int tile_k = 0;     // K per pipeline stage
  int cta_group = 1;  // 1 or 2
};

// Per-CTA bytes of one pipeline stage of each main-loop operand.
struct AbFootprint {
  int cta_m = 0;             // mma_m / cta_group: A rows held by each CTA
  int cta_n_b = 0;           // mma_n / cta_group: B rows held by each CTA
  int64_t a = 0;
  int64_t b = 0;
  int64_t sfa = 0;           // 0 when not block scaled
  int64_t sfb = 0;
  int sfa_rows_padded = 0;   // rows after padding to 128-row atoms
  int sfb_rows_padded = 0;
  int sf_k_padded = 0;       // scale factors per row after padding to 4 per atom
  int64_t per_stage() const { return a + b + sfa + sfb; }
};

AbFootprint ab_footprint(const TileShape& t, const MmaInfo& mma, int sf_vec);

// A-like (split along M) and B-like (split along N) extra operands, e.g. LoRA-down activation LA
// [mma_m, R] and LoRA-up weight LU [mma_n, R]: per-CTA bytes of one stage.
int64_t a_like_bytes(int mma_m, int k, int bits, int cta_group);
int64_t b_like_bytes(int mma_n, int k, int bits, int cta_group);

// Scale-factor bytes for `rows` rows and `k` elements of K at vector `sf_vec`, 8-bit scales, in
// 128-row × 4-scale atoms of 512 B (padding both ways).
int64_t scale_factor_bytes(int rows, int k, int sf_vec);

// The epilogue sub-tile CUTLASS picks for a TMA-store epilogue without a source C
// (compute_epilogue_tile_size, CUTLASS 4.x; output N-major, i.e. row-major C).
struct EpilogueTile {
  int m = 0;
  int n = 0;
  int64_t bytes = 0;  // one staging buffer: m × n × bits / 8
};
EpilogueTile epilogue_tile(int cta_m, int cta_n, int cta_group, int c_bits);

// Shared-memory storage of barriers: 8 bytes per mbarrier (PTX: .b64 object).
constexpr int64_t kMbarrierBytes = 8;
// Buffers of the shared-storage struct are aligned to this (CUTLASS buffer_align_bytes = 1024,
// the period of the 128-byte swizzle pattern: 8 rows × 128 B).
constexpr int64_t kBufferAlign = 1024;
// CUTLASS's stage solvers reserve this much for barriers and helpers (mbar_helpers_bytes).
constexpr int64_t kMbarHelperBytes = 1024;

constexpr int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
constexpr int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

// TMEM columns (32-bit) of a block-scaled or dense tcgen05 GEMM.
struct TmemColumns {
  int accumulator = 0;       // per stage: cta N columns of fp32
  int num_acc_stage = 0;
  bool overlapping_accum = false;  // CUTLASS's tile_n == 256 trick: 2 stages share columns with SF
  int accumulator_total = 0;
  int sfa = 0;               // (cta_M / 32) · 4
  int sfb = 0;               // (roundup(N,128) / 32) · 4
  int used = 0;              // accumulator_total + sfa + sfb
  int pow2 = 0;              // smallest power of two ≥ used, at least 32
  int requested = 0;         // what the kernel passes to tcgen05.alloc
};
// `tile_n_acc` = mma_n (the accumulator's N per CTA; not split by cta_group).
// `overlapping_accum`: CUTLASS's block-scaled kernel with num_acc_stage 1 (tile N 256) overlaps two
// accumulator buffers: 2·N − SF columns. `request_max`: the kernel allocates every column
// (CUTLASS's block-scaled example: 512); else the smallest power of two.
TmemColumns tmem_columns(int cta_m, int mma_n, int num_acc_stage, bool block_scaled,
                         bool overlapping_accum, bool request_max, int tmem_columns_max);

// Smallest power of two ≥ x, at least `floor`.
int pow2_at_least(int x, int floor);

}  // namespace pipesim::model
