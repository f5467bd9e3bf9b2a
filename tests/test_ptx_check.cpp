// `pipesim check KERNEL.ptx --launch`: real nvcc output run warp by warp on the engine. The kernels are
// tests/data/ptx/pipeline.cu's variants (our own code; its PTX is committed so that these run without
// nvcc) and, where nvcc exists, the project's NVFP4 GEMV compiled at build time.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "verify/check.hpp"
#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";
const std::string kPtx = kDir + "pipeline.ptx";
const std::string kLaunch = kDir + "pipeline.launch.json";

CheckResult check_variant(const std::string& entry, std::vector<std::string> sets = {}) {
  CheckOptions o;
  o.launch = kLaunch;
  o.launch_sets = std::move(sets);
  o.launch_sets.push_back("entry=" + entry);
  return check_file(kPtx, o);
}

// The group of a hang whose first member is warp `warp`.
const sim::HangGroup* group_of_warp(const CheckResult& r, int warp) {
  for (const sim::HangGroup& g : r.result.hang.groups)
    if (g.members.front().second == warp) return &g;
  return nullptr;
}

std::string origin(const CheckResult& r, uint32_t site) { return r.kernel.sites.at(site).origin; }

// "pipeline.cu:N" for the `nth` line of pipeline.cu holding `text` (1-based lines), so that the
// expectations follow the source.
std::string at(const std::string& text, int nth = 1) {
  std::ifstream in(kDir + "pipeline.cu");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(text) != std::string::npos && --nth == 0) return "pipeline.cu:" + std::to_string(n) + ":";
  ADD_FAILURE() << "no line holds " << text;
  return "?";
}
const char* kWaitLoop = "while (!ptx::mbarrier_try_wait_parity";

TEST(PtxCheck, CorrectPipelineRunsToTheEnd) {
  const CheckResult r = check_variant("pipeline_ok");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  EXPECT_TRUE(r.matches_expect);
  EXPECT_EQ(r.kernel.launch.ctas, 4);
  EXPECT_EQ(r.kernel.launch.threads, 96);
  // Every warp of every CTA exited; the 8 tiles lap the 4-stage ring twice, each lap waiting for
  // copies that take at least the TMA latency to land.
  ASSERT_EQ(r.result.warps.size(), 12u);
  for (const sim::WarpEnd& w : r.result.warps) EXPECT_EQ(w.status, sim::WarpStatus::Exited);
  EXPECT_GT(r.result.end_ns, 2 * r.kernel.arch->time.tma_latency_ns);
  EXPECT_GT(r.result.dram_busy_ns, 0);
  // 8 barriers per CTA, found as the kernel initialised them, each completed twice per ring lap.
  ASSERT_EQ(r.result.barrier_names.size(), 8u);
  for (const auto& bars : r.result.barriers)
    for (const sim::BarrierState& b : bars) {
      EXPECT_TRUE(b.initialised);
      EXPECT_GE(b.completed, 2);
    }
}

TEST(PtxCheck, ProducerStartingAtPhaseZeroHangsAtItsOwnWait) {
  const CheckResult r = check_variant("pipeline_producer_phase_zero");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* producer = group_of_warp(r, 0);
  ASSERT_NE(producer, nullptr) << r.report;
  // The wait is the helper's try_wait loop, called from the producer's loop: both lines named.
  EXPECT_NE(origin(r, producer->site).find(at(kWaitLoop)), std::string::npos) << origin(r, producer->site);
  EXPECT_NE(origin(r, producer->site).find("called at "), std::string::npos);
  EXPECT_NE(origin(r, producer->site).find(at("wait(&empty[ps.index], ps.phase);")), std::string::npos);
  // Named by the kernel's own variable: the producer waits on empty[0] (the .shared array after full[4]).
  EXPECT_EQ(producer->waits_on.rfind("empty[0] (shared 0x20)", 0), 0u) << producer->waits_on;
  EXPECT_NE(producer->waits_on.find("parity 0"), std::string::npos);
  ASSERT_TRUE(producer->state.has_value());
  EXPECT_EQ(producer->state->completed, 0);  // the empty barrier never completed a phase
  // Four CTAs, one group each situation: the producers of all CTAs are grouped.
  EXPECT_EQ(producer->members.size(), 4u);
  EXPECT_NE(r.report.find(at(kWaitLoop)), std::string::npos);
}

