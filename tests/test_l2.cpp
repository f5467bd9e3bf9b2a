// sim/l2.hpp and the engine's use of it: which TMA reads the L2 serves (LRU over the boxes a kernel
// names), that a multicast copy is one read, that hits do not reach the DRAM, the far rate of its
// two partitions, and `--sweep`.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "model/arch.hpp"
#include "sim/l2.hpp"
#include "verify/check.hpp"

namespace {

using pipesim::sim::box_key;
using pipesim::sim::L2Cache;

TEST(L2Cache, ASecondReadOfABoxHits) {
  L2Cache l2(1000);
  EXPECT_FALSE(l2.read(7, 100));
  EXPECT_TRUE(l2.read(7, 100));
  EXPECT_EQ(l2.hit_bytes(), 100);
  EXPECT_EQ(l2.miss_bytes(), 100);
}

TEST(L2Cache, AnUnknownBoxNeverHitsAndIsNotKept) {
  L2Cache l2(1000);
  EXPECT_FALSE(l2.read(0, 100));
  EXPECT_FALSE(l2.read(0, 100));
  EXPECT_EQ(l2.held_bytes(), 0);
}

TEST(L2Cache, TheLeastRecentlyUsedBoxIsEvictedFirst) {
  L2Cache l2(300);  // three boxes of 100
  l2.read(1, 100);
  l2.read(2, 100);
  l2.read(3, 100);
  EXPECT_TRUE(l2.read(1, 100));   // 1 is now the most recent: 2 is the oldest
  EXPECT_FALSE(l2.read(4, 100));  // evicts 2
  EXPECT_TRUE(l2.read(1, 100));
  EXPECT_TRUE(l2.read(3, 100));
  EXPECT_FALSE(l2.read(2, 100));
  EXPECT_LE(l2.held_bytes(), 300);
}

// The exhaustive search copies engines, L2 included: a copy lives on after its original, and each
// evicts and re-orders only its own boxes (a copied index into the original's list did not).
TEST(L2Cache, ACopyKeepsItsOwnBoxesAfterTheOriginalIsGone) {
  auto original = std::make_unique<L2Cache>(300);
  original->read(1, 100);
  original->read(2, 100);
  L2Cache copy(*original);
  original->read(3, 100);
  original->read(4, 100);  // evicts 1 from the original only
  original.reset();
  EXPECT_TRUE(copy.read(1, 100));
  EXPECT_FALSE(copy.read(3, 100));
  EXPECT_FALSE(copy.read(4, 100));  // evicts 2, the least recent of the copy's
  EXPECT_FALSE(copy.read(2, 100));
  EXPECT_LE(copy.held_bytes(), 300);
  L2Cache assigned(0);
  assigned = copy;
  copy.read(5, 100);
  EXPECT_TRUE(assigned.read(4, 100));
}

TEST(L2Cache, AStoredBoxIsHeldAndNoL2HoldsNothing) {
  L2Cache l2(1000);
  l2.write(9, 200);
  EXPECT_TRUE(l2.read(9, 200));
  L2Cache none(0);
  none.read(9, 200);
  EXPECT_FALSE(none.read(9, 200));
}

TEST(L2Cache, ItCountsTheBytesItHolds) {
  L2Cache l2(1000);
  l2.read(1, 250);
  l2.read(2, 250);
  l2.read(1, 250);  // a hit holds nothing more
  EXPECT_EQ(l2.held_bytes(), 500);
  l2.write(3, 100);
  EXPECT_EQ(l2.held_bytes(), 600);
  l2.read(4, 600);  // evicts the least recent (2) to stay within 1000
  EXPECT_EQ(l2.held_bytes(), 950);
  EXPECT_TRUE(l2.read(1, 250));
  EXPECT_FALSE(l2.read(2, 250));
}

TEST(L2Cache, ABoxAMissBroughtInIsFillingUntilThatMissLands) {
  L2Cache l2(1000);
  EXPECT_EQ(l2.filled_at(7), -L2Cache::kFilling);  // not held: nothing to wait for
  EXPECT_FALSE(l2.read(7, 100));
  EXPECT_EQ(l2.filled_at(7), L2Cache::kFilling);
  EXPECT_TRUE(l2.read(7, 100));
  EXPECT_EQ(l2.filled_at(7), L2Cache::kFilling);  // a hit brings nothing in
  l2.fill(7, 500.0);
  EXPECT_EQ(l2.filled_at(7), 500.0);
  l2.fill(7, 900.0);  // another destination of the same (multicast) miss: the first landing counts
  EXPECT_EQ(l2.filled_at(7), 500.0);
  l2.write(8, 100);
  EXPECT_EQ(l2.filled_at(8), -L2Cache::kFilling);  // a store's bytes are there at once
  EXPECT_FALSE(l2.read(6, 100));
  l2.write(6, 100);                                // ... even over a box still filling
  EXPECT_EQ(l2.filled_at(6), -L2Cache::kFilling);
  l2.fill(9, 100.0);                               // a box no longer held: nothing to do
  EXPECT_EQ(l2.filled_at(9), -L2Cache::kFilling);
}

TEST(L2Cache, AMissBringsInItsPromotionsWholeGroup) {
  L2Cache l2(1000);
  EXPECT_FALSE(l2.read(5, 100, 200));  // a box of 100 B whose L2 promotion fills 200
  EXPECT_EQ(l2.miss_bytes(), 100);     // what the read asked for
  EXPECT_EQ(l2.brought_bytes(), 200);  // what the DRAM gave
  EXPECT_EQ(l2.held_bytes(), 200);
  EXPECT_TRUE(l2.read(5, 100, 200));  // the group's other box: the same key, a hit of its own bytes
  EXPECT_EQ(l2.hit_bytes(), 100);
  EXPECT_EQ(l2.held_bytes(), 200);
}

TEST(L2Cache, BoxKeysDifferByTensorAndCoordinates) {
  const int64_t a[2] = {0, 64}, b[2] = {64, 0};
  EXPECT_NE(box_key(1, a, 2), box_key(1, b, 2));
  EXPECT_NE(box_key(1, a, 2), box_key(2, a, 2));
  EXPECT_EQ(box_key(1, a, 2), box_key(1, a, 2));
  const int64_t zero[1] = {0};
  EXPECT_NE(box_key(0, zero, 1), 0u);  // 0 means "unknown"
}

// 8 CTAs each read K_TILES boxes of 32 KiB through a 4-stage pipeline; with SAME = 1 they all read
// the same K_TILES boxes (a GEMM's shared A panel), with SAME = 0 each its own.
constexpr const char* kReread = R"(kernel reread on sm_90a
let K_TILES = 64, SAME = 1
launch ctas = 8, threads = 128
pipeline ab : tma -> threads, stages = 4, tx = 32768, consumers = 1 warps
role producer warp 0:
  for k in 0 .. K_TILES:
    ab.producer_acquire
    tma ab bytes = 32768 box = k + (1 - SAME) * cta_id * K_TILES
  ab.producer_tail
role consumer warp 1:
  for k in 0 .. K_TILES:
    ab.consumer_wait
    compute 20 ns
    ab.consumer_release
expect ok
)";

