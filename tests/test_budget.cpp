// Budget checker: golden numbers for CUTLASS's dense block-scaled persistent GEMM and the seed-001 kernel.
//
// Every expected value is written out as arithmetic from the rules in docs/budget.md, never obtained by
// calling the code under test:
//   per CTA  A = (M / cta_group) · K · bits / 8        B = (N / cta_group) · K · bits / 8
//            SFA = ceil(cta_M / 128) · ceil(K / vec / 4) · 512      SFB = ceil(N / 128) · ceil(K / vec / 4) · 512
//            C (epilogue sub-tile) = 128 × 32 elements for 16/32-bit output at cta_M 128
//   solver   num_ab = (232448 // occ − (1024 + 2·C)) // ab
//            num_c  = 2 + (232448 − occ·ab·num_ab − occ·(1024 + 2·C)) // (occ·C)
//   seed     same with capacity 232448 − (LA + LU)·num_lora_stage − 512
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "model/budget.hpp"

namespace pipesim::model {
namespace {

GemmConfig make(std::vector<std::pair<std::string, std::string>> kv) {
  GemmConfig c;
  for (auto& [k, v] : kv) {
    const std::string e = set_config_field(c, k, v);
    EXPECT_EQ(e, "") << k << "=" << v;
  }
  return c;
}

bool has_message(const BudgetReport& r, Severity s, const std::string& needle) {
  for (const Finding& f : r.findings)
    if (f.severity == s && f.message.find(needle) != std::string::npos) return true;
  return false;
}

struct Golden {
  const char* name;
  std::vector<std::pair<std::string, std::string>> kv;
  int64_t a, b, sfa, sfb, c;  // per CTA, one stage
  int num_ab, num_c, num_acc;
  int tmem_used;
};

constexpr int64_t kCap = 232448;  // CUTLASS get_smem_capacity_in_bytes("sm_100") = (228 − 1) · 1024

std::vector<Golden> goldens() {
  std::vector<Golden> g;
  // 1. NVFP4 256×128, 2-CTA, cluster 2×1 (the CUTLASS example's default command line).
  //    ab = 16384 + 8192 + 2048 + 2048 = 28672; 215040 // 28672 = 7; rest 215040 − 200704 = 14336 → +1.
  g.push_back({"nvfp4_256x128_cta2", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "nvfp4"}, {"c", "f16"}},
               128 * 256 / 2, 64 * 256 / 2, 1 * (256 / 16 / 4) * 512, 1 * 4 * 512, 128 * 32 * 2,
               (kCap - 1024 - 2 * 8192) / 28672, 2 + (kCap - 7 * 28672 - 1024 - 2 * 8192) / 8192, 2,
               128 * 2 + (128 / 32) * 4 + (128 / 32) * 4});
  // 2. NVFP4 256×256, 2-CTA: B = 128·256/2; SFB = 2 row atoms · 4 · 512; ab = 38912 → 5; rest 20480 → +2.
  //    acc stages 1 (N = 256) → overlapping: 2·256 − (16 + 32) = 464 accumulator columns, 512 used.
  g.push_back({"nvfp4_256x256_cta2", {{"tile", "256x256"}, {"cluster", "2x1"}, {"ab", "nvfp4"}},
               16384, 128 * 256 / 2, 2048, 2 * 4 * 512, 8192,
               (kCap - 1024 - 16384) / 38912, 2 + (215040 - 5 * 38912) / 8192, 1, 512});
  // 3. NVFP4 128×128, 1-CTA: ab = 16384 + 16384 + 2048 + 2048 = 36864 → 5; rest 30720 → +3.
  g.push_back({"nvfp4_128x128_cta1", {{"tile", "128x128"}, {"cluster", "1x1"}, {"ab", "nvfp4"}},
               16384, 128 * 256 / 2, 2048, 2048, 8192, 215040 / 36864, 2 + (215040 - 5 * 36864) / 8192, 2,
               256 + 16 + 16});
  // 4. NVFP4 128×256, 1-CTA: ab = 16384 + 32768 + 2048 + 4096 = 55296 → 3; rest 49152 → +6.
  g.push_back({"nvfp4_128x256_cta1", {{"tile", "128x256"}, {"cluster", "1x1"}, {"ab", "nvfp4"}},
               16384, 256 * 256 / 2, 2048, 4096, 8192, 215040 / 55296, 2 + (215040 - 3 * 55296) / 8192, 1, 512});
  // 5. NVFP4 128×64: SFB pads 64 rows to one 128-row atom. ab = 16384 + 8192 + 2048 + 2048 = 28672.
  g.push_back({"nvfp4_128x64_cta1", {{"tile", "128x64"}, {"cluster", "1x1"}, {"ab", "nvfp4"}},
               16384, 64 * 256 / 2, 2048, 1 * 4 * 512, 8192, 7, 3, 2, 64 * 2 + 16 + 16});
  // 6. NVFP4 128×192: SFB pads 192 rows to 256. ab = 16384 + 24576 + 2048 + 4096 = 47104 → 4; rest 26624 → +3.
  g.push_back({"nvfp4_128x192_cta1", {{"tile", "128x192"}, {"cluster", "1x1"}, {"ab", "nvfp4"}},
               16384, 192 * 256 / 2, 2048, 2 * 4 * 512, 8192, 215040 / 47104, 2 + (215040 - 4 * 47104) / 8192,
               2, 192 * 2 + 16 + 32});
  // 7. NVFP4 256×192, 2-CTA: B = 96 rows. ab = 16384 + 12288 + 2048 + 4096 = 34816 → 6; rest 6144 → +0.
  g.push_back({"nvfp4_256x192_cta2", {{"tile", "256x192"}, {"cluster", "2x1"}, {"ab", "nvfp4"}},
               16384, 96 * 256 / 2, 2048, 4096, 8192, 215040 / 34816, 2 + (215040 - 6 * 34816) / 8192, 2,
               192 * 2 + 16 + 32});
  // 8. NVFP4 256×64, 2-CTA: B = 32 rows. ab = 16384 + 4096 + 2048 + 2048 = 24576 → 8; rest 18432 → +2.
  g.push_back({"nvfp4_256x64_cta2", {{"tile", "256x64"}, {"cluster", "2x1"}, {"ab", "nvfp4"}},
               16384, 32 * 256 / 2, 2048, 2048, 8192, 215040 / 24576, 2 + (215040 - 8 * 24576) / 8192, 2,
               64 * 2 + 16 + 16});
  // 9. MXFP4 (ue8m0 per 32) 256×128: 256/32 = 8 scales → 2 K atoms → 1024 B. ab = 26624 → 8; rest 2048 → +0.
  g.push_back({"mxfp4_256x128_cta2", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "mxfp4"}},
               16384, 8192, 1 * (256 / 32 / 4) * 512, 1024, 8192, 215040 / 26624, 2 + (215040 - 8 * 26624) / 8192,
               2, 288});
  // 10. MXFP4 256×256: ab = 16384 + 16384 + 1024 + 2048 = 35840 → 6; rest 0.
  g.push_back({"mxfp4_256x256_cta2", {{"tile", "256x256"}, {"cluster", "2x1"}, {"ab", "mxfp4"}},
               16384, 16384, 1024, 2048, 8192, 215040 / 35840, 2 + (215040 - 6 * 35840) / 8192, 1, 512});
  // 11. MXF8 256×128: K tile = 4 · 32 = 128; A = 128·128·1; SFA = 128/32 = 4 scales = one atom (512 B).
  //     ab = 16384 + 8192 + 512 + 512 = 25600 → 8; rest 10240 → +1.
  g.push_back({"mxf8_256x128_cta2", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "mxf8"}},
               128 * 128, 64 * 128, 512, 512, 8192, 215040 / 25600, 2 + (215040 - 8 * 25600) / 8192, 2, 288});
  // 12. MXF8 128×128 1-CTA: ab = 16384 + 16384 + 512 + 512 = 33792 → 6; rest 12288 → +1.
  g.push_back({"mxf8_128x128_cta1", {{"tile", "128x128"}, {"cluster", "1x1"}, {"ab", "mxf8"}},
               16384, 128 * 128, 512, 512, 8192, 215040 / 33792, 2 + (215040 - 6 * 33792) / 8192, 2, 288});
  // 13. MXF8 256×256: ab = 16384 + 16384 + 512 + 1024 = 34304 → 6; rest 9216 → +1.
  g.push_back({"mxf8_256x256_cta2", {{"tile", "256x256"}, {"cluster", "2x1"}, {"ab", "mxf8"}},
               16384, 128 * 128, 512, 1024, 8192, 215040 / 34304, 2 + (215040 - 6 * 34304) / 8192, 1, 512});
  // 14. NVFP4 256×128, f32 output: C = 128 × 32 × 4 = 16384; 232448 − 1024 − 32768 = 198656 → 6; rest 26624 → +1.
  g.push_back({"nvfp4_256x128_f32out", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "nvfp4"}, {"c", "f32"}},
               16384, 8192, 2048, 2048, 128 * 32 * 4, 198656 / 28672, 2 + (198656 - 6 * 28672) / 16384, 2, 288});
  // 15. NVFP4 256×128, e4m3 output: C = 128 × 32 × 1 = 4096; 232448 − 1024 − 8192 = 223232 → 7; rest 22528 → +5.
  g.push_back({"nvfp4_256x128_f8out", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "nvfp4"}, {"c", "e4m3"}},
               16384, 8192, 2048, 2048, 128 * 32, 223232 / 28672, 2 + (223232 - 7 * 28672) / 4096, 2, 288});
  // 16, 17. Cluster shape does not change the per-CTA footprint: same as case 1.
  g.push_back({"nvfp4_256x128_cluster4x1", {{"tile", "256x128"}, {"cluster", "4x1"}, {"ab", "nvfp4"}, {"c", "bf16"}},
               16384, 8192, 2048, 2048, 8192, 7, 3, 2, 288});
  g.push_back({"nvfp4_256x128_cluster2x4", {{"tile", "256x128"}, {"cluster", "2x4"}, {"ab", "nvfp4"}},
               16384, 8192, 2048, 2048, 8192, 7, 3, 2, 288});
  // 18. Occupancy 2: capacity // 2 = 116224; (116224 − 17408) // 28672 = 3;
  //     c = 2 + (232448 − 2·3·28672 − 2·17408) // (2·8192) = 2 + 25600 // 16384 = 3.
  g.push_back({"nvfp4_256x128_occ2", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "nvfp4"}, {"occupancy", "2"}},
               16384, 8192, 2048, 2048, 8192, (116224 - 17408) / 28672,
               2 + (kCap - 2 * 3 * 28672 - 2 * 17408) / (2 * 8192), 2, 288});
  // 19. sm_103a (B300): same capacities assumed as sm_100a → same as case 1.
  g.push_back({"nvfp4_256x128_sm103a", {{"arch", "sm_103a"}, {"tile", "256x128"}, {"ab", "nvfp4"}},
               16384, 8192, 2048, 2048, 8192, 7, 3, 2, 288});
  // 20. NVFP4 128×128 under cta_group 2: 64 rows per CTA, SFA pads to 128 rows (2048 B); the epilogue uses a
  //     2×2 warp grid: 64 × (4096 / 64 = 64) × 2 B = 8192. ab = 8192 + 8192 + 2048 + 2048 = 20480 → 10; rest 10240.
  //     TMEM SFA = (64 / 32) · 4 = 8.
  g.push_back({"nvfp4_128x128_cta2", {{"tile", "128x128"}, {"cluster", "2x1"}, {"cta-group", "2"}, {"ab", "nvfp4"}},
               64 * 256 / 2, 64 * 256 / 2, 2048, 2048, 64 * 64 * 2, 215040 / 20480, 2 + (215040 - 10 * 20480) / 8192,
               2, 256 + 8 + 16});
  // 21. Dense f16 256×128 2-CTA: K tile = 4 · 16 = 64; A = 128·64·2, B = 64·64·2; ab = 24576 → 8; rest 18432 → +2.
  //     Dense kernels: 2 accumulator stages always, no SF columns.
  g.push_back({"f16_256x128_cta2", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "f16"}},
               128 * 64 * 2, 64 * 64 * 2, 0, 0, 8192, 215040 / 24576, 2 + (215040 - 8 * 24576) / 8192, 2, 256});
  // 22. Dense e4m3 128×256 1-CTA: K tile = 128; ab = 16384 + 32768 = 49152 → 4; rest 18432 → +2; TMEM 2 · 256.
  g.push_back({"e4m3_128x256_cta1", {{"tile", "128x256"}, {"cluster", "1x1"}, {"ab", "e4m3"}},
               128 * 128, 256 * 128, 0, 0, 8192, 215040 / 49152, 2 + (215040 - 4 * 49152) / 8192, 2, 512});
  // 23. MXF6 (e3m2, unpacked to a byte per element): same bytes as MXF8 (case 11).
  g.push_back({"mxf6_256x128_cta2", {{"tile", "256x128"}, {"cluster", "2x1"}, {"ab", "mxf6"}},
               128 * 128 * 8 / 8, 64 * 128, 512, 512, 8192, 8, 3, 2, 288});
  // 24. Mixed MXF8 × MXFP4: kind::mxf8f6f4, the fp4 operand unpacked to one byte: B = 64 · 128 · 1.
  g.push_back({"mxf8_x_mxfp4", {{"tile", "256x128"}, {"cluster", "2x1"}, {"a", "mxf8"}, {"b", "mxfp4"}},
               16384, 64 * 128, 512, 512, 8192, 8, 3, 2, 288});
  // 25. NVFP4 256×128 with K = 512 per stage: A = 128·512/2 = 32768, B = 16384, SFA = 512/16 = 32 scales →
  //     8 atoms → 4096; ab = 57344 → 3; rest 43008 → +5.
  g.push_back({"nvfp4_256x128x512", {{"tile", "256x128x512"}, {"cluster", "2x1"}, {"ab", "nvfp4"}},
               128 * 512 / 2, 64 * 512 / 2, 8 * 512, 8 * 512, 8192, 215040 / 57344, 2 + (215040 - 3 * 57344) / 8192,
               2, 288});
  return g;
}

