// Hang explanation: from the blocked end state of a run, who waits on what, who could still
// arrive there (found by looking ahead in every live warp's own op stream), and the wait-for
// cycles among them. General analysis only: no text is written per known bug.
#pragma once

#include <vector>

#include "sim/engine.hpp"
#include "sim/lowering.hpp"

namespace pipesim::sim {

enum class WaitKind : uint8_t { None, Mbarrier, Named, Cluster, Tmem };

struct HangInput {
  const Kernel& kernel;
  RunResult& result;             // `barriers` already filled; `hang` is written
  int unlaunched_clusters = 0;
  struct Warp {
    int cta, warp, role;
    Op op;                       // the op it is blocked in (or was about to run)
    WarpProgram prog;            // positioned just after `op`
    WaitKind wait;
    uint32_t slot;               // Mbarrier: flattened barrier slot
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

// A site's source position for people: a header path is shown from its include root, as compilers
// name headers ("…/site-packages/cutlass_library/source/include/cutlass/arch/barrier.h:424:15" reads
// "cutlass/arch/barrier.h:424:15"). Site::origin itself keeps the whole path.
std::string short_origin(const std::string& origin);

}  // namespace pipesim::sim
