#include "verify/crosscheck_compare.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "sim/lowering.hpp"
#include "sim/rules.hpp"
#include "verify/explore.hpp"
#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

std::string first_kind(const sim::RunResult& r) {
  for (const sim::Finding& f : r.findings)
    if (f.fatal) return f.kind;
  return {};
}

std::string bar_label(const sim::Kernel& k, uint32_t slot) {
  uint32_t base = 0;
  for (const sim::BarrierArray& a : k.barriers) {
    if (slot < base + a.size) return fmt::format("{}[{}]", a.name, slot - base);
    base += a.size;
  }
  return fmt::format("slot {}", slot);
}

std::string op_text(const sim::Kernel& k, const sim::OpStreams& s, uint64_t gi) {
  if (gi >= s.ops.size()) return "?";
  const sim::DevOp& op = s.ops[gi];
  const auto kind = static_cast<sim::OpKind>(op.kind);
  std::string t(sim::op_name(kind));
  switch (kind) {
    case sim::OpKind::Wait: case sim::OpKind::TestWait:
      t += fmt::format(" {} parity {}", bar_label(k, op.slot), op.a & 1);
      break;
    case sim::OpKind::NamedSync: case sim::OpKind::NamedArrive: t += fmt::format(" {} threads {}", op.a, op.b); break;
    default: break;
  }
  const uint32_t site = gi < s.sites.size() ? s.sites[gi] : UINT32_MAX;
  if (site < k.sites.size()) t += fmt::format(" (line {})", k.sites[site].loc.line);
  return t;
}

bool is_blocking(sim::OpKind k) {
  return k == sim::OpKind::Wait || k == sim::OpKind::NamedSync || k == sim::OpKind::ClusterWait ||
         k == sim::OpKind::WaitGroup || k == sim::OpKind::TmemAlloc;
}


// A device warp that ended blocked: the one that timed out, those stopped on the hang, those in a
// bar.sync / cluster wait, and (the host's watchdog having fired) those still running.
bool device_warp_blocked(const sim::DevWarpRecord& r, bool watchdog) {
  const auto st = static_cast<sim::DevWarpStatus>(r.status);
  return st == sim::DevWarpStatus::TimedOut || st == sim::DevWarpStatus::StoppedOnHang || st == sim::DevWarpStatus::BlockedNamed ||
         st == sim::DevWarpStatus::BlockedCluster || (watchdog && st == sim::DevWarpStatus::Running);
}

// The op a model warp ended blocked in (the last one it began).
int64_t model_blocked_op(const sim::WarpEnd& w) { return std::max<int64_t>(0, w.ops_done - 1); }

// Every barrier whose end state both sides know: the device recorded it, and at least one side
// initialised it. fn(cta, slot, model state, device record).
template <class Fn>
void for_each_barrier_end(const sim::RunResult& m, const sim::OpStreams& s, const sim::DeviceResult& d, Fn&& fn) {
  if (d.barriers.size() != static_cast<size_t>(s.ctas) * s.slots) return;
  for (int cta = 0; cta < s.ctas; ++cta) {
    if (static_cast<size_t>(cta) >= m.barriers.size() || m.barriers[static_cast<size_t>(cta)].size() != s.slots) continue;
    for (uint32_t sl = 0; sl < s.slots; ++sl) {
      const sim::DevBarrierRecord& db = d.barriers[static_cast<size_t>(cta) * s.slots + sl];
      const sim::BarrierState& mb = m.barriers[static_cast<size_t>(cta)][sl];
      if (!db.valid || (!mb.initialised && !db.initialised)) continue;
      fn(cta, sl, mb, db);
    }
  }
}

