#include "verify/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "verify/report.hpp"

namespace pipesim::verify {
namespace {

// Points the baseline passes that the search keeps (a production-size kernel passes millions; the
// first ones of each warp are where schedules diverge first).
constexpr size_t kMaxPoints = 200'000;

bool issues_async(sim::OpKind k) { return k == sim::OpKind::TmaLoad || k == sim::OpKind::Commit; }

// Delays from 1 us (or a quarter of a short kernel) doubling up to the kernel's own length.
std::vector<double> delay_amounts(double kernel_ns) {
  std::vector<double> out;
  const double first = std::min(1000.0, kernel_ns / 4);
  for (double a = first; a < kernel_ns; a *= 2) out.push_back(a);
  out.push_back(kernel_ns);
  return out;
}

// Which points come first: earlier occurrences first (every warp's first pass through each site
// before anyone's second: schedules diverge earliest there), and among one occurrence the ops that
// decide who completes a phase (arrivals, named-barrier arrivals, waits) before copies and commits,
// then in the order the baseline reached them.
int kind_rank(sim::OpKind k) {
  switch (k) {
    case sim::OpKind::Arrive: case sim::OpKind::ArriveExpectTx: case sim::OpKind::ArriveDrop:
    case sim::OpKind::NamedArrive: case sim::OpKind::NamedSync: case sim::OpKind::ClusterArrive:
      return 0;
    case sim::OpKind::Wait: case sim::OpKind::ClusterWait: return 1;
    default: return 2;
  }
}

}  // namespace

AdversarialResult adversarial_search(const sim::Kernel& kernel, const sim::RunOptions& base, const AdversarialBounds& bounds,
                                     const std::function<void(int, int)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  AdversarialResult res;
  std::vector<sim::SyncPoint> points;
  sim::RunOptions o = base;
  o.record_trace = false;
  o.delays.clear();
  o.on_sync = [&](const sim::SyncPoint& p) {
    if (points.size() < kMaxPoints) points.push_back(p);
  };
  const sim::RunResult r0 = sim::run(kernel, o);
  o.on_sync = nullptr;
  res.runs = 1;
  res.baseline = outcome_text(r0);
  res.kernel_ns = std::max(r0.end_ns, 1.0);
  res.points = static_cast<int>(points.size());
  std::stable_sort(points.begin(), points.end(), [](const sim::SyncPoint& a, const sim::SyncPoint& b) {
    if (a.occurrence != b.occurrence) return a.occurrence < b.occurrence;
    return kind_rank(a.kind) < kind_rank(b.kind);
  });
  std::vector<sim::Delay> candidates;  // each point held, and each copy landing late
  for (const sim::SyncPoint& p : points) {
    candidates.push_back({p.cta, p.warp, p.site, p.occurrence, 0, false});
    if (issues_async(p.kind)) candidates.push_back({p.cta, p.warp, p.site, p.occurrence, 0, true});
  }
  const std::vector<double> amounts = delay_amounts(res.kernel_ns);

  // One run under `delays`; true when its verdict differs from the baseline's.
  sim::RunResult last;
  const auto changes = [&](const std::vector<sim::Delay>& delays) {
    o.delays = delays;
    last = sim::run(kernel, o);
    ++res.runs;
    if (progress && res.runs % 16 == 0) progress(res.runs, bounds.max_runs);
    return outcome_text(last) != res.baseline;
  };
  const auto out_of_bounds = [&] {
    if (res.runs >= bounds.max_runs) res.stopped_by = "runs";
    else if (bounds.max_seconds > 0 && elapsed_s() >= bounds.max_seconds) res.stopped_by = "seconds";
    return !res.stopped_by.empty();
  };
  // Shrinks the last delay of `found` between `lo` (no change) and its amount (a change), keeping
  // the run that still changes the verdict.
  const auto shrink = [&](std::vector<sim::Delay> found, double lo) {
    sim::RunResult best = last;
    for (int i = 0; i < 8 && !out_of_bounds(); ++i) {
      const double hi = found.back().ns;
      const double mid = std::floor((lo + hi) / 2);
      if (hi - lo < 20 || mid <= lo) break;
      std::vector<sim::Delay> trial = found;
      trial.back().ns = mid;
      if (changes(trial)) {
        found = trial;
        best = last;
      } else {
        lo = mid;
      }
    }
    res.found = std::move(found);
    res.result = std::move(best);
    res.outcome = outcome_text(res.result);
  };

  // Singles, smallest amount first: the first change is the smallest delay of the geometric series.
  double lo = 0;
  for (double amount : amounts) {
    for (sim::Delay d : candidates) {
      if (out_of_bounds()) return res;
      d.ns = amount;
      ++res.singles_tried;
      if (changes({d})) {
        shrink({d}, lo);
        return res;
      }
    }
    lo = amount;
  }
  // Pairs among the first points of the ranking, both held by the same amount.
  const size_t n = std::min(candidates.size(), static_cast<size_t>(std::max(0, bounds.max_pair_points)));
  for (double amount : amounts) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        if (out_of_bounds()) return res;
        sim::Delay a = candidates[i], b = candidates[j];
        a.ns = b.ns = amount;
        ++res.pairs_tried;
        if (changes({a, b})) {
          shrink({a, b}, 0);
          return res;
        }
      }
    }
  }
  res.exhausted = true;
  return res;
}

std::string delay_text(const sim::Kernel& kernel, const sim::Delay& d) {
  std::string where = fmt::format("site{}", d.site);
  if (d.site < kernel.sites.size()) {
    const sim::SourceLoc loc = kernel.sites[d.site].loc;
    const auto same = std::count_if(kernel.sites.begin(), kernel.sites.end(), [&](const sim::Site& s) {
      return s.loc.line == loc.line && s.loc.col == loc.col;
    });
    if (loc.line != 0 && same == 1) where = fmt::format("{}:{}", loc.line, loc.col);
  }
  return fmt::format("cta{}.warp{}@{}#{}+{}ns{}", d.cta, d.warp, where, d.occurrence, static_cast<int64_t>(std::llround(d.ns)),
                     d.landing ? ":landing" : "");
}