TEST(PtxCheck, ExpectingMoreBytesThanTheCopiesBringHangsTheConsumers) {
  const CheckResult r = check_variant("pipeline_expect_one_tile_more");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* consumers = group_of_warp(r, 1);
  ASSERT_NE(consumers, nullptr) << r.report;
  EXPECT_NE(origin(r, consumers->site).find(at("wait(&full[cs.index], cs.phase);")), std::string::npos) << origin(r, consumers->site);
  ASSERT_TRUE(consumers->state.has_value());
  EXPECT_EQ(consumers->state->pending, 0);
  EXPECT_EQ(consumers->state->tx, 2048);  // half a stage expected, never issued
  bool named = false;
  for (const std::string& h : consumers->hints) named |= h.find("never landed") != std::string::npos;
  EXPECT_TRUE(named) << r.report;
}

TEST(PtxCheck, NamedBarrierCountLargerThanItsWarpsHangs) {
  const CheckResult r = check_variant("pipeline_named_count_off");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* g = group_of_warp(r, 1);
  ASSERT_NE(g, nullptr) << r.report;
  EXPECT_EQ(g->waits_on, "named barrier 1 (96 threads)");
  EXPECT_NE(origin(r, g->site).find(at("asm volatile(\"bar.sync 1")), std::string::npos) << origin(r, g->site);
  bool counted = false;
  for (const std::string& h : g->hints) counted |= h.find("64 of 96 threads have arrived") != std::string::npos;
  EXPECT_TRUE(counted) << r.report;
}

TEST(PtxCheck, ConsumersSkippingTheirLastReleaseHangTheProducersTail) {
  const CheckResult r = check_variant("pipeline_skip_last_release");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* producer = group_of_warp(r, 0);
  ASSERT_NE(producer, nullptr) << r.report;
  EXPECT_NE(origin(r, producer->site).find(at("wait(&empty[ps.index], ps.phase);", 2)), std::string::npos) << origin(r, producer->site);
  ASSERT_TRUE(producer->state.has_value());
  EXPECT_EQ(producer->state->pending, 64);  // no consumer thread arrived in this phase
}

TEST(PtxCheck, ClusterBarrierOnlyTheProducerRunsDeadlocksWithTheConsumers) {
  const CheckResult r = check_variant("pipeline_cluster_sync_one_warp", {"cluster=2", "grid=4"});
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* producer = group_of_warp(r, 0);
  ASSERT_NE(producer, nullptr) << r.report;
  EXPECT_EQ(producer->waits_on, "the cluster barrier");
  EXPECT_NE(origin(r, producer->site).find(at("ptx::barrier_cluster_wait();")), std::string::npos) << origin(r, producer->site);
}

TEST(PtxCheck, PeeledFirstWaitHangsOnlyACtaWithoutTiles) {
  const CheckResult ok = check_variant("pipeline_peeled_first_wait");
  ASSERT_FALSE(ok.bad_input) << ok.diagnostic;
  EXPECT_EQ(ok.result.verdict, sim::Verdict::Ok) << ok.report;
  const CheckResult none = check_variant("pipeline_peeled_first_wait", {"param.1=0"});
  ASSERT_FALSE(none.bad_input) << none.diagnostic;
  ASSERT_EQ(none.result.verdict, sim::Verdict::Hang) << none.report;
  const sim::HangGroup* g = group_of_warp(none, 1);
  ASSERT_NE(g, nullptr) << none.report;
  EXPECT_NE(origin(none, g->site).find(at("wait(&full[0], 0);")), std::string::npos) << origin(none, g->site);
}

// kernel_fault, a rule only a kernel's own code breaks (sim::kKernelOnlyRules): a read past every
// buffer the launch gave is the kernel's fault, reported at the load's source line.
TEST(PtxCheck, ReadingPastTheSourceBufferIsAKernelFault) {
  const CheckResult r = check_variant("pipeline_read_past_source");
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Error) << r.report;
  const sim::Finding& f = r.result.findings.front();
  EXPECT_EQ(f.kind, "kernel_fault");
  EXPECT_NE(origin(r, f.site).find(at("kReadPastSource && lane == 0")), std::string::npos) << origin(r, f.site) << "\n" << r.report;
  EXPECT_EQ(check_variant("pipeline_ok").result.verdict, sim::Verdict::Ok);
}