pipesim::verify::CheckResult run(const std::string& text, std::vector<pipesim::verify::Define> defines, bool l2 = true) {
  pipesim::verify::CheckOptions o;
  o.defines = std::move(defines);
  if (!l2) o.run.timing_overrides.emplace_back(&pipesim::model::Timing::l2_bytes, 0.0);
  pipesim::verify::CheckResult r = pipesim::verify::check_text("reread.scn", text, o);
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  return r;
}

TEST(L2Engine, ReReadTilesHitAndRunFaster) {
  const auto shared = run(kReread, {{"SAME", 1}});
  const auto own = run(kReread, {{"SAME", 0}});
  const auto off = run(kReread, {{"SAME", 1}}, false);
  // The first CTA to read a box misses; the 7 others hit (they run side by side, so a box may be
  // read by several CTAs before its first copy lands: the L2 counts the read, not the landing).
  EXPECT_EQ(shared.result.l2_miss_bytes, 64 * 32768);
  EXPECT_EQ(shared.result.dram_read_bytes, shared.result.l2_miss_bytes);  // a scenario's boxes promote nothing
  EXPECT_EQ(shared.result.l2_hit_bytes, 7 * 64 * 32768);
  EXPECT_EQ(own.result.l2_hit_bytes, 0);
  EXPECT_EQ(off.result.l2_hit_bytes, 0);
  EXPECT_LT(shared.result.dram_busy_ns, own.result.dram_busy_ns / 4);
  // 8 CTAs x 32 KiB copies, 4 in flight: the DRAM's loaded latency slows the own-box run; the L2 run
  // is held by the SMs' intake and the pipeline, not the DRAM.
  EXPECT_LT(shared.result.end_ns, own.result.end_ns);
  EXPECT_EQ(off.result.end_ns, own.result.end_ns);  // without the L2: every byte from the DRAM
}