std::optional<sim::Delay> parse_delay(const sim::Kernel& kernel, const std::string& text, std::string& error) {
  const auto bad = [&](const std::string& why) {
    error = fmt::format("--delay {}: {}; expected ctaC.warpW@LINE:COL#OCCURRENCE+NSns[:landing] (or @siteN for the site)", text, why);
    return std::nullopt;
  };
  // Whole unsigned decimal numbers only.
  const auto number = [](const std::string& s, uint64_t& out) {
    if (s.empty() || s.size() > 15 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
    out = std::stoull(s);
    return true;
  };
  sim::Delay d;
  std::string rest = text;
  if (rest.ends_with(":landing")) {
    d.landing = true;
    rest.resize(rest.size() - 8);
  }
  const size_t dot = rest.find('.'), at = rest.find('@'), hash = rest.find('#'), plus = rest.find('+');
  if (!rest.starts_with("cta") || dot == std::string::npos || at == std::string::npos || hash == std::string::npos ||
      plus == std::string::npos || !(dot < at && at < hash && hash < plus) || rest.compare(dot + 1, 4, "warp") != 0 || !rest.ends_with("ns"))
    return bad("not in the delay form");
  uint64_t cta = 0, warp = 0, occ = 0, ns = 0;
  if (!number(rest.substr(3, dot - 3), cta) || !number(rest.substr(dot + 5, at - dot - 5), warp) ||
      !number(rest.substr(hash + 1, plus - hash - 1), occ) || !number(rest.substr(plus + 1, rest.size() - plus - 3), ns))
    return bad("a number is missing or not a whole number");
  if (cta >= static_cast<uint64_t>(kernel.launch.ctas)) return bad(fmt::format("the launch has {} CTA(s)", kernel.launch.ctas));
  if (warp >= static_cast<uint64_t>(kernel.launch.warps())) return bad(fmt::format("a CTA has {} warp(s)", kernel.launch.warps()));
  if (occ > UINT32_MAX) return bad("the occurrence is too large");
  const std::string where = rest.substr(at + 1, hash - at - 1);
  uint64_t site = 0;
  if (where.starts_with("site")) {
    if (!number(where.substr(4), site) || site >= kernel.sites.size()) return bad("no such site");
  } else {
    const size_t colon = where.find(':');
    uint64_t line = 0, col = 0;
    if (colon == std::string::npos || !number(where.substr(0, colon), line) || !number(where.substr(colon + 1), col))
      return bad("the site is not LINE:COL");
    const auto it = std::find_if(kernel.sites.begin(), kernel.sites.end(),
                                 [&](const sim::Site& s) { return s.loc.line == line && s.loc.col == col; });
    if (it == kernel.sites.end()) return bad(fmt::format("no statement starts at line {}, column {}", line, col));
    site = static_cast<uint64_t>(it - kernel.sites.begin());
  }
  d.cta = static_cast<int>(cta);
  d.warp = static_cast<int>(warp);
  d.site = static_cast<uint32_t>(site);
  d.occurrence = static_cast<uint32_t>(occ);
  d.ns = static_cast<double>(ns);
  return d;
}

std::string adversarial_report(const CheckResult& checked, const AdversarialResult& s, const std::string& file,
                               const std::string& flags) {
  const std::vector<double> amounts = delay_amounts(s.kernel_ns);
  std::string covered = fmt::format("{} runs: {} single delays of {} points (and their copies' landings) by {:.3g} .. {:.3g} us, {} pairs",
                                    s.runs, s.singles_tried, s.points, amounts.front() / 1000, amounts.back() / 1000, s.pairs_tried);
  if (s.found.empty()) {
    const std::string bound = s.exhausted ? "every one within the bounds tried" : fmt::format("stopped by the {} bound", s.stopped_by);
    return fmt::format("search adversarial: no delay changes the verdict `{}` ({}; {})\n", s.baseline, covered, bound);
  }
  std::string out = fmt::format("search adversarial: {} delay{} change{} the verdict `{}` to `{}` ({}):\n", s.found.size(),
                                s.found.size() == 1 ? "" : "s", s.found.size() == 1 ? "s" : "", s.baseline, s.outcome, covered);
  std::string again = fmt::format("pipesim check {}{}", file, flags);
  for (const sim::Delay& d : s.found) {
    const std::string what = d.site < checked.kernel.sites.size() ? checked.kernel.sites[d.site].what : "op";
    out += fmt::format("  {}: warp {} of CTA {} {} {:.0f} ns {} its `{}` (pass {})\n", delay_text(checked.kernel, d), d.warp, d.cta,
                       d.landing ? "has the copy issued at" : "is held", d.ns, d.landing ? "land late, at" : "before", what,
                       d.occurrence + 1);
    again += " --delay " + delay_text(checked.kernel, d);
  }
  out += "  again: " + again + "\n";
  return out + indented_report(checked, s.result);
}

std::string indented_report(const CheckResult& checked, const sim::RunResult& result) {
  CheckResult alt = checked;
  alt.result = result;
  judge(alt);
  const std::string body = alt.report.substr(alt.report.find('\n') + 1);  // the first line names the scenario again
  std::string out;
  for (size_t at = 0; at < body.size();) {
    const size_t nl = body.find('\n', at);
    out += "  " + body.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
    at = nl == std::string::npos ? body.size() : nl + 1;
  }
  return out;
}

}  // namespace pipesim::verify
