// `pipesim crosscheck --stamps`: the rewrite of an entry (kernels/ptx_launch/stamps.hpp) and the
// decoding of what comes back. The rewritten PTX is assembled by ptxas where nvcc exists (the GPU run
// itself is docs/runs/'s).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <unistd.h>

#include "kernels/ptx_launch/stamps.hpp"
#include "verify/crosscheck_stamps.hpp"
#include "verify/ptx/parser.hpp"

namespace {

using pipesim::ptx_launch::add_stamps;
using pipesim::ptx_launch::read_stamps;

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

const std::string kPipeline = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/pipeline.ptx";

// The text of `.entry NAME` up to the next `.entry`.
std::string entry_text(const std::string& ptx, const std::string& name) {
  const size_t at = ptx.find(".entry " + name + "(");
  if (at == std::string::npos) return {};
  const size_t next = ptx.find(".entry ", at + 1);
  return ptx.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

TEST(Stamps, SitesAreTheEntrysWaitsAndBarriersWithTheirLines) {
  const std::string ptx = read_file(kPipeline);
  const auto s = add_stamps(ptx, "pipeline_ok", 5, 2, 64);
  // pipeline.cu's pipeline_ok: one bar.sync after the inits, six try_wait loops and the producer's
  // two bulk copies into shared memory (lines as in the file; the bulk stores are not stamped).
  ASSERT_EQ(s.sites.size(), 2u + 1 + 6 + 2);
  EXPECT_EQ(s.sites[0].what, "warp start");
  EXPECT_EQ(s.sites[1].what, "warp exit");
  EXPECT_EQ(s.sites[2].what, "bar.sync");
  EXPECT_EQ(s.sites[2].ptx_line, 108u);
  const std::pair<uint32_t, const char*> rest[] = {{140, "mbarrier.try_wait"}, {217, "mbarrier.try_wait"}, {252, "cp.async.bulk"},
                                                   {260, "cp.async.bulk"},     {288, "mbarrier.try_wait"}, {312, "mbarrier.try_wait"},
                                                   {335, "mbarrier.try_wait"}, {358, "mbarrier.try_wait"}};
  for (size_t i = 0; i < std::size(rest); ++i) {
    EXPECT_EQ(s.sites[3 + i].ptx_line, rest[i].first) << i;
    EXPECT_EQ(s.sites[3 + i].what, rest[i].second) << i;
  }
  EXPECT_EQ(s.skipped, 0u);
  EXPECT_EQ(s.warps, 10u);
  EXPECT_EQ(s.buffer_bytes(), 10u * 64 * 8);
  // The entry gains the buffer as its last parameter; the module's other entries are untouched.
  EXPECT_NE(entry_text(s.text, "pipeline_ok").find(".param .u64 __pipesim_stamps"), std::string::npos);
  EXPECT_EQ(entry_text(s.text, "pipeline_producer_phase_zero"), entry_text(ptx, "pipeline_producer_phase_zero"));
  // A wait stamps only where its predicate says it passed: the stamp is branched over unless P_OUT
  // is true, so that the timer is read after the wait's result is in.
  EXPECT_NE(s.text.find("\t@!P_OUT bra \t$pipesim_skip_"), std::string::npos);
}

TEST(Stamps, TmaLoadsAreStampedAfterTheirIssueButNotStoresOrPrefetches) {
  const std::string ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k(.param .u64 m)\n{\n"
      "\t.reg .b32 %r<3>;\n\t.reg .b64 %rd<2>;\n"
      "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r1, %r2}], [%r2];\n"
      "\tcp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%rd1, {%r1, %r2}], [%r1];\n"
      "\tcp.async.bulk.prefetch.tensor.2d.L2.global [%rd1, {%r1, %r2}];\n"
      "\tcp.async.bulk.global.shared::cta.bulk_group [%rd1], [%r1], 64;\n"
      "\tcp.async.bulk.commit_group;\n"
      "\tcp.async.bulk.wait_group 0;\n"
      "\tret;\n}\n";
  const auto s = add_stamps(ptx, "k", 1, 1, 8);
  ASSERT_EQ(s.sites.size(), 4u);
  EXPECT_EQ(s.sites[2].what, "cp.async.bulk.tensor");
  EXPECT_EQ(s.sites[2].ptx_line, 8u);
  EXPECT_EQ(s.sites[3].what, "cp.async.bulk.wait_group");
  EXPECT_EQ(s.sites[3].ptx_line, 13u);
}

TEST(Stamps, AWarpgroupMmasFenceCommitAndWaitAreStampedButNotTheMmaItself) {
  const std::string ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k()\n{\n"
      "\t.reg .b64 %rd<3>;\n\t.reg .f32 %f<2>;\n"
      "\twgmma.fence.sync.aligned;\n"
      "\twgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 {%f1, %f1, %f1, %f1}, %rd1, %rd2, 1, 1, 1, 0, 0;\n"
      "\twgmma.commit_group.sync.aligned;\n"
      "\twgmma.wait_group.sync.aligned 0;\n"
      "\tret;\n}\n";
  const auto s = add_stamps(ptx, "k", 1, 1, 8);
  ASSERT_EQ(s.sites.size(), 5u);
  const std::pair<uint32_t, const char*> want[] = {{8, "wgmma.fence"}, {10, "wgmma.commit_group"}, {11, "wgmma.wait_group"}};
  for (size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(s.sites[2 + i].ptx_line, want[i].first) << i;
    EXPECT_EQ(s.sites[2 + i].what, want[i].second) << i;
  }
}

TEST(Stamps, GuardedWaitsAreLeftAloneAndGuardedExitsStampUnderTheirGuard) {
  const std::string ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k()\n{\n"
      "\t.reg .pred %p<3>;\n\t.reg .b32 %r<3>;\n\t.shared .b64 bar;\n"
      "\t@%p1 mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], %r1;\n"
      "\tL1: mbarrier.test_wait.parity.shared::cta.b64 %p2, [bar], %r1; // comment\n"
      "\t@!%p1 ret;\n"
      "\tret;\n}\n";
  const auto s = add_stamps(ptx, "k", 1, 1, 8);
  EXPECT_EQ(s.skipped, 1u);
  ASSERT_EQ(s.sites.size(), 3u);
  EXPECT_EQ(s.sites[2].what, "mbarrier.test_wait");
  EXPECT_EQ(s.sites[2].ptx_line, 10u);
  // No parameters before: the new one alone.
  EXPECT_NE(s.text.find(".entry k(\n\t.param .u64 __pipesim_stamps\n)"), std::string::npos);
  // The guarded exit's stamp holds only where the guard does (negated through a temporary).
  EXPECT_NE(s.text.find("not.pred \t%pipesim_n, %p1;"), std::string::npos);
}

// CUTLASS's ClusterBarrier::wait as nvcc emits it (inline asm, a brace block with its own predicate):
// the loop's label stands on its own line, the wait on the next. The wait is a site, stamped after it
// where its own predicate holds.
TEST(Stamps, AWaitAfterALabelOnItsOwnLineIsASite) {
  const std::string ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k()\n{\n"
      "\t.reg .b32 %r<3>;\n"
      "\t{\n\t.reg .pred       P1; \n\tLAB_WAIT: \n"
      "\tmbarrier.try_wait.parity.shared::cta.b64 P1, [%r1], %r2, %r1; \n"
      "\t@P1 bra DONE; \n\tbra     LAB_WAIT; \n\tDONE: \n\t}\n"
      "\tret;\n}\n";
  const auto s = add_stamps(ptx, "k", 1, 1, 8);
  ASSERT_EQ(s.sites.size(), 3u);
  EXPECT_EQ(s.sites[2].what, "mbarrier.try_wait");
  EXPECT_EQ(s.sites[2].ptx_line, 10u);
  EXPECT_NE(s.text.find("\t@!P1 bra \t$pipesim_skip_2_p;\n\tmov.u64 \t%pipesim_t, %globaltimer;"), std::string::npos);
  EXPECT_NE(s.text.find("$pipesim_skip_2_p:\n"), std::string::npos);
}

// --stamp-lines: any instruction line is a site too, stamped after it whatever its guard; a line the
// warp does not go on from, or one outside the entry, is refused with its reason.
TEST(Stamps, LinesAskedForAreStampedAfterThemAndOthersAreRefused) {
  const std::string ptx =
      ".version 8.0\n.target sm_90a\n.address_size 64\n"
      ".visible .entry k()\n{\n"
      "\t.reg .pred %p<2>;\n\t.reg .b64 %rd<4>;\n"
      "\tmul.lo.s64 %rd1, %rd2, %rd3;\n"
      "\t@%p1 add.s64 %rd1, %rd1, 1; // guarded\n"
      "$L__BB0_1:\n"
      "\tbra.uni $L__BB0_2;\n"
      "$L__BB0_2:\n"
      "\tret;\n}\n";
  const std::vector<uint32_t> lines = {8, 9};
  const auto s = add_stamps(ptx, "k", 1, 1, 8, lines);
  ASSERT_EQ(s.sites.size(), 4u);
  EXPECT_EQ(s.sites[2].what, "line");
  EXPECT_EQ(s.sites[2].ptx_line, 8u);
  EXPECT_EQ(s.sites[3].ptx_line, 9u);
  // The guarded line keeps its guard; its stamp has none.
  const size_t at = s.text.find("@%p1 add.s64");
  ASSERT_NE(at, std::string::npos);
  const size_t stamp = s.text.find("%globaltimer", at);
  ASSERT_NE(stamp, std::string::npos);
  EXPECT_EQ(s.text.substr(at, stamp - at).find("and.pred \t%pipesim_q, %pipesim_q, %p1"), std::string::npos);
  EXPECT_EQ(s.text.substr(stamp, s.text.find("st.global", stamp) - stamp).find("%p1"), std::string::npos);
  auto refused = [&](uint32_t line) {
    const std::vector<uint32_t> one = {line};
    try {
      (void)add_stamps(ptx, "k", 1, 1, 8, one);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refused(10).find("line 10 is not an instruction the warp goes on from: an empty line or a label"), std::string::npos);
  EXPECT_NE(refused(11).find("`bra`"), std::string::npos);
  EXPECT_NE(refused(6).find("a directive or a brace"), std::string::npos);
  EXPECT_NE(refused(14).find("a directive or a brace"), std::string::npos);  // the entry's closing brace
  EXPECT_EQ(refused(13), "");  // `ret` is a site already (the warp's exit, before it)
  EXPECT_NE(refused(40).find("line 40 is not in the body of .entry k"), std::string::npos);
}

TEST(Stamps, BadRequestsSayWhy) {
  const std::string ptx = read_file(kPipeline);
  try {
    (void)add_stamps(ptx, "no_such_entry", 1, 1, 8);
    FAIL() << "no error for a missing entry";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no .entry no_such_entry"), std::string::npos);
  }
  EXPECT_THROW((void)add_stamps(ptx, "pipeline_ok", 1, 1, 0), std::runtime_error);
  // A prefix of an entry's name is not that entry.
  EXPECT_THROW((void)add_stamps(ptx, "pipeline", 1, 1, 8), std::runtime_error);
}

TEST(Stamps, ReadBackSplitsSiteAndTimeAndStopsEachWarpAtItsFirstZero) {
  const uint64_t site3 = uint64_t{3} << 48;
  // Two warps, four stamps each: the first wrote two, the second all four.
  const std::vector<uint64_t> buf = {site3 | 100, uint64_t{1} << 48 | 250, 0, site3 | 7,
                                     uint64_t{0} | 90, site3 | 120, site3 | 130, uint64_t{1} << 48 | 200};
  const auto st = read_stamps(buf, 4);
  ASSERT_EQ(st.size(), 6u);
  EXPECT_EQ(st[0].warp, 0u);
  EXPECT_EQ(st[0].site, 3u);
  EXPECT_EQ(st[0].ns, 100u);
  EXPECT_EQ(st[1].site, 1u);
  EXPECT_EQ(st[2].warp, 1u);
  EXPECT_EQ(st[2].site, 0u);
  EXPECT_EQ(st[2].ns, 90u);
  EXPECT_EQ(st[5].ns, 200u);
}

TEST(Stamps, TheReportGivesCtaSpansAndEachSitesFirstAndLastPassFromItsCta) {
  const auto plan = add_stamps(read_file(kPipeline), "pipeline_ok", 2, 2, 8);
  const uint64_t wait = 3;  // the try_wait at .ptx:140
  ASSERT_EQ(plan.sites[wait].ptx_line, 140u);
  auto at = [](uint64_t site, uint64_t ns) { return site << 48 | ns; };
  std::vector<uint64_t> buf(4 * 8, 0);
  // CTA 0: warp 0 passes the wait twice, warp 1 only starts and exits; CTA 1 (100 ns later): warp 2 once.
  const std::vector<std::vector<uint64_t>> warps = {{at(0, 1000), at(wait, 1500), at(wait, 1700), at(1, 3000)},
                                                    {at(0, 1010), at(1, 2000)},
                                                    {at(0, 1100), at(wait, 1600), at(1, 4100)},
                                                    {at(0, 1100), at(1, 1200)}};
  for (size_t w = 0; w < warps.size(); ++w) std::copy(warps[w].begin(), warps[w].end(), buf.begin() + static_cast<long>(w * 8));
  const pipesim::ptx::Module module = pipesim::ptx::parse_file(kPipeline);
  const auto csv = std::filesystem::temp_directory_path() / ("pipesim_stamps_" + std::to_string(::getpid()) + ".csv");
  const auto r = pipesim::verify::report_stamps(module, *module.find_function("pipeline_ok"), plan, buf, 2, 0.05, 0.04, {}, csv.string());
  EXPECT_TRUE(r.error.empty()) << r.error;
  EXPECT_NE(r.text.find("11 from 2 CTAs"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("3.10 us from the first CTA's start to the last stamp"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("CTA starts after the first: median 0.10 us, last 0.10 us"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("CTA spans (first stamp to last): 2.00 .. 3.00 (median) .. 3.00 us"), std::string::npos) << r.text;
  // The wait: first passes 0.50 and 0.50 us into their CTAs, last 0.70 and 0.50; two warps; 2 and 1 passes.
  // (The CSV counts from the launch's first stamp: CTA 1's pass at 1600 is 600.)
  EXPECT_NE(r.text.find("     0.50      0.70      2       2  mbarrier.try_wait at .ptx:140"), std::string::npos) << r.text;
  const std::string rows = read_file(csv.string());
  std::filesystem::remove(csv);
  EXPECT_EQ(std::count(rows.begin(), rows.end(), '\n'), 12);  // the header and 11 stamps
  EXPECT_NE(rows.find("1,0,3,140,mbarrier.try_wait,600\n"), std::string::npos) << rows;
}

TEST(Stamps, TheRewrittenPtxAssembles) {
#ifndef PIPESIM_PTXAS
  GTEST_SKIP() << "nvcc not found at configure time: no ptxas to assemble the rewritten PTX with";
#else
  const auto s = add_stamps(read_file(kPipeline), "pipeline_ok", 5, 2, 64);
  const auto dir = std::filesystem::temp_directory_path() / ("pipesim_stamps_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "k.ptx") << s.text;
  const std::string cmd = std::string(PIPESIM_PTXAS) + " -arch=sm_90a " + (dir / "k.ptx").string() + " -o " + (dir / "k.cubin").string();
  const int rc = std::system(cmd.c_str());
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 0) << cmd;
#endif
}

}  // namespace
