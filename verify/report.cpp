#include "verify/report.hpp"

#include "sim/explain.hpp"
#include "sim/lowering.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

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

std::string role_name(const sim::Kernel& k, int role) {
  return role >= 0 ? k.roles[static_cast<size_t>(role)].name : "no role";
}
// " (producer)" after a warp; nothing for a kernel whose warps have no roles (a PTX kernel).
std::string role_suffix(const sim::Kernel& k, int role) { return k.external ? "" : " (" + role_name(k, role) + ")"; }

// Compact integer list: "0-3, 8, 10-11".
std::string ranges(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  std::string out;
  size_t i = 0;
  int shown = 0;
  while (i < v.size()) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (shown++ == 8) { out += ", ..."; break; }
    out += (out.empty() ? "" : ", ") + (i == j ? std::to_string(v[i]) : fmt::format("{}-{}", v[i], v[j]));
    i = j + 1;
  }
  return out;
}

// "warps 4-11 in CTAs 0-15" for a group's members.
std::string members_text(const std::vector<std::pair<int, int>>& m) {
  std::vector<int> ctas, warps;
  for (auto [c, w] : m) { ctas.push_back(c); warps.push_back(w); }
  const std::string ws = ranges(warps), cs = ranges(ctas);
  const bool many_w = ws.find_first_of("-,") != std::string::npos, many_c = cs.find_first_of("-,") != std::string::npos;
  return fmt::format("warp{} {} in CTA{} {}", many_w ? "s" : "", ws, many_c ? "s" : "", cs);
}

}  // namespace

std::string_view verdict_name(sim::Verdict v) {
  switch (v) {
    case sim::Verdict::Ok: return "ok";
    case sim::Verdict::Hang: return "hang";
    case sim::Verdict::Error: return "error";
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

std::string human_report(const CheckResult& r) {
  if (r.bad_input) return r.diagnostic;
  const sim::Kernel& k = r.kernel;
  const sim::RunResult& res = r.result;
  std::string out;
  out += fmt::format("{}: kernel {} on {}: {}", k.file, k.name, k.arch ? k.arch->name : "?", outcome_text(res));
  if (k.expect) out += fmt::format(" (expected {})", expectation_text(*k.expect));
  out += fmt::format(" after {:.3f} us simulated, {} events", res.end_ns / 1000.0, res.events);
  if (k.external) out += fmt::format(", {} PTX instructions", res.instructions);
  out += "\n";

  for (const sim::Finding& f : res.findings) {
    out += fmt::format("{}: {}: [{}] {}\n", site_ref(k, f.site), f.fatal ? "error" : "warning", f.kind, f.message);
    if (f.cta >= 0 && f.warp >= 0) out += fmt::format("  in CTA {} warp {}{}\n", f.cta, f.warp, role_suffix(k, sim::role_of_warp(k, f.warp)));
    else if (f.cta >= 0) out += fmt::format("  in CTA {}\n", f.cta);
    out += site_lines(k, f.site);
    for (const std::string& n : f.notes) out += "  note: " + n + "\n";
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

  if (res.cta_group == 2)
    out += fmt::format("assumption: empty-commit-local is {} (an empty tcgen05.commit group under cta_group::2 {})\n",
                       r.options_empty_commit_local ? "on" : "off",
                       r.options_empty_commit_local ? "signals only the issuing CTA" : "signals every CTA of its mask");
  if (k.arch && k.arch->uncertain) out += fmt::format("note: {}\n", k.arch->uncertain_note);

  if (res.verdict == sim::Verdict::Ok) {
    out += fmt::format("predicted duration: {:.3f} us\n", res.end_ns / 1000.0);
    if (res.end_ns > 0 && res.sms_used > 0) {
      const double sm_time = res.end_ns * res.sms_used;
      std::string units = fmt::format("  DRAM busy {:.1f}%", 100.0 * res.dram_busy_ns / res.end_ns);
      if (res.tensor_busy_ns > 0) units += fmt::format(", tensor pipes busy {:.1f}% (over {} SMs)", 100.0 * res.tensor_busy_ns / sm_time, res.sms_used);
      out += units + "\n";
    }
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
  return out;
}

}  // namespace pipesim::verify