// Per cluster: does a model run end there as the device did (the same blocked (warp, op) points and
// the same end parity of every barrier)? Clusters share no barrier, so each one's outcome depends only
// on its own interleaving: outcomes matched cluster by cluster in different runs compose.
std::vector<bool> clusters_matching(const sim::RunResult& m, const sim::OpStreams& s, const sim::DeviceResult& d) {
  const int nclusters = s.cluster > 0 ? s.ctas / s.cluster : 0;
  std::vector<bool> ok(static_cast<size_t>(nclusters), m.verdict != sim::Verdict::Error);
  const size_t nw = static_cast<size_t>(s.ctas) * static_cast<size_t>(s.warps_per_cta);
  if (d.warps.size() != nw || d.barriers.size() != static_cast<size_t>(s.ctas) * s.slots) return std::vector<bool>(ok.size(), false);
  std::vector<int64_t> model_blocked(nw, -1);
  std::vector<bool> model_ran(nw, false);
  for (const sim::WarpEnd& w : m.warps) {
    const size_t i = s.warp_index(w.cta, w.warp);
    if (i >= nw) continue;
    model_ran[i] = true;
    if (w.status == sim::WarpStatus::Blocked) model_blocked[i] = model_blocked_op(w);
  }
  for (size_t i = 0; i < nw; ++i) {
    const int cta = static_cast<int>(i / static_cast<size_t>(s.warps_per_cta));
    const sim::DevWarpRecord& r = d.warps[i];
    const auto st = static_cast<sim::DevWarpStatus>(r.status);
    const bool dev_ran = st != sim::DevWarpStatus::NotStarted && st != sim::DevWarpStatus::SkippedOnHang;
    const int64_t dev_blocked = device_warp_blocked(r, d.watchdog) ? r.op : -1;
    if (dev_ran != model_ran[i] || dev_blocked != model_blocked[i]) ok[static_cast<size_t>(cta / s.cluster)] = false;
  }
  for_each_barrier_end(m, s, d, [&](int cta, uint32_t, const sim::BarrierState& mb, const sim::DevBarrierRecord& db) {
    if (mb.initialised != (db.initialised != 0) || (mb.completed & 1) != db.parity) ok[static_cast<size_t>(cta / s.cluster)] = false;
  });
  return ok;
}

// Which clusters' device outcomes some model run reached. Clusters share no barrier, so runs that
// each match one cluster compose into one interleaving the model allows: once every cluster is
// covered, the model can reach the device's outcome. Only for outcomes the warps' records describe
// in full (ok, hang); a fault stops the whole kernel at one instant.
struct ClusterCover {
  std::vector<bool> seen;
  void add(const sim::RunResult& r, const sim::OpStreams& s, const sim::DeviceResult& d) {
    const std::vector<bool> m = clusters_matching(r, s, d);
    if (seen.empty()) seen.assign(m.size(), false);
    for (size_t c = 0; c < m.size() && c < seen.size(); ++c) seen[c] = seen[c] || m[c];
  }
  bool complete(const sim::DeviceResult& d) const {
    return !seen.empty() && std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }) &&
           (d.outcome == sim::DeviceOutcome::Ok || d.outcome == sim::DeviceOutcome::Hang);
  }
};

// The disagreement turned into agreement because runs that each match one cluster compose.
Comparison agreed_cluster_by_cluster(Comparison fixed, const std::string& how) {
  fixed.agreement = Agreement::AgreeTimingDependent;
  fixed.notes.push_back(fmt::format("{}, every cluster reaches its device outcome (hang points and end phases) in some run; clusters "
                                    "share no barrier, so together they are one interleaving the model allows (the listing shows "
                                    "the fixed-order run): the verdict depends on timing",
                                    how));
  return fixed;
}

}  // namespace

double error_pct(double model, double device) { return device > 0 ? 100.0 * (model - device) / device : 0.0; }

std::optional<sim::DeviceOutcome> expected_device_outcome(const sim::RunResult& m) {
  switch (m.verdict) {
    case sim::Verdict::Ok: return sim::DeviceOutcome::Ok;
    case sim::Verdict::Hang: return sim::DeviceOutcome::Hang;
    case sim::Verdict::Stopped: return std::nullopt;  // the model's run outlasted its budget: no prediction
    case sim::Verdict::Error: break;
  }
  const std::string k = first_kind(m);
  if (k == "pending_underflow") return sim::DeviceOutcome::Fault;  // probes U1, U2: the H100 traps
  if (k == "assertion") return sim::DeviceOutcome::Assertion;
  return std::nullopt;
}

bool device_may_run(const sim::RunResult& m, std::string& why) {
  if (m.verdict != sim::Verdict::Error) return true;
  static const std::set<std::string> undefined = {
      "remote_wait", "uninit", "reinit", "bad_operand", "count_range", "tx_range", "named_count_mismatch",
      "bad_mma_shape", "cta_group_mismatch", "tmem_bad_alloc", "tmem_leak", "tmem_dealloc_before_peer_alloc"};
  const std::string k = first_kind(m);
  if (undefined.count(k)) {
    why = "the model stops at `" + k + "`, which PTX cannot express or leaves undefined: not run on the device";
    return false;
  }
  return true;
}

std::string_view agreement_name(Agreement a) {
  switch (a) {
    case Agreement::Agree: return "agree";
    case Agreement::AgreeTimingDependent: return "agree (timing-dependent)";
    case Agreement::Disagree: return "DISAGREE";
    case Agreement::NotComparable: return "model-only rule";
    case Agreement::Skipped: return "skipped";
    case Agreement::Unavailable: return "unavailable";
  }
  return "?";
}

