#include "verify/crosscheck_stamps.hpp"

#include <algorithm>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "verify/ptx/source.hpp"

namespace pipesim::verify {
namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Per stamped site: across the warps that reached it, when each first and last passed it (ns from
// its CTA's first stamp) and how often.
struct SiteTimes {
  std::vector<double> first, last, passes;
};

// "dir/a.hpp:424:15, called at dir/b.hpp:371:5, ..., called at dir/k.hpp:650:9" as "a.hpp:424 in
// k.hpp:650": the line the wait is on and the kernel's line that reached it, file names only.
std::string short_position(const std::string& chain) {
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t next = chain.find(", called at ", at);
    parts.push_back(chain.substr(at, next == std::string::npos ? std::string::npos : next - at));
    if (next == std::string::npos) break;
    at = next + 12;
  }
  auto shorten = [](std::string p) {
    if (const size_t slash = p.rfind('/'); slash != std::string::npos) p = p.substr(slash + 1);
    if (const size_t c1 = p.find(':'); c1 != std::string::npos)
      if (const size_t c2 = p.find(':', c1 + 1); c2 != std::string::npos) p.resize(c2);
    return p;
  };
  return parts.size() == 1 ? shorten(parts.front()) : shorten(parts.front()) + " in " + shorten(parts.back());
}

}  // namespace

StampsReport report_stamps(const ptx::Module& module, const ptx::Function& entry, const ptx_launch::StampedPtx& plan,
                           const std::vector<uint64_t>& buffer, uint32_t warps_per_cta, double stamped_ms, double median_ms,
                           const sim::RunResult& model, const std::string& csv_path) {
  StampsReport out;
  const std::vector<ptx_launch::Stamp> stamps = ptx_launch::read_stamps(buffer, plan.per_warp);
  if (stamps.empty() || warps_per_cta == 0) {
    out.text = "  stamps: none came back (no warp reached a stamped instruction)\n";
    return out;
  }
  // Where each site is in the kernel's source (the instruction's .loc), for people.
  std::map<uint32_t, std::string> source_of;
  for (const ptx::Instruction& in : entry.body) source_of.emplace(in.pos.line, ptx::source_position(module, in.src));
  auto where = [&](uint32_t site) {
    const ptx_launch::StampSite& s = plan.sites.at(site);
    if (s.ptx_line == 0) return s.what;
    const auto it = source_of.find(s.ptx_line);
    const std::string src = it == source_of.end() || it->second.empty() ? "" : fmt::format(" ({})", short_position(it->second));
    return fmt::format("{} at .ptx:{}{}", s.what, s.ptx_line, src);
  };

  // Each CTA's first and last stamp (its span on the GPU), and each warp's passes per site.
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> cta_span;
  for (const ptx_launch::Stamp& s : stamps) {
    auto [it, fresh] = cta_span.try_emplace(s.warp / warps_per_cta, s.ns, s.ns);
    if (!fresh) it->second.first = std::min(it->second.first, s.ns), it->second.second = std::max(it->second.second, s.ns);
  }
  uint64_t t0 = UINT64_MAX;
  for (const auto& [cta, span] : cta_span) t0 = std::min(t0, span.first);
  std::vector<SiteTimes> sites(plan.sites.size());
  size_t dropped = 0;
  {
    size_t i = 0;
    while (i < stamps.size()) {
      const uint64_t w = stamps[i].warp;
      const uint64_t base = cta_span.at(w / warps_per_cta).first;
      std::map<uint32_t, std::pair<double, std::pair<double, double>>> per_site;  // site -> (passes, (first, last))
      size_t n = 0;
      for (; i < stamps.size() && stamps[i].warp == w; ++i, ++n) {
        const ptx_launch::Stamp& s = stamps[i];
        if (s.site >= sites.size()) continue;
        const double t = static_cast<double>(s.ns - base);
        auto [it, fresh] = per_site.try_emplace(s.site, 1.0, std::make_pair(t, t));
        if (!fresh) it->second.first += 1, it->second.second.second = t;
      }
      dropped += n == plan.per_warp;  // a full slice: this warp may have passed more
      for (const auto& [site, v] : per_site) {
        sites[site].passes.push_back(v.first);
        sites[site].first.push_back(v.second.first);
        sites[site].last.push_back(v.second.second);
      }
    }
  }

  std::vector<double> starts, spans;
  for (const auto& [cta, span] : cta_span) {
    starts.push_back(static_cast<double>(span.first - t0));
    spans.push_back(static_cast<double>(span.second - span.first));
  }
  std::sort(spans.begin(), spans.end());
  std::string& s = out.text;
  uint64_t t_end = 0;
  for (const auto& [cta, span] : cta_span) t_end = std::max(t_end, span.second);
  s += fmt::format("  stamps: {} from {} CTAs, the GPU's own timeline of one more launch with them: {:.2f} us from the first CTA's start to the "
                   "last stamp ({:.2f} us between its CUDA events, after one warm-up launch of its own; the timed median {:.2f} us)\n",
                   stamps.size(), cta_span.size(), static_cast<double>(t_end - t0) / 1000, stamped_ms * 1000, median_ms * 1000);
  if (dropped) s += fmt::format("    {} warps filled their {} stamps: their later passes are missing\n", dropped, plan.per_warp);
  if (plan.skipped) s += fmt::format("    {} guarded waits not stamped\n", plan.skipped);
  s += fmt::format("    CTA starts after the first: median {:.2f} us, last {:.2f} us\n", median_of(starts) / 1000, *std::max_element(starts.begin(), starts.end()) / 1000);
  s += fmt::format("    CTA spans (first stamp to last): {:.2f} .. {:.2f} (median) .. {:.2f} us", spans.front() / 1000, median_of(spans) / 1000,
                   spans.back() / 1000);
  if (const auto e = sim::cta_ends(model))
    s += fmt::format("; the model's CTA ends {:.2f} .. {:.2f} (median) .. {:.2f} us", e->first_ns / 1000, e->median_ns / 1000, e->last_ns / 1000);
  s += "\n    per stamped instruction, over the warps that pass it (us from their CTA's first stamp, medians):\n";
  std::vector<uint32_t> order;
  for (uint32_t i = 0; i < sites.size(); ++i)
    if (!sites[i].first.empty()) order.push_back(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return median_of(sites[a].first) < median_of(sites[b].first); });
  s += fmt::format("    {:>9} {:>9} {:>6} {:>7}  {}\n", "first", "last", "warps", "passes", "where");
  for (uint32_t i : order)
    s += fmt::format("    {:9.2f} {:9.2f} {:6} {:7.0f}  {}\n", median_of(sites[i].first) / 1000, median_of(sites[i].last) / 1000, sites[i].first.size(),
                     median_of(sites[i].passes), where(i));

  if (!csv_path.empty()) {
    std::ofstream f(csv_path);
    f << "cta,warp,site,ptx_line,what,ns\n";
    for (const ptx_launch::Stamp& st : stamps) {
      const ptx_launch::StampSite& site = plan.sites.at(std::min<size_t>(st.site, plan.sites.size() - 1));
      f << st.warp / warps_per_cta << ',' << st.warp % warps_per_cta << ',' << st.site << ',' << site.ptx_line << ',' << site.what << ','
        << (st.ns - t0) << '\n';
    }
    if (!f) out.error = "cannot write " + csv_path;
    else s += "    every stamp: " + csv_path + "\n";
  }
  return out;
}

}  // namespace pipesim::verify