TEST(PtxCheck, SameKernelSameLaunchSameRun) {
  const CheckResult a = check_variant("pipeline_ok"), b = check_variant("pipeline_ok");
  EXPECT_EQ(a.result.end_ns, b.result.end_ns);
  EXPECT_EQ(a.result.events, b.result.events);
}

// ------------------------------------------------------------------------------------ bad input
std::string temp_file(const std::string& name, const std::string& text) {
  const std::string p = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(p, std::ios::binary) << text;
  return p;
}
std::string read(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PtxCheckBadInput, NoLaunchIsAnError) {
  CheckOptions o;
  const CheckResult r = check_file(kPtx, o);
  ASSERT_TRUE(r.bad_input);
  EXPECT_NE(r.diagnostic.find("needs its launch"), std::string::npos) << r.diagnostic;
}

TEST(PtxCheckBadInput, UnknownEntryNamesTheEntries) {
  const CheckResult r = check_variant("no_such_kernel");
  ASSERT_TRUE(r.bad_input);
  EXPECT_NE(r.diagnostic.find("no_such_kernel"), std::string::npos) << r.diagnostic;
  EXPECT_NE(r.diagnostic.find("pipeline_ok"), std::string::npos) << r.diagnostic;
}

// pipeline.ptx with `line` inserted before its first bar.sync, checked: the result, the file, and the
// line number the inserted line has in it.
struct Inserted {
  CheckResult result;
  std::string path;
  size_t line = 0;
};
Inserted check_with_line_inserted(const std::string& line, const std::string& file_name) {
  std::string text = read(kPtx);
  const size_t at = text.find("\tbar.sync \t0;");
  EXPECT_NE(at, std::string::npos);
  text.insert(at, line + "\n");
  Inserted in;
  in.path = temp_file(file_name, text);
  in.line = static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<long>(at), '\n')) + 1;
  CheckOptions o;
  o.launch = kLaunch;
  in.result = check_file(in.path, o);
  return in;
}

TEST(PtxCheckBadInput, UnsupportedInstructionIsNeverSkipped) {
  const Inserted in = check_with_line_inserted("\tfrobnicate.b32 \t%r1, %r1;", "pipesim_unsupported.ptx");
  ASSERT_TRUE(in.result.bad_input);
  EXPECT_NE(in.result.diagnostic.find(in.path + ":" + std::to_string(in.line) + ":"), std::string::npos) << in.result.diagnostic;
  EXPECT_NE(in.result.diagnostic.find("frobnicate"), std::string::npos) << in.result.diagnostic;
}

TEST(PtxCheckBadInput, MalformedPtxNamesItsPosition) {
  const Inserted in = check_with_line_inserted("\tmov.u32 \t%nosuchreg, 1;", "pipesim_malformed.ptx");
  ASSERT_TRUE(in.result.bad_input);
  EXPECT_NE(in.result.diagnostic.find(in.path + ":" + std::to_string(in.line) + ":"), std::string::npos) << in.result.diagnostic;
}

TEST(PtxCheckBadInput, MissingParameterIsAnError) {
  CheckOptions o;
  o.launch = temp_file("pipesim_missing_param.json",
                       R"({"entry": "pipeline_ok", "grid": 1, "block": 96, "dynamic_smem": 16384, "params": [{"index": 1, "u32": 8}]})");
  const CheckResult r = check_file(kPtx, o);
  ASSERT_TRUE(r.bad_input);
  EXPECT_NE(r.diagnostic.find("pipeline_ok_param_0"), std::string::npos) << r.diagnostic;
}

