// The Blackwell (sm_100a) part of the CUTLASS acceptance corpus (tools/cutlass_corpus/README.md
// "Blackwell"): examples 70, 72b, 73, 74, 77's forward FMHA and 91's SIMT FP4 GEMV from the
// nvidia-cutlass wheel, compiled to sm_100a PTX at test time with launch files for a 148-SM B200
// (ptx_corpus_sm100_build). Every kernel and shape of manifest_sm100.json must check ok, and every
// mutant of mutants_sm100.json (tools/cutlass_corpus/mutants_sm100_spec.py) must give its verdict with
// the right cause. No Blackwell GPU exists for this project: nothing here was ever run on silicon, the
// verdicts rest on the model alone.
//
// One test per example, so that ctest runs them side by side.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "corpus_mutant_want.hpp"
#include "model/arch.hpp"
#include "verify/check.hpp"
#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

#ifdef PIPESIM_PTX_CORPUS_DIR
const std::string kCorpus = PIPESIM_PTX_CORPUS_DIR;
#else
const std::string kCorpus;
#endif

// Checks every launch of `example` in manifest_sm100.json.
void check_example(const std::string& example, int expected_launches) {
  if (kCorpus.empty())
    GTEST_SKIP() << "nvcc not found at configure time: the CUTLASS corpus is not built (needs PIPESIM_HAVE_CUDA)";
  const std::string manifest_path = kCorpus + "/manifest_sm100.json";
  if (!std::filesystem::exists(manifest_path))
    GTEST_SKIP() << "the sm_100a corpus was not built: " << manifest_path
                 << " is missing (ctest runs ptx_corpus_sm100_build first)";
  std::ifstream in(manifest_path);
  const nlohmann::json manifest = nlohmann::json::parse(in);
  ASSERT_EQ(manifest.at("arch"), "sm_100a");
  int checked = 0;
  for (const auto& k : manifest.at("kernels")) {
    if (k.at("example").get<std::string>() != example) continue;
    const std::string name = k.at("example").get<std::string>() + ":" + k.at("variant").get<std::string>() +
                             " " + k.at("launch").get<std::string>();
    CheckOptions o;
    o.run.max_seconds = 0;  // verdicts, not pipesim's wall-clock budget (a loaded CI machine is slow)
    o.launch = kCorpus + "/" + k.at("launch").get<std::string>();
    const CheckResult r = check_file(kCorpus + "/" + k.at("ptx").get<std::string>(), o);
    EXPECT_FALSE(r.bad_input) << name << ": " << r.diagnostic;
    if (r.bad_input) continue;
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << name << "\n" << r.report;
    EXPECT_GT(r.result.instructions, 0u) << name;
    ++checked;
  }
  EXPECT_EQ(checked, expected_launches) << example;
}

TEST(CutlassCorpusSm100, Gemm70OneSmAndTwoSmEveryShapeChecksOk) { check_example("70_blackwell_gemm", 8); }
TEST(CutlassCorpusSm100, Nvfp4Gemm72EveryShapeChecksOk) { check_example("72_blackwell_narrow_precision_gemm", 4); }
// The seed's CUTLASS baseline tiles (capture_72_seed.cu) at its four shapes: 1-SM 128x256 (2 stages),
// 2-SM 256x128 and 256x256.
TEST(CutlassCorpusSm100, SeedTilesEveryShapeChecksOk) { check_example("72_blackwell_nvfp4_seed_tiles", 12); }

// The 1-SM 128x256 kernel's ring has 2 stages, and its producer and MMA warp each peek at the next stage
// before they do what the other's peek waits for (the copies; the release): each peek waits out its time
// limit. With peeks that answer at once the same kernel runs several times faster; with peeks held until
// their phase completes it hung (what the model did before peeks had a limit).
TEST(CutlassCorpusSm100, SeedTileOneSmTwoStagePeeksWaitOutTheirTimeLimit) {
  if (kCorpus.empty() || !std::filesystem::exists(kCorpus + "/manifest_sm100.json"))
    GTEST_SKIP() << "the sm_100a corpus is not built (needs nvcc; ctest runs ptx_corpus_sm100_build first)";
  const std::string dir = kCorpus + "/72_blackwell_nvfp4_seed_tiles/";
  auto run = [&](double limit_ns) {
    CheckOptions o;
    o.run.max_seconds = 0;
    o.launch = dir + "72_blackwell_nvfp4_seed_tiles_1sm_128x256_4352x3072x3840.launch.json";
    o.run.timing_overrides.emplace_back(&model::Timing::mbarrier_try_wait_limit_ns, limit_ns);
    return check_file(dir + "72_blackwell_nvfp4_seed_tiles.ptx", o);
  };
  const CheckResult limited = run(4000), at_once = run(0);
  ASSERT_FALSE(limited.bad_input) << limited.diagnostic;
  EXPECT_EQ(limited.result.verdict, sim::Verdict::Ok) << limited.report;
  EXPECT_EQ(at_once.result.verdict, sim::Verdict::Ok) << at_once.report;
  EXPECT_GT(limited.result.end_ns, 4 * at_once.result.end_ns);
}

