#include "model/gemv_plan.hpp"

#include <algorithm>

namespace pipesim::model {
namespace {

constexpr int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
constexpr int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

constexpr int64_t kDefaultStageABytes = 32768;
constexpr int kDefaultConsumerWarps = 16;
// At most 4 stages by default: with the int8-sized vector buffers 5 fit on two benchmark shapes, and
// measured equal or slower (H100, 2026-11-21: 32.6 vs 32.2 us, 55.6 vs 53.9 us).
constexpr int kDefaultMaxStages = 4;
constexpr int kDefaultWaves = 1;
constexpr int64_t kMaxRowsPerCta = 512;  // row sums: consumer warps x rows floats
// Share of the flat rows split statically (1/1000); the rest is claimed in chunks at run time.
// All rows static by default: dynamic chunks lost on the H100 in every configuration measured (an
// atomic claim waits several microseconds behind the SM's own bulk reads; docs/gemv.md).
constexpr int kDefaultStaticPermille = 1000;

GemvPlan fail(std::string why) {
  GemvPlan p;
  p.ok = false;
  p.why = std::move(why);
  return p;
}

}  // namespace

int gemv_vector_elem_bytes(int compute_major) { return compute_major >= 10 ? 2 : 1; }

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
  if (p.consumer_warps > 30) return fail("at most 30 consumer warps (1024 threads per CTA)");
  p.threads = 32 * (2 + p.consumer_warps);  // + the producer warp and the scheduler warp
  if (cap.threads_per_block > 0 && p.threads > cap.threads_per_block)
    return fail("too many threads per CTA for this architecture");

  // Shared memory one CTA may use: the per-block opt-in limit, or its share of the SM.
  int64_t smem_cap = cap.smem_per_block;
  if (ctas_per_sm > 1 && cap.smem_per_sm > 0)
    smem_cap = std::min(smem_cap, cap.smem_per_sm / ctas_per_sm - 1024);

  const int64_t row_a_bytes = s.k / 2;
  const int64_t cta_a_bytes = p.rows_per_cta * row_a_bytes;
  p.b_buffers = s.l > 1 ? 2 : 1;
  const int64_t elem_bytes = hints.vector_elem_bytes > 0 ? hints.vector_elem_bytes : 2;
  p.b_buffer_bytes = round_up(s.k * elem_bytes + s.k / 16 * 4, 128);
  const int64_t vraw_bytes = round_up(s.k / 2 + s.k / 16 + 32, 128);
  const int max_stages = hints.max_stages > 0 ? hints.max_stages : kDefaultMaxStages;

  int64_t sa = hints.stage_a_bytes > 0 ? round_up(hints.stage_a_bytes, 512) : kDefaultStageABytes;
  // A stage larger than everything one CTA streams only wastes shared memory.
  sa = std::min(sa, round_up(cta_a_bytes, 512));

  // Work split: a static part, then chunks of whole rows (about chunk_bytes of A each, at most
  // kMaxRowsPerCta rows) claimed at run time.
  const int permille = hints.static_permille >= 0 ? std::min(hints.static_permille, 1000) : kDefaultStaticPermille;
  p.static_rows = p.rows_total * permille / 1000;
  p.static_rows_per_cta = cdiv(p.static_rows, grid);
  const int64_t tail_rows = p.rows_total - p.static_rows;