// Through the binary: --expect decides the exit code; bad input is 2.
int run(const std::string& args) {
  const int rc = std::system((std::string(PIPESIM_BIN) + " " + args + " >/dev/null 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(PtxCheckCommand, ExitCodesFollowTheExpectation) {
  const std::string base = "check " + kPtx + " --launch " + kLaunch;
  EXPECT_EQ(run(base), 0);
  EXPECT_EQ(run(base + " -D entry=pipeline_producer_phase_zero"), 1);
  EXPECT_EQ(run(base + " -D entry=pipeline_producer_phase_zero --expect hang"), 0);
  EXPECT_EQ(run(base + " --expect sideways"), 2);
  EXPECT_EQ(run(base + " -D entry=nope"), 2);
  EXPECT_EQ(run("check " + kPtx), 2);
}

// ------------------------------------------------------------------------ the GEMV, compiled here
#ifdef PIPESIM_GEMV_PTX
std::string gemv_launch(const std::string& shape_args, const std::string& name) {
  const std::string out = (std::filesystem::temp_directory_path() / name).string();
  const int rc = std::system((std::string(PIPESIM_GEMV_LAUNCH) + " " + shape_args + " > " + out).c_str());
  EXPECT_EQ(rc, 0);
  return out;
}
#endif

TEST(PtxCheckGemv, SeedShapesRunAndTheBrokenPhaseHangsAtItsWait) {
#ifndef PIPESIM_GEMV_PTX
  GTEST_SKIP() << "nvcc not found at configure time: the GEMV's PTX and launch files are not built (needs PIPESIM_HAVE_CUDA)";
#else
  for (const char* shape : {"7168 16384 1", "4096 7168 8", "7168 2048 4"}) {
    CheckOptions o;
    o.launch = gemv_launch(shape, "pipesim_gemv.json");
    const CheckResult r = check_file(PIPESIM_GEMV_PTX, o);
    ASSERT_FALSE(r.bad_input) << shape << ": " << r.diagnostic;
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << shape << ": " << r.report;
  }
  CheckOptions o;
  o.launch = gemv_launch("7168 2048 4 sm_90a --broken", "pipesim_gemv_broken.json");
  const CheckResult r = check_file(PIPESIM_GEMV_PTX, o);
  ASSERT_FALSE(r.bad_input) << r.diagnostic;
  ASSERT_EQ(r.result.verdict, sim::Verdict::Hang) << r.report;
  const sim::HangGroup* producer = group_of_warp(r, 0);
  ASSERT_NE(producer, nullptr) << r.report;
  EXPECT_NE(origin(r, producer->site).find("gemv_nvfp4.cu"), std::string::npos) << origin(r, producer->site);
#endif
}

// A try_wait no loop repeats (a peek, CUTLASS's producer_try_acquire and consumer_try_wait) is held
// until its phase completes or its time limit passes (the H100's 4 us, kernels/interp/peekprobe.cu),
// then answers false; tests/data/ptx/peek.ptx sleeps 30 us after a false peek. Holding it until the
// phase completed hung CUTLASS's 2-stage sm100 ring, whose producer and MMA warp peek at each other.
TEST(PtxPeek, APeekIsHeldUntilItsPhaseOrItsTimeLimitThenAnswersFalse) {
  auto end_us = [](int delay_ns, double limit_ns = -1) {
    CheckOptions o;
    o.launch = kDir + "peek.launch.json";
    o.launch_sets = {"param.delay=" + std::to_string(delay_ns)};
    if (limit_ns >= 0) o.run.timing_overrides.emplace_back(&model::Timing::mbarrier_try_wait_limit_ns, limit_ns);
    const CheckResult r = check_file(kDir + "peek.ptx", o);
    EXPECT_FALSE(r.bad_input) << r.diagnostic;
    EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
    return r.result.end_ns / 1000.0;
  };
  const double limit_us = model::find_arch("sm_90a")->time.mbarrier_try_wait_limit_ns / 1000.0;
  ASSERT_EQ(limit_us, 4.0);
  EXPECT_NEAR(end_us(1000), 1.0, 0.3);                // the phase completed within the limit: true
  EXPECT_NEAR(end_us(20000), limit_us + 30.0, 0.3);   // false at the limit, then the 30 us sleep
  EXPECT_NEAR(end_us(20000, 0), 30.0, 0.3);           // no limit in the table: false at once
  EXPECT_NEAR(end_us(20000, 1e6), 20.0, 0.3);         // a limit past the completion: true at 20 us
}

}  // namespace
}  // namespace pipesim::verify
