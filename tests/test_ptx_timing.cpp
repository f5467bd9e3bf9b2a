// A PTX warp's own time (verify/ptx/scoreboard.cpp): operand latencies, the scheduling of a block,
// and the SM's path for global stores, on tests/data/ptx/timing.ptx and on small kernels run warp by
// warp. The expected figures are computed from the H100 timing table's fields, not copied from a run.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/arch.hpp"
#include "tests/test_ptx_machine_harness.hpp"
#include "verify/check.hpp"

namespace pipesim {
namespace {

using ptx::SyncKind;
using ptx::SyncRequest;
using ptx::Warp;
using ptx::testing::Harness;
using ptx::testing::kernel;

const std::string kDir = std::string(PIPESIM_SOURCE_DIR) + "/tests/data/ptx/";

const model::Timing& hopper() { return model::find_arch("sm_90a")->time; }

using Overrides = std::vector<std::pair<model::TimingField, double>>;

// tests/data/ptx/KERNEL.ptx checked with its launch file, these -D settings and timing overrides; its
// verdict must be ok.
verify::CheckResult check_kernel(const std::string& kernel, std::vector<std::string> sets, Overrides timing) {
  verify::CheckOptions o;
  o.launch = kDir + kernel + ".launch.json";
  o.launch_sets = std::move(sets);
  o.run.timing_overrides = std::move(timing);
  verify::CheckResult r = verify::check_file(kDir + kernel + ".ptx", o);
  EXPECT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
  return r;
}

double body_ns(std::vector<std::string> sets, Overrides timing = {}, const std::string& kernel = "timing") {
  return check_kernel(kernel, std::move(sets), std::move(timing)).result.end_ns;
}

// The messages of its findings of one kind (warnings: the verdict stays ok).
std::vector<std::string> warnings_of(const std::string& kernel, std::vector<std::string> sets, const std::string& kind,
                                     Overrides timing = {}) {
  const verify::CheckResult r = check_kernel(kernel, std::move(sets), std::move(timing));
  std::vector<std::string> out;
  for (const sim::Finding& f : r.result.findings)
    if (f.kind == kind) out.push_back(f.message);
  return out;
}

// timing.ptx: 1024 iterations of 8 dependent fma.rn.f32 and 3 loop instructions per warp.
constexpr double kLinks = 8192, kIssuesPerWarp = 1024 * 11;

TEST(PtxTiming, ADependentChainTakesItsLatencyPerLinkWhatEverItsIssue) {
  const double link_ns = hopper().ptx_alu_latency_cycles / hopper().clock_ghz;
  const double one = body_ns({"block=32"});
  EXPECT_GT(one, kLinks * link_ns);
  EXPECT_LT(one, kLinks * link_ns * 1.03);
  // Two warps per sub-partition still wait on their chains: the slot is free while they do.
  const double eight = body_ns({"block=256"});
  EXPECT_LT(eight, one * 1.1);
  // Without latencies the same warp takes only its issue.
  const double issue_ns = hopper().ptx_instr_cycles / hopper().clock_ghz;
  const double free = body_ns({"block=32"}, {{&model::Timing::ptx_alu_latency_cycles, 0.0}});
  EXPECT_LT(free, one / 2);
  EXPECT_GT(free, kIssuesPerWarp * issue_ns);
}

TEST(PtxTiming, ManyWarpsOnOneSubPartitionAreBoundByTheirIssue) {
  // 32 warps: 8 per sub-partition issue 8 x 11 instructions in the time one chain's 8 links take 4 x 8
  // cycles, so the slot, not the latency, sets the pace.
  const double issue_ns = hopper().ptx_instr_cycles / hopper().clock_ghz;
  const double all = body_ns({"block=1024"});
  EXPECT_GT(all, 8 * kIssuesPerWarp * issue_ns);
  EXPECT_LT(all, 8 * kIssuesPerWarp * issue_ns * 1.05);
}

TEST(PtxTiming, StoresThatWriteSectorsInPartCostTheStorePathMore) {
  // One warp, four st.global.u16: lanes 2 bytes apart write two whole sectors a store, lanes 64 bytes
  // apart one sector each, in part (32 a store).
  const model::Timing& t = hopper();
  const double whole = (t.ptx_store_issue_cycles + 2 * t.ptx_store_sector_cycles) / t.clock_ghz;
  const double part = (t.ptx_store_issue_cycles + 32 * t.ptx_store_partial_sector_cycles) / t.clock_ghz;
  const double dense = body_ns({"block=32", "param.stride=2"});
  const double sparse = body_ns({"block=32", "param.stride=64"});
  // The four stores read the same operands: each issues when the path takes it, so the warp's last
  // instruction waits for three stores' path time (the fourth's finishes after the warp).
  EXPECT_NEAR(sparse - dense, 3 * (part - whole), 0.05 * 3 * (part - whole));
  // Free stores (the store path's fields 0) make them the same.
  const std::vector<std::pair<model::TimingField, double>> no_path = {{&model::Timing::ptx_store_issue_cycles, 0.0},
                                                                      {&model::Timing::ptx_store_sector_cycles, 0.0},
                                                                      {&model::Timing::ptx_store_partial_sector_cycles, 0.0}};
  EXPECT_NEAR(body_ns({"block=32", "param.stride=64"}, no_path), body_ns({"block=32", "param.stride=2"}, no_path), 1.0);
}

TEST(PtxTiming, StoresFromEverySmShareTheDevicesPath) {
  // One warp per CTA, its four stores one sector each in part per lane. 132 CTAs store at the same
  // moment (their chains are alike): the device's path takes their sectors at its own rate, so the
  // last CTA ends later than one CTA alone, by about the device's time for all of them.
  const model::Timing& t = hopper();
  const double per_store = 32 / t.ptx_store_device_partial_sectors_per_ns;
  const double alone = body_ns({"block=32", "param.stride=64", "grid=1"});
  const double all = body_ns({"block=32", "param.stride=64", "grid=132"});
  // (Stores drain while the later ones queue: more than 0.4 of the device's time for all 528 of them,
  // less than all of it.)
  EXPECT_GT(all - alone, 0.4 * 132 * 4 * per_store);
  EXPECT_LT(all - alone, 132 * 4 * per_store);
  // Without the device's limit every SM stores on its own path.
  const std::vector<std::pair<model::TimingField, double>> no_device = {
      {&model::Timing::ptx_store_device_sectors_per_ns, 0.0}, {&model::Timing::ptx_store_device_partial_sectors_per_ns, 0.0}};
  EXPECT_NEAR(body_ns({"block=32", "param.stride=64", "grid=132"}, no_device),
              body_ns({"block=32", "param.stride=64", "grid=1"}, no_device), 1.0);
}

TEST(PtxTiming, TheFirstReadOfEachParameterLineOnAnSmWaitsForTheConstantCache) {
  // params.ptx: a dependent chain of 8 parameter reads `stride` bytes apart, after the stride's own.
  const model::Timing& t = hopper();
  const double miss = t.ptx_param_miss_cycles / t.clock_ghz;
  ASSERT_GT(miss, 0);
  const std::vector<std::pair<model::TimingField, double>> warm = {{&model::Timing::ptx_param_miss_cycles, 0.0}};
  const auto run = [&](std::vector<std::string> sets, std::vector<std::pair<model::TimingField, double>> timing = {}) {
    return body_ns(std::move(sets), std::move(timing), "params");
  };
  const double free = run({"param.stride=4"}, warm);
  EXPECT_NEAR(run({"param.stride=64"}, warm), free, 1.0);
  // All reads in the first 64-byte line: one miss. Each in its own line: 8, one after the other (each
  // read where its value is first used, the next read's address); the first line's miss starts with
  // the stride's and `own`'s reads, before the chain, so up to one miss of it is hidden.
  EXPECT_NEAR(run({"param.stride=4"}) - free, miss, 0.05 * miss);
  EXPECT_GT(run({"param.stride=64"}) - free, 7 * miss);
  EXPECT_LT(run({"param.stride=64"}) - free, 8 * miss * 1.02);
  // 8 warps read the same lines together: they wait for the same misses, not one after another.
  const double eight = run({"param.stride=64", "block=256"});
  EXPECT_LT(eight - run({"param.stride=64", "block=256"}, warm), 8 * miss * 1.05);
  // Each SM's cache is its own: 2 CTAs on 2 SMs each miss, so take as long as one.
  EXPECT_NEAR(run({"param.stride=64", "grid=2"}), run({"param.stride=64"}), 1.0);
  // 4 warps each reading 8 lines of its own: the SM's 32 misses queue on its miss path, one every
  // ptx_param_miss_interval_cycles (uldcprobe.cu's crowd). The chains move together, so each of a
  // warp's 8 misses waits behind its round's 4: 8 x (miss + 4 intervals) at most, 32 intervals at least.
  const double interval = t.ptx_param_miss_interval_cycles / t.clock_ghz;
  ASSERT_GT(interval, 0);
  const double own = run({"param.stride=64", "param.own=1", "block=128"}) - run({"param.stride=64", "param.own=1", "block=128"}, warm);
  EXPECT_GT(own, 32 * interval);
  EXPECT_LT(own, 8 * (miss + 4 * interval) * 1.15);
  EXPECT_GT(own, 1.5 * (run({"param.stride=64", "block=128"}) - run({"param.stride=64", "block=128"}, warm)));
  // Without the queue, each warp's chain is its own 8 misses.
  const std::vector<std::pair<model::TimingField, double>> no_queue = {{&model::Timing::ptx_param_miss_interval_cycles, 0.0}};
  EXPECT_NEAR(run({"param.stride=64", "param.own=1", "block=128"}, no_queue) - run({"param.stride=64", "param.own=1", "block=128"}, warm),
              8 * miss, 0.15 * 8 * miss);  // and the offset's arithmetic before the chain
}

TEST(PtxTiming, ConversionsAndTheSfusInstructionsHoldTheirSubPartitionLonger) {
  // issue.ptx: 32 warps (8 per sub-partition), 256 iterations of 8 independent instructions of one
  // kind: the sub-partition's issue sets the time, so a kind's extra cycles add 8 x 256 x 8 of them.
  const model::Timing& t = hopper();
  ASSERT_GT(t.ptx_convert_issue_cycles, t.ptx_instr_cycles);
  ASSERT_GT(t.ptx_xu_issue_cycles, t.ptx_instr_cycles);
  const auto run = [&](const char* kind, std::vector<std::pair<model::TimingField, double>> timing = {}) {
    return body_ns({std::string("param.kind=") + kind}, std::move(timing), "issue");
  };
  const double fma = run("0"), cvt = run("1"), ex2 = run("2"), fp8 = run("3");
  const double per_extra_cycle = 8 * 256 * 8 / t.clock_ghz;
  EXPECT_NEAR(cvt - fma, (t.ptx_convert_issue_cycles - t.ptx_instr_cycles) * per_extra_cycle, 0.03 * (cvt - fma));
  // A conversion to an 8-bit float format is a conversion too, not a float-to-integer one.
  EXPECT_NEAR(fp8, cvt, 0.01 * cvt);
  EXPECT_NEAR(ex2 - fma, (t.ptx_xu_issue_cycles - t.ptx_instr_cycles) * per_extra_cycle, 0.03 * (ex2 - fma));
  // Without the classes every instruction takes one issue.
  const std::vector<std::pair<model::TimingField, double>> one = {{&model::Timing::ptx_convert_issue_cycles, 0.0},
                                                                  {&model::Timing::ptx_xu_issue_cycles, 0.0}};
  EXPECT_NEAR(run("1", one), fma, 0.01 * fma);
  EXPECT_NEAR(run("2", one), fma, 0.01 * fma);
}

TEST(PtxTiming, AFenceBeyondTheCtaHoldsItsWarp) {
  // fence.ptx: one warp, 64 iterations of one op. Ordering at cluster or gpu scope (a fence, membar.gl,
  // an arrival released at cluster scope, a release store) waits out ptx_fence_cycles each time; the
  // same op at the CTA's scope, a plain store and the async-proxy fence do not.
  const model::Timing& t = hopper();
  ASSERT_GT(t.ptx_fence_cycles, 100);
  const auto run = [&](int kind, std::vector<std::pair<model::TimingField, double>> timing = {}) {
    return body_ns({"param.kind=" + std::to_string(kind)}, std::move(timing), "fence");
  };
  const double fences = 64 * t.ptx_fence_cycles / t.clock_ghz;
  const double cta = run(0), arrive = run(4), store = run(6), proxy = run(7);
  EXPECT_LT(std::abs(proxy - cta), 0.02 * fences);
  for (const auto& [kind, cheap] : {std::pair{1, cta}, {2, cta}, {3, arrive}, {5, store}}) {
    EXPECT_NEAR(run(kind) - cheap, fences, 0.05 * fences) << "kind " << kind;
    // Without the fence's cost the op is as cheap as its CTA-scope or relaxed form.
    EXPECT_NEAR(run(kind, {{&model::Timing::ptx_fence_cycles, 0.0}}), cheap, 0.02 * fences) << "kind " << kind;
  }
}

TEST(PtxTiming, ArrivalsReleasedAtClusterScopeAgainAndAgainAreAWarning) {
  // fence.ptx kind 3: 64 mbarrier.arrive.release.cluster on one CTA's barrier, each a fence on the
  // warp (cluster_scope_arrive, a warning: the verdict stays ok); kind 4, the same arrivals at the
  // default CTA scope, is not; nor kind 3 with the fence's cost at 0.
  const auto warnings = [](int kind, std::vector<std::pair<model::TimingField, double>> timing = {}) {
    return warnings_of("fence", {"param.kind=" + std::to_string(kind)}, "cluster_scope_arrive", std::move(timing));
  };
  const std::vector<std::string> fenced = warnings(3);
  ASSERT_EQ(fenced.size(), 1u);
  EXPECT_NE(fenced[0].find("ran 64 times (64 a CTA)"), std::string::npos) << fenced[0];
  EXPECT_NE(fenced[0].find("(677 cycles)"), std::string::npos) << fenced[0];
  EXPECT_TRUE(warnings(4).empty());
  EXPECT_TRUE(warnings(3, {{&model::Timing::ptx_fence_cycles, 0.0}}).empty());
}

TEST(PtxTiming, SharedStoresTakeTheirWavefrontsFromTheWarpAndTheSmsBanks) {
  // smem.ptx: each warp makes 512 st.shared.u32, lane l at l * stride. Cycles a store: the run less
  // the same run with shared memory free (the kernel's start and loop), plus the one issue that run
  // charged each store. One warp: an access holds it ptx_shared_access_cycles, or
  // ptx_shared_warp_wavefront_cycles a wavefront where there are more (stride 128: all lanes in one
  // bank, 32 wavefronts). Eight warps of conflict-free stores: the SM's banks take a wavefront a cycle
  // from all of them (smemprobe.cu).
  const model::Timing& t = hopper();
  ASSERT_GT(t.ptx_shared_access_cycles, 1);
  const std::vector<std::pair<model::TimingField, double>> free_banks{{&model::Timing::ptx_shared_access_cycles, 0.0},
                                                                      {&model::Timing::ptx_shared_warp_wavefront_cycles, 0.0},
                                                                      {&model::Timing::ptx_shared_issue_cycles, 0.0},
                                                                      {&model::Timing::smem_bytes_per_ns, 0.0}};
  const auto ns = [&](int warps, int stride, std::vector<std::pair<model::TimingField, double>> timing = {}) {
    return body_ns({"block=" + std::to_string(32 * warps), "param.stride=" + std::to_string(stride)}, std::move(timing), "smem");
  };
  const auto per_store = [&](int warps, int stride) {
    return (ns(warps, stride) - ns(warps, stride, free_banks)) * t.clock_ghz / 512 + t.ptx_instr_cycles;
  };
  EXPECT_NEAR(per_store(1, 4), t.ptx_shared_access_cycles, 0.1 * t.ptx_shared_access_cycles);
  EXPECT_NEAR(per_store(1, 8), t.ptx_shared_access_cycles, 0.1 * t.ptx_shared_access_cycles);  // 2 x 2 cycles: under it
  const double conflicted = 32 * t.ptx_shared_warp_wavefront_cycles;
  EXPECT_NEAR(per_store(1, 128), conflicted, 0.05 * conflicted);
  // Eight warps: 8 wavefronts a store of each at one a cycle, more than the warps' own 4.2 or their
  // issue (two a sub-partition); the whole run (the kernel's start included) against that.
  const double eight = 8 * 128 * t.clock_ghz / t.smem_bytes_per_ns;
  const double eight_run = ns(8, 4) * t.clock_ghz / 512;
  EXPECT_GT(eight_run, eight);
  EXPECT_LT(eight_run, eight * 1.15);
  // Free, a conflicted store costs what any does.
  EXPECT_NEAR(ns(1, 128, free_banks), ns(1, 4, free_banks), 0.01);
}

TEST(PtxTiming, ConflictedSharedAccessesAreOneWarningForTheirGroup) {
  // smem.ptx's eight unrolled stores: with lanes 128 bytes apart (all in one bank) they are one
  // shared_bank_conflict warning naming their lines, the ways and the wavefronts; with lanes 4 bytes
  // apart, none. The verdict stays ok.
  const auto warnings = [](int stride) {
    return warnings_of("smem", {"grid=2", "param.stride=" + std::to_string(stride)}, "shared_bank_conflict");
  };
  const std::vector<std::string> conflicted = warnings(128);
  ASSERT_EQ(conflicted.size(), 1u);
  for (const char* part : {"8 shared-memory accesses (PTX lines 21-28)", "ran 1024 times (512 a CTA)", "32.0-way", "32768 wavefronts where 1024"})
    EXPECT_NE(conflicted[0].find(part), std::string::npos) << part << " in " << conflicted[0];
  EXPECT_TRUE(warnings(4).empty());
}

TEST(PtxTiming, TheReportCountsStGlobalBytesAsWrittenToTheDram) {
  // timing.ptx: every thread stores four u16 with st.global (and makes no bulk store): 3 CTAs x 32
  // threads x 8 bytes are written back, whether the lanes write whole sectors or parts of them.
  for (const char* stride : {"param.stride=2", "param.stride=64"}) {
    verify::CheckOptions o;
    o.launch = kDir + "timing.launch.json";
    o.launch_sets = {"block=32", "grid=3", stride};
    const verify::CheckResult r = verify::check_file(kDir + "timing.ptx", o);
    ASSERT_EQ(r.result.verdict, sim::Verdict::Ok) << r.report;
    EXPECT_EQ(r.result.dram_write_bytes, 3 * 32 * 4 * 2) << stride;
    EXPECT_NE(r.report.find("768 B written"), std::string::npos) << r.report;
  }
}

// Small kernels warp by warp, with the latencies set here.
struct Timed : Harness {
  explicit Timed(const std::string& body, double load_ns) : Harness(kernel(body)) {
    ptx::InstructionTiming t;
    t.alu_ns = 2;
    t.global_load_ns = load_ns;
    ptx::set_instruction_timing(*grid, t);
  }
  // The Compute request before the warp's first synchronising op: (its time, its issue part).
  std::pair<int64_t, int64_t> first_compute() {
    Warp w(*grid, place(0), 0);
    SyncRequest r;
    EXPECT_TRUE(w.step(r, 0.0));
    EXPECT_EQ(r.kind, SyncKind::Compute);
    return {r.a, r.b};
  }
};

// How long one warp of `body` waits for operands before its first synchronising op (the Compute
// request's time less its issue part), with the latencies `t`.
int64_t waited_ns(const std::string& body, const ptx::InstructionTiming& t) {
  Harness h(kernel(body));
  ptx::set_instruction_timing(*h.grid, t);
  Warp w(*h.grid, h.place(0), 0);
  SyncRequest r;
  EXPECT_TRUE(w.step(r, 0.0));
  EXPECT_EQ(r.kind, SyncKind::Compute);
  return r.a - r.b;
}

TEST(PtxTiming, ABlockWaitsOnceForLoadsItIssuesTogether) {
  // Four independent loads, then the four adds that read them, then bar.sync (the block's end): ptxas
  // issues the loads back to back, so the block waits about one load latency, not four.
  const std::string body =
      "  ld.param.u64 %rd1, [aux];\n"
      "  ld.global.u32 %r1, [%rd1];\n  add.u32 %r5, %r1, 1;\n"
      "  ld.global.u32 %r2, [%rd1+4];\n  add.u32 %r6, %r2, 1;\n"
      "  ld.global.u32 %r3, [%rd1+8];\n  add.u32 %r7, %r3, 1;\n"
      "  ld.global.u32 %r4, [%rd1+12];\n  add.u32 %r8, %r4, 1;\n"
      "  bar.sync 0;\n";
  Timed h(body, 100);
  const auto [a, b] = h.first_compute();
  EXPECT_GE(a - b, 100 - 10);  // the wait: one latency (and the last add's), less the issue between
  EXPECT_LE(a - b, 100 + 2 + 2);
  Timed none(body, 0);
  const auto [a0, b0] = none.first_compute();
  EXPECT_LE(a0 - b0, 1);  // nothing to wait for
}

TEST(PtxTiming, AChainCarriedAcrossBlocksWaitsAtEachBranch) {
  // A load in each of four blocks, each block's branch waiting on its result: four latencies.
  std::string body = "  ld.param.u64 %rd1, [aux];\n  mov.u32 %r1, 0;\n";
  for (int i = 0; i < 4; ++i) {
    body += "  ld.global.u32 %r2, [%rd1];\n  setp.ne.u32 %p1, %r2, 12345;\n  @%p1 bra B" + std::to_string(i) +
            ";\nB" + std::to_string(i) + ":\n";
  }
  body += "  bar.sync 0;\n";
  Timed h(body, 100);
  const auto [a, b] = h.first_compute();
  EXPECT_GE(a - b, 4 * (100 + 2) - 10);
  EXPECT_LE(a - b, 4 * (100 + 2) + 2);
}

TEST(PtxTiming, IntegerDivisionWaitsItsOwnLatencyAndFloatDivisionTheSfus) {
  // Four dependent integer divisions (div, rem, unsigned div, wide div), the last one's result read:
  // four divide latencies (the H100's emulated sequence, latprobe), not the SFU's; a float division waits
  // the SFU-with-fix-up latency instead.
  ptx::InstructionTiming t;
  t.alu_ns = 2;
  t.mufu_fixup_ns = 20;
  t.divide_ns = 33;
  const auto waited = [&](const std::string& body) { return waited_ns(body, t); };
  const int64_t integer = waited(
      "  mov.u32 %r1, 1000;\n  div.s32 %r2, %r1, 3;\n  rem.s32 %r3, %r2, 7;\n  div.u32 %r4, %r3, 2;\n"
      "  cvt.u64.u32 %rd1, %r4;\n  div.s64 %rd2, %rd1, 5;\n  add.u64 %rd3, %rd2, 1;\n  bar.sync 0;\n");
  EXPECT_GE(integer, 4 * 33 - 4);
  EXPECT_LE(integer, 4 * 33 + 2 + 4);
  const int64_t fp = waited("  mov.f32 %f1, 0f40000000;\n  div.rn.f32 %f2, %f1, %f1;\n  add.f32 %f3, %f2, %f2;\n  bar.sync 0;\n");
  EXPECT_GE(fp, 20 - 4);
  EXPECT_LE(fp, 20 + 4);
}

TEST(PtxTiming, SixtyFourBitMultipliesWaitTheirEmulatedSequences) {
  // Dependent 64-bit multiplies (CUTLASS's FastDivmod in its tile schedulers): mul.lo.u64 and
  // mad.lo.s64 wait the 64-bit .lo latency, mul.hi.u64 the .hi one; mul.wide.u32 and a 32-bit
  // mul.lo an ALU op's.
  ptx::InstructionTiming t;
  t.alu_ns = 2;
  t.mul64_ns = 9;
  t.mulhi64_ns = 19;
  const auto waited = [&](const std::string& body) { return waited_ns(body, t); };
  const int64_t wide = waited(
      "  mov.u64 %rd1, 1000;\n  mul.lo.u64 %rd2, %rd1, 3;\n  mad.lo.s64 %rd3, %rd2, 7, %rd1;\n  mul.hi.u64 %rd4, %rd3, %rd2;\n"
      "  add.u64 %rd5, %rd4, 1;\n  bar.sync 0;\n");
  EXPECT_GE(wide, 9 + 9 + 19 - 4);
  EXPECT_LE(wide, 9 + 9 + 19 + 2 + 4);
  const int64_t narrow = waited(
      "  mov.u32 %r1, 1000;\n  mul.wide.u32 %rd1, %r1, 3;\n  mul.lo.u32 %r2, %r1, 7;\n  cvt.u64.u32 %rd2, %r2;\n"
      "  add.u64 %rd3, %rd1, %rd2;\n  bar.sync 0;\n");
  EXPECT_LE(narrow, 3 * 2 + 4);
}

TEST(PtxTiming, AWarpMadeBeforeTheLatenciesWereSetWaitsForItsOperands) {
  // The latencies given to a grid whose warps already exist still apply (the frames size their
  // ready times on first use).
  Harness h(kernel("  ld.param.u64 %rd1, [aux];\n  ld.global.u32 %r1, [%rd1];\n  add.u32 %r2, %r1, 1;\n"
                   "  bar.sync 0;\n"));
  Warp w(*h.grid, h.place(0), 0);
  ptx::InstructionTiming t;
  t.global_load_ns = 100;
  ptx::set_instruction_timing(*h.grid, t);
  SyncRequest r;
  ASSERT_TRUE(w.step(r, 0.0));
  EXPECT_EQ(r.kind, SyncKind::Compute);
  EXPECT_GE(r.a - r.b, 100 - 5);
}

TEST(PtxTiming, ASpinOnAGlobalLoadYieldsAfterItsTimeBudget) {
  // A warp polling a flag that never changes: each step returns after about `budget` instructions'
  // worth of time, however long its loads take, so the others' time is not left behind.
  Timed h("SPIN:\n  ld.param.u64 %rd1, [aux];\n  ld.global.u32 %r1, [%rd1];\n  setp.eq.u32 %p1, %r1, 0;\n"
          "  @%p1 bra SPIN;\n", 100);
  Warp w(*h.grid, h.place(0), 0);
  SyncRequest r;
  ASSERT_TRUE(w.step(r, 0.0, 100));
  EXPECT_EQ(r.kind, SyncKind::Compute);
  EXPECT_LE(r.a, 100 * 0.57 + 100 + 2 + 1);  // the budget, plus at most one load's wait
  EXPECT_GE(r.a, 100 * 0.57);
  EXPECT_LT(w.instructions(), 100u);
}

}  // namespace
}  // namespace pipesim