// Hits are served at l2_slow_bytes_per_ns once the launch's footprint passes l2_fast_set_bytes, and
// then from its first copy on (sim::run's first pass finds the footprint): kReread's shared boxes are
// 2 MiB.
pipesim::verify::CheckResult run_l2(double fast_set_bytes, double slow_bytes_per_ns) {
  pipesim::verify::CheckOptions o;
  o.defines = {{"SAME", 1}};
  o.run.timing_overrides.emplace_back(&pipesim::model::Timing::l2_fast_set_bytes, fast_set_bytes);
  o.run.timing_overrides.emplace_back(&pipesim::model::Timing::l2_slow_bytes_per_ns, slow_bytes_per_ns);
  pipesim::verify::CheckResult r = pipesim::verify::check_text("reread.scn", kReread, o);
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  return r;
}

TEST(L2Engine, HitsAreSlowFromTheStartWhenTheLaunchsFootprintPassesTheFastSet) {
  const double mib = 1024.0 * 1024.0;
  const double slow = 100;  // B/ns: far below the 8 CTAs' intake, so it shows in the end time
  // A 2 MiB footprint, a 2 MiB fast set: every hit at l2_bytes_per_ns, whatever the slow rate.
  EXPECT_EQ(run_l2(2 * mib, slow).result.end_ns, run_l2(2 * mib, 0).result.end_ns);
  // A 1 MiB fast set: the hits come at the slow rate.
  const auto slowed = run_l2(1 * mib, slow), one_rate = run_l2(1 * mib, 0);
  EXPECT_EQ(slowed.result.l2_hit_bytes, one_rate.result.l2_hit_bytes);  // how fast, not hit or miss
  EXPECT_GT(slowed.result.end_ns, 2 * one_rate.result.end_ns);
  // All of them, those before the L2 held 1 MiB too: the same run as with a fast set of one byte.
  EXPECT_EQ(slowed.result.end_ns, run_l2(1, slow).result.end_ns);
}

// CTA 0 reads boxes 0..7 (64 KiB each, one SM's intake: the last lands ~3 us in; issued by ~0.4 us);
// CTA 1 reads box 7 500 ns in, while CTA 0's miss of it is still queued: a hit, but on bytes not there yet.
constexpr const char* kRideOnMiss = R"(kernel ride on sm_90a
launch ctas = 2, threads = 128
pipeline ab : tma -> threads, stages = 8, tx = 65536, consumers = 1 warps
role producer warp 0:
  compute 500 * cta_id ns
  for k in 7 * cta_id .. 8:
    ab.producer_acquire
    tma ab bytes = 65536 box = k
  ab.producer_tail
role consumer warp 1:
  for k in 7 * cta_id .. 8:
    ab.consumer_wait
    ab.consumer_release
expect ok
)";

TEST(L2Engine, AHitOnABoxStillFillingLandsWithTheMissThatBringsItIn) {
  const auto rides = run(kRideOnMiss, {});
  const auto own = run(kRideOnMiss, {}, false);  // no L2: CTA 1's copy is a DRAM read of its own
  ASSERT_EQ(rides.result.verdict, pipesim::sim::Verdict::Ok) << rides.report;
  EXPECT_EQ(rides.result.l2_hit_bytes, 65536);
  const auto ride_ends = pipesim::sim::cta_ends(rides.result), own_ends = pipesim::sim::cta_ends(own.result);
  ASSERT_TRUE(ride_ends && own_ends);
  // CTA 1 ends with CTA 0 (its copy landed with CTA 0's last), where alone it ends within ~1 us.
  EXPECT_GT(ride_ends->first_ns, 0.9 * ride_ends->last_ns);
  EXPECT_LT(own_ends->first_ns, 0.5 * own_ends->last_ns);
}