TEST(BudgetGolden, CutlassBlockScaledPersistent) {
  const auto cases = goldens();
  ASSERT_GE(cases.size(), 20u);
  for (const Golden& g : cases) {
    SCOPED_TRACE(g.name);
    const BudgetReport r = check_budget(make(g.kv));
    ASSERT_TRUE(r.valid);
    EXPECT_FALSE(r.bad_input);
    EXPECT_EQ(r.ab.a, g.a);
    EXPECT_EQ(r.ab.b, g.b);
    EXPECT_EQ(r.ab.sfa, g.sfa);
    EXPECT_EQ(r.ab.sfb, g.sfb);
    EXPECT_EQ(r.epi.bytes, g.c);
    EXPECT_EQ(r.num_ab_stage, g.num_ab);
    EXPECT_EQ(r.num_c_stage, g.num_c);
    EXPECT_EQ(r.num_acc_stage, g.num_acc);
    EXPECT_EQ(r.tmem.used, g.tmem_used);
    EXPECT_LE(r.tmem.used, 512);
    EXPECT_LE(r.total, 232448) << "the solver's choice must launch";
    EXPECT_FALSE(r.has(Severity::error));
  }
}

TEST(BudgetGolden, RealAllocationIsAlignedSum) {
  // Case 1: barriers block 1024 + C 3·8192 + A 7·16384 + B 7·8192 + SFA 7·2048 (14336 → 14336) + SFB 14336.
  const BudgetReport r = check_budget(make({{"tile", "256x128"}, {"ab", "nvfp4"}}));
  EXPECT_EQ(r.total, 1024 + 3 * 8192 + 7 * 16384 + 7 * 8192 + 14336 + 14336);
  // MXF8 case 11: SFA 8 · 512 = 4096 (already 1024-aligned); mxf8 128x128 1-CTA: 6 · 512 = 3072 → 3072.
  const BudgetReport m = check_budget(make({{"tile", "128x128"}, {"cluster", "1"}, {"ab", "mxf8"}}));
  EXPECT_EQ(m.total, 1024 + 3 * 8192 + 6 * 16384 + 6 * 16384 + 3072 + 3072);
  // An odd count of 512-byte SF stages pads to 1024: mxf8 256x128 with 3 fixed A/B stages: 1536 → 2048.
  const BudgetReport p = check_budget(make({{"tile", "256x128"}, {"ab", "mxf8"}, {"ab-stages", "3"}}));
  int64_t sfa_alloc = 0;
  for (const BufferLine& b : p.buffers)
    if (b.name == "SFA") sfa_alloc = b.allocated;
  EXPECT_EQ(sfa_alloc, 2048);
}