Comparison reconcile(const sim::Kernel& kernel, Comparison fixed, const Exploration& e, const sim::OpStreams& streams,
                     const sim::DeviceResult& device) {
  if (!fixed.disagrees()) return fixed;
  for (const Exploration::Run& run : e.runs) {
    Comparison alt = compare(kernel, run.result, streams, device);
    if (alt.agreement != Agreement::Agree) continue;
    std::string seen;
    for (const auto& [what, n] : e.outcomes) seen += fmt::format(", {} x{}", what, n);
    alt.agreement = Agreement::AgreeTimingDependent;
    alt.notes.push_back(fmt::format("the fixed-order model run gives `{}`; seed {} of {} explored interleavings reaches the device's "
                                    "outcome ({}): the verdict depends on timing",
                                    fixed.model_verdict, run.seed, e.runs.size(), seen.substr(2)));
    return alt;
  }
  ClusterCover cover;
  for (const Exploration::Run& run : e.runs) cover.add(run.result, streams, device);
  if (cover.complete(device))
    return agreed_cluster_by_cluster(std::move(fixed), fmt::format("across {} explored model interleavings", e.runs.size()));
  fixed.notes.push_back(fmt::format("none of {} explored model interleavings reaches the device's outcome", e.runs.size()));
  return fixed;
}

// The device's order of events as a replay (each op held until its stamp), when it has per-op stamps.
std::optional<sim::Replay> device_replay(const sim::OpStreams& streams, const sim::DeviceResult& device) {
  if (device.op_begin_ns.size() != streams.ops.size() || streams.ops.empty()) return std::nullopt;
  uint64_t t0 = ~uint64_t{0};
  for (uint64_t t : device.op_begin_ns)
    if (t != 0) t0 = std::min(t0, t);
  sim::Replay replay;
  replay.offsets = streams.offsets;  // the same per-warp layout: (cta * warps_per_cta + warp)
  replay.begin_ns.reserve(device.op_begin_ns.size());
  for (uint64_t t : device.op_begin_ns) replay.begin_ns.push_back(t == 0 || t0 == ~uint64_t{0} ? -1.0 : static_cast<double>(t - t0));
  return replay;
}

