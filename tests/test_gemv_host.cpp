// Host-side parts of the NVFP4 GEMV (no GPU): decoders, CPU reference, validation, the plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/gemv_nvfp4/gemv_nvfp4.hpp"
#include "model/arch.hpp"
#include "model/gemv_plan.hpp"

namespace pk = pipesim::kernels;
namespace pm = pipesim::model;

namespace {

// Independent decoders written from the format definitions, by repeated multiplication.
double naive_e2m1(unsigned n) {
  const unsigned e = (n >> 1) & 3, m = n & 1;
  double v = 0;
  if (e == 0) {
    v = 0.5 * m;  // subnormal: 2^(1-1) * (m/2)
  } else {
    v = 1.0 + 0.5 * m;
    for (unsigned i = 1; i < e; ++i) v *= 2.0;
  }
  return (n & 8) ? -v : v;
}

double naive_e4m3(unsigned x) {
  const unsigned e = (x >> 3) & 15, m = x & 7;
  double v = (e == 0 ? 0.0 : 1.0) + m / 8.0;
  int p = (e == 0 ? 1 : static_cast<int>(e)) - 7;
  for (; p > 0; --p) v *= 2.0;
  for (; p < 0; ++p) v /= 2.0;
  return (x & 0x80) ? -v : v;
}

}  // namespace

