#include "verify/json_report.hpp"

#include "verify/report.hpp"

#include "sim/explain.hpp"
#include "sim/rules.hpp"
#include "verify/ptx_budget.hpp"

#include <string>
#include <vector>

#include <fmt/format.h>

namespace pipesim::verify {
namespace {

using nlohmann::json;


std::string_view status_word(sim::WarpStatus s) {
  switch (s) {
    case sim::WarpStatus::Exited: return "exited";
    case sim::WarpStatus::Blocked: return "blocked";
    case sim::WarpStatus::Faulted: return "faulted";
    case sim::WarpStatus::NotStarted: return "not_started";
  }
  return "?";
}

bool uses_barrier(sim::OpKind k) {
  switch (k) {
    case sim::OpKind::Wait:
    case sim::OpKind::TestWait:
    case sim::OpKind::Arrive:
    case sim::OpKind::ArriveExpectTx:
    case sim::OpKind::ExpectTx:
    case sim::OpKind::CompleteTx:
    case sim::OpKind::ArriveDrop:
    case sim::OpKind::Init:
    case sim::OpKind::Inval:
    case sim::OpKind::TmaLoad:
    case sim::OpKind::Commit:
      return true;
    default:
      return false;
  }
}

std::string element_name(const sim::Kernel& k, uint32_t a, uint32_t i);

// Barrier arrays flattened in declaration order (sim::barrier_slot's numbering); for a PTX kernel the
// barriers it found, in the order it found them (one array, named by the run).
struct Slots {
  std::vector<uint32_t> first;  // first slot of each array
  std::vector<uint32_t> array;  // slot -> array
  std::vector<uint32_t> index;  // slot -> element
  std::vector<std::string> names;  // external programs: slot -> name
  Slots(const sim::Kernel& k, const sim::RunResult& r) {
    if (k.external) {
      first.push_back(0);
      for (uint32_t s = 0; s < r.barrier_names.size(); ++s) {
        array.push_back(0);
        index.push_back(s);
      }
      names = r.barrier_names;
      return;
    }
    uint32_t n = 0;
    for (uint32_t a = 0; a < k.barriers.size(); ++a) {
      first.push_back(n);
      for (uint32_t i = 0; i < k.barriers[a].size; ++i) {
        array.push_back(a);
        index.push_back(i);
      }
      n += k.barriers[a].size;
    }
  }
  std::optional<uint32_t> slot(uint32_t a, uint32_t i) const {
    if (a >= first.size()) return std::nullopt;
    uint32_t s = first[a] + i;
    if (s >= array.size() || array[s] != a) return std::nullopt;
    return s;
  }
  std::string name(const sim::Kernel& k, uint32_t a, uint32_t i) const {
    if (!names.empty()) return i < names.size() ? names[i] : fmt::format("#{}", i);
    return element_name(k, a, i);
  }
};

json interleavings_json(const CheckResult& c) {
  if (!c.interleavings) return nullptr;
  const CheckResult::Interleavings& s = *c.interleavings;
  json trails = json::array();
  for (const auto& t : s.trails)
    trails.push_back({{"outcome", t.outcome}, {"run", t.run}, {"seed", t.seed}, {"issue_scale", t.issue_scale}, {"start_skew", t.start_skew}});
  return json{{"runs", s.runs},
              {"jitter", s.jitter},
              {"outcomes", s.outcomes},
              {"race", s.race},
              {"trails", std::move(trails)},
              {"error", s.error.empty() ? json(nullptr) : json(s.error)}};
}

std::string element_name(const sim::Kernel& k, uint32_t a, uint32_t i) {
  if (a >= k.barriers.size()) return fmt::format("#{}[{}]", a, i);
  return fmt::format("{}[{}]", k.barriers[a].name, i);
}

sim::BarrierState initial_state(const sim::BarrierArray& a) {
  sim::BarrierState s;
  if (a.init_count) {
    s.initialised = true;
    s.pending = s.expected = *a.init_count;
  }
  return s;
}

bool same(const sim::BarrierState& x, const sim::BarrierState& y) {
  return x.initialised == y.initialised && x.completed == y.completed && x.pending == y.pending &&
         x.expected == y.expected && x.tx == y.tx;
}

json state_json(const sim::BarrierState& s) {
  return json{{"initialised", s.initialised}, {"phase", s.completed}, {"parity", s.completed & 1},
              {"pending", s.pending},         {"expected", s.expected}, {"tx", s.tx}};
}

json site_json(const sim::Kernel& k, uint32_t site, json& into) {
  if (site < k.sites.size()) {
    const sim::Site& s = k.sites[site];
    if (s.loc.line > 0) {
      into["where"] = fmt::format("{}:{}:{}", k.file, s.loc.line, s.loc.col);
      into["line"] = s.loc.line;
      into["col"] = s.loc.col;
    } else {
      into["where"] = nullptr;
      into["line"] = nullptr;
      into["col"] = nullptr;
    }
    into["statement"] = s.what;
    into["source"] = s.origin.empty() ? json(nullptr) : json(s.origin);  // the kernel's own source (PTX .loc)
  } else {
    into["source"] = nullptr;
    into["where"] = nullptr;
    into["line"] = nullptr;
    into["col"] = nullptr;
    into["statement"] = nullptr;
  }
  return into;
}

json role_json(const sim::Kernel& k, const sim::RunResult& r, int cta, int warp) {
  if (cta < 0 || warp < 0) return nullptr;
  for (const auto& w : r.warps)
    if (w.cta == cta && w.warp == warp && w.role >= 0 && static_cast<size_t>(w.role) < k.roles.size())
      return k.roles[static_cast<size_t>(w.role)].name;
  for (const auto& role : k.roles)
    if (warp >= role.warp_lo && warp <= role.warp_hi) return role.name;
  return nullptr;
}

// The CTA a barrier reference resolves to (cluster rank -> CTA of the issuing CTA's cluster).
int target_cta(const sim::Kernel& k, int cta, int32_t rank) {
  if (rank == sim::BarRef::kOwnCta) return cta;
  const int64_t cluster = std::max<int64_t>(1, k.launch.cluster);
  return static_cast<int>((cta / cluster) * cluster + rank);
}

json blocked_json(const sim::Kernel& k, const sim::RunResult& r, const Slots& slots, const sim::WarpEnd& w) {
  json j{{"cta", w.cta}, {"warp", w.warp}, {"role", role_json(k, r, w.cta, w.warp)}};
  site_json(k, w.site, j);
  j["op"] = std::string(sim::op_name(w.op.kind));
  j["ops_done"] = w.ops_done;
  j["barrier"] = nullptr;
  j["parity"] = nullptr;
  j["state"] = nullptr;
  if (uses_barrier(w.op.kind)) {
    const int cta = target_cta(k, w.cta, w.op.bar.rank);
    json b{{"name", slots.name(k, w.op.bar.array, w.op.bar.index)},
           {"array", w.op.bar.array},
           {"index", w.op.bar.index},
           {"cta", cta}};
    j["barrier"] = std::move(b);
    if (w.op.kind == sim::OpKind::Wait || w.op.kind == sim::OpKind::TestWait) {
      j["parity"] = w.op.a & 1;
      if (w.op.flags & sim::kFlagPhaseTracked) j["waits_for_phase"] = w.op.b;
    }
    auto s = slots.slot(w.op.bar.array, w.op.bar.index);
    if (s && cta >= 0 && static_cast<size_t>(cta) < r.barriers.size() && *s < r.barriers[static_cast<size_t>(cta)].size())
      j["state"] = state_json(r.barriers[static_cast<size_t>(cta)][*s]);
  } else if (w.op.kind == sim::OpKind::NamedSync || w.op.kind == sim::OpKind::NamedArrive) {
    j["named_barrier"] = json{{"id", w.op.a}, {"threads", w.op.b}};
  } else if (w.op.kind == sim::OpKind::WaitGroup) {
    j["wait_group"] = json{{"n", w.op.a}, {"read", w.op.b != 0}};
  }
  return j;
}

}  // namespace

json to_json(const CheckResult& c, const ReportOptions& options) {
  const sim::Kernel& k = c.kernel;
  const sim::RunResult& r = c.result;
  json j;
  j["schema"] = std::string(kReportSchema);
  j["file"] = c.file;
  j["kernel"] = k.name.empty() ? json(nullptr) : json(k.name);
  j["arch"] = k.arch ? json(std::string(k.arch->name)) : json(nullptr);
  j["bad_input"] = c.bad_input;
  j["diagnostic"] = c.bad_input ? json(c.diagnostic) : json(nullptr);
  if (k.expect) {
    j["expect"] = json{{"verdict", verdict_name(k.expect->verdict)},
                       {"kind", k.expect->error_kind.empty() ? json(nullptr) : json(k.expect->error_kind)},
                       {"line", k.expect->loc.line}};
  } else {
    j["expect"] = nullptr;
  }
  j["matches"] = c.matches_expect;
  j["seed"] = options.seed ? json(*options.seed) : json(nullptr);
  j["jitter"] = options.jitter ? json(*options.jitter) : json(nullptr);
  j["wall_ms"] = c.wall_ms;

  if (c.bad_input) {
    // Nothing ran: the run fields are present and empty so that readers need no special case.
    j["verdict"] = nullptr;
    j["error_kind"] = nullptr;
    j["launch"] = nullptr;
    j["params"] = json::object();
    j["predicted_ns"] = nullptr;
    j["predicted_event_ns"] = nullptr;
    j["cta_ends_ns"] = nullptr;
    j["memory"] = nullptr;
    j["events"] = 0;
    j["warps"] = json{{"total", 0}, {"exited", 0}, {"blocked", 0}, {"faulted", 0}, {"not_started", 0}};
    j["findings"] = json::array();
    j["finding_groups"] = json::array();
    j["blocked"] = json::array();
    j["barriers"] = json{{"policy", "all"}, {"total", 0}, {"listed", 0}, {"entries", json::array()}};
    j["role_waits"] = json::array();
    j["hang"] = nullptr;
    j["stopped"] = nullptr;
    j["interleavings"] = nullptr;
    j["budget"] = nullptr;
    j["report"] = c.report;
    return j;
  }

  j["verdict"] = verdict_name(r.verdict);
  j["error_kind"] = nullptr;
  if (r.verdict == sim::Verdict::Error) {
    for (const auto& f : r.findings)
      if (f.fatal) {
        j["error_kind"] = f.kind;
        break;
      }
  }
  j["launch"] = json{{"ctas", k.launch.ctas},
                     {"cluster", k.launch.cluster},
                     {"threads", k.launch.threads},
                     {"ctas_per_sm", k.launch.ctas_per_sm}};
  json params = json::object();
  for (const auto& [name, value] : k.params) params[name] = value;
  j["params"] = std::move(params);
  j["predicted_ns"] = r.end_ns;
  // What a benchmark timing the launch between CUDA events would measure (null where the
  // architecture's launch floor was never measured, or the run did not end ok).
  j["predicted_event_ns"] = r.verdict == sim::Verdict::Ok && r.launch_floor_ns > 0 ? json(r.end_ns + r.launch_floor_ns) : json(nullptr);
  if (const auto e = sim::cta_ends(r))
    j["cta_ends_ns"] = json{{"first", e->first_ns}, {"median", e->median_ns}, {"last", e->last_ns}, {"ctas", e->ctas}};
  else
    j["cta_ends_ns"] = nullptr;
  // The L2 and the DRAM's bytes: a multicast copy is one read; stores are written back.
  j["memory"] = json{{"l2_hit_bytes", r.l2_hit_bytes},
                     {"l2_miss_bytes", r.l2_miss_bytes},
                     {"dram_read_bytes", r.dram_read_bytes},
                     {"dram_write_bytes", r.dram_write_bytes}};
  j["events"] = r.events;
  j["instructions"] = k.external ? json(r.instructions) : json(nullptr);  // PTX instructions the warps executed

  int counts[4] = {0, 0, 0, 0};
  for (const auto& w : r.warps) ++counts[static_cast<int>(w.status)];
  j["warps"] = json{{"total", r.warps.size()},
                    {"exited", counts[static_cast<int>(sim::WarpStatus::Exited)]},
                    {"blocked", counts[static_cast<int>(sim::WarpStatus::Blocked)]},
                    {"faulted", counts[static_cast<int>(sim::WarpStatus::Faulted)]},
                    {"not_started", counts[static_cast<int>(sim::WarpStatus::NotStarted)]}};

  json findings = json::array();
  for (const auto& f : r.findings) {
    json e{{"kind", f.kind},
           {"fatal", f.fatal},
           {"cta", f.cta >= 0 ? json(f.cta) : json(nullptr)},
           {"warp", f.warp >= 0 ? json(f.warp) : json(nullptr)},
           {"role", role_json(k, r, f.cta, f.warp)}};
    site_json(k, f.site, e);
    e["message"] = f.message;
    e["notes"] = f.notes;
    findings.push_back(std::move(e));
  }
  j["findings"] = std::move(findings);
  // The human report's grouping (one per kind, severity, site and cause), over the instances above.
  json finding_groups = json::array();
  for (const FindingGroup& g : group_findings(r)) {
    const sim::Finding& f = r.findings[g.members.front()];
    json e{{"kind", f.kind}, {"fatal", f.fatal}, {"members", g.members}};
    site_json(k, f.site, e);
    std::vector<int> ctas, warps;
    for (int x : g.ctas) if (x >= 0) ctas.push_back(x);
    for (int x : g.warps) if (x >= 0) warps.push_back(x);
    e["ctas"] = ctas;
    e["ctas_text"] = ctas.empty() ? json(nullptr) : json(sim::fold_list(ctas));
    e["warps"] = warps;
    e["message"] = g.message;
    e["notes"] = g.notes;
    const std::string_view impact = f.fatal ? std::string_view() : sim::warning_impact(f.kind);
    e["impact"] = impact.empty() ? json(nullptr) : json(std::string(impact));
    finding_groups.push_back(std::move(e));
  }
  j["finding_groups"] = std::move(finding_groups);
  j["interleavings"] = interleavings_json(c);
  j["budget"] = c.ptx_budget ? ptx_budget_json(k, *c.ptx_budget) : json(nullptr);  // PTX kernels: the budget from the run

  const Slots slots(k, r);
  json blocked = json::array();
  for (const auto& w : r.warps)
    if (w.status == sim::WarpStatus::Blocked || w.status == sim::WarpStatus::Faulted) {
      json e = blocked_json(k, r, slots, w);
      e["status"] = status_word(w.status);
      blocked.push_back(std::move(e));
    }
  j["blocked"] = std::move(blocked);

  size_t total = 0;
  for (const auto& per_cta : r.barriers) total += per_cta.size();
  const bool all = total <= options.all_barriers_limit;
  json entries = json::array();
  std::vector<sim::BarrierState> initial;
  initial.reserve(slots.array.size());
  for (uint32_t s = 0; s < slots.array.size(); ++s) initial.push_back(initial_state(k.barriers[slots.array[s]]));
  for (size_t cta = 0; cta < r.barriers.size(); ++cta) {
    const auto& per_cta = r.barriers[cta];
    for (size_t s = 0; s < per_cta.size(); ++s) {
      const bool known = s < slots.array.size();
      if (!all && known && same(per_cta[s], initial[s])) continue;
      json e = state_json(per_cta[s]);
      e["cta"] = cta;
      e["slot"] = s;
      if (known) {
        e["name"] = slots.name(k, slots.array[s], slots.index[s]);
        e["array"] = slots.array[s];
        e["index"] = slots.index[s];
        e["initial"] = same(per_cta[s], initial[s]);
      } else {
        e["name"] = nullptr;
        e["array"] = nullptr;
        e["index"] = nullptr;
        e["initial"] = nullptr;
      }
      entries.push_back(std::move(e));
    }
  }
  const size_t listed = entries.size();
  j["barriers"] = json{{"policy", all ? "all" : "changed"}, {"total", total}, {"listed", listed},
                       {"entries", std::move(entries)}};

  json waits = json::array();
  for (const auto& w : r.role_waits) {
    json role = (w.role >= 0 && static_cast<size_t>(w.role) < k.roles.size())
                    ? json(k.roles[static_cast<size_t>(w.role)].name)
                    : json(nullptr);
    waits.push_back(json{{"role", std::move(role)}, {"what", w.what}, {"ns", w.ns}});
  }
  j["role_waits"] = std::move(waits);

  if (r.verdict == sim::Verdict::Hang || r.verdict == sim::Verdict::Stopped) {
    json groups = json::array();
    for (const auto& g : r.hang.groups) {
      json members = json::array();
      for (const auto& [cta, warp] : g.members) members.push_back(json::array({cta, warp}));
      json e{{"members", std::move(members)},
             {"role", (g.role >= 0 && static_cast<size_t>(g.role) < k.roles.size())
                          ? json(k.roles[static_cast<size_t>(g.role)].name)
                          : json(nullptr)}};
      site_json(k, g.site, e);
      e["waits_on"] = g.waits_on;
      e["state"] = g.state ? state_json(*g.state) : json(nullptr);
      e["unblockers"] = g.unblockers;
      e["hints"] = g.hints;
      groups.push_back(std::move(e));
    }
    j["hang"] = json{{"groups", std::move(groups)},
                     {"cycles", r.hang.cycles},
                     {"unlaunched_clusters", r.hang.unlaunched_clusters}};
  } else {
    j["hang"] = nullptr;
  }
  // Verdict::Stopped: `hang.groups` above say what each live warp was doing (waits_on "" = running).
  if (r.verdict == sim::Verdict::Stopped) {
    static constexpr const char* kCause[] = {"none", "events", "seconds", "instructions"};
    j["stopped"] = json{{"by", kCause[static_cast<int>(r.stopped_by)]}, {"after_s", r.stopped_after_s}, {"message", sim::stop_summary(r)}};
  } else {
    j["stopped"] = nullptr;
  }
  j["report"] = c.report;
  return j;
}

json to_json(std::span<const CheckResult> results, const ReportOptions& options) {
  json list = json::array();
  int matched = 0, bad = 0, stopped = 0;
  for (const auto& r : results) {
    list.push_back(to_json(r, options));
    if (r.bad_input) ++bad;
    else if (r.matches_expect) ++matched;
    else if (stopped_unexpectedly(r)) ++stopped;
  }
  const int n = static_cast<int>(results.size());
  const int exit_code = check_exit_code(bad, stopped, n - matched - bad - stopped);
  return json{{"schema", std::string(kReportSchema)},
              {"results", std::move(list)},
              {"summary", json{{"scenarios", n}, {"matched", matched}, {"bad_input", bad}, {"exit_code", exit_code}}}};
}

}  // namespace pipesim::verify
