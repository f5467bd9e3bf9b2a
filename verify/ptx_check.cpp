// `pipesim check KERNEL.ptx --launch L.json`: the kernel's own PTX on the engine (verify/ptx/).
// Bad input of every stage (the PTX text, the launch, an instruction the interpreter does not run)
// is a diagnostic with file:line:col and exit 2; what the kernel does is the run's verdict.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>

#include <fmt/format.h>

#include "verify/check.hpp"
#include "verify/ptx_budget.hpp"
#include "verify/ptx/launch.hpp"
#include "verify/ptx/machine.hpp"
#include "verify/ptx/parser.hpp"
#include "verify/ptx/run_use.hpp"
#include "verify/ptx/source.hpp"

namespace pipesim::verify {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Arrivals released at cluster scope that a warp runs again and again (4 or more a CTA): each is a
// fence on its warp (ptx_fence_cycles; kernels/interp/fenceprobe.cu), a cost a pipeline's release
// seldom needs.
std::vector<sim::Finding> fence_findings(const sim::Kernel& k, const ptx::RunUse& use, const sim::RunOptions& o) {
  const model::Timing t = sim::run_timing(k, o);
  std::vector<sim::Finding> out;
  const auto ctas = static_cast<uint64_t>(std::max<int64_t>(k.launch.ctas, 1));
  for (const auto& [site, count] : use.fenced_arrivals) {
    if (count < 4 * ctas || t.ptx_fence_cycles <= 0) continue;
    const double each_ns = t.ptx_fence_cycles / t.clock_ghz;
    sim::Finding f;
    f.kind = "cluster_scope_arrive";
    f.fatal = false;
    f.site = site;
    f.message = fmt::format("this mbarrier arrival is released at cluster scope and ran {} times ({:.0f} a CTA): each holds its warp "
                            "for a fence, {:.0f} ns ({:.0f} cycles)",
                            count, static_cast<double>(count) / static_cast<double>(ctas), each_ns, t.ptx_fence_cycles);
    f.notes.push_back("the SM runs MEMBAR.ALL.GPU before such an arrival; at the default CTA scope one costs ~6 cycles on the H100 "
                      "(fenceprobe). A consumer releasing a peer's stage needs no cluster-scope release: CUTLASS's "
                      "ClusterBarrier::arrive(cta_id) is mbarrier.arrive.shared::cluster.b64 with no scope");
    out.push_back(std::move(f));
  }
  return out;
}

// Shared-memory accesses whose lanes meet in a bank (4 or more conflicted executions a CTA, each at
// least a two-way conflict on average): each extra wavefront is a pass of the SM's banks that every
// warp of the SM waits behind (ptx_shared_* and smem_bytes_per_ns; kernels/interp/smemprobe.cu). One
// finding per group: the accesses of one line of the kernel's source (its .loc), or, without one,
// consecutive accesses that ran as often and conflicted alike (an unrolled loop's).
std::vector<sim::Finding> bank_conflict_findings(const sim::Kernel& k, const ptx::RunUse& use, const sim::RunOptions& o) {
  const model::Timing t = sim::run_timing(k, o);
  std::vector<sim::Finding> out;
  if (t.smem_bytes_per_ns <= 0) return out;
  const auto ctas = static_cast<uint64_t>(std::max<int64_t>(k.launch.ctas, 1));
  const auto ways = [](const ptx::SharedConflicts& c) {
    return static_cast<double>(c.wavefronts) / static_cast<double>(std::max<uint64_t>(c.conflict_free, 1));
  };
  struct Group {
    std::vector<uint32_t> sites;
    ptx::SharedConflicts first, sum;
  };
  std::vector<Group> groups;
  for (const auto& [site, c] : use.bank_conflicts) {
    if (c.accesses < 4 * ctas || c.wavefronts < 2 * c.conflict_free) continue;
    const std::string& origin = k.sites[site].origin;
    const Group* last = groups.empty() ? nullptr : &groups.back();
    const bool joins = last && origin == k.sites[last->sites.back()].origin &&
                       (!origin.empty() || (c.accesses == last->first.accesses && std::abs(ways(c) - ways(last->first)) < 0.05));
    if (!joins) groups.push_back(Group{.sites = {}, .first = c, .sum = {}});
    Group& g = groups.back();
    g.sites.push_back(site);
    g.sum.accesses += c.accesses;
    g.sum.wavefronts += c.wavefronts;
    g.sum.conflict_free += c.conflict_free;
  }
  for (const Group& g : groups) {
    const ptx::SharedConflicts& c = g.sum;
    const double extra_ns = static_cast<double>(c.wavefronts - c.conflict_free) * 128.0 / t.smem_bytes_per_ns / static_cast<double>(ctas);
    const std::string what = g.sites.size() == 1 ? "this shared-memory access"
                                                 : fmt::format("{} shared-memory accesses (PTX lines {}-{})", g.sites.size(),
                                                               k.sites[g.sites.front()].loc.line, k.sites[g.sites.back()].loc.line);
    sim::Finding f;
    f.kind = "shared_bank_conflict";
    f.fatal = false;
    f.site = g.sites.front();
    f.message = fmt::format("{} ran {} times ({:.0f} a CTA) with lanes meeting in a bank: {:.1f}-way on average, {} wavefronts where {} "
                            "would do, {:.0f} ns of its SM's banks a CTA",
                            what, c.accesses, static_cast<double>(c.accesses) / static_cast<double>(ctas), ways(c), c.wavefronts,
                            c.conflict_free, extra_ns);
    f.notes.push_back("a warp's access takes one pass of the 32 banks (4 bytes each) for each distinct word a bank must give; lanes "
                      "apart by a multiple of 128 bytes share a bank. Pad the rows or swizzle the layout (CuTe's Swizzle<B,M,S>) so a "
                      "warp's lanes fall in distinct banks");
    out.push_back(std::move(f));
  }
  return out;
}

// A launch problem: at its place in the launch file, or on the command line.
std::string launch_diagnostic(const ptx::LaunchError& e) {
  if (e.file.empty()) return "pipesim: error: launch: " + std::string(e.what()) + "\n";
  if (e.pos.line == 0) return e.file + ": error: " + e.what() + "\n";
  return ptx::format_error(e.file, read_text(e.file), e.pos, e.what());
}

}  // namespace

