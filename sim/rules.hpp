// The rules a run can report as broken: ids used by `expect error KIND`, findings and --json.
#pragma once

#include <span>
#include <string_view>

namespace pipesim::sim {

struct RuleInfo {
  std::string_view id;
  bool fatal;                 // false: a warning, never a verdict
  std::string_view summary;
};

inline constexpr RuleInfo kRules[] = {
    {"pending_underflow", true, "an arrival would take pending below zero (H100: the kernel faults)"},
    {"tx_range", true, "the transaction count left -(2^20-1) .. 2^20-1"},
    {"count_range", true, "an arrival count of 0 or above 2^20-1, or arrive_drop leaving no participant"},
    {"uninit", true, "a barrier used before init"},
    {"reinit", true, "init of a live barrier"},
    {"init_not_fenced", true, "a remote CTA or the TMA touched a barrier before fence_init (+ a cluster barrier)"},
    {"remote_wait", true, "a wait on another CTA's barrier"},
    {"stale_wait", true, "a tracked wait issued while the barrier is neither in the phase it waits for nor just past it (the parity aliases)"},
    {"phase_reused", true, "a parity wait passed on the phase this warp's previous wait on the barrier already returned on, after the warp released that phase (its phase bit did not flip)"},
    {"early_completion", true, "bytes landed after the phase they were issued for had completed without them"},
    {"exit_inflight", true, "a CTA exited with TMA loads landing in it or bulk stores no wait_group retired"},
    {"exited_target", true, "an arrival or copy aimed at a CTA that has exited"},
    {"named_count_mismatch", true, "one named barrier used with different thread counts in one phase"},
    {"named_overrun", true, "a warp arrived twice on a named or cluster barrier within one phase"},
    {"bad_operand", true, "an operand out of its range at run time (TMA size, mask, parity, id, group count)"},
    {"assertion", true, "a test_wait ... expect did not hold"},
    {"bad_mma_shape", true, "a tcgen05.mma shape not legal for its kind and cta_group"},
    {"cta_group_mismatch", true, "tcgen05 instructions of one kernel with different cta_group"},
    {"tmem_bad_alloc", true, "TMEM columns not a power of two in 32..512, growing, or after relinquish"},
    {"tmem_leak", true, "a CTA exited still holding TMEM columns"},
    {"tmem_dealloc_before_peer_alloc", true, "a cta_group::2 tcgen05.dealloc before the CTA pair's collective allocation completed (the peer's alloc pending or never issued)"},
    {"read_without_wait", true, "a load of a shared-memory value cell whose latest store is not ordered before it (the writer's release after the store, the reader's wait on it), or that was never stored; of a try_cancel response, without a wait on its barrier at the completion its bytes count toward"},
    {"smem_war", true, "a staging buffer written before wait_group.read retired the bulk store from it"},
    {"wgmma_mismatch", true, "the warps of a warpgroup issued different wgmma.mma_async instructions as one warpgroup MMA (.aligned broken)"},
    {"kernel_fault", true, "the kernel's own code faulted: trap, an access outside its memory, a misaligned address, a TMA through a non-tensor-map"},
    {"smem_over_capacity", true, "the shared memory the scenario's config and pipelines need exceeds the per-block limit: the launch would fail"},
    {"tx_overshoot", false, "more bytes landed than the phase's arrivals expected (tx stuck below zero)"},
    {"empty_commit", false, "an empty tcgen05.commit under cta_group::2 reached only the issuing CTA (assumption empty-commit-local)"},
    {"dangling_expect_tx", false, "a CTA exits with a barrier still expecting bytes"},
    {"budget_mismatch", false, "an estimate, launch smem or a pipeline's stages disagrees with what the config's derived footprints give"},
    {"stages_lost", false, "a pipeline has fewer stages than the stage solver fits with the derived footprints"},
    {"cluster_scope_arrive", false, "an mbarrier arrival released at cluster scope, run again and again: each is a fence that holds its warp"},
    {"shared_bank_conflict", false, "shared-memory accesses whose lanes meet in a bank, again and again: each extra wavefront is a pass of the SM's banks"},
};

// Why a warning matters or not, in one line for every report that shows it: the general reading of
// the rule, not a kernel's. Every non-fatal rule has one (tests/test_report.cpp checks).
struct WarningImpact {
  std::string_view id;
  std::string_view impact;
};
inline constexpr WarningImpact kWarningImpacts[] = {
    {"phase_reused", "not harmless (shown when the run goes on as the GPU would, crosscheck): the warp goes on as if a new phase had completed and reads what the old one left, while the producer may be overwriting it"},
    {"tx_overshoot", "not harmless: tx stays below zero, so the barrier's next phase completes only if another expect_tx covers the surplus (a hang if a wait needs it); on the GPU the bytes may instead complete the phase early, a race"},
    {"empty_commit", "not harmless under the assumption: the other CTAs of the mask miss this arrival, so their waits on the barrier hang unless another commit covers them (with --assume empty-commit-local=off it reaches them)"},
    {"dangling_expect_tx", "harmless to this run: the CTA has exited, so nothing waits on the barrier again and the next CTA's init resets it; a bug only if a consumer needed the bytes that never came, or if the barrier were reused"},
    {"budget_mismatch", "harmless to correctness: the kernel runs as declared, but a number written by hand disagrees with the derived footprint, so the budget is not what it says"},
    {"stages_lost", "harmless to correctness, costs speed: fewer stages than fit hide less of the copy latency"},
    {"cluster_scope_arrive", "harmless to correctness, costs speed: the warp waits out a fence at every arrival, where an arrival at the CTA's scope (CUTLASS's ClusterBarrier::arrive on a peer's barrier) orders what a pipeline needs without one"},
    {"shared_bank_conflict", "harmless to correctness, costs speed: the SM's banks serve one wavefront a clock to all its warps, so every extra pass delays this warp and the others that use shared memory"},
};

inline std::string_view warning_impact(std::string_view id) {
  for (const WarningImpact& w : kWarningImpacts)
    if (w.id == id) return w.impact;
  return {};
}

// Rules the hardware does not check: it runs on by the PTX rules (a stale parity aliases, late bytes
// count in the next phase). RunOptions::hardware_only records these as warnings and goes on, so
// that a run predicts what the GPU does (crosscheck); `pipesim check` stops at them.
inline constexpr std::string_view kModelOnlyRules[] = {"stale_wait", "phase_reused", "early_completion", "init_not_fenced", "smem_war"};

// Rules only a kernel's own code can break (a PTX kernel's instructions): no scenario statement reaches
// them, so PTX kernels pin them (tests/test_ptx_check.cpp, test_ptx_timing.cpp) instead of a scenario
// pair. A scenario's arrivals have no memory-ordering scope: cluster_scope_arrive is PTX's; nor do its
// steps have lanes and addresses: shared_bank_conflict is PTX's.
inline constexpr std::string_view kKernelOnlyRules[] = {"kernel_fault", "cluster_scope_arrive", "shared_bank_conflict"};

inline bool is_kernel_only(std::string_view id) {
  for (std::string_view r : kKernelOnlyRules)
    if (r == id) return true;
  return false;
}

inline bool is_model_only(std::string_view id) {
  for (std::string_view r : kModelOnlyRules)
    if (r == id) return true;
  return false;
}

inline const RuleInfo* find_rule(std::string_view id) {
  for (const RuleInfo& r : kRules)
    if (r.id == id) return &r;
  return nullptr;
}

}  // namespace pipesim::sim
