#include "model/footprint.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace pipesim::model {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

struct DtypeRow {
  Dtype t;
  std::string_view name;
  int bits;
};

// Storage widths: IEEE / OCP MX specification (f32 32, f16/bf16 16, fp8 8, fp6 6, fp4 4 bits);
// tf32 is stored as 32 bits.
constexpr std::array kDtypes{
    DtypeRow{Dtype::f32, "f32", 32},     DtypeRow{Dtype::tf32, "tf32", 32},
    DtypeRow{Dtype::f16, "f16", 16},     DtypeRow{Dtype::bf16, "bf16", 16},
    DtypeRow{Dtype::e4m3, "e4m3", 8},    DtypeRow{Dtype::e5m2, "e5m2", 8},
    DtypeRow{Dtype::e3m2, "e3m2", 6},    DtypeRow{Dtype::e2m3, "e2m3", 6},
    DtypeRow{Dtype::e2m1, "e2m1", 4},    DtypeRow{Dtype::ue8m0, "ue8m0", 8},
    DtypeRow{Dtype::ue4m3, "ue4m3", 8},
};

bool is_f8(Dtype t) { return t == Dtype::e4m3 || t == Dtype::e5m2; }
bool is_f6(Dtype t) { return t == Dtype::e3m2 || t == Dtype::e2m3; }
bool is_f4(Dtype t) { return t == Dtype::e2m1; }
bool is_narrow(Dtype t) { return is_f8(t) || is_f6(t) || is_f4(t); }

}  // namespace

int dtype_bits(Dtype t) {
  for (const DtypeRow& r : kDtypes)
    if (r.t == t) return r.bits;
  return 0;
}

std::string_view dtype_name(Dtype t) {
  for (const DtypeRow& r : kDtypes)
    if (r.t == t) return r.name;
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view s) {
  const std::string k = lower(s);
  if (k == "f32" || k == "fp32" || k == "float32") return Dtype::f32;
  if (k == "tf32") return Dtype::tf32;
  if (k == "f16" || k == "fp16" || k == "half" || k == "float16") return Dtype::f16;
  if (k == "bf16" || k == "bfloat16") return Dtype::bf16;
  if (k == "e4m3" || k == "fp8" || k == "f8" || k == "float8_e4m3fn" || k == "e4m3fn")
    return Dtype::e4m3;
  if (k == "e5m2" || k == "float8_e5m2") return Dtype::e5m2;
  if (k == "e3m2" || k == "fp6" || k == "f6" || k == "float6_e3m2fn") return Dtype::e3m2;
  if (k == "e2m3" || k == "float6_e2m3fn") return Dtype::e2m3;
  if (k == "e2m1" || k == "fp4" || k == "f4" || k == "float4_e2m1fn") return Dtype::e2m1;
  if (k == "ue8m0" || k == "e8m0" || k == "float8_e8m0fnu") return Dtype::ue8m0;
  if (k == "ue4m3") return Dtype::ue4m3;
  return std::nullopt;
}

std::optional<OperandFormat> parse_operand_format(std::string_view s) {
  const std::string k = lower(s);
  // NVFP4: E2M1 data, one E4M3 scale per 16 elements (NVIDIA NVFP4; semantics.md, seed 001).
  if (k == "nvfp4" || k == "nvf4") return OperandFormat{Dtype::e2m1, Dtype::e4m3, 16};
  // OCP MX v1.0: MXFP4/MXFP6/MXFP8 share one E8M0 scale per 32 elements.
  if (k == "mxfp4" || k == "mxf4") return OperandFormat{Dtype::e2m1, Dtype::ue8m0, 32};
  if (k == "mxfp6" || k == "mxf6") return OperandFormat{Dtype::e3m2, Dtype::ue8m0, 32};
  if (k == "mxfp8" || k == "mxf8") return OperandFormat{Dtype::e4m3, Dtype::ue8m0, 32};
  if (auto t = parse_dtype(k)) return OperandFormat{*t, std::nullopt, 0};
  return std::nullopt;
}

std::string mma_kind_ptx(MmaKind k) { return "kind::" + std::string(mma_kind_name(k)); }