TEST(BudgetGolden, TmemAllocation) {
  // CUTLASS's block-scaled kernel requests all 512 columns; dense kernels the power of two of what they use.
  const BudgetReport bs = check_budget(make({{"tile", "256x128"}, {"ab", "nvfp4"}}));
  EXPECT_EQ(bs.tmem.requested, 512);
  EXPECT_EQ(bs.tmem.pow2, 512);  // 288 → 512
  const BudgetReport d = check_budget(make({{"tile", "256x64"}, {"ab", "f16"}}));
  EXPECT_EQ(d.tmem.used, 64 * 2);
  EXPECT_EQ(d.tmem.requested, 128);
  // Occupancy 2 with 512 columns each: the second CTA's alloc waits (bug-catalog item 7).
  const BudgetReport o = check_budget(make({{"tile", "256x128"}, {"ab", "nvfp4"}, {"occupancy", "2"}}));
  EXPECT_TRUE(has_message(o, Severity::warning, "tcgen05.alloc"));
  EXPECT_EQ(o.exit_code(), 1);
}

// ---- the seed kernel (seed-kernels.md §1) ----

std::vector<std::pair<std::string, std::string>> seed_kv(int lora_stages) {
  return {{"arch", "sm_100a"},     {"tile", "256x128x256"},  {"cluster", "2"},      {"cta-group", "2"},
          {"ab", "nvfp4"},         {"c", "f16"},             {"sf", "e4m3"},        {"sf-vec", "16"},
          {"lora-rank", "128"},    {"lora-stages", std::to_string(lora_stages)},   {"epilogue-vectors", "2"},
          {"acc-stages", "1"},     {"solver", "seed"}};
}

