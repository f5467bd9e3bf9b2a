#include "model/gemv_plan.hpp"

#include <algorithm>

namespace pipesim::model {
namespace {

constexpr int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kDefaultStageABytes = 32768;
constexpr int kDefaultConsumerWarps = 16;
constexpr int kDefaultMaxStages = 8;
constexpr int kDefaultWaves = 1;
constexpr int64_t kMaxRowsPerCta = 512;  // row sums: consumer warps x rows floats

GemvPlan fail(std::string why) {
  GemvPlan p;
  p.ok = false;
  p.why = std::move(why);
  return p;
}

}  // namespace

int64_t gemv_bytes_moved(const GemvShape& s) {
  const int64_t a = s.l * s.m * s.k / 2;
  const int64_t sfa = s.l * s.m * s.k / 16;
  const int64_t b = s.l * s.k / 2;
  const int64_t sfb = s.l * s.k / 16;
  const int64_t c = s.l * s.m * 2;
  return a + sfa + b + sfb + c;
}

GemvPlan plan_gemv(const GemvShape& s, const Capacity& cap, const GemvHints& hints) {
  if (s.m < 1 || s.l < 1) return fail("m and l must be at least 1");
  if (s.k < 64 || s.k % 64 != 0) return fail("k must be a positive multiple of 64");
  if (cap.sms < 1 || cap.smem_per_block < 1) return fail("architecture capacities missing");

  GemvPlan p;
  p.rows_total = s.l * s.m;
  p.bytes_moved = gemv_bytes_moved(s);

  const int ctas_per_sm = hints.ctas_per_sm > 0 ? hints.ctas_per_sm : 1;
  const int waves = hints.waves > 0 ? hints.waves : kDefaultWaves;
  int64_t grid = std::min<int64_t>(p.rows_total, int64_t{cap.sms} * ctas_per_sm * waves);
  grid = std::max<int64_t>(grid, cdiv(p.rows_total, kMaxRowsPerCta));
  p.grid = grid;
  p.rows_per_cta = cdiv(p.rows_total, grid);

  p.consumer_warps = hints.consumer_warps > 0 ? hints.consumer_warps : kDefaultConsumerWarps;
  if (p.consumer_warps > 31) return fail("at most 31 consumer warps (1024 threads per CTA)");
  p.threads = 32 * (1 + p.consumer_warps);
  if (cap.threads_per_block > 0 && p.threads > cap.threads_per_block)
    return fail("too many threads per CTA for this architecture");

  // Shared memory one CTA may use: the per-block opt-in limit, or its share of the SM.
  int64_t smem_cap = cap.smem_per_block;
  if (ctas_per_sm > 1 && cap.smem_per_sm > 0)
    smem_cap = std::min(smem_cap, cap.smem_per_sm / ctas_per_sm - 1024);

  const int64_t row_a_bytes = s.k / 2;
  const int64_t cta_a_bytes = p.rows_per_cta * row_a_bytes;
  p.b_buffers = s.l > 1 ? 2 : 1;
  p.b_buffer_bytes = round_up(s.k * 2 + s.k / 16 * 4, 128);
  const int64_t vraw_bytes = round_up(s.k / 2 + s.k / 16 + 32, 128);
  const int64_t rowsum_bytes = round_up(int64_t{p.consumer_warps} * p.rows_per_cta * 4, 128);
  const int max_stages = hints.max_stages > 0 ? hints.max_stages : kDefaultMaxStages;

  int64_t sa = hints.stage_a_bytes > 0 ? round_up(hints.stage_a_bytes, 512) : kDefaultStageABytes;
  // A stage larger than everything one CTA streams only wastes shared memory.
  sa = std::min(sa, round_up(cta_a_bytes, 512));
  for (; sa >= 512; sa /= 2) {
    const int64_t sf = round_up(sa / 8 + 32, 16);
    const int64_t stride = round_up(sa + sf, 128);
    for (int st = max_stages; st >= 2; --st) {
      const int64_t bars = round_up(int64_t{16} * st + 32 + 16, 128);
      const int64_t total =
          128 + bars + stride * st + p.b_buffers * (p.b_buffer_bytes + vraw_bytes) + rowsum_bytes;
      if (total <= smem_cap) {
        p.stage_a_bytes = sa;
        p.stage_sf_bytes = sf;
        p.stage_stride = stride;
        p.stages = st;
        p.off_full = 0;
        p.off_empty = int64_t{8} * st;
        p.off_vfull = int64_t{16} * st;
        p.off_vempty = p.off_vfull + 16;
        p.off_flag = p.off_vempty + 16;
        p.off_ring = bars;
        p.off_b = p.off_ring + stride * st;
        p.vraw_bytes = vraw_bytes;
        p.off_vraw = p.off_b + p.b_buffers * p.b_buffer_bytes;
        p.off_rowsum = p.off_vraw + p.b_buffers * vraw_bytes;
        p.smem_bytes = total;
        // Segments: a CTA's row range touches at most cdiv(rows - 1, m) + 1 batches.
        const int64_t segments = (p.rows_per_cta - 1 + s.m - 1) / s.m + 1;
        p.stages_per_cta = cdiv(cta_a_bytes, sa) + segments - 1;
        p.ok = true;
        return p;
      }
    }
  }
  return fail("the vector buffers (2 bytes per k element plus scales) and two stages do not fit in "
              "shared memory; k is too large for this kernel");
}

}  // namespace pipesim::model
