#include "sim/explain.hpp"

#include "sim/explain_past.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

namespace pipesim::sim {
namespace {

// A resource a warp can wait on: (kind, cta or cluster, slot or id).
using Key = uint64_t;
Key key_of(WaitKind k, int place, uint64_t id) {
  return (static_cast<uint64_t>(k) << 60) | (static_cast<uint64_t>(place) << 32) | id;
}

std::string line_of(const Kernel& k, uint32_t site) {
  if (site >= k.sites.size()) return "?";
  const Site& s = k.sites[site];
  if (!s.origin.empty()) return short_origin(s.origin) + " (PTX line " + std::to_string(s.loc.line) + ", " + s.what + ")";
  return "line " + std::to_string(s.loc.line) + " (" + s.what + ")";
}

std::string slot_name(const Kernel& k, uint32_t slot, const RunResult& r) {
  if (slot < r.barrier_names.size()) return r.barrier_names[slot];
  for (uint32_t a = 0; a < k.barriers.size(); ++a) {
    if (slot < k.barriers[a].size) return k.barriers[a].name + "[" + std::to_string(slot) + "]";
    slot -= k.barriers[a].size;
  }
  return "?";
}

std::string role_name(const Kernel& k, int role) {
  return role >= 0 ? k.roles[static_cast<size_t>(role)].name : "no role";
}
// " (producer)" after a warp; nothing for a kernel whose warps have no roles (an external program).
std::string role_suffix(const Kernel& k, int role) { return k.external ? "" : " (" + role_name(k, role) + ")"; }

std::string who(const Kernel& k, const HangInput::Warp& w, int rel_to_cta) {
  std::string s = "warp " + std::to_string(w.warp) + role_suffix(k, w.role);
  if (w.cta != rel_to_cta) s += " of cluster rank " + std::to_string(cta_coord(k, w.cta).rank);
  return s;
}

// The other CTA of a cta_group::2 pair: cluster ranks 2k and 2k+1.
int pair_peer(const Kernel& k, int cta) {
  const CtaCoord c = cta_coord(k, cta);
  return c.cluster * static_cast<int>(k.launch.cluster) + (c.rank ^ 1);
}
const char* pair_op(const Op& op) {
  return op.kind == OpKind::TmemAlloc ? "tcgen05.alloc.cta_group::2" : "tcgen05.dealloc.cta_group::2";
}

std::string waits_on(const Kernel& k, const HangInput::Warp& w, const RunResult& r) {
  switch (w.wait) {
    case WaitKind::Mbarrier: return slot_name(k, w.slot, r) + " parity " + std::to_string(w.op.a);
    case WaitKind::Named: return "named barrier " + std::to_string(w.op.a) + " (" + std::to_string(w.op.b) + " threads)";
    case WaitKind::Cluster: return "the cluster barrier";
    case WaitKind::Tmem: return "a TMEM allocation of " + std::to_string(w.op.a) + " columns";
    case WaitKind::TmemPair:  // cluster-relative, so that the same wait in every cluster is one group
      return std::string("the pair peer's ") + pair_op(w.op) + " (" + std::to_string(w.op.a) + " columns)";
    case WaitKind::Wgmma: {
      std::vector<int> missing;
      for (int x = 0; x < 4; ++x)
        if ((w.slot >> x) & 1) missing.push_back(w.warp / 4 * 4 + x);
      return "a wgmma of its warpgroup that warp" + std::string(missing.size() == 1 ? " " : "s ") + fold_list(missing) +
             " of this CTA " + (missing.size() == 1 ? "has" : "have") + " not issued (wgmma.mma_async is warpgroup-collective)";
    }
    case WaitKind::None: break;
  }
  return "nothing";
}

// The resources an op would advance, given the issuing warp's CTA.
template <class F>
void contributions(const Kernel& k, const HangInput& in, int cta, const Op& op, F&& f) {
  const CtaCoord c = cta_coord(k, cta);
  const int base = c.cluster * static_cast<int>(k.launch.cluster);
  auto target = [&](int32_t rank) { return rank == BarRef::kOwnCta ? cta : base + rank; };
  switch (op.kind) {
    case OpKind::Arrive: case OpKind::ArriveExpectTx: case OpKind::ArriveDrop:
    case OpKind::ExpectTx: case OpKind::CompleteTx:
      f(key_of(WaitKind::Mbarrier, target(op.bar.rank), barrier_slot(k, op.bar.array, op.bar.index)));
      break;
    case OpKind::TmaLoad:
      if (op.b == 0) {
        f(key_of(WaitKind::Mbarrier, cta, barrier_slot(k, op.bar.array, op.bar.index)));
      } else {
        for (int r = 0; r < k.launch.cluster; ++r)
          if ((op.b >> r) & 1) f(key_of(WaitKind::Mbarrier, base + r, barrier_slot(k, op.bar.array, op.bar.index)));
      }
      break;
    case OpKind::ClcTryCancel:  // complete_tx on bar of the own CTA, or of every CTA (multicast)
      for (int r = 0; r < k.launch.cluster; ++r)
        if (op.b || base + r == cta) f(key_of(WaitKind::Mbarrier, base + r, barrier_slot(k, op.bar.array, op.bar.index)));
      break;
    case OpKind::NamedSync: case OpKind::NamedArrive:
      f(key_of(WaitKind::Named, cta, static_cast<uint64_t>(op.a)));
      break;
    case OpKind::ClusterArrive: f(key_of(WaitKind::Cluster, c.cluster, 0)); break;
    case OpKind::Commit: {
      const uint32_t s = barrier_slot(k, op.bar.array, op.bar.index);
      if (op.b == 0) f(key_of(WaitKind::Mbarrier, cta, s));
      for (int r = 0; r < k.launch.cluster; ++r)
        if ((op.b >> r) & 1) f(key_of(WaitKind::Mbarrier, base + r, s));
      break;
    }
    case OpKind::TmemDealloc:
      if (in.sm_of_cta[static_cast<size_t>(cta)] >= 0) f(key_of(WaitKind::Tmem, in.sm_of_cta[static_cast<size_t>(cta)], 0));
      if (op.flags & kFlagCtaGroup2) f(key_of(WaitKind::TmemPair, std::min(cta, pair_peer(k, cta)), 1));
      break;
    case OpKind::TmemAlloc:
      if (op.flags & kFlagCtaGroup2) f(key_of(WaitKind::TmemPair, std::min(cta, pair_peer(k, cta)), 0));
      break;
    default: break;
  }
}

// The resource a blocked warp waits on. TMEM is per SM, so any CTA on that SM can free it.
Key key_of_wait(const Kernel& k, const HangInput& in, const HangInput::Warp& w) {
  switch (w.wait) {
    case WaitKind::Mbarrier: return key_of(WaitKind::Mbarrier, w.cta, w.slot);
    case WaitKind::Named: return key_of(WaitKind::Named, w.cta, static_cast<uint64_t>(w.op.a));
    case WaitKind::Cluster: return key_of(WaitKind::Cluster, cta_coord(k, w.cta).cluster, 0);
    case WaitKind::Tmem: return key_of(WaitKind::Tmem, in.sm_of_cta[static_cast<size_t>(w.cta)], 0);
    case WaitKind::TmemPair:  // id: 0 alloc, 1 dealloc (the peer must issue the same)
      return key_of(WaitKind::TmemPair, std::min(w.cta, pair_peer(k, w.cta)), w.op.kind == OpKind::TmemDealloc);
    case WaitKind::Wgmma: return key_of(WaitKind::Wgmma, w.cta, static_cast<uint64_t>(w.warp / 4));
    case WaitKind::None: break;
  }
  return 0;
}

// Static sites of the scenario that can complete a phase of barrier array `array` (for "nobody
// will arrive"): arrivals, copies and tcgen05.commit, raw or from a pipeline call.
void static_arrivers(const Kernel& k, uint32_t array, const std::vector<Stmt>& body, int role,
                     std::vector<std::string>& out) {
  const BarrierArray& arr = k.barriers[array];
  for (const Stmt& s : body) {
    const char* how = nullptr;  // null: not a source
    if (s.kind == StmtKind::Op && s.bar && s.bar->array == array) {
      switch (s.op) {
        case OpKind::Arrive: case OpKind::ArriveExpectTx: case OpKind::ArriveDrop:
        case OpKind::ExpectTx: case OpKind::CompleteTx: case OpKind::TmaLoad: how = ""; break;
        case OpKind::Commit: how = s.mask ? " (a tcgen05.commit to the CTAs of its mask)" : " (a tcgen05.commit)"; break;
        case OpKind::ClcTryCancel: how = s.mask ? " (a try_cancel response to every CTA of the cluster)" : " (a try_cancel response)"; break;
        default: break;
      }
    } else if (s.kind == StmtKind::Pipe && arr.pipeline >= 0 && s.pipeline == static_cast<uint32_t>(arr.pipeline)) {
      const PipelineDecl& p = k.pipelines[s.pipeline];
      const bool tma_fed = p.kind == PipelineKind::TmaAsync || p.kind == PipelineKind::TmaUmma;
      const char* commit = p.multicast ? " (a tcgen05.commit to the CTAs of the pipeline's multicast mask)" : " (a tcgen05.commit)";
      if (array == p.full) {
        if (s.call == PipeCall::Tma || (s.call == PipeCall::ProducerAcquire && tma_fed)) how = "";
        else if (s.call == PipeCall::ProducerCommit && p.kind == PipelineKind::UmmaAsync) how = commit;
        else if (s.call == PipeCall::ProducerCommit && (p.kind == PipelineKind::Async || p.kind == PipelineKind::AsyncUmma)) how = "";
      } else if (array == p.empty && s.call == PipeCall::ConsumerRelease) {
        how = p.kind == PipelineKind::TmaUmma || p.kind == PipelineKind::AsyncUmma ? commit : "";
      }
    }
    if (how) out.push_back(line_of(k, s.site) + " in role " + role_name(k, role) + how);
    static_arrivers(k, array, s.body, role, out);
    static_arrivers(k, array, s.else_body, role, out);
  }
}

// A blocked wait that skipped a phase of its barrier, from the warp's own past waits on it: two waits
// in a row on one parity (the barrier completed a phase in between that the warp never waited for),
// or more completed phases than alternating waits account for. "" when the waits kept step.
std::string phase_skip_hint(const Kernel& k, const RunResult& r, const HangInput::Warp& w, const BarrierState& b, const Past& past) {
  const auto it = past.waits.find({w.cta, w.warp, w.slot});
  if (it == past.waits.end() || w.op.kind != OpKind::Wait) return {};
  const PastWaits& pw = it->second;
  const std::string name = slot_name(k, w.slot, r);
  const std::string parity = std::to_string(w.op.a);
  if (pw.last_parity == w.op.a)
    return "this warp's previous wait on " + name + " (at " + line_of(k, pw.last_site) + ") was for parity " + parity +
           " too: the barrier completed a phase in between that this warp never waited for (a missing wait, a parity "
           "that does not flip, or an extra completion), so this wait is for phase " + std::to_string(b.completed) +
           ", later than meant; more arrivals are not the fix";
  if (!pw.alternating) return {};
  // Alternating waits from parity p0: wait number n (0-based) means phase n - p0 (a first wait on
  // parity 1 passes on the fresh barrier, CUTLASS's producer start).
  const int64_t meant = pw.waits - pw.first_parity;
  if (b.completed <= meant) return {};
  return "this warp waited on " + name + " " + std::to_string(pw.waits) + " time(s) before, flipping the parity each time, so this wait means phase " +
         std::to_string(meant) + "; the barrier has completed " + std::to_string(b.completed) + ": " +
         std::to_string(b.completed - meant) + " phase(s) completed without this warp's waits (an extra arrive or commit, or a wait missing in this warp), so more arrivals are not the fix";
}

// Commits to the barrier this warp waits on whose mask left its CTA out.
std::vector<std::string> missed_commit_hints(const Kernel& k, const RunResult& r, const HangInput::Warp& w, const Past& past) {
  std::vector<std::string> out;
  const auto it = past.missed.find({w.cta, w.slot});
  if (it == past.missed.end()) return out;
  const int rank = cta_coord(k, w.cta).rank;
  for (const MissedCommit& m : it->second) {
    std::string ranks;
    for (int x : m.ranks) ranks += (ranks.empty() ? "" : ", ") + std::to_string(x);
    std::string mask;
    for (int64_t v = m.mask; v > 0; v >>= 1) mask.insert(mask.begin(), (v & 1) ? '1' : '0');
    out.push_back(std::to_string(m.count) + " tcgen05.commit(s) to " + slot_name(k, w.slot, r) + " at " + line_of(k, m.site) + " by warp" +
                  (m.warps.size() > 1 ? "s " : " ") + fold_list({m.warps.begin(), m.warps.end()}) + role_suffix(k, m.role) +
                  " of cluster rank" + (m.ranks.size() > 1 ? "s " : " ") + ranks + " went to mask 0b" + mask +
                  ", which leaves out this CTA (rank " + std::to_string(rank) + ")");
  }
  return out;
}

}  // namespace

std::string short_origin(const std::string& origin) {
  static const std::string kInclude = "/include/";
  std::string out;
  size_t at = 0;
  while (at < origin.size()) {
    // One position per ", called at " piece: cut its path after the last "/include/".
    size_t end = origin.find(", called at ", at);
    if (end == std::string::npos) end = origin.size();
    std::string piece = origin.substr(at, end - at);
    if (const size_t inc = piece.rfind(kInclude); inc != std::string::npos) piece = piece.substr(inc + kInclude.size());
    out += piece;
    if (end < origin.size()) out += ", called at ";
    at = end == origin.size() ? end : end + 12;
  }
  return out;
}

std::string fold_list(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  int pieces = 0;
  for (size_t i = 0; i < v.size();) {
    // The longest run from i with one step; a run of three or more is one piece.
    size_t j = i;
    const int step = i + 1 < v.size() ? v[i + 1] - v[i] : 0;
    while (j + 1 < v.size() && v[j + 1] - v[j] == step) ++j;
    if (pieces++ == 8) { out += ", ..."; break; }
    if (!out.empty()) out += ", ";
    if (j - i >= 2 && step == 1) {
      out += std::to_string(v[i]) + "-" + std::to_string(v[j]);
    } else if (j - i >= 3) {
      out += std::to_string(v[i]) + ", " + std::to_string(v[i + 1]) + ", ..., " + std::to_string(v[j]);
    } else {
      out += std::to_string(v[i]);
      j = i;  // shorter runs: one number per piece (the next may start a run of its own)
    }
    i = j + 1;
  }
  return out;
}

void explain_hang(HangInput& in) {
  const Kernel& k = in.kernel;
  HangReport& rep = in.result.hang;
  rep.unlaunched_clusters = in.unlaunched_clusters;
  const int n = static_cast<int>(in.warps.size());

  // Resources waited on, per cluster, and the warps of each cluster.
  std::map<int, std::set<Key>> interest;
  std::map<int, std::vector<int>> cluster_warps;
  std::set<Key> tmem_keys;  // TMEM is per SM: any CTA on that SM can free it
  for (int i = 0; i < n; ++i) {
    const auto& w = in.warps[static_cast<size_t>(i)];
    const int cl = cta_coord(k, w.cta).cluster;
    cluster_warps[cl].push_back(i);
    if (w.wait == WaitKind::Tmem) tmem_keys.insert(key_of_wait(k, in, w));
    else if (w.wait != WaitKind::None) interest[cl].insert(key_of_wait(k, in, w));
  }
  for (auto& [cl, ws] : cluster_warps) interest[cl].insert(tmem_keys.begin(), tmem_keys.end());

  // Look ahead in every live warp's own stream for the first op that touches each resource of
  // interest in its cluster. Budgeted so pipesim never stalls on a huge scenario: 4 M ops in all
  // (0.1 s; 20 M made a hang whose warps loop 10^13 times without touching a barrier of interest
  // take 0.5 s to explain, 12 s under the fuzzer's sanitisers: tests/fuzz/regressions/scenario/).
  const int64_t budget_per_warp = std::max<int64_t>(4096, 4'000'000 / std::max(1, n));
  std::vector<std::unordered_map<Key, uint32_t>> future(static_cast<size_t>(n));
  bool truncated = false;
  for (int i = 0; i < n; ++i) {
    auto& w = in.warps[static_cast<size_t>(i)];
    const std::set<Key>& want = interest[cta_coord(k, w.cta).cluster];
    if (want.empty()) continue;
    WarpProgram prog = w.prog;
    Op op;
    int64_t steps = 0;
    auto& found = future[static_cast<size_t>(i)];
    try {
      while (found.size() < want.size()) {
        if (++steps > budget_per_warp) { truncated = true; break; }
        if (!prog.next(op)) break;
        contributions(k, in, w.cta, op, [&](Key key) {
          if (want.count(key) && !found.count(key)) found.emplace(key, op.site);
        });
      }
    } catch (const ScenarioError&) {
      // The warp's own program would fail further on; what was found so far stands.
    }
  }

  // The past of the warps of clusters with a blocked mbarrier wait (explain_past.hpp).
  std::set<std::pair<int, uint32_t>> waited;
  std::set<std::pair<int, int>> blocked_on_mbarrier;
  for (const auto& w : in.warps)
    if (w.wait == WaitKind::Mbarrier) {
      waited.insert({w.cta, w.slot});
      blocked_on_mbarrier.insert({w.cta, w.warp});
    }
  const Past past = replay_past(k, in.result, waited, blocked_on_mbarrier, 20'000'000);

  // Wait-for edges: W -> X when X could still advance what W waits on.
  std::vector<std::vector<int>> edges(static_cast<size_t>(n));
  struct Desc { std::string key; HangGroup g; };
  std::vector<Desc> descs;
  for (int i = 0; i < n; ++i) {
    const auto& w = in.warps[static_cast<size_t>(i)];
    if (w.wait == WaitKind::None) continue;
    const Key key = key_of_wait(k, in, w);
    HangGroup g;
    g.members.push_back({w.cta, w.warp});
    g.role = w.role;
    g.site = w.op.site;
    g.waits_on = waits_on(k, w, in.result);
    const int cl = cta_coord(k, w.cta).cluster;
    std::vector<int> candidates = cluster_warps[cl];
    if (w.wait == WaitKind::Tmem) {
      candidates.clear();
      const int sm = in.sm_of_cta[static_cast<size_t>(w.cta)];
      for (int j = 0; j < n; ++j)
        if (in.sm_of_cta[static_cast<size_t>(in.warps[static_cast<size_t>(j)].cta)] == sm) candidates.push_back(j);
    }
    if (w.wait == WaitKind::Wgmma) {  // only a warp of its own warpgroup can issue the rest
      candidates.clear();
      for (int j : cluster_warps[cl])
        if (in.warps[static_cast<size_t>(j)].cta == w.cta && in.warps[static_cast<size_t>(j)].warp / 4 == w.warp / 4) candidates.push_back(j);
    }
    if (w.wait == WaitKind::TmemPair) {  // only a warp of the peer CTA can join
      candidates.clear();
      for (int j : cluster_warps[cl])
        if (in.warps[static_cast<size_t>(j)].cta == pair_peer(k, w.cta)) candidates.push_back(j);
    }
    // Unblockers, aggregated by what they are doing: role, same CTA or not, the site that
    // would arrive, and where they are stuck.
    struct Agg { std::vector<int> warps; std::set<int> ranks; std::string text; };
    std::map<std::string, Agg> aggs;
    std::vector<std::string> order;
    for (int j : candidates) {
      const auto& x = in.warps[static_cast<size_t>(j)];
      // A warp that already arrived in the current phase of a named or cluster barrier cannot
      // help it: its next arrival belongs to the next phase.
      if (w.wait == WaitKind::Named && x.cta == w.cta && ((x.named_arrived_mask >> w.op.a) & 1)) continue;
      if (w.wait == WaitKind::Cluster && x.cluster_arrived) continue;
      auto it = future[static_cast<size_t>(j)].find(key);
      std::string how;
      if (it != future[static_cast<size_t>(j)].end()) {
        how = "would arrive at " + line_of(k, it->second);
      } else if (w.wait == WaitKind::Cluster && j != i && x.wait != WaitKind::Cluster) {
        how = "has not arrived on the cluster barrier (it must arrive or exit)";
      } else {
        continue;
      }
      edges[static_cast<size_t>(i)].push_back(j);
      if (j == i) {
        g.unblockers.push_back("this warp itself " + how + ", after the wait it is stuck in");
        continue;
      }
      std::string stuck = x.wait != WaitKind::None ? ", but is blocked at " + line_of(k, x.op.site) + " on " + waits_on(k, x, in.result) : "";
      const bool same = x.cta == w.cta;
      if (w.wait == WaitKind::Tmem && !same) how += " (CTA " + std::to_string(x.cta) + " on the same SM)";
      std::string sig = std::to_string(x.role) + "|" + (same ? "s" : "o") + "|" + how + stuck;
      auto [a, fresh] = aggs.try_emplace(sig);
      if (fresh) order.push_back(sig);
      if (std::find(a->second.warps.begin(), a->second.warps.end(), x.warp) == a->second.warps.end()) a->second.warps.push_back(x.warp);
      if (!same) a->second.ranks.insert(cta_coord(k, x.cta).rank);
      a->second.text = how + stuck;
    }
    // A program the explainer cannot look ahead in (an external one: PTX): who could arrive is not
    // known, so say what every other live warp of the cluster is doing.
    if (k.external && w.wait != WaitKind::Tmem) {
      for (int j : candidates) {
        const auto& x = in.warps[static_cast<size_t>(j)];
        // Warps in this warp's own situation (the same wait at the same place) are its group, not news.
        if (j == i || (x.wait == w.wait && x.op.site == w.op.site && key_of_wait(k, in, x) == key)) continue;
        const bool same = x.cta == w.cta;
        std::string what = x.wait != WaitKind::None ? "blocked at " + line_of(k, x.op.site) + " on " + waits_on(k, x, in.result)
                                                    : "running at " + line_of(k, x.op.site);
        std::string sig = std::to_string(x.role) + "|" + (same ? "s" : "o") + "|" + what;
        auto [a, fresh] = aggs.try_emplace(sig);
        if (fresh) order.push_back(sig);
        if (std::find(a->second.warps.begin(), a->second.warps.end(), x.warp) == a->second.warps.end()) a->second.warps.push_back(x.warp);
        if (!same) a->second.ranks.insert(cta_coord(k, x.cta).rank);
        a->second.text = what;
      }
    }
    // Same-CTA helpers first, then the cluster peers; the key ignores order and ranks, so
    // the same situation in every CTA of a cluster forms one group.
    std::stable_sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
      return a.find("|s|") != std::string::npos && b.find("|s|") == std::string::npos;
    });
    {
      std::vector<std::string> sorted = order;
      std::sort(sorted.begin(), sorted.end());
      for (const std::string& sig : sorted) g.key += sig + ";";
    }
    for (const std::string& sig : order) {
      const Agg& a = aggs[sig];
      const int xrole = std::stoi(sig.substr(0, sig.find('|')));
      const std::string ws = fold_list(a.warps);
      std::string where;
      if (!a.ranks.empty()) {
        where = " of cluster rank";
        where += a.ranks.size() > 1 ? "s " : " ";
        size_t q = 0;
        for (int r : a.ranks) where += (q++ ? ", " : "") + std::to_string(r);
      }
      std::string text = a.text;
      if (a.warps.size() > 1) {
        if (size_t p = text.find(", but is blocked"); p != std::string::npos) text.replace(p, 16, ", but are blocked");
        if (size_t p = text.find("has not arrived"); p != std::string::npos) text.replace(p, 15, "have not arrived");
        if (size_t p = text.find("(it must"); p != std::string::npos) text.replace(p, 8, "(each must");
      }
      g.unblockers.push_back((a.warps.size() > 1 ? "warps " : "warp ") + ws + role_suffix(k, xrole) + where + " " + text);
    }
    if (w.wait == WaitKind::Mbarrier) {
      const BarrierState& b = in.result.barriers[static_cast<size_t>(w.cta)][w.slot];
      g.state = b;
      const BarrierArray* arr = nullptr;
      {
        uint32_t s = w.slot;
        for (const BarrierArray& a : k.barriers) {
          if (s < a.size) { arr = &a; break; }
          s -= a.size;
        }
      }
      // "More arrivals" is the reading only when this warp's waits kept step with the barrier's phases;
      // a wait that skipped a phase (its own missing wait, or an extra completion) says so instead.
      if (std::string skip = phase_skip_hint(k, in.result, w, b, past); !skip.empty())
        g.hints.push_back(skip);
      else
        g.hints.push_back("it needs phase " + std::to_string(b.completed) + " to complete: " +
                          (b.pending > 0 ? std::to_string(b.pending) + " more arrival(s) of " + std::to_string(b.expected) : std::string("all arrivals are in")) +
                          (b.tx > 0 ? ", " + std::to_string(b.tx) + " more byte(s)" : b.tx < 0 ? ", and tx back to 0" : ""));
      for (const std::string& m : missed_commit_hints(k, in.result, w, past)) g.hints.push_back(m);
      if (b.tx < 0)
        g.hints.push_back("tx is " + std::to_string(b.tx) + ": " + std::to_string(-b.tx) +
                          " more byte(s) landed than were expected; only another expect_tx of that many bytes can complete the phase (bytes overshoot the expect_tx)");
      if (b.tx > 0 && b.pending == 0)
        g.hints.push_back("every arrival is in but " + std::to_string(b.tx) +
                          " expected byte(s) never landed: the expect_tx is larger than what the copies deliver");
      if (w.op.flags & kFlagStateOverridden)
        g.hints.push_back(std::string("this wait comes from a ") + (w.op.flags & kFlagProducerSide ? "producer" : "consumer") +
                          " pipeline state the scenario overrides; CUTLASS starts producer states at phase 1 (a fresh empty barrier passes parity 1) and consumer states at phase 0");
      if (b.last_warp >= 0) {
        std::string now = "has exited";
        for (const auto& x : in.warps)
          if (x.cta == b.last_cta && x.warp == b.last_warp)
            now = x.wait != WaitKind::None ? "is blocked at " + line_of(k, x.op.site) + " on " + waits_on(k, x, in.result) : "is still running";
        g.hints.push_back("the last arrival on it was warp " + std::to_string(b.last_warp) +
                          (b.last_cta != w.cta ? " of CTA " + std::to_string(b.last_cta) : std::string()) + " at " +
                          line_of(k, b.last_site) + ", which " + now);
      } else {
        g.hints.push_back("nothing has arrived on it since its init");
      }
      if (g.unblockers.empty() && arr && !k.external) {
        std::vector<std::string> sites;
        for (size_t r = 0; r < k.roles.size(); ++r)
          static_arrivers(k, static_cast<uint32_t>(&*arr - k.barriers.data()), k.roles[r].body, static_cast<int>(r), sites);
        std::string h = "no live warp of the cluster will arrive on " + slot_name(k, w.slot, in.result) + " again";
        if (!sites.empty()) {
          h += "; arrivals on " + arr->name + " come from ";
          for (size_t i2 = 0; i2 < sites.size(); ++i2) h += (i2 ? ", " : "") + sites[i2];
          h += ", which these warps have passed, skipped (zero-trip loop or untaken branch) or exited";
        }
        g.hints.push_back(h);
      }
    } else if (w.wait == WaitKind::Tmem) {
      const int sm = in.sm_of_cta[static_cast<size_t>(w.cta)];
      std::string holders;
      for (size_t c = 0; c < in.tmem_held.size(); ++c)
        if (in.sm_of_cta[c] == sm && in.tmem_held[c] > 0)
          holders += (holders.empty() ? "" : ", ") + ("CTA " + std::to_string(c) + " holds " + std::to_string(in.tmem_held[c]));
      const int64_t own = in.tmem_held[static_cast<size_t>(w.cta)];
      std::string why = ": CTAs sharing an SM share its TMEM, so an allocation waits for the other CTA's dealloc";
      if (own > 0 && own + w.op.a > 512)
        why = ": this CTA already holds " + std::to_string(own) + " columns, so " + std::to_string(own) + " + " +
              std::to_string(w.op.a) + " > 512 can never be met while it keeps them";
      g.hints.push_back("SM " + std::to_string(sm) + " has " + std::to_string(in.tmem_free[static_cast<size_t>(sm)]) +
                        " of 512 TMEM columns free" + (holders.empty() ? std::string() : "; " + holders) + why);
    } else if (w.wait == WaitKind::TmemPair) {
      const int peer = pair_peer(k, w.cta);
      bool peer_live = false;
      for (const auto& x : in.warps) peer_live |= x.cta == peer;
      g.hints.push_back(std::string("a ") + pair_op(w.op) + " is collective: one warp of each CTA of the pair (cluster ranks " +
                        std::to_string(cta_coord(k, std::min(w.cta, peer)).rank) + ", " + std::to_string(cta_coord(k, std::max(w.cta, peer)).rank) +
                        ") issues it, and it completes when both have; the peer (rank " + std::to_string(cta_coord(k, peer).rank) + ")" +
                        (peer_live ? " has not issued it" : " has exited without issuing it"));
    } else if (w.wait == WaitKind::Named) {
      g.hints.push_back(std::to_string(w.named_arrived) + " of " + std::to_string(w.op.b) + " threads have arrived");
      if (g.unblockers.empty())
        g.hints.push_back("no other live warp of this CTA will arrive on named barrier " + std::to_string(w.op.a) +
                          ": the thread count is larger than the warps that take part, or they skipped it");
    }
    Desc d;
    d.key = std::to_string(w.role) + "|" + std::to_string(g.site) + "|" + g.waits_on + "|" + g.key;
    if (g.state) d.key += "|" + std::to_string(g.state->completed) + "/" + std::to_string(g.state->pending) + "/" + std::to_string(g.state->tx);
    d.g = std::move(g);
    descs.push_back(std::move(d));
  }
  // Group identical situations (the same warp, site and state in many CTAs).
  std::map<std::string, size_t> index;
  for (Desc& d : descs) {
    auto it = index.find(d.key);
    if (it == index.end()) {
      index.emplace(d.key, rep.groups.size());
      rep.groups.push_back(std::move(d.g));
    } else {
      rep.groups[it->second].members.push_back(d.g.members.front());
    }
  }
  if (truncated)
    for (HangGroup& g : rep.groups) g.hints.push_back("look-ahead was limited to " + std::to_string(budget_per_warp) + " ops per warp");
  if (past.truncated)
    for (HangGroup& g : rep.groups) g.hints.push_back("the replay of the warps' past stopped after 20000000 ops: hints on skipped phases and commits may be missing");

  // Cycles: strongly connected components of the wait-for graph (Tarjan, iterative-safe sizes).
  std::vector<int> idx(static_cast<size_t>(n), -1), low(static_cast<size_t>(n), 0), comp(static_cast<size_t>(n), -1);
  std::vector<char> on(static_cast<size_t>(n), 0);
  std::vector<int> st;
  int counter = 0, ncomp = 0;
  std::function<void(int)> strong = [&](int v) {
    idx[static_cast<size_t>(v)] = low[static_cast<size_t>(v)] = counter++;
    st.push_back(v);
    on[static_cast<size_t>(v)] = 1;
    for (int u : edges[static_cast<size_t>(v)]) {
      if (idx[static_cast<size_t>(u)] < 0) {
        strong(u);
        low[static_cast<size_t>(v)] = std::min(low[static_cast<size_t>(v)], low[static_cast<size_t>(u)]);
      } else if (on[static_cast<size_t>(u)]) {
        low[static_cast<size_t>(v)] = std::min(low[static_cast<size_t>(v)], idx[static_cast<size_t>(u)]);
      }
    }
    if (low[static_cast<size_t>(v)] == idx[static_cast<size_t>(v)]) {
      int u;
      do {
        u = st.back();
        st.pop_back();
        on[static_cast<size_t>(u)] = 0;
        comp[static_cast<size_t>(u)] = ncomp;
      } while (u != v);
      ++ncomp;
    }
  };
  for (int v = 0; v < n; ++v)
    if (idx[static_cast<size_t>(v)] < 0 && in.warps[static_cast<size_t>(v)].wait != WaitKind::None) strong(v);

  std::set<std::string> seen;
  std::vector<char> done_comp(static_cast<size_t>(ncomp), 0);
  for (int v = 0; v < n && rep.cycles.size() < 5; ++v) {
    const int c = comp[static_cast<size_t>(v)];
    if (c < 0 || done_comp[static_cast<size_t>(c)]) continue;
    done_comp[static_cast<size_t>(c)] = 1;
    // Walk inside the component until a node repeats: that is a cycle.
    std::vector<int> path{v};
    std::map<int, size_t> pos{{v, 0}};
    bool cyc = false;
    while (true) {
      int next = -1;
      for (int u : edges[static_cast<size_t>(path.back())])
        if (comp[static_cast<size_t>(u)] == c) { next = u; break; }
      if (next < 0) break;
      auto p = pos.find(next);
      if (p != pos.end()) {
        path.erase(path.begin(), path.begin() + static_cast<long>(p->second));
        path.push_back(next);
        cyc = true;
        break;
      }
      pos[next] = path.size();
      path.push_back(next);
    }
    if (!cyc) continue;
    const int ref = in.warps[static_cast<size_t>(path.front())].cta;
    std::string s;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      const auto& a = in.warps[static_cast<size_t>(path[i])];
      const auto& b = in.warps[static_cast<size_t>(path[i + 1])];
      auto f = future[static_cast<size_t>(path[i + 1])].find(key_of_wait(k, in, a));
      if (i == 0) s += who(k, a, ref) + " waits on " + waits_on(k, a, in.result) + " at " + line_of(k, a.op.site);
      s += "; that needs " + who(k, b, ref) +
           (f != future[static_cast<size_t>(path[i + 1])].end() ? " to reach " + line_of(k, f->second) : std::string(" to arrive"));
      if (i + 2 < path.size()) s += ", but it waits on " + waits_on(k, b, in.result) + " at " + line_of(k, b.op.site);
      else s += ": a deadlock";
    }
    if (seen.insert(s).second) rep.cycles.push_back(s);
  }
}

}  // namespace pipesim::sim