TEST(BudgetSeed, PerCtaStageBytes) {
  const BudgetReport r = check_budget(make(seed_kv(2)));
  EXPECT_EQ(r.ab.a, 16384);
  EXPECT_EQ(r.ab.b, 8192);
  EXPECT_EQ(r.ab.sfa, 2048);
  EXPECT_EQ(r.ab.sfb, 2048);
  EXPECT_EQ(r.ab.per_stage(), 28672);
  EXPECT_EQ(r.ab.per_stage() * 2, 57344);                    // ab pipeline tx for the pair
  EXPECT_EQ(r.lora_la, 256 / 2 * 128 * 2);                   // 32768
  EXPECT_EQ(r.lora_lu, 128 / 2 * 128 * 2);                   // 16384
  EXPECT_EQ((r.lora_la + r.lora_lu) * 2, 98304);             // lora tx
  EXPECT_EQ(r.epi.bytes, 8192);
  EXPECT_EQ(r.vectors, 2 * 128 * 2);                          // wcscale + bias = 512
  EXPECT_EQ(r.tmem.used, 128 + 16 + 16);                      // 160
  EXPECT_EQ(r.tmem.requested, 512);
}

TEST(BudgetSeed, PostFix) {
  // cap' = 232448 − 98304 − 512 = 133632; (133632 − 17408) // 28672 = 4; 2 + (133632 − 114688 − 17408) // 8192 = 2.
  const BudgetReport r = check_budget(make(seed_kv(2)));
  EXPECT_EQ(r.solved.capacity_for_solver, 232448 - (32768 + 16384) * 2 - 512);
  EXPECT_EQ(r.num_ab_stage, (133632 - 17408) / 28672);
  EXPECT_EQ(r.num_c_stage, 2 + (133632 - 4 * 28672 - 17408) / 8192);
  EXPECT_EQ(r.num_ab_stage, 4);
  EXPECT_EQ(r.num_c_stage, 2);
  // Real footprint post-fix: 1024 (barriers + wcscale/bias) + 4·28672 + 2·8192 + 2·(32768 + 16384) = 230400.
  EXPECT_EQ(r.total, 1024 + 4 * 28672 + 2 * 8192 + 2 * (32768 + 16384));
  EXPECT_EQ(r.total, 230400);
  EXPECT_EQ(r.exit_code(), 0);
}

