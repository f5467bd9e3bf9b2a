// The Blackwell (sm_100a) part of the CUTLASS acceptance corpus (tools/cutlass_corpus/README.md
// "Blackwell"): examples 70, 72b, 73, 74 and 77's forward FMHA from the nvidia-cutlass wheel, compiled
// to sm_100a PTX at test time with launch files for a 148-SM B200 (ptx_corpus_sm100_build). Every
// kernel and shape of manifest_sm100.json must check ok. No Blackwell GPU exists for this project:
// nothing here was ever run on silicon, the verdicts rest on the model alone.
//
// One test per example, so that ctest runs them side by side.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "verify/check.hpp"
#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

#ifdef PIPESIM_PTX_CORPUS_DIR
const std::string kCorpus = PIPESIM_PTX_CORPUS_DIR;
#else
const std::string kCorpus;
#endif

// Checks every launch of `example` in manifest_sm100.json; returns how many were checked.
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
TEST(CutlassCorpusSm100, PreferredClusterGemm73EveryShapeChecksOk) { check_example("73_blackwell_gemm_preferred_cluster", 4); }
TEST(CutlassCorpusSm100, StreamKGemm74EveryShapeChecksOk) { check_example("74_blackwell_gemm_streamk", 8); }
TEST(CutlassCorpusSm100, FmhaForward77EveryShapeChecksOk) { check_example("77_blackwell_fmha", 3); }

}  // namespace
}  // namespace pipesim::verify