Comparison replay_device_order(const sim::Kernel& kernel, Comparison fixed, const sim::RunOptions& base, const sim::OpStreams& streams,
                               const sim::DeviceResult& device) {
  if (!fixed.disagrees()) return fixed;
  std::optional<sim::Replay> stamped = device_replay(streams, device);
  if (!stamped) {
    fixed.notes.push_back("no per-op device times (--no-timestamps): the device's order of events was not replayed");
    return fixed;
  }
  // The exact stamps first, then orders within the stamps' uncertainty: a stamp is taken when the
  // interpreter begins to dispatch an op, some 100 ns of shared issue slots before the op happens.
  constexpr int kNoisyReplays = 128;
  constexpr double kStampUncertaintyNs = 100;
  ClusterCover cover;  // clusters whose device outcome some replay reached
  // One replay set: the given stamps exactly, then `noisy` times moved within the uncertainty.
  const auto replays = [&](sim::Replay replay, int noisy, const std::string& how) -> std::optional<Comparison> {
    sim::RunOptions o = base;
    o.replay = &replay;
    for (int i = 0; i <= noisy; ++i) {
      replay.noise_ns = i == 0 ? 0.0 : kStampUncertaintyNs;
      // Latencies (TMA landing, wake-ups) carry no stamps: the noisy replays jitter them a little too,
      // which also lets a copy land in parts (docs/semantics.md).
      o.jitter = i == 0 ? 0.0 : 0.1;
      o.seed = base.seed + static_cast<uint64_t>(i);
      const sim::RunResult r = sim::run(kernel, o);
      Comparison alt = compare(kernel, r, streams, device);
      cover.add(r, streams, device);
      if (alt.agreement != Agreement::Agree) continue;
      alt.agreement = Agreement::AgreeTimingDependent;
      alt.notes.push_back(i == 0 ? fmt::format("the fixed-order model run gives `{}`; replaying the device's order of events ({}), the "
                                               "model reaches the device's outcome: the verdict depends on timing",
                                               fixed.model_verdict, how)
                                 : fmt::format("the fixed-order model run gives `{}`; replaying the device's order of events ({}) with "
                                               "each op moved by up to {:.0f} ns (the stamps' uncertainty; replay {} of {}), the model "
                                               "reaches the device's outcome: the verdict depends on timing",
                                               fixed.model_verdict, how, kStampUncertaintyNs, i, noisy));
      return alt;
    }
    return std::nullopt;
  };
  int held = 0;  // warps the device left in bar.sync, replayed arriving last
  const auto composed = [&] {
    return agreed_cluster_by_cluster(std::move(fixed), fmt::format("replaying the device's order of events within the stamps' {:.0f} ns ({} replays)",
                                                                   kStampUncertaintyNs, kNoisyReplays + 1));
  };
  try {
    if (auto hit = replays(*stamped, kNoisyReplays, "its per-op times")) return *hit;
    if (cover.complete(device)) return composed();
    // The device's end state tells an order its stamps cannot: a warp left blocked in bar.sync
    // arrived after that barrier's phase had completed without it, whatever its stamp says (taken
    // before a dispatch that costs ~270 ns for a named barrier). Held after every other stamp.
    sim::Replay late = *stamped;
    double last = 0;
    for (double t : late.begin_ns) last = std::max(last, t);
    for (int cta = 0; cta < streams.ctas; ++cta)
      for (int w = 0; w < streams.warps_per_cta; ++w) {
        const size_t wi = streams.warp_index(cta, w);
        if (wi >= device.warps.size() || device.warps[wi].status != static_cast<uint8_t>(sim::DevWarpStatus::BlockedNamed)) continue;
        const uint64_t gi = streams.begin(cta, w) + static_cast<uint64_t>(device.warps[wi].op);
        if (device.warps[wi].op < 0 || gi >= streams.end(cta, w)) continue;
        late.begin_ns[gi] = last + 1000;
        ++held;
      }
    if (held > 0)
      if (auto hit = replays(std::move(late), 16, fmt::format("its per-op times, with the {} warp(s) it left in bar.sync arriving last", held)))
        return *hit;
  } catch (const std::exception&) {
    return fixed;
  }
  if (cover.complete(device)) return composed();
  fixed.notes.push_back(fmt::format("replaying the device's order of events (its per-op times, exactly and {} times within {:.0f} ns{}), "
                                    "the model still does not reach the device's outcome",
                                    kNoisyReplays, kStampUncertaintyNs,
                                    held ? fmt::format("; and with the {} warp(s) left in bar.sync arriving last", held) : ""));
  return fixed;
}

// Last resort before a disagreement stands: where the copies land in parts (a split or not at each
// landing that could complete a phase early), in the fixed order and, with stamps, in the device's.
// First one run guided by the device's end state (split where that moves the barrier's parity toward
// the device's), then every combination depth first. Random jitter reaches a pattern of n such
// choices over several CTAs with odds 2^-n.
Comparison search_parts(const sim::Kernel& kernel, Comparison fixed, const sim::RunOptions& base, const sim::OpStreams& streams,
                        const sim::DeviceResult& device) {
  if (!fixed.disagrees()) return fixed;
  constexpr int kBudget = 4096;  // runs per order
  const std::optional<sim::Replay> stamped = device_replay(streams, device);
  const auto toward_device = [&](const sim::PartsChoice& c) {
    const size_t i = static_cast<size_t>(c.cta) * streams.slots + c.slot;
    return i < device.barriers.size() && device.barriers[i].valid && device.barriers[i].parity != (c.completed & 1);
  };
  ClusterCover cover;
  int runs = 0;
  std::optional<Comparison> hit;
  const auto judge = [&](const sim::RunResult& r) {
    ++runs;
    cover.add(r, streams, device);
    Comparison alt = compare(kernel, r, streams, device);
    if (alt.agreement != Agreement::Agree) return false;
    hit = std::move(alt);
    return true;
  };
  std::vector<const sim::Replay*> orders{nullptr};  // the fixed order, then the device's
  if (stamped) orders.push_back(&*stamped);
  for (const sim::Replay* replay : orders) {
    sim::RunOptions o = base;
    o.jitter = 0;
    o.replay = replay;
    try {
      o.parts_choice = toward_device;
      if (!judge(sim::run(kernel, o))) {
        o.parts_choice = nullptr;
        enumerate_parts(kernel, o, kBudget, [&](const sim::RunResult& r) { return judge(r); });
      }
    } catch (const std::exception&) {
      return fixed;
    }
    if (hit) {
      hit->agreement = Agreement::AgreeTimingDependent;
      hit->notes.push_back(fmt::format("the fixed-order model run gives `{}`; {} with copies landing in parts where the H100 can split "
                                       "them (run {} of a systematic search), the model reaches the device's outcome: the verdict "
                                       "depends on timing",
                                       fixed.model_verdict, replay ? "replaying the device's order of events" : "in the fixed order", runs));
      return *hit;
    }
  }
  if (cover.complete(device))
    return agreed_cluster_by_cluster(std::move(fixed), fmt::format("over {} runs of the ways copies can land in parts", runs));
  fixed.notes.push_back(fmt::format("none of {} runs over the ways copies can land in parts (fixed order{}) reaches the device's outcome",
                                    runs, stamped ? " and the device's" : ""));
  return fixed;
}