TEST(BudgetSeed, PreFixHandWrittenLoraUp) {
  // The bug: LU written as 128 · 128 · 2 = 32768 (no ÷ cta_group) → lora = (32768 + 32768) · 2 = 131072;
  // cap' = 232448 − 131072 − 512 = 100864; (100864 − 17408) // 28672 = 2; 2 + (100864 − 57344 − 17408) // 8192 = 5.
  auto kv = seed_kv(2);
  kv.push_back({"hand", "LA=32768,LU=32768"});
  const BudgetReport r = check_budget(make(kv));
  ASSERT_TRUE(r.solved_hand.has_value());
  EXPECT_EQ(r.solved_hand->num_ab_stage, (100864 - 17408) / 28672);
  EXPECT_EQ(r.solved_hand->num_c_stage, 2 + (100864 - 2 * 28672 - 17408) / 8192);
  EXPECT_EQ(r.num_ab_stage, 2);  // what the kernel as written runs with
  EXPECT_EQ(r.num_c_stage, 5);
  EXPECT_EQ(r.solved.num_ab_stage, 4);
  EXPECT_EQ(r.solved.num_c_stage, 2);
  ASSERT_EQ(r.mismatches.size(), 1u);  // LA matches
  const Mismatch& m = r.mismatches[0];
  EXPECT_EQ(m.operand, "LU");
  EXPECT_DOUBLE_EQ(m.ratio, 2.0);
  ASSERT_FALSE(m.causes.empty());
  EXPECT_EQ(m.causes[0], "not divided by cta_group 2 along N");
  EXPECT_NE(m.message.find("num_ab_stage 2 → 4: 2 stages lost"), std::string::npos) << m.message;
  EXPECT_EQ(r.exit_code(), 1);
}

TEST(BudgetSeed, LoraStageSweep) {
  // cap'(s) = 232448 − 49152 · s − 512; num_ab = (cap' − 17408) // 28672; num_c = 2 + (cap' − 28672·num_ab − 17408) // 8192.
  struct Row { int s, ab, c; };
  const Row rows[] = {
      {0, (231936 - 17408) / 28672, 2 + (231936 - 7 * 28672 - 17408) / 8192},  // (7, 3)
      {1, (182784 - 17408) / 28672, 2 + (182784 - 5 * 28672 - 17408) / 8192},  // (5, 4)
      {2, (133632 - 17408) / 28672, 2 + (133632 - 4 * 28672 - 17408) / 8192},  // (4, 2)
      {3, (84480 - 17408) / 28672, 2 + (84480 - 2 * 28672 - 17408) / 8192},    // (2, 3)
  };
  const int expect_literal[4][2] = {{7, 3}, {5, 4}, {4, 2}, {2, 3}};
  for (const Row& row : rows) {
    SCOPED_TRACE(row.s);
    auto kv = seed_kv(row.s);
    if (row.s == 0) kv.push_back({"lora-rank", "0"});
    const BudgetReport r = check_budget(make(kv));
    EXPECT_EQ(r.num_ab_stage, row.ab);
    EXPECT_EQ(r.num_c_stage, row.c);
    EXPECT_EQ(r.num_ab_stage, expect_literal[row.s][0]);
    EXPECT_EQ(r.num_c_stage, expect_literal[row.s][1]);
    EXPECT_FALSE(r.has(Severity::error));
  }
}

TEST(BudgetSeed, FourLoraStagesIsAnError) {
  // cap' = 232448 − 196608 − 512 = 35328; (35328 − 17408) // 28672 = 0 < 2.
  const BudgetReport r = check_budget(make(seed_kv(4)));
  EXPECT_FALSE(r.solved.ok);
  EXPECT_EQ(r.solved.num_ab_stage, (35328 - 17408) / 28672);
  EXPECT_TRUE(has_message(r, Severity::error, "fewer than 2 K stages fit"));
  EXPECT_EQ(r.exit_code(), 2);
}

TEST(BudgetSolver, FloorDivisionLikePython) {
  EXPECT_EQ(floor_div(-1, 28672), -1);
  EXPECT_EQ(floor_div(7, 2), 3);
  EXPECT_EQ(floor_div(-7, 2), -4);
}

