// A PTX kernel's own timeline on the GPU (`pipesim crosscheck --stamps FILE`): the entry's text is
// rewritten so that lane 0 of every warp writes %globaltimer, tagged with a site, into its own slice
// of one more global buffer (a last parameter, `__pipesim_stamps`) at:
//   - the warp's start (site 0) and every `ret` / `exit` of the entry (site 1, before it);
//   - every mbarrier.try_wait / test_wait that returned true (after it: where a wait passed);
//   - every wgmma.wait_group, cp.async.bulk.wait_group, bar / barrier (.cta) sync and
//     barrier.cluster.wait (after it);
//   - any other instruction line asked for (`--stamp-lines`: after it, whether its guard held or not),
//     to bisect where the time between two sites goes.
// Each stamp is one u64: site << 48 | (ns & (2^48 - 1)). A warp stops stamping when its slice is full.
// Host code only: the runner (ptx_runner.cpp) allocates and reads the buffer.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pipesim::ptx_launch {

struct StampSite {
  uint32_t ptx_line = 0;  // 1-based line of the instrumented instruction in the original text (0: entry, exit)
  std::string what;       // "warp start", "warp exit", "mbarrier.try_wait", "wgmma.wait_group" ...
};

struct StampedPtx {
  std::string text;               // the PTX with the stamps
  std::vector<StampSite> sites;   // indexed by site id
  uint32_t per_warp = 0;          // stamps each warp's slice holds
  uint64_t warps = 0;             // slices (every warp of the grid)
  size_t skipped = 0;             // sync instructions left alone (a guarded try_wait: its predicate may be stale)
  uint64_t buffer_bytes() const { return warps * per_warp * 8; }
};

// Rewrites `entry` of `ptx`; `warps_per_cta` and `ctas` size the buffer; `lines` (1-based) are more
// sites. Throws std::runtime_error when the entry cannot be found, has more sites than a stamp can
// name, or a line asked for is not an instruction of its body that the warp goes on from (a label,
// a directive, a brace, a branch, ret or exit).
StampedPtx add_stamps(std::string_view ptx, std::string_view entry, uint32_t warps_per_cta, uint64_t ctas, uint32_t per_warp,
                      std::span<const uint32_t> lines = {});

struct Stamp {
  uint64_t warp = 0;  // in the grid: cta * warps_per_cta + warp in the CTA
  uint32_t site = 0;
  uint64_t ns = 0;    // %globaltimer, low 48 bits
};
// The stamps of a read-back buffer, warp by warp in the order written (a slice ends at its first 0).
std::vector<Stamp> read_stamps(const std::vector<uint64_t>& buffer, uint32_t per_warp);

}  // namespace pipesim::ptx_launch
