#include "verify/report.hpp"

#include "sim/explain.hpp"
#include "sim/lowering.hpp"
#include "sim/rules.hpp"
#include "verify/ptx_budget.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <cctype>
#include <map>
#include <set>

#include <fmt/format.h>

namespace pipesim::verify {
namespace {

// file:line:col of a site; for a PTX kernel compiled with line info, the kernel's own source
// position first (what its author edits), then the PTX's.
std::string site_ref(const sim::Kernel& k, uint32_t site) {
  if (site >= k.sites.size()) return k.file;
  const sim::Site& s = k.sites[site];
  if (!s.origin.empty()) return fmt::format("{}: {}:{}:{}", sim::short_origin(s.origin), k.file, s.loc.line, s.loc.col);
  return fmt::format("{}:{}:{}", k.file, s.loc.line, s.loc.col);
}

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  const size_t e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Line `line` of a file (the kernel's own source, for PTX sites), "" where it cannot be read.
std::string file_line(const std::string& path, uint32_t line) {
  static std::map<std::string, std::vector<std::string>> cache;
  auto [it, fresh] = cache.try_emplace(path);
  if (fresh) {
    std::ifstream in(path);
    for (std::string l; std::getline(in, l);) it->second.push_back(l);
  }
  return line >= 1 && line <= it->second.size() ? trimmed(it->second[line - 1]) : std::string();
}

std::string source_line(const sim::Kernel& k, uint32_t site) {
  if (site >= k.sites.size()) return {};
  const uint32_t line = k.sites[site].loc.line;
  if (line == 0 || line > k.lines.size()) return {};
  return trimmed(k.lines[line - 1]);
}

// For a PTX site with line info, the kernel author's line: the call where a helper was called
// ("a.cu:43:3, called at a.cu:72:9" gives line 72 of a.cu), else the position itself.
std::string origin_line(const sim::Kernel& k, uint32_t site) {
  if (site >= k.sites.size() || k.sites[site].origin.empty()) return {};
  std::string pos = k.sites[site].origin;
  if (const size_t c = pos.rfind("called at "); c != std::string::npos) pos = pos.substr(c + 10);
  // path:line:col (the path may hold ':')
  const size_t c2 = pos.rfind(':'), c1 = c2 == std::string::npos ? c2 : pos.rfind(':', c2 - 1);
  if (c1 == std::string::npos) return {};
  return file_line(pos.substr(0, c1), static_cast<uint32_t>(std::strtoul(pos.c_str() + c1 + 1, nullptr, 10)));
}

// The lines under a site: the kernel author's source line where known, then the file's own.
std::string site_lines(const sim::Kernel& k, uint32_t site) {
  std::string out;
  if (auto o = origin_line(k, site); !o.empty()) out += "  | " + o + "\n";
  if (auto s = source_line(k, site); !s.empty()) out += (k.external ? "  | PTX: " : "  | ") + s + "\n";
  return out;
}

// Decimal units, as the DRAM's and the L2's sizes are given ("18.7 MB", "32.8 KB", "512 B").
std::string bytes_text(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  return b >= 1e6 ? fmt::format("{:.1f} MB", b / 1e6) : b >= 1e3 ? fmt::format("{:.1f} KB", b / 1e3) : fmt::format("{} B", bytes);
}

// "  L2 372.4 MB hit (95 %), 18.7 MB miss; DRAM 18.7 MB read, 26.7 MB written": the TMA loads' bytes
// by where they were served, and what reached the DRAM (misses read once, with their L2 promotion's
// groups; bulk stores and st.global bytes written back).
std::string memory_line(const sim::RunResult& res) {
  const int64_t loads = res.l2_hit_bytes + res.l2_miss_bytes;
  return fmt::format("  L2 {} hit ({:.0f} %), {} miss; DRAM {} read, {} written\n", bytes_text(res.l2_hit_bytes),
                     loads > 0 ? 100.0 * static_cast<double>(res.l2_hit_bytes) / static_cast<double>(loads) : 0.0,
                     bytes_text(res.l2_miss_bytes), bytes_text(res.dram_read_bytes), bytes_text(res.dram_write_bytes));
}

std::string role_name(const sim::Kernel& k, int role) {
  return role >= 0 ? k.roles[static_cast<size_t>(role)].name : "no role";
}
// " (producer)" after a warp; nothing for a kernel whose warps have no roles (a PTX kernel).
std::string role_suffix(const sim::Kernel& k, int role) { return k.external ? "" : " (" + role_name(k, role) + ")"; }

// "warps 4-11 in CTAs 0-15" for a group's members.
std::string members_text(const std::vector<std::pair<int, int>>& m) {
  std::vector<int> ctas, warps;
  for (auto [c, w] : m) { ctas.push_back(c); warps.push_back(w); }
  const std::string ws = sim::fold_list(warps), cs = sim::fold_list(ctas);
  const bool many_w = ws.find_first_of("-,") != std::string::npos, many_c = cs.find_first_of("-,") != std::string::npos;
  return fmt::format("warp{} {} in CTA{} {}", many_w ? "s" : "", ws, many_c ? "s" : "", cs);
}


// `text` with "CTA <cta>" (the finding's own CTA) read as `as`: how instances in many CTAs compare.
std::string own_cta_as(const std::string& text, int cta, const std::string& as) {
  if (cta < 0) return text;
  const std::string own = "CTA " + std::to_string(cta);
  std::string out;
  size_t at = 0;
  for (size_t p; (p = text.find(own, at)) != std::string::npos;) {
    const size_t e = p + own.size();
    const bool whole = (p == 0 || !std::isalnum(static_cast<unsigned char>(text[p - 1]))) &&
                       (e == text.size() || !std::isdigit(static_cast<unsigned char>(text[e])));
    out += text.substr(at, p - at) + (whole ? as : own);
    at = e;
  }
  return out + text.substr(at);
}

// "in CTAs 0, 2, ..., 74 (38)", "in CTA 3 warp 5 (producer)", "warps 4-7 (mma) in CTAs 0-147 (148)".
std::string group_place(const sim::Kernel& k, const FindingGroup& g) {
  std::vector<int> ctas, warps;
  for (int c : g.ctas) if (c >= 0) ctas.push_back(c);
  for (int w : g.warps) if (w >= 0) warps.push_back(w);
  if (ctas.empty()) return {};
  const std::string where = ctas.size() == 1 ? fmt::format("CTA {}", ctas.front()) : fmt::format("CTAs {} ({})", sim::fold_list(ctas), ctas.size());
  if (warps.empty()) return "  in " + where + "\n";
  const std::string role = role_suffix(k, sim::role_of_warp(k, warps.front()));
  if (ctas.size() == 1 && warps.size() == 1) return fmt::format("  in CTA {} warp {}{}\n", ctas.front(), warps.front(), role);
  return fmt::format("  warp{} {}{} in {}\n", warps.size() > 1 ? "s" : "", sim::fold_list(warps), role, where);
}

// "CTA 3 warp 5", "CTAs 0, 2, ..., 74 (38)", "warps 4-7 in CTAs 0-3": the instances of a group that share a detail.
std::string instances_text(const sim::RunResult& res, const std::vector<size_t>& members) {
  std::vector<std::pair<int, int>> places;
  std::vector<int> ctas;
  bool warps = false;
  for (size_t i : members) {
    places.emplace_back(res.findings[i].cta, res.findings[i].warp);
    ctas.push_back(res.findings[i].cta);
    warps = warps || res.findings[i].warp >= 0;
  }
  if (warps) return members_text(places);
  std::sort(ctas.begin(), ctas.end());
  ctas.erase(std::unique(ctas.begin(), ctas.end()), ctas.end());
  return ctas.size() == 1 ? fmt::format("CTA {}", ctas.front()) : fmt::format("CTAs {} ({})", sim::fold_list(ctas), ctas.size());
}

// Under -v, what the instances of a group say beyond the group's message and notes: one line per
// distinct detail with the instances that carry it, so identical instances add nothing (148 CTAs left
// with the same barrier state are one finding, not 148 lines). --json keeps every instance.
std::string instance_details(const sim::RunResult& res, const FindingGroup& g) {
  const sim::Finding& first = res.findings[g.members.front()];
  const std::string general_message = own_cta_as(first.message, first.cta, "each CTA");
  std::set<std::string> shared;
  for (const std::string& n : g.notes) shared.insert(own_cta_as(n, first.cta, "each CTA"));
  std::vector<size_t> by_place = g.members;
  std::stable_sort(by_place.begin(), by_place.end(), [&](size_t a, size_t b) {
    return std::pair(res.findings[a].cta, res.findings[a].warp) < std::pair(res.findings[b].cta, res.findings[b].warp);
  });
  // Details in the order of their first instance; an instance's own CTA reads "this CTA" so that
  // instances in different CTAs that say the same compare equal.
  std::vector<std::pair<std::string, std::vector<size_t>>> details;
  for (size_t i : by_place) {
    const sim::Finding& m = res.findings[i];
    std::string detail;
    auto add = [&](const std::string& part) { detail += (detail.empty() ? "" : "; ") + own_cta_as(part, m.cta, "this CTA"); };
    if (own_cta_as(m.message, m.cta, "each CTA") != general_message) add(m.message);
    for (const std::string& n : m.notes)
      if (!shared.count(own_cta_as(n, m.cta, "each CTA"))) add(n);
    if (detail.empty()) continue;
    auto it = std::find_if(details.begin(), details.end(), [&](const auto& d) { return d.first == detail; });
    if (it == details.end()) it = details.insert(details.end(), {detail, {}});
    it->second.push_back(i);
  }
  if (details.empty()) return "  every instance says the same (--json lists each one)\n";
  std::string out;
  for (const auto& [detail, members] : details) out += "  " + instances_text(res, members) + ": " + detail + "\n";
  return out;
}

}  // namespace

std::string_view verdict_name(sim::Verdict v) {
  switch (v) {
    case sim::Verdict::Ok: return "ok";
    case sim::Verdict::Hang: return "hang";
    case sim::Verdict::Error: return "error";
    case sim::Verdict::Stopped: return "stopped";
  }
  return "?";
}

std::string expectation_text(const sim::Expectation& e) {
  std::string s(verdict_name(e.verdict));
  if (e.verdict == sim::Verdict::Error && !e.error_kind.empty()) s += " " + e.error_kind;
  return s;
}

std::string outcome_text(const sim::RunResult& r) {
  std::string s(verdict_name(r.verdict));
  if (r.verdict == sim::Verdict::Error && !r.findings.empty()) s += " " + r.findings.front().kind;
  return s;
}

std::vector<FindingGroup> group_findings(const sim::RunResult& r) {
  std::vector<FindingGroup> groups;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < r.findings.size(); ++i) {
    const sim::Finding& f = r.findings[i];
    // The cause: the message with the finding's own CTA as a placeholder; the place: kind, severity,
    // site and the warp's role (the same warp of many CTAs, or several warps of one role).
    const std::string key = fmt::format("{}|{}|{}|{}|{}", f.kind, f.fatal, f.site, f.warp < 0 ? -1 : 0,
                                        own_cta_as(f.message, f.cta, "CTA *"));
    auto [it, fresh] = index.try_emplace(key, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].members.push_back(i);
  }
  for (FindingGroup& g : groups) {
    std::set<int> ctas, warps;
    for (size_t i : g.members) {
      ctas.insert(r.findings[i].cta);
      warps.insert(r.findings[i].warp);
    }
    g.ctas.assign(ctas.begin(), ctas.end());
    g.warps.assign(warps.begin(), warps.end());
    const sim::Finding& first = r.findings[g.members.front()];
    const bool many = g.ctas.size() > 1;
    g.message = many ? own_cta_as(first.message, first.cta, "each CTA") : first.message;
    for (const std::string& n : first.notes) {
      const std::string general = own_cta_as(n, first.cta, "each CTA");
      const bool shared = std::all_of(g.members.begin(), g.members.end(), [&](size_t i) {
        const sim::Finding& f = r.findings[i];
        return std::any_of(f.notes.begin(), f.notes.end(), [&](const std::string& m) { return own_cta_as(m, f.cta, "each CTA") == general; });
      });
      if (shared) g.notes.push_back(many ? general : n);
    }
  }
  return groups;
}

std::string paint(std::string_view text, Paint p, bool on) {
  if (!on) return std::string(text);
  const char* code = p == Paint::Good ? "\x1b[32m" : p == Paint::Bad ? "\x1b[1;31m" : "\x1b[33m";
  return fmt::format("{}{}\x1b[0m", code, text);
}

std::string human_report(const CheckResult& r, const HumanReportOptions& o) {
  if (r.bad_input) return r.diagnostic;
  const sim::Kernel& k = r.kernel;
  const sim::RunResult& res = r.result;
  std::string out;
  out += fmt::format("{}: kernel {} on {}: {}", k.file, k.name, k.arch ? k.arch->name : "?",
                     paint(outcome_text(res), r.matches_expect ? Paint::Good : Paint::Bad, o.color));
  if (k.expect) out += fmt::format(" (expected {})", expectation_text(*k.expect));
  out += fmt::format(" after {:.3f} us simulated, {} events", res.end_ns / 1000.0, res.events);
  if (k.external) out += fmt::format(", {} PTX instructions", res.instructions);
  out += "\n";

  for (const FindingGroup& g : group_findings(res)) {
    const sim::Finding& f = res.findings[g.members.front()];
    out += fmt::format("{}: {}: [{}] {}\n", site_ref(k, f.site), paint(f.fatal ? "error" : "warning", f.fatal ? Paint::Bad : Paint::Warn, o.color),
                       f.kind, g.message);
    out += group_place(k, g);
    out += site_lines(k, f.site);
    for (const std::string& n : g.notes) out += "  note: " + n + "\n";
    // Notes that differ between the instances: each distinct one under -v, else a count.
    size_t differing = 0;
    for (size_t i : g.members) differing += res.findings[i].notes.size() > g.notes.size() ? 1 : 0;
    if (o.verbose && g.members.size() > 1) {
      out += instance_details(res, g);
    } else if (differing > 0) {
      out += fmt::format("  note: {} of the {} instances have notes of their own (-v shows them)\n", differing, g.members.size());
    }
    if (!f.fatal)
      if (const std::string_view why = sim::warning_impact(f.kind); !why.empty()) out += fmt::format("  impact: {}\n", why);
  }

  if (res.verdict == sim::Verdict::Hang) {
    const sim::HangReport& h = res.hang;
    size_t waiting = 0;
    std::vector<int> ctas;
    for (const sim::HangGroup& g : h.groups) {
      waiting += g.members.size();
      for (auto [c, w] : g.members) ctas.push_back(c);
    }
    std::sort(ctas.begin(), ctas.end());
    ctas.erase(std::unique(ctas.begin(), ctas.end()), ctas.end());
    out += fmt::format("hang: {} warp{} in {} CTA{} wait and nothing can happen ({} distinct wait{}):\n", waiting,
                       waiting == 1 ? "" : "s", ctas.size(), ctas.size() == 1 ? "" : "s", h.groups.size(),
                       h.groups.size() == 1 ? "" : "s");
    for (const sim::HangGroup& g : h.groups) {
      out += fmt::format("{}: {}{} {} on {}\n", site_ref(k, g.site), members_text(g.members), role_suffix(k, g.role),
                         std::any_of(g.members.begin(), g.members.end(), [&](auto& m) { return m.second != g.members.front().second; }) ? "wait" : "waits", g.waits_on);
      out += site_lines(k, g.site);
      if (g.state)
        out += fmt::format("  barrier: phase {} (parity {}), pending {} of {}, tx {}\n", g.state->completed,
                           g.state->completed & 1, g.state->pending, g.state->expected, g.state->tx);
      // A PTX warp's future is not known: its report says what the other warps are doing instead.
      const char* label = k.external ? "  meanwhile: " : "  could unblock: ";
      for (const std::string& u : g.unblockers) out += label + u + "\n";
      if (g.unblockers.empty()) out += k.external ? "  meanwhile: every other warp of the cluster has exited\n" : "  could unblock: nobody\n";
      for (const std::string& hint : g.hints) out += "  note: " + hint + "\n";
    }
    for (const std::string& c : h.cycles) out += "deadlock cycle: " + c + "\n";
    if (h.unlaunched_clusters > 0)
      out += fmt::format("note: {} cluster(s) never started: the hung CTAs hold the SMs\n", h.unlaunched_clusters);
  }

  if (res.verdict == sim::Verdict::Stopped) {
    out += sim::stop_summary(res) + "\n";
    out += "what each warp was doing:\n";
    for (const sim::HangGroup& g : res.hang.groups) {
      const bool many = g.members.size() > 1;
      out += fmt::format("{}: {}{} {}\n", site_ref(k, g.site), members_text(g.members), role_suffix(k, g.role),
                         g.waits_on.empty() ? (many ? "are running" : "is running") : (many ? "wait on " : "waits on ") + g.waits_on);
      out += site_lines(k, g.site);
      if (g.state)
        out += fmt::format("  barrier: phase {} (parity {}), pending {} of {}, tx {}\n", g.state->completed,
                           g.state->completed & 1, g.state->pending, g.state->expected, g.state->tx);
    }
    if (res.hang.unlaunched_clusters > 0) out += fmt::format("note: {} cluster(s) had not started yet\n", res.hang.unlaunched_clusters);
  }

  if (res.cta_group == 2)
    out += fmt::format("assumption: empty-commit-local is {} (an empty tcgen05.commit group under cta_group::2 {})\n",
                       r.options_empty_commit_local ? "on" : "off",
                       r.options_empty_commit_local ? "signals only the issuing CTA" : "signals every CTA of its mask");
  if (k.arch && k.arch->uncertain) out += fmt::format("note: {}\n", k.arch->uncertain_note);

  if (res.verdict == sim::Verdict::Ok) {
    out += fmt::format("predicted duration: {:.3f} us", res.end_ns / 1000.0);
    if (res.launch_floor_ns > 0)
      out += fmt::format(" ({:.3f} us timed between CUDA events: + a {:.1f} us launch floor)", (res.end_ns + res.launch_floor_ns) / 1000.0,
                         res.launch_floor_ns / 1000.0);
    out += "\n";
    if (res.end_ns > 0 && res.sms_used > 0) {
      const double sm_time = res.end_ns * res.sms_used;
      std::string units = fmt::format("  DRAM busy {:.1f}%", 100.0 * res.dram_busy_ns / res.end_ns);
      if (res.tensor_busy_ns > 0) units += fmt::format(", tensor pipes busy {:.1f}% (over {} SMs)", 100.0 * res.tensor_busy_ns / sm_time, res.sms_used);
      out += units + "\n";
    }
    if (res.l2_hit_bytes + res.l2_miss_bytes + res.dram_write_bytes > 0) out += memory_line(res);
    if (const auto e = sim::cta_ends(res); e && k.launch.ctas > 1)
      out += fmt::format("  CTA ends {:.3f} .. {:.3f} (median) .. {:.3f} us over {} CTAs\n", e->first_ns / 1000.0,
                         e->median_ns / 1000.0, e->last_ns / 1000.0, e->ctas);
    std::vector<sim::RunResult::RoleWait> waits = res.role_waits;
    std::sort(waits.begin(), waits.end(), [](auto& a, auto& b) { return a.ns > b.ns; });
    for (size_t i = 0; i < waits.size() && i < 8; ++i) {
      const auto& w = waits[i];
      const sim::Role& role = k.roles[static_cast<size_t>(w.role)];
      const int nw = role.warp_hi - role.warp_lo + 1;
      out += fmt::format("  role {} waited {:.3f} us per warp on {}\n", role.name, w.ns / 1000.0 / (nw * static_cast<double>(k.launch.ctas)), w.what);
    }
  }
  if (r.ptx_budget) out += format_ptx_budget(*r.ptx_budget);
  return out;
}

}  // namespace pipesim::verify