std::optional<MmaInfo> select_mma(Dtype a, Dtype b, std::optional<Dtype> sf, int sf_vec,
                                  std::string* error) {
  auto fail = [&](std::string msg) -> std::optional<MmaInfo> {
    if (error) *error = std::move(msg);
    return std::nullopt;
  };
  const auto name = [](Dtype t) { return std::string(dtype_name(t)); };
  if (!sf) {
    // Dense kinds (PTX tcgen05.mma): K per instruction = 32 bytes of the operand type.
    if ((a == Dtype::f16 || a == Dtype::bf16) && a == b)
      return MmaInfo{MmaKind::F16, 16, 16, 16, false};  // kind::f16, K = 16
    if (a == Dtype::tf32 && b == Dtype::tf32)
      return MmaInfo{MmaKind::TF32, 8, 32, 32, false};  // kind::tf32, K = 8
    if (is_narrow(a) && is_narrow(b))
      // kind::f8f6f4, K = 32. f6/f4 operands of this kind sit unpacked, one byte per element, in
      // shared memory (TMA U4/U6_UNPACK_U8 formats) — marked uncertain in docs/budget.md.
      return MmaInfo{MmaKind::F8F6F4, 32, 8, 8, false};
    return fail("no tcgen05.mma kind takes A " + name(a) + " with B " + name(b) +
                " (A and B must both be f16, both bf16, both tf32, or both f8/f6/f4)");
  }
  if (!is_narrow(a) || !is_narrow(b))
    return fail("block scaling needs f8/f6/f4 operands, got A " + name(a) + ", B " + name(b));
  if (*sf != Dtype::ue8m0 && *sf != Dtype::e4m3 && *sf != Dtype::ue4m3)
    return fail("scale factors must be ue8m0 or e4m3, got " + name(*sf));
  if (sf_vec != 16 && sf_vec != 32)
    return fail("scale-factor vector must be 16 or 32, got " + std::to_string(sf_vec));
  const bool both_f4 = is_f4(a) && is_f4(b);
  // CUTLASS is_valid_dtypes_and_scale_factor_vec_size: vector 16 only for f4 × f4;
  // vector 32 needs ue8m0 scales.
  if (sf_vec == 16 && !both_f4)
    return fail("scale-factor vector 16 is only for f4 × f4 (NVFP4); use 32 for MX formats");
  if (sf_vec == 32 && *sf != Dtype::ue8m0)
    return fail("scale-factor vector 32 needs ue8m0 scales (MX); e4m3 scales go with vector 16");
  if (both_f4) {
    // kind::mxf4 (ue8m0 / 32) or kind::mxf4nvf4 (vector 16): K = 64, operands packed two per byte.
    const MmaKind kind = sf_vec == 32 ? MmaKind::MxF4 : MmaKind::MxF4NvF4;
    return MmaInfo{kind, 64, 4, 4, true};
  }
  // kind::mxf8f6f4: K = 32; narrower operands unpacked to one byte each in shared memory
  // (CUTLASS needs_unpack_tma: different widths or any 6-bit operand).
  return MmaInfo{MmaKind::MxF8F6F4, 32, 8, 8, true};
}

int64_t scale_factor_bytes(int rows, int k, int sf_vec) {
  if (sf_vec <= 0) return 0;
  // tcgen05 block-scaled layout atom (PTX "scale factor A/B layout"; CUTLASS BlockScaledBasicChunk):
  // (32 × 4) rows × 4 scale factors, 1 byte each = 512 B. Rows pad up to 128, scales along K pad up
  // to 4 (cute.tile_to_shape rounds the target up to whole atoms).
  const int64_t row_atoms = ceil_div(rows, 128);
  const int64_t k_atoms = ceil_div(ceil_div(k, sf_vec), 4);
  return row_atoms * k_atoms * 512;
}