TEST(GemvDecode, E2M1TableMatchesDefinition) {
  const double expect[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
  for (unsigned n = 0; n < 16; ++n) {
    EXPECT_EQ(pk::decode_e2m1(static_cast<uint8_t>(n)), naive_e2m1(n)) << "nibble " << n;
    EXPECT_EQ(std::fabs(pk::decode_e2m1(static_cast<uint8_t>(n))), expect[n & 7]);
  }
}

TEST(GemvDecode, E4M3AllCodes) {
  for (unsigned x = 0; x < 256; ++x) {
    const double got = pk::decode_e4m3(static_cast<uint8_t>(x));
    if ((x & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(got)) << "code " << x;
      continue;
    }
    EXPECT_EQ(got, naive_e4m3(x)) << "code " << x;
  }
  // Landmarks: smallest subnormal, largest subnormal, smallest normal, one, two, largest.
  EXPECT_EQ(pk::decode_e4m3(0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(pk::decode_e4m3(0x07), 7 * std::ldexp(1.0, -9));
  EXPECT_EQ(pk::decode_e4m3(0x08), std::ldexp(1.0, -6));
  EXPECT_EQ(pk::decode_e4m3(0x38), 1.0);
  EXPECT_EQ(pk::decode_e4m3(0x40), 2.0);
  EXPECT_EQ(pk::decode_e4m3(0x7E), 448.0);
  EXPECT_EQ(pk::decode_e4m3(0xFE), -448.0);
  EXPECT_EQ(pk::decode_e4m3(0x00), 0.0);
}

TEST(GemvReference, CpuMatchesNaiveLoops) {
  struct S { int64_t m, k, l; };
  const S shapes[] = {{1, 64, 1}, {3, 128, 2}, {70, 256, 3}, {65, 512, 1}, {5, 1088, 4}};
  std::mt19937_64 rng(7);
  for (const S& s : shapes) {
    const int64_t rb = s.k / 2, sb = s.k / 16;
    std::vector<uint8_t> a(s.l * s.m * rb), sfa(s.l * s.m * sb), b(s.l * rb), sfb(s.l * sb);
    for (auto& x : a) x = static_cast<uint8_t>(rng());
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    auto code = [&] {
      for (;;) {
        const auto x = static_cast<uint8_t>(rng());
        if ((x & 0x7F) != 0x7F) return x;
      }
    };
    for (auto& x : sfa) x = code();
    for (auto& x : sfb) x = code();
    std::vector<double> out(s.l * s.m);
    pk::gemv_reference_cpu(a.data(), sfa.data(), b.data(), sfb.data(), s.m, s.k, s.l, out.data());
    for (int64_t l = 0; l < s.l; ++l)
      for (int64_t r = 0; r < s.m; ++r) {
        double sum = 0, mag = 0;
        const int64_t g = l * s.m + r;
        for (int64_t k = 0; k < s.k; ++k) {
          const unsigned ab = a[g * rb + k / 2], bb = b[l * rb + k / 2];
          const double av = naive_e2m1((k & 1) ? ab >> 4 : ab & 15);
          const double bv = naive_e2m1((k & 1) ? bb >> 4 : bb & 15);
          const double t = av * naive_e4m3(sfa[g * sb + k / 16]) * bv * naive_e4m3(sfb[l * sb + k / 16]);
          sum += t;
          mag += std::fabs(t);
        }
        EXPECT_NEAR(out[g], sum, 1e-12 * mag + 1e-300) << "m=" << s.m << " k=" << s.k << " l=" << l << " r=" << r;
      }
  }
}

TEST(GemvValidate, MessagesForBadArguments) {
  alignas(16) static uint8_t buf[256];
  pk::GemvArgs good;
  good.a = buf, good.sfa = buf, good.b = buf, good.sfb = buf, good.c = buf, good.m = 4, good.k = 128, good.l = 2;
  EXPECT_TRUE(pk::validate_gemv_args(good));

  auto expect = [](pk::GemvArgs x, pk::GemvStatus st, const std::string& part) {
    const pk::GemvResult r = pk::validate_gemv_args(x);
    EXPECT_EQ(r.status, st) << r.message;
    EXPECT_NE(r.message.find(part), std::string::npos) << r.message;
  };
  pk::GemvArgs x = good;
  x.k = 100;
  expect(x, pk::GemvStatus::kBadShape, "multiple of 64");
  x.k = 0;
  expect(x, pk::GemvStatus::kBadShape, "multiple of 64");
  x = good, x.m = 0;
  expect(x, pk::GemvStatus::kBadShape, "m must be at least 1");
  x = good, x.l = -3;
  expect(x, pk::GemvStatus::kBadShape, "l must be at least 1");
  x = good, x.sfa = nullptr;
  expect(x, pk::GemvStatus::kNullPointer, "sfa is null");
  x = good, x.c = nullptr;
  expect(x, pk::GemvStatus::kNullPointer, "c is null");
  x = good, x.a = buf + 8;
  expect(x, pk::GemvStatus::kMisaligned, "a must be 16-byte aligned");
  x = good, x.sfb = buf + 2;
  expect(x, pk::GemvStatus::kMisaligned, "sfb must be 4-byte aligned");
  x = good, x.c = buf + 1;
  expect(x, pk::GemvStatus::kMisaligned, "c must be 2-byte aligned");
  x = good, x.sfb = buf + 4, x.c = buf + 2;  // weaker alignment is enough for these two
  EXPECT_TRUE(pk::validate_gemv_args(x));
}

namespace {

void check_plan(const pm::GemvShape& s, const pm::Capacity& cap, const pm::GemvHints& h) {
  const pm::GemvPlan p = pm::plan_gemv(s, cap, h);
  SCOPED_TRACE("m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) + " l=" + std::to_string(s.l));
  ASSERT_TRUE(p.ok) << p.why;
  EXPECT_GE(p.stages, 2);
  EXPECT_LE(p.smem_bytes, cap.smem_per_block);
  if (h.ctas_per_sm > 1) {
    EXPECT_LE(p.smem_bytes * h.ctas_per_sm + 1024 * h.ctas_per_sm, cap.smem_per_sm);
  }
  EXPECT_LE(p.threads, 1024);
  EXPECT_EQ(p.threads, 32 * (2 + p.consumer_warps));  // + producer and scheduler warps
  EXPECT_EQ(p.stage_a_bytes % 512, 0);
  EXPECT_GE(p.stage_sf_bytes, p.stage_a_bytes / 8 + 30);  // room for the 16-byte-aligned scale copy
  EXPECT_EQ(p.stage_stride % 128, 0);
  EXPECT_GE(p.stage_stride, p.stage_a_bytes + p.stage_sf_bytes);
  // Layout: barriers, flag, ring, vector buffers, row sums, in order and not overlapping.
  EXPECT_EQ(p.off_empty, p.off_full + 8 * p.stages);
  EXPECT_GE(p.off_vfull, p.off_empty + 8 * p.stages);
  EXPECT_EQ(p.off_vempty, p.off_vfull + 16);
  EXPECT_GE(p.off_flag, p.off_vempty + 16);
  EXPECT_GE(p.off_ring, p.off_flag + 16);
  EXPECT_EQ(p.off_ring % 128, 0);
  EXPECT_GE(p.off_b, p.off_ring + p.stage_stride * p.stages);
  EXPECT_GE(p.b_buffer_bytes, s.k * 2 + s.k / 16 * 4);
  EXPECT_GE(p.off_vraw, p.off_b + p.b_buffers * p.b_buffer_bytes);
  EXPECT_EQ(p.off_vraw % 128, 0);
  EXPECT_GE(p.vraw_bytes, s.k / 2 + s.k / 16 + 30);
  EXPECT_GE(p.off_hdr, p.off_flag + 16);
  EXPECT_EQ(p.off_hdr % 16, 0);
  EXPECT_GE(p.off_tick, p.off_hdr + 16 * p.stages);
  EXPECT_EQ(p.off_tick % 16, 0);
  EXPECT_GE(p.off_tfull, p.off_tick + 16 * pm::kGemvClaims);
  EXPECT_GE(p.off_tempty, p.off_tfull + 8 * pm::kGemvClaims);
  EXPECT_GE(p.off_go, p.off_tempty + 8 * pm::kGemvClaims);
  EXPECT_GE(p.off_done, p.off_go + 8);
  EXPECT_LE(p.off_done + 4 * (p.areas + 1), p.off_ring);
  EXPECT_GE(p.off_rowsum, p.off_vraw + p.b_buffers * p.vraw_bytes);
  EXPECT_GE(p.off_rowsum1, p.off_rowsum + p.consumer_warps * p.area0_rows * 4);
  EXPECT_LE(p.off_rowsum1 + p.areas * p.consumer_warps * p.area1_rows * 4 + 128, p.smem_bytes);
  // Work split: every row owned by one CTA (static part), or in exactly one chunk.
  EXPECT_EQ(p.rows_total, s.m * s.l);
  EXPECT_GE(p.grid * p.rows_per_cta, p.rows_total);
  EXPECT_LE(p.grid, p.rows_total);
  EXPECT_GE(p.static_rows, 0);
  EXPECT_LE(p.static_rows, p.rows_total);
  EXPECT_EQ(p.static_rows_per_cta, (p.static_rows + p.grid - 1) / p.grid);
  if (p.static_rows < p.rows_total) {
    EXPECT_GE(p.chunk_rows, 1);
    EXPECT_LE(p.chunk_rows, 512);
    EXPECT_GE(p.chunks * p.chunk_rows, p.rows_total - p.static_rows);
    // Chunks stop at batch edges: at most one short chunk per batch.
    EXPECT_LE(p.chunks, (p.rows_total - p.static_rows + p.chunk_rows - 1) / p.chunk_rows + s.l);
    EXPECT_LE(p.chunk_rows, s.m);
    EXPECT_EQ(p.chunks_per_batch, (s.m + p.chunk_rows - 1) / p.chunk_rows);
    // Chunk row sums: a ring of stages + 1 areas (a warp can run at most `stages` stages ahead).
    EXPECT_EQ(p.areas, p.stages + 1);
    EXPECT_EQ(p.claims_ahead, pm::kGemvClaims);
    EXPECT_GE(p.claim_lead_stages, 1);
  } else {
    EXPECT_EQ(p.chunks, 0);
    EXPECT_EQ(p.area1_rows, 0);
    EXPECT_EQ(p.areas, 0);
  }
  // Row-sum areas: the static range's, then the chunks' ring.
  EXPECT_EQ(p.area0_rows, p.static_rows_per_cta);
  EXPECT_EQ(p.area1_rows, p.chunk_rows);
  EXPECT_LE(p.area0_rows, 512);
  // First stage: a positive multiple of 512, at most a stage.
  EXPECT_GT(p.first_stage_bytes, 0);
  EXPECT_EQ(p.first_stage_bytes % 512, 0);
  EXPECT_LE(p.first_stage_bytes, p.stage_a_bytes);
  EXPECT_GE(p.stages_per_cta, 1);
  EXPECT_EQ(p.bytes_moved, pm::gemv_bytes_moved(s));
}

}  // namespace

TEST(GemvPlan, SeedShapesFitEveryDatacenterArch) {
  const pm::GemvShape shapes[] = {{7168, 16384, 1}, {4096, 7168, 8}, {7168, 2048, 4}, {128, 256, 1},
                                  {128, 1536, 1},   {128, 3072, 1},  {256, 7168, 1},  {2432, 4608, 2},
                                  {384, 7168, 2},   {512, 512, 2},   {512, 4096, 2},  {512, 1536, 2},
                                  {1, 64, 3},       {3, 192, 5},     {1000, 4160, 3}, {1 << 20, 64, 1}};
  for (const char* arch : {"sm_90a", "sm_100a", "sm_120a"}) {
    const pm::Arch* a = pm::find_arch(arch);
    ASSERT_NE(a, nullptr);
    for (const auto& s : shapes) {
      check_plan(s, a->cap, {});
      check_plan(s, a->cap, {512, 4, 2, 0});
      check_plan(s, a->cap, {8192, 8, 0, 2});
    }
  }
}

TEST(GemvPlan, BenchmarkShapeChoicesOnH100) {
  const pm::Capacity cap = pm::find_arch("sm_90a")->cap;
  const pm::GemvPlan p = pm::plan_gemv({7168, 16384, 1}, cap);
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.grid, 132);
  EXPECT_EQ(p.rows_per_cta, 55);
  EXPECT_EQ(p.b_buffers, 1);
  EXPECT_EQ(p.bytes_moved, 7168LL * 16384 / 2 + 7168LL * 16384 / 16 + 16384 / 2 + 16384 / 16 + 7168 * 2);
  const pm::GemvPlan q = pm::plan_gemv({4096, 7168, 8}, cap);
  ASSERT_TRUE(q.ok);
  EXPECT_EQ(q.b_buffers, 2);
  EXPECT_EQ(q.rows_per_cta, (4096 * 8 + 131) / 132);
}

// The kernel's work split, replayed: CTA c streams [c * S / grid, (c + 1) * S / grid), chunk t is
// gemv_chunk_range(t) (whole rows of one batch); every flat row is covered exactly once, whatever CTA
// claims which chunk.
void check_cover(const pm::GemvShape& s, const pm::GemvHints& h) {
  const pm::GemvPlan p = pm::plan_gemv(s, pm::find_arch("sm_90a")->cap, h);
  SCOPED_TRACE("m=" + std::to_string(s.m) + " k=" + std::to_string(s.k) + " l=" + std::to_string(s.l) +
               " permille=" + std::to_string(h.static_permille) + " chunk=" + std::to_string(h.chunk_bytes));
  ASSERT_TRUE(p.ok) << p.why;
  std::vector<int> seen(static_cast<size_t>(p.rows_total), 0);
  int64_t most_static = 0;
  for (int64_t c = 0; c < p.grid; ++c) {
    const int64_t r0 = c * p.static_rows / p.grid, r1 = (c + 1) * p.static_rows / p.grid;
    most_static = std::max(most_static, r1 - r0);
    for (int64_t r = r0; r < r1; ++r) ++seen[static_cast<size_t>(r)];
  }
  EXPECT_LE(most_static, p.static_rows_per_cta);
  for (int64_t t = 0; t < p.chunks; ++t) {
    const auto [r0, r1] = pm::gemv_chunk_range(p, t);
    ASSERT_LT(r0, r1);
    ASSERT_LE(r1 - r0, p.chunk_rows);
    ASSERT_EQ(r0 / s.m, (r1 - 1) / s.m) << "chunk " << t << " crosses a batch edge";
    for (int64_t r = r0; r < r1; ++r) ++seen[static_cast<size_t>(r)];
  }
  for (size_t r = 0; r < seen.size(); ++r) ASSERT_EQ(seen[r], 1) << "row " << r;
  // The kernel's chunk counter: chunks + grid claims in all (one failure per CTA), at most 2^32 - 1.
  EXPECT_LT(p.chunks + p.grid, int64_t{1} << 32);
}

TEST(GemvPlan, WorkSplitCoversEveryRowOnce) {
  const pm::GemvShape shapes[] = {{7168, 16384, 1}, {4096, 7168, 8}, {7168, 2048, 4}, {1, 64, 3},
                                  {3, 192, 5},      {1000, 4160, 3}, {77, 320, 9},    {512, 4096, 2},
                                  {128, 256, 1},    {2432, 4608, 2}, {1 << 20, 64, 1}};
  for (const auto& s : shapes) {
    check_cover(s, {});
    for (int permille : {0, 1, 500, 999, 1000})
      for (int64_t cb : {int64_t{0}, int64_t{512}, int64_t{16384}, int64_t{1} << 20}) {
        pm::GemvHints h;
        h.static_permille = permille;
        h.chunk_bytes = cb;
        check_cover(s, h);
      }
  }
}

TEST(GemvPlan, WorkSplitOnH100) {
  const pm::Capacity cap = pm::find_arch("sm_90a")->cap;
  // Default: every row static (chunks lost on the H100), a full first stage.
  const pm::GemvPlan d = pm::plan_gemv({7168, 16384, 1}, cap);
  ASSERT_TRUE(d.ok);
  EXPECT_EQ(d.static_rows, d.rows_total);
  EXPECT_EQ(d.chunks, 0);
  EXPECT_EQ(d.areas, 0);
  EXPECT_EQ(d.first_stage_bytes, d.stage_a_bytes);
  // 80 % static: chunks of one 32 KiB stage of whole rows.
  pm::GemvHints h80;
  h80.static_permille = 800;
  const pm::GemvPlan a = pm::plan_gemv({7168, 16384, 1}, cap, h80);
  ASSERT_TRUE(a.ok);
  EXPECT_EQ(a.static_rows, 7168 * 800 / 1000);
  EXPECT_EQ(a.chunk_rows, 4);  // 4 rows of 8 KiB
  EXPECT_EQ(a.chunks, (7168 - 5734 + 3) / 4);
  EXPECT_EQ(pm::gemv_chunk_range(a, 0), std::make_pair(int64_t{5734}, int64_t{5738}));
  EXPECT_EQ(pm::gemv_chunk_range(a, a.chunks - 1), std::make_pair(int64_t{7166}, int64_t{7168}));
  EXPECT_EQ(a.claims_ahead, pm::kGemvClaims);
  EXPECT_EQ(a.claim_lead_stages, 2 * a.stages);
  const pm::GemvPlan b = pm::plan_gemv({4096, 7168, 8}, cap, h80);
  ASSERT_TRUE(b.ok);
  EXPECT_EQ(b.chunk_rows, 9);  // 9 rows of 3.5 KiB: 31.5 KiB
  // 26214 static rows end in batch 6; its last 2458 rows are 274 chunks (the last of 1 row), then
  // batch 7 in 456 chunks (the last of 1 row).
  EXPECT_EQ(b.static_rows, 26214);
  EXPECT_EQ(b.chunks_first_batch, 274);
  EXPECT_EQ(b.chunks_per_batch, 456);
  EXPECT_EQ(b.chunks, 274 + 456);
  EXPECT_EQ(pm::gemv_chunk_range(b, 273), std::make_pair(int64_t{28671}, int64_t{28672}));
  EXPECT_EQ(pm::gemv_chunk_range(b, 274), std::make_pair(int64_t{28672}, int64_t{28681}));
  const pm::GemvPlan c = pm::plan_gemv({7168, 2048, 4}, cap, h80);
  ASSERT_TRUE(c.ok);
  EXPECT_EQ(c.chunk_rows, 32);
  // Hints: all chunks, a chunk size, a first stage.
  pm::GemvHints h;
  h.static_permille = 0;
  h.chunk_bytes = 65536;
  h.first_stage_bytes = 3000;  // rounded up to 512
  const pm::GemvPlan dy = pm::plan_gemv({7168, 2048, 4}, cap, h);
  EXPECT_EQ(dy.static_rows, 0);
  EXPECT_EQ(dy.chunk_rows, 64);
  EXPECT_EQ(dy.chunks, 7168 * 4 / 64);
  EXPECT_EQ(dy.area0_rows, 0);  // no static rows
  EXPECT_EQ(dy.area1_rows, 64);
  EXPECT_EQ(dy.areas, dy.stages + 1);
  EXPECT_EQ(dy.first_stage_bytes, 3072);
  h.first_stage_bytes = 1 << 20;  // at most a stage
  EXPECT_EQ(pm::plan_gemv({7168, 2048, 4}, cap, h).first_stage_bytes, dy.stage_a_bytes);
}

TEST(GemvPlan, Int8VectorOnHopper) {
  // The int8 decode (sm_90a) needs k + k/4 bytes per vector buffer instead of 2k + k/4: on
  // 7168x16384x1 that is the room for a fifth 32 KiB stage (the default takes at most 4: 5 measured
  // no faster).
  const pm::Capacity cap = pm::find_arch("sm_90a")->cap;
  pm::GemvHints h;
  h.vector_elem_bytes = 1;
  const pm::GemvPlan p = pm::plan_gemv({7168, 16384, 1}, cap, h);
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.b_buffer_bytes, 16384 + 16384 / 16 * 4);
  EXPECT_EQ(p.stages, 4);
  h.max_stages = 8;
  EXPECT_EQ(pm::plan_gemv({7168, 16384, 1}, cap, h).stages, 5);
  h.vector_elem_bytes = 2;
  EXPECT_EQ(pm::plan_gemv({7168, 16384, 1}, cap, h).stages, 4);
  h.max_stages = 0;
  // Two CTAs per SM with eight consumer warps and 16 KiB stages fit every benchmark shape.
  h.ctas_per_sm = 2;
  h.consumer_warps = 8;
  h.stage_a_bytes = 16384;
  for (const pm::GemvShape s : {pm::GemvShape{7168, 16384, 1}, pm::GemvShape{4096, 7168, 8},
                                pm::GemvShape{7168, 2048, 4}}) {
    const pm::GemvPlan q = pm::plan_gemv(s, cap, h);
    ASSERT_TRUE(q.ok) << q.why;
    EXPECT_EQ(q.grid, 264);
    EXPECT_LE(2 * (q.smem_bytes + 1024), cap.smem_per_sm);
  }
}

TEST(GemvPlan, RejectsWhatCannotFit) {
  const pm::Capacity cap = pm::find_arch("sm_90a")->cap;
  EXPECT_FALSE(pm::plan_gemv({16, 1 << 17, 2}, cap).ok);  // two 288 KiB vector buffers
  EXPECT_FALSE(pm::plan_gemv({16, 100, 1}, cap).ok);
  EXPECT_FALSE(pm::plan_gemv({0, 64, 1}, cap).ok);
  const pm::GemvPlan p = pm::plan_gemv({16, 64, 1}, cap, {0, 31, 0, 0});
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.why.find("consumer warps"), std::string::npos);
}