Comparison compare(const sim::Kernel& k, const sim::RunResult& m, const sim::OpStreams& s, const sim::DeviceResult& d) {
  Comparison c;
  c.model_verdict = outcome_text(m);
  c.device_verdict = d.outcome == sim::DeviceOutcome::Fault && d.message.find("unspecified launch failure") != std::string::npos
                         ? "fault (unspecified launch failure)"
                         : std::string(sim::device_outcome_name(d.outcome));
  c.model_kernel_ns = m.end_ns;
  c.device_span_ns = d.span_ns;
  c.device_kernel_ns = d.kernel_ns;
  c.device_sm_mhz = d.sm_mhz;
  const auto want = expected_device_outcome(m);
  if (want) c.expected_device = std::string(sim::device_outcome_name(*want));
  if (d.outcome == sim::DeviceOutcome::Unavailable) {
    c.agreement = Agreement::Unavailable;
    return c;
  }
  if (d.outcome == sim::DeviceOutcome::Skipped) {
    c.agreement = Agreement::Skipped;
    return c;
  }
  if (!want) {
    c.agreement = Agreement::NotComparable;
    c.notes.push_back("the model reports `" + first_kind(m) + "`, a rule the hardware does not check; the device " +
                      (d.outcome == sim::DeviceOutcome::Ok ? "ran it to the end" : "shows " + c.device_verdict));
  } else {
    c.agreement = *want == d.outcome ? Agreement::Agree : Agreement::Disagree;
    if (c.agreement == Agreement::Disagree)
      c.notes.push_back(fmt::format("verdicts differ: the model's `{}` means `{}` on the device, which shows `{}`", c.model_verdict,
                                    c.expected_device, c.device_verdict));
  }

  if (s.uses_tcgen05 && c.agreement != Agreement::NotComparable) {
    // sm_90a has no tcgen05: the device ran an emulation (MMA = spin, commit = plain arrive, no
    // empty-commit rule), so its outcome is shown but never counted as a hardware agreement.
    c.notes.push_back(fmt::format("tcgen05 emulated on sm_90a: not compared (the emulation would {} the model)",
                                  c.agreement == Agreement::Agree ? "agree with" : "disagree with"));
    c.agreement = Agreement::NotComparable;
  }
  const size_t nw = static_cast<size_t>(s.ctas) * static_cast<size_t>(s.warps_per_cta);
  const bool have_warps = d.warps.size() == nw;

  // Hang points (only for hangs: an error stops the model mid-flight).
  if (m.verdict == sim::Verdict::Hang || d.outcome == sim::DeviceOutcome::Hang) {
    if (m.verdict == sim::Verdict::Hang) {
      for (const sim::WarpEnd& w : m.warps)
        if (w.status == sim::WarpStatus::Blocked) c.model_hang.push_back({w.cta, w.warp, model_blocked_op(w), "blocked"});
      c.model_unlaunched_ctas = m.hang.unlaunched_clusters * s.cluster;
    }
    if (have_warps) {
      std::set<int> skipped;
      for (size_t i = 0; i < nw; ++i) {
        const sim::DevWarpRecord& r = d.warps[i];
        const auto st = static_cast<sim::DevWarpStatus>(r.status);
        const int cta = static_cast<int>(i / static_cast<size_t>(s.warps_per_cta)), warp = static_cast<int>(i % static_cast<size_t>(s.warps_per_cta));
        if (st == sim::DevWarpStatus::SkippedOnHang) skipped.insert(cta);
        if (device_warp_blocked(r, d.watchdog)) c.device_hang.push_back({cta, warp, r.op, std::string(sim::dev_status_name(st))});
      }
      c.device_unlaunched_ctas = static_cast<int>(skipped.size());
    }
    std::sort(c.model_hang.begin(), c.model_hang.end());
    std::sort(c.device_hang.begin(), c.device_hang.end());
    if (m.verdict == sim::Verdict::Hang && d.outcome == sim::DeviceOutcome::Hang) {
      auto key = [](const std::vector<HangPoint>& v) {
        std::vector<std::tuple<int, int, int64_t>> out;
        for (const HangPoint& h : v) out.emplace_back(h.cta, h.warp, h.op);
        return out;
      };
      c.hang_points_match = key(c.model_hang) == key(c.device_hang) && c.model_unlaunched_ctas == c.device_unlaunched_ctas;
      if (!have_warps) {
        c.hang_points_match = true;  // nothing to compare against
        c.notes.push_back("the device records could not be read: hang points not compared");
      }
      if (!c.hang_points_match && c.agreement != Agreement::NotComparable) {
        c.agreement = Agreement::Disagree;
        c.notes.push_back("both hang, at different points");
      }
    }
  }

  // End phases of every barrier both sides know (not after a model error: it stops mid-flight).
  if (m.verdict != sim::Verdict::Error) {
    for_each_barrier_end(m, s, d, [&](int cta, uint32_t sl, const sim::BarrierState& mb, const sim::DevBarrierRecord& db) {
      ++c.barriers_compared;
      if (mb.initialised != (db.initialised != 0))
        c.phase_mismatches.push_back(fmt::format("CTA {} {}: model {}, device {}", cta, bar_label(k, sl),
                                                 mb.initialised ? "initialised" : "not initialised",
                                                 db.initialised ? "initialised" : "not initialised"));
      else if ((mb.completed & 1) != db.parity)
        c.phase_mismatches.push_back(fmt::format("CTA {} {}: model phase {} (parity {}), device parity {} (raw 0x{:016x})", cta,
                                                 bar_label(k, sl), mb.completed, mb.completed & 1, db.parity, db.raw));
    });
    if (!c.phase_mismatches.empty() && c.agreement == Agreement::Agree) {
      c.agreement = Agreement::Disagree;
      c.notes.push_back("the barriers end in different phases");
    }
  }

  // Time per role: mean finish time of its warps from the kernel's start, and mean time blocked.
  if (have_warps && m.verdict == sim::Verdict::Ok && d.outcome == sim::DeviceOutcome::Ok) {
    std::map<std::pair<int, int>, double> model_end;
    for (const sim::TraceSpan& sp : m.spans)
      if (sp.warp >= 0) {
        double& e = model_end[{sp.cta, sp.warp}];
        e = std::max(e, sp.end_ns);
      }
    std::vector<double> model_blocked(k.roles.size(), 0.0);
    for (const auto& rw : m.role_waits)
      if (rw.role >= 0 && static_cast<size_t>(rw.role) < k.roles.size()) model_blocked[static_cast<size_t>(rw.role)] += rw.ns;
    uint64_t t0 = ~uint64_t{0};
    for (const sim::DevWarpRecord& r : d.warps)
      if (r.start_ns) t0 = std::min<uint64_t>(t0, r.start_ns);
    for (size_t r = 0; r < k.roles.size(); ++r) {
      RoleTiming rt;
      rt.role = k.roles[r].name;
      double me = 0, de = 0, db = 0;
      for (int cta = 0; cta < s.ctas; ++cta)
        for (int w = k.roles[r].warp_lo; w <= k.roles[r].warp_hi && w < s.warps_per_cta; ++w) {
          ++rt.warps;
          auto it = model_end.find({cta, w});
          me += it != model_end.end() ? it->second : 0.0;
          const sim::DevWarpRecord& rec = d.warps[s.warp_index(cta, w)];
          de += rec.end_ns > t0 ? static_cast<double>(rec.end_ns - t0) : 0.0;
          db += static_cast<double>(rec.blocked_ns);
        }
      if (rt.warps > 0) {
        rt.model_end_ns = me / rt.warps;
        rt.device_end_ns = de / rt.warps;
        rt.model_blocked_ns = model_blocked[r] / rt.warps;
        rt.device_blocked_ns = db / rt.warps;
      }
      c.roles.push_back(rt);
    }
  }
  return c;
}

