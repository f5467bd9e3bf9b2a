// Hang explanation: from the blocked end state of a run, who waits on what, who could still
// arrive there (found by looking ahead in every live warp's own op stream), and the wait-for
// cycles among them. General analysis only: no text is written per known bug.
#pragma once

#include <string>
#include <vector>

#include "sim/engine.hpp"
#include "sim/lowering.hpp"

namespace pipesim::sim {

// TmemPair: a cta_group::2 tcgen05.alloc / dealloc waiting for the same instruction in its pair peer CTA.
// Wgmma: a wgmma.mma_async stalled until the other warps of its warpgroup issue it too.
enum class WaitKind : uint8_t { None, Mbarrier, Named, Cluster, Tmem, TmemPair, Wgmma };

struct HangInput {
  const Kernel& kernel;
  RunResult& result;             // `barriers` already filled; `hang` is written
  int unlaunched_clusters = 0;
  struct Warp {
    int cta, warp, role;
    Op op;                       // the op it is blocked in (or was about to run)
    WarpProgram prog;            // positioned just after `op`
    WaitKind wait;
    uint32_t slot;               // Mbarrier: flattened barrier slot; Wgmma: bit per warp of the group that has not issued it
    int64_t named_arrived;       // Named: threads arrived so far
    uint32_t named_arrived_mask; // named barrier ids this warp has arrived on in their current phase
    bool cluster_arrived;        // arrived on the cluster barrier in its current phase
  };
  std::vector<Warp> warps;       // every warp that has not exited
  std::vector<int> sm_of_cta;    // -1: never started
  std::vector<int64_t> tmem_free;  // per SM
  std::vector<int64_t> tmem_held;  // per CTA
};

void explain_hang(HangInput& in);

// A run stopped by its budget (Verdict::Stopped): what every live warp was doing, grouped by role,
// site and wait ("running" when not blocked: waits_on is empty), into `result.hang.groups`.
void describe_stop(HangInput& in);
// "stopped after N events / T s at simulated time X: the scenario did not finish; raise --max-... to go on".
std::string stop_summary(const RunResult& r);

// A site's source position for people: a header path is shown from its include root, as compilers
// name headers ("…/site-packages/cutlass_library/source/include/cutlass/arch/barrier.h:424:15" reads
// "cutlass/arch/barrier.h:424:15"). Site::origin itself keeps the whole path.
std::string short_origin(const std::string& origin);

// An integer list as reports fold it (CTAs, warps): sorted, duplicates dropped, consecutive runs as
// "0-3", runs of one larger step as "0, 2, ..., 74", two neighbours as "4, 5"; after eight pieces
// ", ...". The one folding of every report (hang groups, unblockers, grouped findings).
std::string fold_list(std::vector<int> v);

}  // namespace pipesim::sim
