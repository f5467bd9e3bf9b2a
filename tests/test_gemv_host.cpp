// Host-side parts of the NVFP4 GEMV (no GPU): decoders, CPU reference, validation, the plan.
#include <gtest/gtest.h>

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
  EXPECT_EQ(p.threads, 32 * (1 + p.consumer_warps));
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
  EXPECT_GE(p.off_rowsum, p.off_vraw + p.b_buffers * p.vraw_bytes);
  EXPECT_LE(p.off_rowsum + p.consumer_warps * p.rows_per_cta * 4 + 128, p.smem_bytes);
  // Work split: every row owned by one CTA.
  EXPECT_EQ(p.rows_total, s.m * s.l);
  EXPECT_GE(p.grid * p.rows_per_cta, p.rows_total);
  EXPECT_LE(p.grid, p.rows_total);
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

TEST(GemvPlan, RejectsWhatCannotFit) {
  const pm::Capacity cap = pm::find_arch("sm_90a")->cap;
  EXPECT_FALSE(pm::plan_gemv({16, 1 << 17, 2}, cap).ok);  // two 288 KiB vector buffers
  EXPECT_FALSE(pm::plan_gemv({16, 100, 1}, cap).ok);
  EXPECT_FALSE(pm::plan_gemv({0, 64, 1}, cap).ok);
  const pm::GemvPlan p = pm::plan_gemv({16, 64, 1}, cap, {0, 40, 0, 0});
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.why.find("consumer warps"), std::string::npos);
}
