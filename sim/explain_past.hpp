// What the warps of a hung scenario did before the end, for the hang hints that need the past: a wait
// that skipped a phase of its barrier, a tcgen05.commit whose mask sent it to other CTAs. A scenario
// warp's op stream is a pure function of (kernel, CTA, warp), so it is replayed from the start up to
// where the run left the warp (WarpEnd::ops_done). Not for external programs (PTX): their past is not
// replayable here.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/engine.hpp"

namespace pipesim::sim {

struct PastWaits {
  int waits = 0;              // waits on the barrier the warp completed before the one it is blocked in
  int64_t first_parity = -1;
  int64_t last_parity = -1;
  uint32_t last_site = 0;
  bool alternating = true;    // every wait flipped the parity of the one before
};

struct MissedCommit {         // commits to a barrier element whose mask left its waiting CTA out
  uint32_t site = 0;
  int role = -1;
  std::set<int> warps;
  std::set<int> ranks;        // cluster ranks of the issuing CTAs
  int64_t mask = 0;
  int64_t count = 0;
};

struct Past {
  std::map<std::tuple<int, int, uint32_t>, PastWaits> waits;             // (cta, warp, slot)
  std::map<std::pair<int, uint32_t>, std::vector<MissedCommit>> missed;  // (waiting cta, slot)
  bool truncated = false;
};

// `waited`: the (cta, slot) mbarriers that warps are blocked on; `blocked`: those warps, (cta, warp).
Past replay_past(const Kernel& k, const RunResult& r, const std::set<std::pair<int, uint32_t>>& waited,
                 const std::set<std::pair<int, int>>& blocked, int64_t budget);

// A stale_wait finding of a warp behind its barrier gets the barrier's arrivals so far, per site, and
// the cause they show: one site alone completing more than a phase per round (the arrival count is
// below the parties that arrive: too few arrivals gate it), or a second site completing phases beside
// one that matches the count (an extra completion). Scenarios only (a PTX kernel's past is not replayed).
void annotate_stale_waits(const Kernel& k, RunResult& r);

}  // namespace pipesim::sim