TEST(CutlassCorpusSm100, PreferredClusterGemm73EveryShapeChecksOk) { check_example("73_blackwell_gemm_preferred_cluster", 4); }
TEST(CutlassCorpusSm100, StreamKGemm74EveryShapeChecksOk) { check_example("74_blackwell_gemm_streamk", 8); }
TEST(CutlassCorpusSm100, FmhaForward77EveryShapeChecksOk) { check_example("77_blackwell_fmha", 3); }
TEST(CutlassCorpusSm100, FpFourGemv91EveryShapeChecksOk) { check_example("91_fp4_gemv", 3); }

// ---- Mutants (tools/cutlass_corpus/mutants_sm100_spec.py): example 70's 2-SM kernel with one Blackwell
// bug each, at its 2048x2048x256 launch (cluster 2x2x1: two CTA pairs). What each must give: the verdict
// (and rule), and a place the report must name in CUTLASS's source, in the inlining chain of the
// instruction where the warps stop (or of the fatal finding).
const std::map<std::string, MutantWant>& wants() {
  static const std::map<std::string, MutantWant> w = {
      // The load warp decodes a granted CLC response as taken and waits, in its extra fetch_next_work,
      // for a response the scheduler warp requests only after the load warp's next throttle arrival.
      {"clc_load_role_skips_grant", {sim::Verdict::Hang, "", "sm100_gemm_tma_warpspecialized.hpp:676", ""}},
      // The second pair's accumulator commits reach ranks 0 and 1: its epilogue warps wait in the
      // accumulator pipeline's consumer_wait (the epilogue's store).
      {"umma_peer_mask_pair_cluster", {sim::Verdict::Hang, "", "sm100_epilogue_tma_warpspecialized.hpp:866", ""}},
      // The MMA warp's first accumulator producer_acquire waits for a phase only the epilogue completes.
      {"acc_producer_start_phase0", {sim::Verdict::Hang, "", "sm100_mma_warpspecialized.hpp:675", ""}},
      // The leader expects one CTA's half of each stage: the phase completes before the peer's half lands.
      {"expect_tx_without_cta_group", {sim::Verdict::Error, "early_completion", "copy_sm100_tma.hpp", ""}},
      // The follower's load warp arms its own full barrier too; no bytes come there, so when the ring
      // wraps (256 k-tiles at 512x512x16384) its next arrive.expect_tx finds no arrival pending.
      {"follower_expect_tx", {sim::Verdict::Error, "pending_underflow", "sm100_mma_warpspecialized.hpp:607", "512x512x16384"}},
      // Only the leader issues the pair's tcgen05.alloc: it waits there for its peer.
      {"tmem_alloc_leader_only", {sim::Verdict::Hang, "", "sm100_gemm_tma_warpspecialized.hpp:727", ""}},
  };
  return w;
}

TEST(CutlassCorpusSm100, EachMutantIsCaughtWithItsCauseAndPlace) {
  if (kCorpus.empty())
    GTEST_SKIP() << "nvcc not found at configure time: the CUTLASS corpus is not built (needs PIPESIM_HAVE_CUDA)";
  const std::string records = kCorpus + "/mutants_sm100.json";
  if (!std::filesystem::exists(records))
    GTEST_SKIP() << "the sm_100a mutants were not built: " << records << " is missing (ctest runs ptx_corpus_sm100_build first)";
  std::ifstream in(records);
  const nlohmann::json mutants = nlohmann::json::parse(in);
  int caught = 0;
  for (const auto& m : mutants) {
    const std::string name = m.at("name");
    auto it = wants().find(name);
    ASSERT_NE(it, wants().end()) << name << " is in mutants_sm100.json but has no expectation here";
    const MutantWant& want = it->second;
    CheckOptions o;
    o.run.max_seconds = 0;  // verdicts, not pipesim's wall-clock budget (a loaded CI machine is slow)
    const std::string launch = mutant_launch(m.at("launch"), want, "2048x2048x256");
    o.launch = kCorpus + "/" + launch;
    const CheckResult r = check_file(kCorpus + "/" + m.at("ptx").get<std::string>(), o);
    expect_caught(name, r, want);
    if (name == "umma_peer_mask_pair_cluster") {  // the cause: the second pair (ranks 2, 3) gets no commit
      bool second_pair_waits = false;
      for (const sim::HangGroup& g : r.result.hang.groups)
        if (r.kernel.sites.at(g.site).origin.find(want.where) != std::string::npos)
          for (const auto& [cta, warp] : g.members) second_pair_waits |= cta % 4 >= 2 && warp >= 4;
      EXPECT_TRUE(second_pair_waits) << r.report;
    }
    if (name == "tmem_alloc_leader_only") {  // the cause: the pair's collective allocation, the peer never joins
      bool pair_alloc = false;
      for (const sim::HangGroup& g : r.result.hang.groups)
        pair_alloc |= g.waits_on.find("tcgen05.alloc.cta_group::2") != std::string::npos;
      EXPECT_TRUE(pair_alloc) << r.report;
    }
    ++caught;
  }
  EXPECT_EQ(caught, static_cast<int>(wants().size()));
}

}  // namespace
}  // namespace pipesim::verify