CheckResult check_ptx(const std::string& path, const CheckOptions& options) {
  CheckResult r;
  r.file = path;
  const auto t0 = std::chrono::steady_clock::now();
  auto fail = [&](std::string diagnostic) {
    r.bad_input = true;
    r.diagnostic = std::move(diagnostic);
    return r;
  };
  std::shared_ptr<const ptx::Module> module;
  try {
    module = std::make_shared<const ptx::Module>(ptx::parse_file(path));
  } catch (const ptx::ParseError& e) {
    return fail(ptx::format_error(e, read_text(path)));
  }
  ptx::Launch launch;
  auto use = std::make_shared<ptx::RunUse>();
  try {
    if (!options.launch.empty()) launch = ptx::read_launch(options.launch);
    else if (options.launch_sets.empty())
      return fail(path + ": error: a PTX kernel needs its launch: --launch FILE.json and/or -D grid=... -D block=... (docs/ptx.md)\n");
    for (const std::string& s : options.launch_sets) ptx::apply_short_form(launch, s);
    ptx::resolve_launch(launch, *module);
    r.kernel = ptx::make_kernel(module, launch, use);
  } catch (const ptx::LaunchError& e) {
    return fail(launch_diagnostic(e));
  } catch (const ptx::PtxError& e) {
    return fail(ptx::format_error(*module, e.pos, e.what()));
  }
  r.kernel.expect = options.expect;
  try {
    r.result = sim::run(r.kernel, options.run);
    // The budget from what the run used: its warnings join the run's.
    auto budget = std::make_shared<PtxBudget>(ptx_budget(r.kernel, static_cast<int64_t>(launch.static_smem),
                                                         static_cast<int64_t>(launch.dynamic_smem), *use, r.result));
    r.result.findings.insert(r.result.findings.end(), budget->findings.begin(), budget->findings.end());
    for (sim::Finding& f : fence_findings(r.kernel, *use, options.run)) r.result.findings.push_back(std::move(f));
    for (sim::Finding& f : bank_conflict_findings(r.kernel, *use, options.run)) r.result.findings.push_back(std::move(f));
    r.ptx_budget = std::move(budget);
  } catch (const ptx::PtxError& e) {
    return fail(ptx::format_error(*module, e.pos, e.what()));
  } catch (const std::bad_alloc&) {
    return fail(path + ": error: " + kOutOfMemory + "\n");
  } catch (const std::exception& e) {
    return fail(path + ": error: " + e.what() + "\n");
  }
  r.options_empty_commit_local = options.run.empty_commit_local;
  r.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  judge(r);
  return r;
}

}  // namespace pipesim::verify
