// The acceptance corpus of the PTX front end (issue 18): CUTLASS's Hopper GEMMs 48, 49 and 54 from the
// nvidia-cutlass wheel, compiled to sm_90a PTX at test time with their launch files, and mutants of
// them that each carry one bug of ../shared/spec/bug-catalog.md (tools/cutlass_corpus/). Each kernel
// checks ok; each mutant gives its verdict with the right cause, at the right place in CUTLASS's
// source (the inlining chain of the instruction the warps stop at names the pipeline call and the
// collective or kernel line that made it). Built only where nvcc exists (ptx_corpus_build).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "corpus_mutant_want.hpp"
#include "verify/check.hpp"
#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

#ifdef PIPESIM_PTX_CORPUS_DIR
const std::string kCorpus = PIPESIM_PTX_CORPUS_DIR;
#else
const std::string kCorpus;
#endif

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

bool corpus_missing(std::string& why) {
  if (kCorpus.empty()) {
    why = "nvcc not found at configure time: the CUTLASS corpus is not built (needs PIPESIM_HAVE_CUDA)";
    return true;
  }
  if (!std::filesystem::exists(kCorpus + "/manifest.json")) {
    why = "the corpus was not built: " + kCorpus + "/manifest.json is missing (ctest runs ptx_corpus_build first)";
    return true;
  }
  return false;
}

CheckResult check(const std::string& ptx, const std::string& launch) {
  CheckOptions o;
  o.run.max_seconds = 0;  // verdicts, not pipesim's wall-clock budget (a loaded CI machine is slow)
  o.launch = kCorpus + "/" + launch;
  return check_file(kCorpus + "/" + ptx, o);
}

TEST(CutlassCorpus, EveryKernelAndShapeRunsToTheEnd) {
  std::string why;
  if (corpus_missing(why)) GTEST_SKIP() << why;
  const nlohmann::json manifest = read_json(kCorpus + "/manifest.json");
  int checked = 0;
  for (const auto& k : manifest.at("kernels")) {
    const std::string name = k.at("example").get<std::string>() + ":" + k.at("variant").get<std::string>();
    const CheckResult r = check(k.at("ptx"), k.at("launch"));
    ASSERT_FALSE(r.bad_input) << name << ": " << r.diagnostic;
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << name << " " << k.at("launch") << "\n" << r.report;
    EXPECT_GT(r.result.instructions, 0u);
    ++checked;
  }
  EXPECT_GE(checked, 35);  // 6 kernels x 6 shapes, less 54 at 256x4096x8192 (tools/cutlass_corpus/corpus_common.py)
}

// What each mutant must give (corpus_mutant_want.hpp).
const std::map<std::string, MutantWant>& wants() {
  static const std::map<std::string, MutantWant> w = {
      // The producer's first producer_acquire (PipelineTmaAsync, called from the mainloop's load) waits
      // on an empty barrier no consumer has released.
      {"producer_start_phase0", {sim::Verdict::Hang, "", "sm90_mma_tma_gmma_ss_warpspecialized.hpp:374", ""}},
      // Consumers starting at phase 1 pass their first full-barrier wait at once and release a stage
      // whose bytes are still expected: the producer's next arrive.expect_tx finds no arrival pending.
      {"consumer_start_phase1", {sim::Verdict::Error, "pending_underflow", "sm90_pipeline.hpp", ""}},
      // A tile's expect_tx larger than its copies: the consumers wait at consumer_wait for bytes (:487,
      // after their peek at :486 waited out its time limit).
      {"expect_tx_plus_tile", {sim::Verdict::Hang, "", "sm90_mma_tma_gmma_ss_warpspecialized.hpp:487", ""}},
      // Smaller: the phase completes before the last copy lands (reported at the copy).
      {"expect_tx_minus_tile", {sim::Verdict::Error, "early_completion", "copy_sm90_tma.hpp", ""}},
      // The epilogue's named barrier counts one warp more than take part.
      {"epilogue_named_barrier_plus_warp", {sim::Verdict::Hang, "", "sm90_epilogue_tma_warpspecialized.hpp:711", ""}},
      // One warp uses the epilogue's named barrier with another count.
      {"epilogue_named_barrier_mismatch", {sim::Verdict::Error, "named_count_mismatch", "sm90_epilogue_tma_warpspecialized.hpp:737", ""}},
      // Consumers skip their last release: the producer's load_tail waits for the stage.
      {"consumer_skips_release_last_tile", {sim::Verdict::Hang, "", "sm90_mma_tma_gmma_ss_warpspecialized.hpp:407", ""}},
      // mma_tail skips its releases: the producer's next producer_acquire waits.
      {"consumer_skips_tail_release", {sim::Verdict::Hang, "", "sm90_mma_tma_gmma_ss_warpspecialized.hpp:374", ""}},
      // Only the producer warp group arrives on the cluster barrier: everyone waits at cluster_wait.
      {"cluster_arrive_producer_only", {sim::Verdict::Hang, "", "sm90_gemm_tma_warpspecialized_cooperative.hpp:505", ""}},
      // The empty barriers count one consumer arrival more than the multicast fan-in gives.
      {"multicast_arrival_count_plus_one", {sim::Verdict::Hang, "", "sm90_mma_tma_gmma_ss_warpspecialized.hpp:374", ""}},
      // The producer skips every other tile the scheduler gives it: consumers wait for its loads.
      {"producer_skips_alternate_tiles", {sim::Verdict::Hang, "", "sm90_mma_tma_gmma_ss_warpspecialized.hpp:487", ""}},
      // Ping-pong: a math warp group skips its arrive on the ordered barrier after its mainloop. Its
      // stage index then lags, later waits pass on phases already consumed, both warp groups consume
      // and release one stage, and the producer's arrive.expect_tx finds no arrival pending while the
      // stage's bytes are still expected (the H100 faults). It takes several tiles per warp group: at
      // 2048x2048x256 each has one, and the kernel ends (PingpongOrderSkipNeedsSeveralTiles).
      {"pingpong_order_skip_mma_arrive",
       {sim::Verdict::Error, "pending_underflow", "sm90_mma_tma_gmma_ss_warpspecialized.hpp:374", "4096x4096x4096"}},
  };
  return w;
}

