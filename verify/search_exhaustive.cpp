// The exhaustive search (verify/search.hpp): depth first over the choices of sim::UntimedRun, each
// state kept as its 64-bit hash (hash compaction, as SPIN's -DHC: a collision can hide a state, with
// probability about n^2 / 2^65 for n states, which the report prints). A frame of the stack is a
// copy of the engine at a choice point; a child is that copy with one choice taken.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <unordered_set>

#include <fmt/format.h>

#include "verify/report.hpp"
#include "verify/search.hpp"

namespace pipesim::verify {
namespace {

uint64_t peak_rss_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("VmHWM:")) return std::strtoull(line.c_str() + 6, nullptr, 10);
  return 0;
}

std::string site_at(const sim::Kernel& k, uint32_t site) {
  if (site >= k.sites.size()) return "?";
  const sim::SourceLoc& l = k.sites[site].loc;
  return fmt::format("{}:{}", l.line, l.col);
}

std::string warp_name(const sim::Kernel& k, int cta, int warp, int role) {
  std::string s = fmt::format("CTA {} warp {}", cta, warp);
  if (role >= 0 && static_cast<size_t>(role) < k.roles.size()) s += " (" + k.roles[static_cast<size_t>(role)].name + ")";
  return s;
}

// One line of a trail, for people.
std::string choice_text(const sim::Kernel& k, const sim::UntimedRun::Choice& c) {
  using Kind = sim::UntimedRun::Choice::Kind;
  const std::string what = c.site < k.sites.size() ? k.sites[c.site].what : std::string(sim::op_name(c.op));
  const std::string on = c.barrier.empty() ? "" : " " + c.barrier;
  switch (c.kind) {
    case Kind::Op: return fmt::format("{}: `{}`{} at {}", warp_name(k, c.cta, c.warp, c.role), what, on, site_at(k, c.site));
    case Kind::Land:
      return fmt::format("the copy from CTA {} warp {} (`{}` at {}) lands on{} of CTA {}", c.from_cta, c.from_warp, what,
                         site_at(k, c.site), on, c.cta);
    case Kind::Remote:
      return fmt::format("`{}` from CTA {} warp {} (at {}) reaches{} of CTA {}", what, c.from_cta, c.from_warp, site_at(k, c.site), on, c.cta);
    case Kind::Commit:
      return fmt::format("the tcgen05.commit from CTA {} warp {} (at {}) arrives on{} of CTA {}", c.from_cta, c.from_warp,
                         site_at(k, c.site), on, c.cta);
  }
  return what;
}

}  // namespace

ExhaustiveResult exhaustive_search(const sim::Kernel& kernel, const sim::RunOptions& base, const ExhaustiveBounds& bounds,
                                   const std::function<void(uint64_t, uint64_t)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  const auto elapsed_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  ExhaustiveResult res;
  {
    sim::RunOptions o = base;
    o.record_trace = false;
    res.baseline = outcome_text(sim::run(kernel, o));
  }
  struct Frame {
    sim::UntimedRun run;
    size_t open = 0, next = 0;
  };
  std::vector<Frame> stack;
  std::unordered_set<uint64_t> seen;
  seen.reserve(static_cast<size_t>(std::min<uint64_t>(bounds.max_states, 1u << 20)));
  // A state just reached: true when it opens choices to explore (push it), false when it ended or
  // was seen before. An ended run's outcome is judged here; one that differs ends the search.
  bool found = false;
  const auto arrive = [&](sim::UntimedRun&& run, size_t open) {
    if (!seen.insert(run.state_hash()).second) {
      ++res.revisits;
      return;
    }
    ++res.states;
    if (open > 0) {
      stack.push_back(Frame{std::move(run), open, 0});
      res.max_depth = std::max(res.max_depth, stack.size() - 1);
      return;
    }
    ++res.schedules;
    sim::RunResult r = std::move(run).finish();
    const std::string outcome = outcome_text(r);
    ++res.outcomes[outcome];
    if (outcome != res.baseline && !found) {
      found = true;
      res.outcome = outcome;
      res.result = std::move(r);
      for (const Frame& f : stack) res.trail.push_back({f.run.describe(f.next - 1), f.next - 1, f.open});
    }
  };
  {
    sim::UntimedRun root(kernel, base);
    const size_t open = root.settle();
    arrive(std::move(root), open);
  }
  uint64_t polls = 0;
  while (!stack.empty() && !found) {
    if ((++polls & 255) == 0) {
      if (progress) progress(res.states, bounds.max_states);
      if (bounds.max_seconds > 0 && elapsed_s() >= bounds.max_seconds) {
        res.stopped_by = "seconds";
        break;
      }
    }
    if (res.states >= bounds.max_states) {
      res.stopped_by = "states";
      break;
    }
    Frame& top = stack.back();
    if (top.next == top.open) {
      stack.pop_back();
      continue;
    }
    sim::UntimedRun child = top.run;
    child.take(top.next++);
    ++res.transitions;
    const size_t open = child.settle();
    arrive(std::move(child), open);
  }
  res.complete = !found && res.stopped_by.empty();
  res.seconds = elapsed_s();
  res.peak_rss_kib = peak_rss_kib();
  return res;
}