  for (; sa >= 512; sa /= 2) {
    const int64_t cb = hints.chunk_bytes > 0 ? hints.chunk_bytes : sa;
    const int64_t chunk_rows =
        tail_rows > 0 ? std::clamp<int64_t>(cb / row_a_bytes, 1, std::min(kMaxRowsPerCta, s.m)) : 0;
    const int64_t sf = round_up(sa / 8 + 32, 16);
    const int64_t stride = round_up(sa + sf, 128);
    for (int st = max_stages; st >= 2; --st) {
      // Chunks' row sums: a ring of st + 1 areas, so a warp running ahead (at most st stages, one
      // range per stage at least) never zeroes an area whose reduction is still pending.
      const int64_t areas = chunk_rows > 0 ? st + 1 : 0;
      const int64_t rowsum0 = round_up(int64_t{p.consumer_warps} * p.static_rows_per_cta * 4, 128);
      const int64_t rowsum1 = round_up(areas * p.consumer_warps * chunk_rows * 4, 128);
      // Barrier block: full/empty[st], vfull/vempty[2], flag (16), stage headers (16 B each),
      // ticket slots (16 B each) and tfull/tempty[kClaims], go, done counters (areas + 1).
      const int64_t o_hdr = int64_t{16} * st + 32 + 16;
      const int64_t o_tick = o_hdr + int64_t{16} * st;
      const int64_t o_tfull = o_tick + int64_t{16} * kGemvClaims;
      const int64_t o_tempty = o_tfull + int64_t{8} * kGemvClaims;
      const int64_t o_go = o_tempty + int64_t{8} * kGemvClaims;
      const int64_t o_done = o_go + 8;
      const int64_t bars = round_up(o_done + 4 * (areas + 1), 128);
      const int64_t total = 128 + bars + stride * st + p.b_buffers * (p.b_buffer_bytes + vraw_bytes) + rowsum0 +
                            rowsum1;
      if (total <= smem_cap) {
        p.stage_a_bytes = sa;
        p.stage_sf_bytes = sf;
        p.stage_stride = stride;
        p.stages = st;
        p.first_stage_bytes =
            hints.first_stage_bytes > 0 ? std::min(sa, round_up(hints.first_stage_bytes, 512)) : sa;
        p.batch_rows = s.m;
        p.chunk_rows = chunk_rows;
        if (chunk_rows > 0) {
          const int64_t first_batch = p.static_rows / s.m;
          p.chunks_first_batch = cdiv((first_batch + 1) * s.m - p.static_rows, chunk_rows);
          p.chunks_per_batch = cdiv(s.m, chunk_rows);
          p.chunks = p.chunks_first_batch + (s.l - first_batch - 1) * p.chunks_per_batch;
        }
        p.claims_ahead = kGemvClaims;
        p.claim_lead_stages = hints.claim_lead_stages > 0 ? hints.claim_lead_stages : 2 * st;
        p.areas = areas;
        p.area0_rows = p.static_rows_per_cta;
        p.area1_rows = chunk_rows;
        p.off_full = 0;
        p.off_empty = int64_t{8} * st;
        p.off_vfull = int64_t{16} * st;
        p.off_vempty = p.off_vfull + 16;
        p.off_flag = p.off_vempty + 16;
        p.off_hdr = o_hdr;
        p.off_tick = o_tick;
        p.off_tfull = o_tfull;
        p.off_tempty = o_tempty;
        p.off_go = o_go;
        p.off_done = o_done;
        p.off_ring = bars;
        p.off_b = p.off_ring + stride * st;
        p.vraw_bytes = vraw_bytes;
        p.off_vraw = p.off_b + p.b_buffers * p.b_buffer_bytes;
        p.off_rowsum = p.off_vraw + p.b_buffers * vraw_bytes;
        p.off_rowsum1 = p.off_rowsum + rowsum0;
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

std::pair<int64_t, int64_t> gemv_chunk_range(const GemvPlan& p, int64_t t) {
  const int64_t m = p.batch_rows, first_batch = p.static_rows / m;
  if (t < p.chunks_first_batch) {
    const int64_t r0 = p.static_rows + t * p.chunk_rows;
    return {r0, std::min((first_batch + 1) * m, r0 + p.chunk_rows)};
  }
  const int64_t u = t - p.chunks_first_batch;
  const int64_t b = first_batch + 1 + u / p.chunks_per_batch;
  const int64_t r0 = b * m + u % p.chunks_per_batch * p.chunk_rows;
  return {r0, std::min((b + 1) * m, r0 + p.chunk_rows)};
}

}  // namespace pipesim::model