std::string render_comparison(const sim::Kernel& k, const sim::OpStreams& s, const sim::DeviceResult& d, const Comparison& c) {
  std::string out;
  out += fmt::format("  verdict   model: {:<28} device: {:<34} {}\n", c.model_verdict, c.device_verdict, agreement_name(c.agreement));
  if (!c.expected_device.empty() && c.agreement == Agreement::Disagree)
    out += fmt::format("            (the model's verdict means `{}` on the device)\n", c.expected_device);
  if (!d.message.empty() && (d.outcome != sim::DeviceOutcome::Ok)) out += fmt::format("  device    {}\n", d.message);
  for (const std::string& n : c.notes) out += fmt::format("  note      {}\n", n);
  if (s.uses_tcgen05 && d.outcome != sim::DeviceOutcome::Unavailable && d.outcome != sim::DeviceOutcome::Skipped)
    out += "  note      tcgen05 emulated on sm_90a (MMA = timed spin, commit = plain arrive, TMEM alloc = bookkeeping): not a hardware result\n";
  if (!c.model_hang.empty() || !c.device_hang.empty()) {
    out += fmt::format("  hang points: model {} warp(s){}, device {} warp(s){}{}\n", c.model_hang.size(),
                       c.model_unlaunched_ctas ? fmt::format(" + {} CTA(s) never launched", c.model_unlaunched_ctas) : "",
                       c.device_hang.size(),
                       c.device_unlaunched_ctas ? fmt::format(" + {} CTA(s) never ran", c.device_unlaunched_ctas) : "",
                       c.hang_points_match ? " (same)" : " (DIFFERENT)");
    std::map<std::tuple<int, int, int64_t>, std::pair<std::string, std::string>> rows;
    for (const HangPoint& h : c.model_hang) rows[{h.cta, h.warp, h.op}].first = h.what;
    for (const HangPoint& h : c.device_hang) rows[{h.cta, h.warp, h.op}].second = h.what;
    // Points only one side has come first: with many CTAs the few that differ would otherwise sit
    // behind rows that agree.
    std::vector<std::pair<std::tuple<int, int, int64_t>, std::pair<std::string, std::string>>> order(rows.begin(), rows.end());
    const auto one_sided = [](const auto& r) { return r.second.first.empty() || r.second.second.empty(); };
    const size_t differing = static_cast<size_t>(std::count_if(order.begin(), order.end(), one_sided));
    std::stable_partition(order.begin(), order.end(), one_sided);
    constexpr size_t kShown = 12;
    for (size_t i = 0; i < order.size(); ++i) {
      if (i == kShown) {
        const size_t left_differ = differing > kShown ? differing - kShown : 0;
        out += fmt::format("    ... {} more ({})\n", order.size() - kShown,
                           left_differ ? fmt::format("{} of them on one side only", left_differ) : "all on both sides");
        break;
      }
      const auto& [key, v] = order[i];
      const auto [cta, warp, op] = key;
      const uint64_t gi = cta < s.ctas && warp < s.warps_per_cta ? s.begin(cta, warp) + static_cast<uint64_t>(op) : ~uint64_t{0};
      std::string raw;
      if (d.warps.size() == static_cast<size_t>(s.ctas) * s.warps_per_cta && cta < s.ctas && warp < s.warps_per_cta) {
        const sim::DevWarpRecord& r = d.warps[s.warp_index(cta, warp)];
        if (r.raw) raw = fmt::format(", raw 0x{:016x}", r.raw);
      }
      out += fmt::format("    CTA {} warp {} op {}: {:<40} model: {:<8} device: {}{}\n", cta, warp, op, op_text(k, s, gi),
                         v.first.empty() ? "-" : v.first, v.second.empty() ? "-" : v.second, raw);
    }
  }
  if (c.barriers_compared > 0 || !c.phase_mismatches.empty()) {
    out += fmt::format("  end phases: {} barrier(s) compared, {}\n", c.barriers_compared,
                       c.phase_mismatches.empty() ? "all the same parity" : fmt::format("{} differ", c.phase_mismatches.size()));
    for (size_t i = 0; i < c.phase_mismatches.size() && i < 12; ++i) out += "    " + c.phase_mismatches[i] + "\n";
  }
  if (d.outcome != sim::DeviceOutcome::Unavailable && d.outcome != sim::DeviceOutcome::Skipped) {
    out += fmt::format("  time      kernel: model {:.3f} us, device {:.3f} us (first warp start to last warp end; {:.3f} us by events){}\n",
                       c.model_kernel_ns / 1e3, c.device_span_ns / 1e3, c.device_kernel_ns / 1e3,
                       c.device_span_ns > 0 && c.model_verdict == "ok" && c.device_verdict == "ok"
                           ? fmt::format(", model {:+.1f} %", error_pct(c.model_kernel_ns, c.device_span_ns))
                           : "");
    if (c.device_sm_mhz > 0) out.insert(out.size() - 1, fmt::format(", SM clock {:.0f} MHz", c.device_sm_mhz));
    if (d.op_begin_ns.empty()) out.insert(out.size() - 1, ", timestamps off");
    if (c.model_native_ns > 0)
      out += fmt::format("            (model times include the interpreter's per-op cost; as a native kernel the model predicts {:.3f} us)\n",
                         c.model_native_ns / 1e3);
    for (const RoleTiming& r : c.roles)
      out += fmt::format("    role {:<14} {:>4} warps  finish: model {:10.3f} us  device {:10.3f} us ({:+6.1f} %)   blocked: model {:10.3f} us  device {:10.3f} us\n",
                         r.role, r.warps, r.model_end_ns / 1e3, r.device_end_ns / 1e3, error_pct(r.model_end_ns, r.device_end_ns),
                         r.model_blocked_ns / 1e3, r.device_blocked_ns / 1e3);
  }
  return out;
}