// A cluster of 2 multicasts each box to both CTAs: one read of the box, not two.
constexpr const char* kMulticast = R"(kernel mc on sm_90a
let K_TILES = 16
launch ctas = 2, cluster = 2, threads = 128
pipeline ab : tma -> threads, stages = 2, tx = 16384, consumers = 1 warps, multicast = 0b11
role producer warp 0:
  for k in 0 .. K_TILES:
    ab.producer_acquire
    if cluster_rank == 0:
      tma ab bytes = 16384 multicast = 0b11 box = k
  ab.producer_tail
role consumer warp 1:
  for k in 0 .. K_TILES:
    ab.consumer_wait
    ab.consumer_release
expect ok
)";

// One SM's intake takes a box row by row (Timing::sm_copy_ns_per_request): 64 copies of 8 KiB, 16 in
// flight, as boxes of 128-byte rows (64 requests each, held by the B200's 155 B/ns) or of 32-byte rows
// (256 requests each, 0.78 ns apiece).
constexpr const char* kRows = R"(kernel rows on sm_100a
let ROW = 128
launch ctas = 1, threads = 64
pipeline ab : tma -> threads, stages = 16, tx = 8192, consumers = 1 warps
role producer warp 0:
  for k in 0 .. 64:
    ab.producer_acquire
    tma ab bytes = 8192 box = k row_bytes = ROW
  ab.producer_tail
role consumer warp 1:
  for k in 0 .. 64:
    ab.consumer_wait
    ab.consumer_release
expect ok
)";

TEST(TmaIntake, ABoxOfNarrowRowsIsTakenInRowByRow) {
  const pipesim::model::Timing& b200 = pipesim::model::find_arch("sm_100a")->time;
  const auto wide = run(kRows, {{"ROW", 128}}), narrow = run(kRows, {{"ROW", 32}});
  ASSERT_EQ(wide.result.verdict, pipesim::sim::Verdict::Ok) << wide.report;
  ASSERT_EQ(narrow.result.verdict, pipesim::sim::Verdict::Ok) << narrow.report;
  // Past the first round trip the intake sets the pace: 64 copies at their intake time each.
  const double wide_copy = 8192 / b200.sm_copy_bytes_per_ns, narrow_copy = 256 * b200.sm_copy_ns_per_request;
  EXPECT_GT(narrow_copy, 3 * wide_copy);
  EXPECT_NEAR(narrow.result.end_ns, 64 * narrow_copy, 0.15 * 64 * narrow_copy);
  EXPECT_NEAR(wide.result.end_ns, 64 * wide_copy, 0.25 * 64 * wide_copy);
  // Rows wider than 128 bytes are a request per 128: 256-byte rows cost what 128-byte rows do here.
  EXPECT_EQ(run(kRows, {{"ROW", 256}}).result.end_ns, wide.result.end_ns);
  // Without a per-request cost the rows do not matter.
  pipesim::verify::CheckOptions o;
  o.defines = {{"ROW", 32}};
  o.run.timing_overrides.emplace_back(&pipesim::model::Timing::sm_copy_ns_per_request, 0.0);
  EXPECT_EQ(pipesim::verify::check_text("rows.scn", kRows, o).result.end_ns, wide.result.end_ns);
}

TEST(TmaIntake, ARowSizeOnlyKnownAtRunTimeIsCheckedThen) {
  std::string text = kRows;
  text.replace(text.find("row_bytes = ROW"), 15, "row_bytes = ROW - 8 + cta_id");
  const auto r = run(text, {{"ROW", 32}});
  EXPECT_EQ(r.result.verdict, pipesim::sim::Verdict::Error);
  EXPECT_NE(r.report.find("TMA row_bytes must be a multiple of 16 in 16..4080, got 24"), std::string::npos) << r.report;
}

TEST(L2Engine, AMulticastCopyIsReadOnce) {
  const auto r = run(kMulticast, {});
  EXPECT_EQ(r.result.verdict, pipesim::sim::Verdict::Ok) << r.report;
  EXPECT_EQ(r.result.l2_miss_bytes + r.result.l2_hit_bytes, 16 * 16384);  // once per copy, not per CTA
  EXPECT_EQ(r.result.l2_hit_bytes, 0);
}