namespace pipesim::sim {

void describe_stop(HangInput& in) {
  const Kernel& k = in.kernel;
  HangReport& rep = in.result.hang;
  rep.unlaunched_clusters = in.unlaunched_clusters;
  // One group per (role, site, what the warp does there); no look-ahead: a stopped run is a long
  // one, and its warps' futures are what did not finish.
  std::map<std::string, size_t> index;
  for (const HangInput::Warp& w : in.warps) {
    const std::string doing = w.wait == WaitKind::None ? std::string() : waits_on(k, w, in.result);
    const std::string key = std::to_string(w.role) + "|" + std::to_string(w.op.site) + "|" + doing;
    auto [it, fresh] = index.try_emplace(key, rep.groups.size());
    if (fresh) {
      HangGroup g;
      g.role = w.role;
      g.site = w.op.site;
      g.waits_on = doing;
      if (w.wait == WaitKind::Mbarrier) g.state = in.result.barriers[static_cast<size_t>(w.cta)][w.slot];
      g.key = key;
      rep.groups.push_back(std::move(g));
    }
    rep.groups[it->second].members.push_back({w.cta, w.warp});
  }
}

std::string stop_summary(const RunResult& r) {
  const char* budget = r.stopped_by == RunResult::StopCause::Seconds        ? "--max-seconds"
                       : r.stopped_by == RunResult::StopCause::Instructions ? "--max-instructions"
                                                                            : "--max-events";
  std::string s = "stopped after " + std::to_string(r.events) + " events";
  if (r.instructions > 0) s += " and " + std::to_string(r.instructions) + " PTX instructions";
  char tail[160];
  std::snprintf(tail, sizeof tail, " / %.1f s at simulated time %.3f us: the kernel did not finish; raise %s to go on", r.stopped_after_s,
                r.end_ns / 1000.0, budget);
  return s + tail;
}

}  // namespace pipesim::sim