// ---- errors ----

TEST(BudgetErrors, OverCapacityWithFixedStages) {
  // 8 fixed A/B stages of case 1: 1024 + 2·8192 + 8·16384 + 8·8192 + 8·2048 + 8·2048 = 246784 > 232448.
  const BudgetReport r = check_budget(make({{"tile", "256x128"}, {"ab", "nvfp4"}, {"ab-stages", "8"}}));
  EXPECT_EQ(r.total, 1024 + 2 * 8192 + 8 * 16384 + 8 * 8192 + 8 * 2048 + 8 * 2048);
  EXPECT_TRUE(has_message(r, Severity::error, "the launch would fail: 246784 B requested, 232448 B available"));
  EXPECT_EQ(r.exit_code(), 2);
}

TEST(BudgetErrors, UnderestimateLeadsToOverCapacity) {
  // A hand-written as 8192 (÷ cta_group twice): ab = 20480 → 10 stages; rest 10240 → c 3;
  // real = 1024 + 3·8192 + 10·28672 = 312320 B.
  const BudgetReport r = check_budget(make({{"tile", "256x128"}, {"ab", "nvfp4"}, {"hand", "A=8192"}}));
  EXPECT_EQ(r.num_ab_stage, 215040 / 20480);
  EXPECT_EQ(r.total, 1024 + 3 * 8192 + 10 * 16384 + 10 * 8192 + 10 * 2048 + 10 * 2048);
  EXPECT_TRUE(has_message(r, Severity::error, "the launch would fail: 312320 B requested"));
  ASSERT_EQ(r.mismatches.size(), 1u);
  EXPECT_DOUBLE_EQ(r.mismatches[0].ratio, 0.5);
  EXPECT_EQ(r.mismatches[0].causes.at(0), "divided by cta_group 2 twice");
  EXPECT_NE(r.mismatches[0].message.find("num_ab_stage 10 → 7"), std::string::npos);
  EXPECT_EQ(r.exit_code(), 2);
}

TEST(BudgetErrors, MismatchCauses) {
  // SFB divided by cta_group although it is not split; fp4 counted as bytes; SF without atom padding.
  const BudgetReport r = check_budget(
      make({{"tile", "256x64"}, {"ab", "nvfp4"}, {"hand", "SFB=1024,B=8192"}, {"hand", "SFA=2048"}}));
  ASSERT_EQ(r.mismatches.size(), 2u);
  for (const Mismatch& m : r.mismatches) {
    if (m.operand == "SFB") {
      // derived: 128 rows (64 padded) · 4 atoms-worth = 2048; 1024 is also the unpadded 64 · 16.
      EXPECT_EQ(m.derived, 2048);
      bool padding = false, split = false;
      for (const std::string& c : m.causes) {
        padding |= c.find("padding") != std::string::npos;
        split |= c.find("SFB is not split") != std::string::npos;
      }
      EXPECT_TRUE(padding);
      EXPECT_TRUE(split);
    } else {
      EXPECT_EQ(m.operand, "B");
      EXPECT_EQ(m.derived, 32 * 256 / 2);  // 4096
      bool bytes = false;
      for (const std::string& c : m.causes) bytes |= c.find("fp4 counted as one byte") != std::string::npos;
      EXPECT_TRUE(bytes);
    }
  }
}

TEST(BudgetErrors, BadInput) {
  GemmConfig c;
  EXPECT_NE(set_config_field(c, "ab", "int4"), "");
  EXPECT_NE(set_config_field(c, "tile", "256by128"), "");
  EXPECT_NE(set_config_field(c, "arch", "sm_75"), "");
  EXPECT_NE(set_config_field(c, "hand", "Q=12"), "");
  EXPECT_NE(set_config_field(c, "hand", "A"), "");
  EXPECT_NE(set_config_field(c, "colour", "red"), "");

  auto bad = [](std::vector<std::pair<std::string, std::string>> kv, const std::string& needle) {
    const BudgetReport r = check_budget(make(std::move(kv)));
    EXPECT_TRUE(r.bad_input) << needle;
    EXPECT_EQ(r.exit_code(), 2);
    EXPECT_TRUE(has_message(r, Severity::error, needle)) << needle;
  };
  bad({{"ab", "mxf8"}, {"sf-vec", "16"}}, "vector 16 is only for f4");
  bad({{"ab", "nvfp4"}, {"sf", "ue8m0"}, {"sf-vec", "32"}, {"sf", "e4m3"}}, "vector 32 needs ue8m0");
  bad({{"tile", "192x128"}}, "tile M 192");
  bad({{"tile", "256x200"}}, "tile N 200");
  bad({{"tile", "256x128x100"}}, "tile K 100");
  bad({{"tile", "256x128"}, {"cluster", "1x2"}}, "cluster M must be even");
  bad({{"cluster", "4x8"}}, "exceeds the non-portable maximum");
  bad({{"arch", "sm_90a"}}, "no tcgen05");
  bad({{"arch", "sm_120a"}}, "no tcgen05");
  bad({{"ab", "f16"}, {"b", "e4m3"}}, "no tcgen05.mma kind");
  bad({{"lora-rank", "100"}, {"lora-stages", "1"}}, "multiple of 16");
  bad({{"a", "nvfp4"}, {"b", "e2m1"}}, "both be block scaled");
}