AbFootprint ab_footprint(const TileShape& t, const MmaInfo& mma, int sf_vec) {
  AbFootprint f;
  // cta_group 2: the pair's A is split along M and B along N (partition_shape_A/B of the 2-CTA atom;
  // seed 001 §7.2).
  f.cta_m = t.mma_m / t.cta_group;
  f.cta_n_b = t.mma_n / t.cta_group;
  f.a = int64_t{f.cta_m} * t.tile_k * mma.a_smem_bits / 8;
  f.b = int64_t{f.cta_n_b} * t.tile_k * mma.b_smem_bits / 8;
  if (mma.block_scaled) {
    // SFA: the CTA's own M rows (make_smem_layout_sfa: mma_m / atom_thr_size).
    // SFB: roundup(mma_n, 128) rows, whole in every CTA (make_smem_layout_sfb: no cta_group split).
    f.sfa_rows_padded = static_cast<int>(round_up(f.cta_m, 128));
    f.sfb_rows_padded = static_cast<int>(round_up(t.mma_n, 128));
    f.sf_k_padded = static_cast<int>(round_up(ceil_div(t.tile_k, sf_vec), 4));
    f.sfa = scale_factor_bytes(f.cta_m, t.tile_k, sf_vec);
    f.sfb = scale_factor_bytes(static_cast<int>(round_up(t.mma_n, 128)), t.tile_k, sf_vec);
  }
  return f;
}

int64_t a_like_bytes(int mma_m, int k, int bits, int cta_group) {
  return int64_t{mma_m / cta_group} * k * bits / 8;
}

int64_t b_like_bytes(int mma_n, int k, int bits, int cta_group) {
  return int64_t{mma_n / cta_group} * k * bits / 8;
}

EpilogueTile epilogue_tile(int cta_m, int cta_n, int cta_group, int c_bits) {
  // CUTLASS compute_epilogue_tile_size (blackwell_helpers.py), no source C, D N-major:
  // warps (2,2) when cta_m == 64 under 2-CTA, else (4,1); tile_m = min(cta_m, 32 · warp_m);
  // n_perf = 4096 elements (8192 for 4-bit D) / tile_m, halved until it divides cta_n;
  // n_min = 128 bits / width per warp (128 elements for 6-bit); tile_n = min(cta_n, max(n_perf, n_min)),
  // falling back to cta_n when that does not divide cta_n.
  const int warp_m = (cta_m == 64 && cta_group == 2) ? 2 : 4;
  const int warp_n = (cta_m == 64 && cta_group == 2) ? 2 : 1;
  const int tile_m = std::min(cta_m, 32 * warp_m);
  int n_perf = (c_bits == 4 ? 8192 : 4096) / tile_m;
  while (n_perf > 1 && cta_n % n_perf != 0) n_perf /= 2;
  const int n_min = c_bits == 6 ? 128 * warp_n : (128 / c_bits) * warp_n;
  int tile_n = std::min(cta_n, std::max(n_perf, n_min));
  if (tile_n <= 0 || cta_n % tile_n != 0) tile_n = cta_n;
  return EpilogueTile{tile_m, tile_n, int64_t{tile_m} * tile_n * c_bits / 8};
}

int pow2_at_least(int x, int floor) {
  int p = 1;
  while (p < x) p *= 2;
  return std::max(p, floor);
}

TmemColumns tmem_columns(int cta_m, int mma_n, int num_acc_stage, bool block_scaled,
                         bool overlapping_accum, bool request_max, int tmem_columns_max) {
  TmemColumns c;
  // fp32 accumulator: one 32-bit column per N element, cta_m ≤ 128 lanes.
  c.accumulator = mma_n;
  c.num_acc_stage = num_acc_stage;
  if (block_scaled) {
    // CUTLASS dense_blockscaled_gemm_persistent: sf_atom_mn = 32, mma_inst_tile_k = 4.
    c.sfa = (cta_m / 32) * 4;
    c.sfb = (static_cast<int>(round_up(mma_n, 128)) / 32) * 4;
  }
  // CUTLASS: num_acc_stage == 1 (tile_n 256) switches on overlapping_accum — two accumulator
  // buffers overlapped so that acc columns = 2 · N − SF columns.
  c.overlapping_accum = block_scaled && overlapping_accum;
  c.accumulator_total = c.overlapping_accum ? 2 * mma_n - (c.sfa + c.sfb) : mma_n * num_acc_stage;
  c.used = c.accumulator_total + c.sfa + c.sfb;
  // tcgen05.alloc: a power of two in [32, 512] columns (PTX ISA; CUTLASS TMEM_MIN_ALLOC_COLUMNS 32).
  c.pow2 = pow2_at_least(c.used, 32);
  c.requested = request_max ? tmem_columns_max : c.pow2;
  return c;
}

}  // namespace pipesim::model