std::string trail_text(const std::vector<TrailStep>& trail) {
  std::string s;
  for (size_t d = 0; d < trail.size(); ++d)
    if (trail[d].index != 0) s += fmt::format("{}{}:{}", s.empty() ? "" : ",", d, trail[d].index);
  return s.empty() ? "0" : s;
}

std::optional<sim::RunResult> replay_trail(const sim::Kernel& kernel, const sim::RunOptions& base, const std::string& trail,
                                           std::string& error) {
  std::map<size_t, size_t> pick;  // depth -> choice index
  if (trail != "0") {
    size_t at = 0;
    while (at <= trail.size()) {
      const size_t comma = std::min(trail.find(',', at), trail.size());
      const std::string item = trail.substr(at, comma - at);
      const size_t colon = item.find(':');
      const auto digits = [](const std::string& s) {
        return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
      };
      if (colon == std::string::npos || !digits(item.substr(0, colon)) || !digits(item.substr(colon + 1))) {
        error = fmt::format("--trail {}: `{}` is not DEPTH:CHOICE (whole numbers); expected the form the search printed, e.g. 3:1,17:2", trail, item);
        return std::nullopt;
      }
      pick[std::stoul(item.substr(0, colon))] = std::stoul(item.substr(colon + 1));
      at = comma + 1;
    }
  }
  sim::UntimedRun run(kernel, base);
  for (size_t depth = 0;; ++depth) {
    const size_t open = run.settle();
    if (open == 0) break;
    const auto it = pick.find(depth);
    const size_t i = it == pick.end() ? 0 : it->second;
    if (i >= open) {
      error = fmt::format("--trail: choice {} at depth {} does not exist ({} open there): the trail belongs to another scenario or version", i,
                          depth, open);
      return std::nullopt;
    }
    run.take(i);
  }
  return std::move(run).finish();
}

std::string exhaustive_report(const CheckResult& checked, const ExhaustiveResult& s, const std::string& file, const std::string& flags) {
  std::string outcomes;
  for (const auto& [what, n] : s.outcomes) outcomes += fmt::format("{}{} x{}", outcomes.empty() ? "" : ", ", what, n);
  // Hash compaction: the chance that two of n distinct states share a 64-bit hash.
  const double n = static_cast<double>(s.states);
  const std::string covered = fmt::format(
      "{} states, {} transitions ({} to states seen before), {} end states [{}], deepest schedule {} choices; {:.2f} s, {:.0f} states/s, "
      "peak memory {} MiB; hash compaction: P(a state missed) < {:.1e}",
      s.states, s.transitions, s.revisits, s.schedules, outcomes, s.max_depth, s.seconds, s.seconds > 0 ? n / s.seconds : 0.0,
      s.peak_rss_kib / 1024, n * n / std::ldexp(1.0, 65));
  if (s.trail.empty() && s.outcome.empty()) {
    if (s.complete)
      return fmt::format("search exhaustive: no interleaving changes the verdict `{}` ({}; every interleaving of synchronising actions explored)\n",
                         s.baseline, covered);
    return fmt::format("search exhaustive: no interleaving within the bound changes the verdict `{}` ({}; stopped by the {} bound: "
                       "raise --search-states / --search-seconds to go on)\n",
                       s.baseline, covered, s.stopped_by);
  }
  std::string out = fmt::format("search exhaustive: a schedule of {} choices changes the verdict `{}` to `{}` ({}):\n", s.trail.size(),
                                s.baseline, s.outcome, covered);
  // The trail: the last choices matter most; the replay command carries every one.
  constexpr size_t kShown = 40;
  const size_t first = s.trail.size() > kShown ? s.trail.size() - kShown : 0;
  if (first > 0) out += fmt::format("  ... {} earlier choices (the replay below takes them all)\n", first);
  for (size_t d = first; d < s.trail.size(); ++d)
    out += fmt::format("  {:>4}. {}{}\n", d, choice_text(checked.kernel, s.trail[d].choice),
                       s.trail[d].index == 0 ? "" : fmt::format("  [choice {} of {}]", s.trail[d].index + 1, s.trail[d].open));
  out += fmt::format("  again: pipesim check {}{} --trail {}\n", file, flags, trail_text(s.trail));
  out += "  (untimed: the times in this report are not a prediction)\n";
  return out + indented_report(checked, s.result);
}

}  // namespace pipesim::verify