TEST(BudgetErrors, TmemOverflow) {
  // Dense f16 128×256 with 3 accumulator stages: 3 · 256 = 768 > 512 columns.
  const BudgetReport r =
      check_budget(make({{"tile", "128x256"}, {"cluster", "1"}, {"ab", "f16"}, {"acc-stages", "3"}}));
  EXPECT_EQ(r.tmem.used, 3 * 256);
  EXPECT_TRUE(has_message(r, Severity::error, "TMEM: 768 columns needed"));
  EXPECT_EQ(r.exit_code(), 2);
}

TEST(BudgetRegisters, LimitsAndSetmaxnreg) {
  const Capacity& cap = find_arch("sm_100a")->cap;
  // 192 threads × 168 registers: 6 warps · 168 · 32 = 32256 registers per CTA → 2 CTAs per SM.
  RegisterReport a = check_registers({192, 168, {}, 1}, cap);
  EXPECT_TRUE(a.ok);
  EXPECT_EQ(a.regs_per_cta, 6 * 168 * 32);
  EXPECT_EQ(a.max_ctas_by_regs, 65536 / (6 * 168 * 32));
  // 170 registers round up to 176 (per-warp unit of 256 = 8 per thread).
  RegisterReport b = check_registers({128, 170, {}, 1}, cap);
  EXPECT_EQ(b.regs_per_thread_alloc, 176);
  // 1024 threads × 128 registers = 131072 > 65536: cannot launch.
  RegisterReport c = check_registers({1024, 128, {}, 1}, cap);
  EXPECT_FALSE(c.ok);
  // setmaxnreg: 384 threads × 168 = 64512 at launch; 128·(40 + 232 + 232) = 64512 fits.
  RegisterReport d = check_registers({384, 168, {40, 232, 232}, 1}, cap);
  EXPECT_TRUE(d.ok) << (d.errors.empty() ? "" : d.errors[0]);
  EXPECT_EQ(d.regs_after_setmaxnreg, 128 * (40 + 232 + 232));
  // 128·(40 + 240 + 240) = 66560 > 64512: the increasing warpgroup would wait forever.
  RegisterReport e = check_registers({384, 168, {40, 240, 240}, 1}, cap);
  EXPECT_FALSE(e.ok);
  // setmaxnreg needs whole warpgroups and multiples of 8 in [24, 256].
  EXPECT_FALSE(check_registers({192, 168, {40, 232}, 1}, cap).ok);
  EXPECT_FALSE(check_registers({256, 128, {20, 236}, 1}, cap).ok);
  // Occupancy 2 with 192 threads: 65536 / (2 · 6 warps) = 5461 per warp → 21 units of 256 → 168 registers.
  RegisterReport f = check_registers({192, 0, {}, 2}, cap);
  EXPECT_EQ(f.max_regs_for_occupancy, (65536 / (2 * 6)) / 256 * 256 / 32);
  // Asking for occupancy 2 with 200 registers (→ 200 · 32 · 6 = 38400 per CTA): registers allow 1.
  RegisterReport g = check_registers({192, 200, {}, 2}, cap);
  EXPECT_EQ(g.max_ctas_by_regs, 65536 / 38400);
  EXPECT_FALSE(g.warnings.empty());
}

TEST(BudgetArch, TableRows) {
  for (const char* n : {"sm_90a", "sm_100a", "sm_103a"}) {
    const Arch* a = find_arch(n);
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->solver_smem_capacity, (228 - 1) * 1024);  // CUTLASS SMEM_CAPACITY_MAP
    EXPECT_EQ(a->cap.smem_per_sm - a->cap.smem_per_block, a->smem_reserved_per_block);
  }
  EXPECT_EQ(find_arch("sm_120a")->solver_smem_capacity, (100 - 1) * 1024);
  EXPECT_FALSE(find_arch("sm_103a")->uncertain_note.empty());
  EXPECT_FALSE(find_arch("sm_120a")->uncertain_note.empty());
}