sim::RunResult device_timeline(const sim::Kernel& k, const sim::OpStreams& s, const sim::DeviceResult& d) {
  sim::RunResult r;
  r.verdict = d.outcome == sim::DeviceOutcome::Ok ? sim::Verdict::Ok
              : d.outcome == sim::DeviceOutcome::Hang ? sim::Verdict::Hang
                                                      : sim::Verdict::Error;
  const size_t nw = static_cast<size_t>(s.ctas) * static_cast<size_t>(s.warps_per_cta);
  if (d.warps.size() != nw) return r;
  uint64_t t0 = ~uint64_t{0}, t1 = 0;
  for (const sim::DevWarpRecord& w : d.warps)
    if (w.start_ns) {
      t0 = std::min<uint64_t>(t0, w.start_ns);
      t1 = std::max<uint64_t>(t1, w.end_ns);
    }
  if (t0 == ~uint64_t{0}) return r;
  auto rel = [&](uint64_t t) { return t > t0 ? static_cast<double>(t - t0) : 0.0; };
  r.end_ns = rel(t1);
  for (int cta = 0; cta < s.ctas; ++cta)
    for (int w = 0; w < s.warps_per_cta; ++w) {
      const sim::DevWarpRecord& rec = d.warps[s.warp_index(cta, w)];
      const auto st = static_cast<sim::DevWarpStatus>(rec.status);
      sim::WarpEnd we;
      we.cta = cta;
      we.warp = w;
      we.role = sim::role_of_warp(k, w);
      we.status = st == sim::DevWarpStatus::Done ? sim::WarpStatus::Exited
                  : st == sim::DevWarpStatus::NotStarted || st == sim::DevWarpStatus::SkippedOnHang ? sim::WarpStatus::NotStarted
                                                                                                  : sim::WarpStatus::Blocked;
      we.ops_done = rec.op;
      if (s.begin(cta, w) + rec.op < s.end(cta, w) && s.begin(cta, w) + rec.op < s.sites.size()) we.site = s.sites[s.begin(cta, w) + rec.op];
      r.warps.push_back(we);
      if (d.op_begin_ns.size() != s.ops.size()) continue;
      const uint64_t b = s.begin(cta, w), e = s.end(cta, w);
      for (uint64_t i = b; i < e; ++i) {
        const uint64_t tb = d.op_begin_ns[i];
        if (tb == 0) break;
        const uint64_t te = i + 1 < e && d.op_begin_ns[i + 1] ? d.op_begin_ns[i + 1] : rec.end_ns;
        const auto kind = static_cast<sim::OpKind>(s.ops[i].kind);
        const bool blocked = is_blocking(kind);
        if (te <= tb) continue;
        // Every op gets its slice (stamp to the next stamp): on the device, issuing a copy or an
        // arrive costs the warp time too, and that is what a slow producer looks like.
        std::string label = blocked || kind != sim::OpKind::Compute ? op_text(k, s, i) : std::string(sim::op_name(kind));
        r.spans.push_back(sim::TraceSpan{cta, w, rel(tb), rel(te), i < s.sites.size() ? s.sites[i] : 0, std::move(label), blocked});
      }
    }
  for (int cta = 0; cta < s.ctas; ++cta) {
    std::vector<sim::BarrierState> v;
    for (uint32_t sl = 0; sl < s.slots && d.barriers.size() == static_cast<size_t>(s.ctas) * s.slots; ++sl) {
      const sim::DevBarrierRecord& b = d.barriers[static_cast<size_t>(cta) * s.slots + sl];
      v.push_back(sim::BarrierState{b.initialised != 0, b.parity, 0, 0, 0, -1, -1, 0});
    }
    r.barriers.push_back(std::move(v));
  }
  return r;
}

}  // namespace pipesim::verify
