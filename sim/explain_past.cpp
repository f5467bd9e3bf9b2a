#include "sim/explain_past.hpp"

#include <algorithm>
#include <string>

#include "sim/lowering.hpp"

namespace pipesim::sim {
namespace {
// A replayed `load` reads what the run's did (WarpEnd::loaded), so the replay takes the run's path.
void replay_load(WarpProgram& prog, const Op& op, const WarpEnd& w, size_t& loads) {
  if (op.kind == OpKind::SmemLoad && loads < w.loaded.size()) prog.set_value(static_cast<uint32_t>(op.a), w.loaded[loads++]);
}
}  // namespace

Past replay_past(const Kernel& k, const RunResult& r, const std::set<std::pair<int, uint32_t>>& waited,
                 const std::set<std::pair<int, int>>& blocked, int64_t budget) {
  Past past;
  if (k.external || waited.empty()) return past;
  std::set<int> clusters;
  for (const auto& [cta, slot] : waited) clusters.insert(cta_coord(k, cta).cluster);
  const int csize = static_cast<int>(std::max<int64_t>(1, k.launch.cluster));
  for (const WarpEnd& w : r.warps) {
    const CtaCoord c = cta_coord(k, w.cta);
    if (!clusters.count(c.cluster) || w.status == WarpStatus::NotStarted) continue;
    const bool is_blocked = blocked.count({w.cta, w.warp}) > 0;
    // A blocked (or faulted) warp's last fetched op is the one it is stuck in: not past.
    const int64_t n = w.status == WarpStatus::Exited ? w.ops_done : w.ops_done - 1;
    const int base = c.cluster * csize;
    try {
      WarpProgram prog(k, w.cta, w.warp);
      Op op;
      size_t loads = 0;
      for (int64_t i = 0; i < n && prog.next(op); ++i) {
        if (--budget < 0) { past.truncated = true; return past; }
        replay_load(prog, op, w, loads);
        if (op.kind == OpKind::Wait && is_blocked && op.bar.rank == BarRef::kOwnCta) {
          const uint32_t s = barrier_slot(k, op.bar.array, op.bar.index);
          if (!waited.count({w.cta, s})) continue;
          PastWaits& pw = past.waits[{w.cta, w.warp, s}];
          if (pw.waits == 0) pw.first_parity = op.a;
          else if (op.a == pw.last_parity) pw.alternating = false;
          ++pw.waits;
          pw.last_parity = op.a;
          pw.last_site = op.site;
        } else if (op.kind == OpKind::Commit) {
          const uint32_t s = barrier_slot(k, op.bar.array, op.bar.index);
          const int64_t mask = op.b == 0 ? int64_t{1} << c.rank : op.b;
          // A cta_group::1 commit to its own CTA only is every such kernel's normal form: it leaves
          // nobody out (a multicast or pair commit that skips a CTA is the news).
          if (!(op.flags & kFlagCtaGroup2) && mask == int64_t{1} << c.rank) continue;
          for (int rank = 0; rank < csize; ++rank) {
            if ((mask >> rank) & 1) continue;
            const int target = base + rank;
            if (!waited.count({target, s})) continue;
            auto& list = past.missed[{target, s}];
            auto it = std::find_if(list.begin(), list.end(), [&](const MissedCommit& m) { return m.site == op.site && m.mask == mask; });
            if (it == list.end()) it = list.insert(list.end(), MissedCommit{op.site, w.role, {}, {}, mask, 0});
            it->warps.insert(w.warp);
            it->ranks.insert(c.rank);
            ++it->count;
          }
        }
      }
    } catch (const ScenarioError&) {
      // The program failed at run time past this point; what was replayed stands.
    }
  }
  return past;
}

void annotate_stale_waits(const Kernel& k, RunResult& r) {
  if (k.external) return;
  for (Finding& f : r.findings) {
    if (f.kind != "stale_wait" || f.cta < 0 || f.warp < 0) continue;
    const auto we = std::find_if(r.warps.begin(), r.warps.end(), [&](const WarpEnd& w) { return w.cta == f.cta && w.warp == f.warp; });
    if (we == r.warps.end() || we->op.kind != OpKind::Wait || we->op.bar.rank != BarRef::kOwnCta) continue;
    const uint32_t slot = barrier_slot(k, we->op.bar.array, we->op.bar.index);
    const BarrierState& b = r.barriers[static_cast<size_t>(f.cta)][slot];
    if (b.completed <= we->op.b) continue;  // not behind: another reading
    // Arrivals on the barrier per site: the total, and per round (each warp's arrival at that site once).
    struct Source { int role = -1; std::set<int> warps; int64_t total = 0; std::map<int, int64_t> per_warp_op; };
    std::map<uint32_t, Source> sources;
    const CtaCoord c = cta_coord(k, f.cta);
    const int csize = static_cast<int>(std::max<int64_t>(1, k.launch.cluster));
    int64_t budget = 20'000'000;
    for (const WarpEnd& w : r.warps) {
      const CtaCoord wc = cta_coord(k, w.cta);
      if (wc.cluster != c.cluster || w.status == WarpStatus::NotStarted) continue;
      const int64_t n = w.status == WarpStatus::Exited ? w.ops_done : w.ops_done - 1;
      try {
        WarpProgram prog(k, w.cta, w.warp);
        Op op;
        size_t loads = 0;
        for (int64_t i = 0; i < n && prog.next(op) && --budget > 0; ++i) {
          replay_load(prog, op, w, loads);
          if (op.kind != OpKind::Arrive && op.kind != OpKind::ArriveExpectTx && op.kind != OpKind::Commit) continue;
          if (barrier_slot(k, op.bar.array, op.bar.index) != slot) continue;
          const int64_t mask = op.kind == OpKind::Commit ? (op.b == 0 ? int64_t{1} << wc.rank : op.b) : 0;
          const int target = op.kind == OpKind::Commit ? ((mask >> c.rank) & 1 ? f.cta : -1)
                             : op.bar.rank == BarRef::kOwnCta ? w.cta : wc.cluster * csize + op.bar.rank;
          if (target != f.cta) continue;
          const int64_t count = op.kind == OpKind::Arrive ? op.a : 1;
          Source& s = sources[op.site];
          s.role = w.role;
          s.warps.insert(w.warp + 1000 * (w.cta - f.cta));  // distinct per CTA of the cluster
          s.total += count;
          s.per_warp_op[w.warp + 1000 * (w.cta - f.cta)] = count;
        }
      } catch (const ScenarioError&) {
      }
    }
    if (sources.empty()) continue;
    std::string list;
    int64_t over = 0, matching = 0;
    for (const auto& [site, s] : sources) {
      int64_t round = 0;
      for (const auto& [w, n] : s.per_warp_op) round += n;
      if (round > b.expected) ++over;
      if (round == b.expected) ++matching;
      const std::string what = site < k.sites.size() ? "line " + std::to_string(k.sites[site].loc.line) + " (" + k.sites[site].what + ")" : "?";
      list += (list.empty() ? "" : "; ") + std::to_string(s.total) + " at " + what + " from " + std::to_string(s.warps.size()) +
              " warp(s), " + std::to_string(round) + " per round";
    }
    f.notes.push_back("arrivals on it so far (" + std::to_string(b.expected) + " complete a phase): " + list);
    if (over > 0 && sources.size() == 1)
      f.notes.push_back("cause: one site's arrivals alone exceed the arrival count each round, so its parties complete phases without waiting for this warp: too few arrivals gate the barrier (raise its count to the parties that arrive)");
    else if (matching > 0 && sources.size() > 1)
      f.notes.push_back("cause: an extra completion: another site arrives beside one that already completes a phase each round (an extra arrive or commit), so the barrier runs ahead of this warp");
    else
      f.notes.push_back("cause: not decided from the arrivals: a missing wait in the party that refills the barrier, an extra completion, or too few arrivals gating it");
  }
}

}  // namespace pipesim::sim