// B200 / B300 keep the H100's measured SM-side costs where no Blackwell figure exists
// (docs/calibration.md), and their own where one does: a Blackwell row that drifted back to a guess,
// or took the H100's memory system, fails here.
TEST(BudgetArch, BlackwellKeepsTheH100sMeasuredSmSideCosts) {
  const Timing& h = find_arch("sm_90a")->time;
  for (const char* n : {"sm_100a", "sm_103a"}) {
    const Timing& b = find_arch(n)->time;
    for (TimingField f : {&Timing::op_issue_ns, &Timing::mbarrier_wake_ns, &Timing::remote_arrive_ns, &Timing::named_barrier_ns,
                          &Timing::cluster_barrier_ns,
                          &Timing::ptx_alu_latency_cycles, &Timing::ptx_global_load_latency_cycles, &Timing::ptx_mulhi64_latency_cycles,
                          &Timing::ptx_store_sector_cycles})
      EXPECT_EQ(b.*f, h.*f) << n;
    EXPECT_GT(b.op_issue_ns, 0.0);
    EXPECT_EQ(b.clock_ghz, 1.965);
    EXPECT_EQ(b.hbm_bytes_per_ns, 7670.0);
    EXPECT_EQ(b.tma_copy_min_ns, 0.0);  // excluded by the seed's B200 figure (calibration.md)
    // Nor the H100's measured issue cost (38 ns a copy): our W4A4 kernel's PTX disagrees (calibration.md).
    EXPECT_EQ(b.tma_issue_ns, 10.0);
    EXPECT_GT(h.tma_issue_ns, b.tma_issue_ns);
    // One SM's intake is the B200's own (the public 1-SM mainloop sweep at its 1.3 GHz), per cycle of the
    // SM clock: 155 B/ns and 0.78 ns a request there; slower per row than the H100's.
    EXPECT_DOUBLE_EQ(at_sm_clock(b, 1.3).sm_copy_bytes_per_ns, 155.0);
    EXPECT_DOUBLE_EQ(at_sm_clock(b, 1.3).sm_copy_ns_per_request, 0.78);
    EXPECT_EQ(b.tma_latency_ns, 250.0);
    EXPECT_GT(b.sm_copy_ns_per_request * b.clock_ghz, h.sm_copy_ns_per_request * h.clock_ghz);
    EXPECT_EQ(b.dram_loaded_ns_per_mib, 0.0);
    EXPECT_EQ(b.l2_slow_bytes_per_ns, 0.0);
    EXPECT_EQ(b.ptx_store_device_sectors_per_ns, 0.0);
    EXPECT_EQ(b.launch_floor_ns, 0.0);
  }
}

// A GPU clocked lower (locked clocks, a power limit): what runs on the SM's clock scales (the tensor
// pipe's too), the memory system does not.
TEST(BudgetArch, AtAnotherSmClockTheSmSideScalesAndTheMemorySideStays) {
  const Timing& h = find_arch("sm_90a")->time;
  const Timing half = at_sm_clock(h, h.clock_ghz / 2);
  EXPECT_DOUBLE_EQ(half.clock_ghz, h.clock_ghz / 2);
  EXPECT_DOUBLE_EQ(half.tensor_clock_ghz, h.tensor_clock_ghz / 2);
  for (TimingField f : {&Timing::op_issue_ns, &Timing::mbarrier_wake_ns, &Timing::named_barrier_ns, &Timing::cluster_barrier_ns,
                        &Timing::remote_arrive_ns, &Timing::tma_issue_ns, &Timing::tma_copy_min_ns, &Timing::sm_copy_ns_per_request})
    EXPECT_DOUBLE_EQ(half.*f, 2 * (h.*f));
  for (TimingField f : {&Timing::sm_copy_bytes_per_ns, &Timing::smem_bytes_per_ns}) EXPECT_DOUBLE_EQ(half.*f, (h.*f) / 2);
  for (TimingField f : {&Timing::tma_latency_ns, &Timing::hbm_bytes_per_ns, &Timing::l2_bytes_per_ns, &Timing::launch_floor_ns,
                        &Timing::ptx_store_device_sectors_per_ns, &Timing::ptx_global_load_latency_cycles})
    EXPECT_DOUBLE_EQ(half.*f, h.*f);
  // The same clock gives the same table.
  EXPECT_DOUBLE_EQ(at_sm_clock(h, h.clock_ghz).mbarrier_wake_ns, h.mbarrier_wake_ns);
  EXPECT_DOUBLE_EQ(at_sm_clock(h, h.clock_ghz).tensor_clock_ghz, h.tensor_clock_ghz);
}

TEST(BudgetDevice, DeviceLimitSmallerThanFamily) {
  // A device that offers less than the family's maximum: stages from the solver constant no longer launch.
  Capacity dev = find_arch("sm_100a")->cap;
  dev.smem_per_block = 200 * 1024;
  dev.smem_per_sm = dev.smem_per_block + 1024;
  const BudgetReport r = check_budget(make({{"tile", "256x128"}, {"ab", "nvfp4"}}), &dev);
  EXPECT_TRUE(r.device_capacity);
  EXPECT_TRUE(has_message(r, Severity::warning, "the GPU present allows 204800 B"));
  EXPECT_TRUE(has_message(r, Severity::error, "the launch would fail"));
}

TEST(BudgetReportText, MentionsEveryBuffer) {
  const BudgetReport r = check_budget(make(seed_kv(2)));
  const std::string text = format_report(r);
  for (const char* s : {"barriers", "VEC", "SFA", "SFB", "LA", "LU", "230400", "headroom 2048", "accumulator stage 0"})
    EXPECT_NE(text.find(s), std::string::npos) << s;
}

}  // namespace
}  // namespace pipesim::model