// scenarios/calibration/l2_mix.scn (the model's side of kernels/interp/l2mixprobe.cu `mix`): HOT CTAs
// re-read a 16 MiB window the L2 holds, COLD ones stream boxes nothing reads twice. Each group's
// landed bytes per ns, over the second to last quarter of the time to the first CTA's last landing
// (both groups still run; the window's first pass is over).
struct MixRates {
  double hot = 0, cold = 0;  // B/ns per CTA of the group
};
MixRates mix_rates(int hot, int cold) {
  pipesim::verify::CheckOptions o;
  o.defines = {{"HOT", hot}, {"COLD", cold}, {"WINDOW", 512}};
  o.run.record_trace = true;
  const auto r = pipesim::verify::check_file(std::string(PIPESIM_SOURCE_DIR) + "/scenarios/calibration/l2_mix.scn", o);
  EXPECT_FALSE(r.bad_input) << r.diagnostic;
  EXPECT_EQ(r.result.verdict, pipesim::sim::Verdict::Ok) << r.report;
  std::vector<double> last(static_cast<size_t>(hot + cold), 0);
  for (const auto& sp : r.result.spans)
    if (sp.warp == -1 && sp.label.starts_with("tma")) last[static_cast<size_t>(sp.cta)] = std::max(last[static_cast<size_t>(sp.cta)], sp.end_ns);
  const double end = *std::min_element(last.begin(), last.end()), from = 0.25 * end;
  MixRates m;
  for (const auto& sp : r.result.spans)
    if (sp.warp == -1 && sp.label.starts_with("tma") && sp.end_ns > from && sp.end_ns <= end)
      (sp.cta < hot ? m.hot : m.cold) += 32768.0 / (end - from);
  if (hot > 0) m.hot /= hot;
  if (cold > 0) m.cold /= cold;
  return m;
}

// The H100 (l2mixprobe mix): 33 SMs streaming hits beside 99 streaming misses take 33 GB/s each,
// as the misses do (27), where alone they take the L2's rate (8.3 TB/s over 66 SMs: 111 each).
TEST(L2Engine, HitsBesideMissesGoAtTheMissesPace) {
  const MixRates beside = mix_rates(33, 99), alone = mix_rates(33, 0);
  ASSERT_GT(beside.cold, 0);
  EXPECT_LT(beside.hot, 1.5 * beside.cold);
  EXPECT_GT(beside.hot, 0.75 * beside.cold);
  EXPECT_GT(alone.hot, 3 * beside.hot);
  // The misses together stay within the DRAM's rate.
  EXPECT_LT(99 * beside.cold, 1.02 * pipesim::model::find_arch("sm_90a")->time.hbm_bytes_per_ns);
}

#ifdef PIPESIM_BIN
std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Sweep, OneLinePerValueFastestFirst) {
  const auto dir = std::filesystem::temp_directory_path() / ("pipesim_test_l2_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  { std::ofstream(dir / "reread.scn") << kReread; }
  const std::string cmd = std::string(PIPESIM_BIN) + " check " + (dir / "reread.scn").string() + " --sweep SAME=0,1 >" +
                          (dir / "out.txt").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string out = slurp(dir / "out.txt");
  EXPECT_EQ(WEXITSTATUS(status), 0) << out;
  const size_t same1 = out.find("SAME=1"), same0 = out.find("SAME=0");
  ASSERT_NE(same1, std::string::npos) << out;
  ASSERT_NE(same0, std::string::npos) << out;
  EXPECT_LT(same1, same0) << out;  // the L2 run is the faster one
  EXPECT_NE(out.find(" us  expect ok"), std::string::npos) << out;
  const std::string bad = std::string(PIPESIM_BIN) + " check " + (dir / "reread.scn").string() + " --sweep SAME=1,x >" +
                          (dir / "out.txt").string() + " 2>&1";
  const int bad_status = std::system(bad.c_str());
  EXPECT_EQ(WEXITSTATUS(bad_status), 2);
  EXPECT_NE(slurp(dir / "out.txt").find("--sweep SAME=1,x: expected NAME=V1,V2,... with integer values"), std::string::npos);
  std::filesystem::remove_all(dir);
}
#endif

}  // namespace