TEST(CutlassCorpus, EachMutantIsCaughtWithItsCauseAndPlace) {
  std::string why;
  if (corpus_missing(why)) GTEST_SKIP() << why;
  const nlohmann::json mutants = read_json(kCorpus + "/mutants.json");
  int caught = 0;
  for (const auto& m : mutants) {
    const std::string name = m.at("name");
    auto it = wants().find(name);
    if (it == wants().end()) continue;  // judged below
    const MutantWant& want = it->second;
    const std::string launch = mutant_launch(m.at("launch"), want, "2048x2048x256");
    const CheckResult r = check(m.at("ptx"), launch);
    expect_caught(name, r, want);
    if (name == "expect_tx_plus_tile") {  // the cause: every arrival in, bytes missing
      bool bytes = false;
      for (const sim::HangGroup& g : r.result.hang.groups)
        bytes |= g.state && g.state->pending == 0 && g.state->tx > 0;
      EXPECT_TRUE(bytes) << r.report;
    }
    ++caught;
  }
  EXPECT_EQ(caught, static_cast<int>(wants().size()));
}

// expect_tx_minus_tile on the H100 hangs (docs/runs/cutlass-h100-2026-11-25.txt): `pipesim check` stops
// at the cause (early_completion, a rule the hardware does not check); run on as the hardware does,
// the late bytes land in the next phase and the model reaches the same hang.
TEST(CutlassCorpus, ExpectTxMinusATileHangsAsTheH100DoesWhenRunOnPastTheCause) {
  std::string why;
  if (corpus_missing(why)) GTEST_SKIP() << why;
  const nlohmann::json mutants = read_json(kCorpus + "/mutants.json");
  for (const auto& m : mutants)
    if (m.at("name") == "expect_tx_minus_tile") {
      CheckOptions o;
      o.run.max_seconds = 0;  // verdicts, not pipesim's wall-clock budget (a loaded CI machine is slow)
      o.launch = kCorpus + "/" + m.at("launch").get<std::string>();
      o.run.hardware_only = true;
      const CheckResult r = check_file(kCorpus + "/" + m.at("ptx").get<std::string>(), o);
      ASSERT_FALSE(r.bad_input) << r.diagnostic;
      EXPECT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
      bool warned = false;
      for (const sim::Finding& f : r.result.findings) warned |= !f.fatal && f.kind == "early_completion";
      EXPECT_TRUE(warned) << r.report;
    }
}

// The ping-pong mutant at its own launch: one tile per math warp group, so the skipped arrive is never
// waited for in a later phase and the kernel ends (the model claims the H100 does too: docs/runs).
TEST(CutlassCorpus, PingpongOrderSkipNeedsSeveralTiles) {
  std::string why;
  if (corpus_missing(why)) GTEST_SKIP() << why;
  const nlohmann::json mutants = read_json(kCorpus + "/mutants.json");
  for (const auto& m : mutants)
    if (m.at("name") == "pingpong_order_skip_mma_arrive") {
      const CheckResult r = check(m.at("ptx"), m.at("launch"));
      ASSERT_FALSE(r.bad_input) << r.diagnostic;
      EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
    }
}

}  // namespace
}  // namespace pipesim::verify
