// `pipesim crosscheck KERNEL.ptx --launch L.json` without a GPU: the launch moved onto real memory
// (kernels/ptx_launch/relocate: pointers rewritten, tensor-map tags found) as a pure function, the
// verdict mapping, and through the binary every bad input and the no-GPU path (exit 2, one sentence).
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

#include "kernels/ptx_launch/relocate.hpp"
#include "verify/crosscheck_ptx.hpp"
#include "verify/ptx/launch.hpp"
#include "verify/ptx/parser.hpp"

namespace pipesim {
namespace {

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";
const std::string kPtx = kDir + "pipeline.ptx";
const std::string kLaunch = kDir + "pipeline.launch.json";

void put64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t get64(const std::vector<uint8_t>& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + static_cast<size_t>(i)];
  return v;
}

// A launch as resolve_launch leaves it, with a CUTLASS-like struct parameter given as raw hex: two
// buffers at the model's addresses, pointers to them inside the struct, two tensor-map tags.
ptx::Launch struct_launch() {
  ptx::Launch l;
  l.buffers = {ptx::BufferDesc{"A", 4096, 0x7f00'0000'0000ULL, ""}, ptx::BufferDesc{"D", 1 << 20, 0x7f03'0000'0000ULL, ""}};
  ptx::TensorMapDesc a;
  a.name = "tma_A";
  a.global_address = 0x7f00'0000'0000ULL;  // a raw address, as the corpus gives it
  ptx::TensorMapDesc d;
  d.name = "tma_D";
  d.buffer = "D";
  d.buffer_offset = 512;
  d.global_address = 0x7f03'0000'0000ULL + 512;
  l.tensormaps = {a, d};
  l.param_bytes.assign(384, 0);
  put64(l.param_bytes, 8, 0x7f03'0000'0000ULL + 64);         // D + 64: a pointer field
  put64(l.param_bytes, 64, ptx::kTensorMapTag);              // tma_A at byte 64
  l.param_bytes[72] = 0;
  put64(l.param_bytes, 192, ptx::kTensorMapTag);             // tma_D at byte 192
  l.param_bytes[200] = 1;
  put64(l.param_bytes, 320, 0x7f00'0000'0000ULL + 4096);     // one past A: not a pointer into it
  put64(l.param_bytes, 328, 12345);                          // a plain scalar
  put64(l.param_bytes, 336, 0x7f00'0000'0000ULL + 4095);     // A's last byte
  // 0x7f00'0000'0010 at byte 348: inside A, but not 8-byte aligned, so left alone
  for (int i = 0; i < 8; ++i) l.param_bytes[348 + static_cast<size_t>(i)] = static_cast<uint8_t>((0x7f00'0000'0010ULL) >> (8 * i));
  l.params = {ptx::ParamValue{"params", 0, 384, "384 bytes"}};
  return l;
}

TEST(PtxRelocate, PointersInsideABufferMoveAndTagsAreFound) {
  const ptx::Launch l = struct_launch();
  const std::vector<uint64_t> real = {0x7000'1000'0000ULL, 0x7000'2000'0000ULL};
  const ptx_launch::RelocatedLaunch r = ptx_launch::relocate_launch(l, real);
  ASSERT_EQ(r.param_bytes.size(), l.param_bytes.size());
  EXPECT_EQ(get64(r.param_bytes, 8), 0x7000'2000'0000ULL + 64);
  EXPECT_EQ(get64(r.param_bytes, 336), 0x7000'1000'0000ULL + 4095);
  EXPECT_EQ(get64(r.param_bytes, 320), 0x7f00'0000'0000ULL + 4096) << "one past a buffer's end is not inside it";
  EXPECT_EQ(get64(r.param_bytes, 328), 12345u);
  EXPECT_EQ(std::vector<uint8_t>(r.param_bytes.begin() + 344, r.param_bytes.end()),
            std::vector<uint8_t>(l.param_bytes.begin() + 344, l.param_bytes.end()))
      << "an unaligned value is never rewritten";
  ASSERT_EQ(r.relocations.size(), 2u);
  EXPECT_EQ(r.relocations[0].offset, 8u);
  EXPECT_EQ(r.relocations[0].buffer, "D");
  EXPECT_EQ(r.relocations[0].buffer_offset, 64u);
  EXPECT_EQ(r.relocations[0].param, "params");
  EXPECT_EQ(r.relocations[1].buffer, "A");
  // The tags: found where they are, naming their maps; the map bytes stay for the encoder to fill.
  ASSERT_EQ(r.tensormap_slots.size(), 2u);
  EXPECT_EQ(r.tensormap_slots[0].offset, 64u);
  EXPECT_EQ(r.tensormap_slots[0].index, 0u);
  EXPECT_EQ(r.tensormap_slots[1].offset, 192u);
  EXPECT_EQ(r.tensormap_slots[1].index, 1u);
  EXPECT_EQ(get64(r.param_bytes, 64), ptx::kTensorMapTag);
  // Each map's real address: a raw address inside A, and D plus the map's offset.
  ASSERT_EQ(r.tensormap_addresses.size(), 2u);
  EXPECT_EQ(r.tensormap_addresses[0], 0x7000'1000'0000ULL);
  EXPECT_EQ(r.tensormap_addresses[1], 0x7000'2000'0000ULL + 512);
  EXPECT_TRUE(r.notes.empty());
}

TEST(PtxRelocate, WhatTheGpuCannotRunIsALaunchError) {
  const std::vector<uint64_t> real = {0x7000'1000'0000ULL, 0x7000'2000'0000ULL};
  {
    ptx::Launch l = struct_launch();
    l.tensormaps[0].global_address = 0x1000;  // in no buffer
    try {
      ptx_launch::relocate_launch(l, real);
      FAIL() << "no error";
    } catch (const ptx::LaunchError& e) {
      EXPECT_STREQ(e.what(),
                   "tensor map 'tma_A': its global address 0x1000 lies in no buffer of the launch, so the GPU run has no memory "
                   "behind it (give it a \"buffer\", or an \"address\" inside one)");
    }
  }
  {
    ptx::Launch l = struct_launch();
    l.param_bytes[200] = 7;  // names a map the launch does not have
    try {
      ptx_launch::relocate_launch(l, real);
      FAIL() << "no error";
    } catch (const ptx::LaunchError& e) {
      EXPECT_STREQ(e.what(), "parameter 'params': the tensor-map tag at byte 192 names tensor map 7, but the launch has 2");
    }
  }
  {
    ptx::Launch l = struct_launch();
    put64(l.param_bytes, 320, ptx::kTensorMapTag);  // 64 bytes before the end
    try {
      ptx_launch::relocate_launch(l, real);
      FAIL() << "no error";
    } catch (const ptx::LaunchError& e) {
      EXPECT_STREQ(e.what(),
                   "parameter 'params': the tensor-map tag at byte 320 of the parameters leaves no room for a 128 B CUtensorMap "
                   "(the parameters end at byte 384)");
    }
  }
  EXPECT_THROW(ptx_launch::relocate_launch(struct_launch(), {1}), ptx::LaunchError);
}

TEST(PtxRelocate, UnalignedTagAndUnplacedMapAreNoted) {
  ptx::Launch l = struct_launch();
  put64(l.param_bytes, 192, 0);  // tma_D not in the parameters any more
  l.param_bytes[200] = 0;
  put64(l.param_bytes, 200, ptx::kTensorMapTag);  // and tma_A a second time at a byte not 64-aligned
  const ptx_launch::RelocatedLaunch r = ptx_launch::relocate_launch(l, {0x7000'1000'0000ULL, 0x7000'2000'0000ULL});
  ASSERT_EQ(r.tensormap_slots.size(), 2u);
  EXPECT_EQ(r.tensormap_slots[1].offset, 200u);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("not 64-byte aligned"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[1].find("tensor map 'tma_D' is not in the parameters"), std::string::npos) << r.notes[1];
}

// The real reader's result: pipeline.launch.json's pointer parameter moves, the u32 does not.
TEST(PtxRelocate, TheLaunchFilesPointerParameterMoves) {
  const ptx::Module module = ptx::parse_file(kPtx);
  ptx::Launch l = ptx::read_launch(kLaunch);
  ptx::resolve_launch(l, module);
  ASSERT_EQ(l.buffers.size(), 1u);
  const ptx_launch::RelocatedLaunch r = ptx_launch::relocate_launch(l, {0x7000'0000'0000ULL});
  ASSERT_EQ(r.relocations.size(), 1u);
  EXPECT_EQ(r.relocations[0].offset, l.params[0].offset);
  EXPECT_EQ(r.relocations[0].buffer, "src");
  EXPECT_EQ(get64(r.param_bytes, l.params[0].offset), 0x7000'0000'0000ULL);
  EXPECT_EQ(r.param_bytes[l.params[1].offset], 8u) << "the u32 tile count stays";
  EXPECT_TRUE(r.tensormap_slots.empty());
}

TEST(PtxCrosscheck, ModelVerdictsMapToWhatTheGpuMustShow) {
  sim::RunResult m;
  m.verdict = sim::Verdict::Ok;
  EXPECT_EQ(verify::expected_gpu_outcome(m).text, "ok");
  EXPECT_TRUE(verify::expected_gpu_outcome(m).accepts(ptx_launch::GpuOutcome::Ok));
  EXPECT_FALSE(verify::expected_gpu_outcome(m).accepts(ptx_launch::GpuOutcome::Hang));
  m.verdict = sim::Verdict::Hang;
  EXPECT_TRUE(verify::expected_gpu_outcome(m).accepts(ptx_launch::GpuOutcome::Hang));
  EXPECT_FALSE(verify::expected_gpu_outcome(m).accepts(ptx_launch::GpuOutcome::Fault));
  m.verdict = sim::Verdict::Error;
  m.findings = {sim::Finding{"pending_underflow", true, 0, 0, 0, "", {}}};
  EXPECT_EQ(verify::expected_gpu_outcome(m).text, "fault");
  EXPECT_FALSE(verify::expected_gpu_outcome(m).accepts(ptx_launch::GpuOutcome::Hang));
  m.findings = {sim::Finding{"named_count_mismatch", true, 0, 0, 0, "", {}}};
  EXPECT_EQ(verify::expected_gpu_outcome(m).text, "fault");
  m.findings = {sim::Finding{"uninit", true, 0, 0, 0, "", {}}};
  EXPECT_EQ(verify::expected_gpu_outcome(m).text, "hang or fault");
  EXPECT_FALSE(verify::expected_gpu_outcome(m).accepts(ptx_launch::GpuOutcome::Ok));
  EXPECT_DOUBLE_EQ(verify::default_watchdog_ms(13'609), 2000.0);
  EXPECT_DOUBLE_EQ(verify::default_watchdog_ms(50e6), 5000.0);
}

// ------------------------------------------------------------------------------ through the binary
struct CommandRun {
  int code = -1;
  std::string out;  // stdout and stderr together
};
CommandRun run(const std::string& args) {
  // No GPU, whatever machine runs the test: the no-GPU path is what is tested here.
  const std::string cmd = "CUDA_VISIBLE_DEVICES= " + std::string(PIPESIM_BIN) + " " + args + " 2>&1";
  CommandRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

TEST(PtxCrosscheckCommand, BadInputIsExitTwoWithOneSentence) {
  const std::string base = "crosscheck " + kPtx + " --launch " + kLaunch;
  const std::string kPtxOnly = "pipesim: error: --launch, --json, --back-to-back, --cold-l2, --stamps and --stamp-lines are for PTX kernels (FILE.ptx)\n";
  const std::pair<std::string, std::string> cases[] = {
      {"crosscheck " + kPtx,
       kPtx + ": error: a PTX kernel needs its launch: --launch FILE.json and/or -D grid=... -D block=... (docs/ptx.md)\n"},
      {base + " -D entry=nope",
       "pipesim: error: launch: no .entry matches 'nope'; the module's entries are pipeline_ok, pipeline_producer_phase_zero, "
       "pipeline_expect_one_tile_more, pipeline_named_count_off, pipeline_skip_last_release, pipeline_cluster_sync_one_warp, "
       "pipeline_read_past_source, pipeline_peeled_first_wait\n"},
      {"crosscheck " + kPtx + " --launch /nonexistent/l.json", "/nonexistent/l.json: error: cannot read the launch file\n"},
      {base + " --runs 0", "pipesim: error: --runs takes 1..10000 timed launches\n"},
      {base + " --timeout-ms 0", "pipesim: error: --timeout-ms must be above 0\n"},
      {base + " " + kPtx, "pipesim: error: crosscheck takes one PTX kernel at a time (and no scenarios beside it)\n"},
      {base + " --trace /tmp/x.json",
       "pipesim: error: --trace, --markdown, --save-device, --from-device, --l2-sources, --free-occupancy and --no-timestamps "
       "are for scenarios, not PTX kernels\n"},
      {"crosscheck " + std::string(PIPESIM_SOURCE_DIR) + "/scenarios/rules --launch " + kLaunch,
       kPtxOnly},
      {"crosscheck " + std::string(PIPESIM_SOURCE_DIR) + "/scenarios/rules --back-to-back",
       kPtxOnly},
      {"crosscheck " + std::string(PIPESIM_SOURCE_DIR) + "/scenarios/rules --cold-l2",
       kPtxOnly},
      {"crosscheck " + std::string(PIPESIM_SOURCE_DIR) + "/scenarios/rules --stamps /tmp/x.csv",
       kPtxOnly},
      {"crosscheck " + std::string(PIPESIM_SOURCE_DIR) + "/scenarios/rules --stamp-lines 10", kPtxOnly},
      {base + " --stamp-lines 10", "pipesim: error: --stamp-lines adds sites to --stamps FILE, which is not given\n"},
      // Refused before any GPU is looked for: the line is outside the entry.
      {base + " --stamps /tmp/x.csv --stamp-lines 1",
       "pipesim crosscheck: " + kPtx + ": stamps: line 1 is not in the body of .entry pipeline_ok\n"},
  };
  for (const auto& [args, message] : cases) {
    const CommandRun r = run(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_EQ(r.out, message) << args;
  }
}

TEST(PtxCrosscheckCommand, NoGpuIsExitTwoAndSaysWhy) {
  for (const char* timing : {"", " --back-to-back", " --cold-l2", " --back-to-back --cold-l2", " --stamps /tmp/pipesim-nogpu-stamps.csv"}) {
    const CommandRun r = run("crosscheck " + kPtx + " --launch " + kLaunch + " -D entry=pipeline_ok --runs 3" + timing);
    EXPECT_EQ(r.code, 2) << r.out;
#ifdef PIPESIM_HAVE_CUDA
    // The worker's cuInit: no driver library here, or (CUDA_VISIBLE_DEVICES empty) no device.
    const std::string prefix = "pipesim crosscheck: crosscheck needs a GPU: cuInit";
    EXPECT_EQ(r.out.substr(0, prefix.size()), prefix) << r.out;
    EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one sentence: " << r.out;
#else
    EXPECT_EQ(r.out, "pipesim crosscheck: crosscheck needs a GPU: this pipesim was built without CUDA (-DPIPESIM_CUDA=ON)\n");
#endif
  }
}

}  // namespace
}  // namespace pipesim
