#include "verify/check_command.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include <unistd.h>

#include <fmt/format.h>

#include "verify/check.hpp"
#include "verify/explore.hpp"
#include "verify/inputs.hpp"
#include "verify/json_report.hpp"
#include "verify/progress.hpp"
#include "verify/report.hpp"
#include "verify/search.hpp"
#include "verify/trace.hpp"

namespace pipesim::verify {
namespace {

struct Options {
  std::vector<std::string> inputs;
  std::vector<std::string> defines;
  uint64_t seed = 1;
  double jitter = 0;
  uint64_t max_events = sim::RunOptions::kDefaultMaxEvents;  // the run's budget (Verdict::Stopped past it)
  double max_seconds = sim::RunOptions::kDefaultMaxSeconds;
  uint64_t max_instructions = sim::RunOptions::kDefaultMaxInstructions;
  bool json = false;
  bool verbose = false;
  bool quiet = false;         // the verdict line only (exit codes unchanged)
  std::string color = "auto"; // auto | always | never: ANSI colour of verdicts and severities
  std::string trace;
  std::vector<std::string> assume;
  int explore = 0;            // extra jittered runs per scenario (race check)
  double explore_jitter = 0.3;
  bool interp_cost = false;   // time the device interpreter's run (crosscheck's model side)
  std::vector<std::string> timing;  // NAME=VALUE over the architecture's timing table
  double sm_clock = 0;              // GHz: run with the SM clocked there (model::at_sm_clock); 0: the architecture's
  std::string launch;         // PTX kernels: the launch file
  std::string expect;         // PTX kernels: the verdict expected (ok, hang, error[:KIND])
  std::string sweep;          // NAME=a,b,c: the one file at each value of one -D setting
  std::string search;         // adversarial | exhaustive: a schedule search per scenario (verify/search.hpp)
  int search_runs = AdversarialBounds{}.max_runs;
  double search_seconds = AdversarialBounds{}.max_seconds;
  std::vector<std::string> delays;  // --delay: hold warps as a search reported (one run, replayed)
  uint64_t search_states = ExhaustiveBounds{}.max_states;
  uint64_t search_memory = ExhaustiveBounds{}.max_memory_mib;
  std::string search_por = "on";    // --search-por on|off: the exhaustive search's partial-order reduction
  std::string trail;                // --trail: replay one untimed schedule the exhaustive search reported
};

// "ok", "hang", "error", "error:KIND" (or "error KIND") as an expectation.
bool parse_expectation(const std::string& text, sim::Expectation& out) {
  if (text == "ok") out.verdict = sim::Verdict::Ok;
  else if (text == "hang") out.verdict = sim::Verdict::Hang;
  else if (text == "stopped") out.verdict = sim::Verdict::Stopped;
  else if (text.rfind("error", 0) == 0 && (text.size() == 5 || text[5] == ':' || text[5] == ' ')) {
    out.verdict = sim::Verdict::Error;
    out.error_kind = text.size() > 6 ? text.substr(6) : "";
  } else {
    return false;
  }
  return true;
}

// A whole string as a finite number ("400", "0.5"); false on anything else.
bool parse_double(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(out);
}

// What --explore found, for the report and --json: the outcomes, and per outcome the fixed run does
// not give, the first explored run that gives it (the trail of the race, as SPIN keeps one).
CheckResult::Interleavings summarise(const Exploration& e, double jitter) {
  CheckResult::Interleavings s;
  s.runs = static_cast<int>(e.runs.size());
  s.jitter = jitter;
  s.outcomes = e.outcomes;
  s.race = e.timing_dependent();
  std::set<std::string> seen{e.fixed};
  for (size_t i = 0; i < e.runs.size(); ++i) {
    const Exploration::Run& run = e.runs[i];
    const std::string what = outcome_text(run.result);
    if (seen.insert(what).second) s.trails.push_back({what, static_cast<int>(i + 1), run.seed, run.issue_scale, run.start_skew});
  }
  return s;
}

// Each trail's full report, indented, with how to run it again when a plain --seed and --jitter do
// (instruction cost x1, warps starting apart).
// The flags of this check that change what a run does, to repeat them in a "run it again" line.
std::string run_flags(const Options& o) {
  std::string out;
  if (!o.launch.empty()) out += " --launch " + o.launch;
  for (const std::string& d : o.defines) out += " -D " + d;
  for (const std::string& a : o.assume) out += " --assume " + a;
  if (o.sm_clock > 0) out += fmt::format(" --sm-clock {}", o.sm_clock);
  for (const std::string& t : o.timing) out += " --timing " + t;
  if (o.interp_cost) out += " --interp-cost";
  if (o.max_events != Options{}.max_events) out += fmt::format(" --max-events {}", o.max_events);
  if (o.max_seconds != Options{}.max_seconds) out += fmt::format(" --max-seconds {}", o.max_seconds);
  if (o.max_instructions != Options{}.max_instructions) out += fmt::format(" --max-instructions {}", o.max_instructions);
  return out;
}

std::string trails_report(const CheckResult& r, const Exploration& e, const CheckResult::Interleavings& s, const std::string& file,
                          const std::string& flags) {
  std::string out;
  for (const CheckResult::Interleavings::Trail& t : s.trails) {
    CheckResult alt = r;
    alt.result = e.runs[static_cast<size_t>(t.run - 1)].result;
    std::string how = fmt::format("seed {}, jitter {}, instruction cost x{:g}, warps {}", t.seed, s.jitter, t.issue_scale,
                                  t.start_skew ? "starting apart" : "starting together");
    if (t.issue_scale == 1.0 && t.start_skew) how += fmt::format("; again: pipesim check {}{} --seed {} --jitter {}", file, flags, t.seed, s.jitter);
    out += fmt::format("interleaving {} of {} gives `{}` ({}):\n", t.run, s.runs, t.outcome, how);
    std::string body = human_report(alt);
    body = body.substr(body.find('\n') + 1);  // the first line names the scenario again
    for (size_t at = 0; at < body.size();) {
      const size_t nl = body.find('\n', at);
      out += "  " + body.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
      at = nl == std::string::npos ? body.size() : nl + 1;
    }
  }
  return out;
}

// --sweep NAME=a,b,c: the one file checked at each value of NAME (a scenario parameter, or a PTX
// launch setting), one line each with the predicted time and the verdict, fastest first.
int run_sweep(const Options& o, const CheckOptions& co, const std::string& file) {
  const size_t eq = o.sweep.find('=');
  const std::string name = eq == std::string::npos ? "" : o.sweep.substr(0, eq);
  std::vector<std::string> values;
  for (size_t at = eq + 1; eq != std::string::npos && at <= o.sweep.size();) {
    const size_t comma = std::min(o.sweep.find(',', at), o.sweep.size());
    values.push_back(o.sweep.substr(at, comma - at));
    at = comma + 1;
  }
  const bool ptx = is_ptx_kernel(file);
  for (const std::string& v : values) {
    std::vector<Define> one;
    std::string bad;
    if (name.empty() || v.empty() || (!ptx && !parse_defines({name + "=" + v}, one, bad))) {
      std::cerr << fmt::format("pipesim: error: --sweep {}: expected NAME=V1,V2,... with {}\n", o.sweep,
                               ptx ? "launch settings as -D takes them" : "integer values");
      return 2;
    }
  }
  struct Point {
    std::string value;
    CheckResult r;
  };
  std::vector<Point> points;
  for (const std::string& v : values) {
    CheckOptions c = co;
    if (ptx) {
      c.launch_sets.push_back(name + "=" + v);
    } else {
      std::erase_if(c.defines, [&](const Define& d) { return d.name == name; });
      std::string bad;
      parse_defines({name + "=" + v}, c.defines, bad);
    }
    CheckResult r = check_file(file, c);
    if (r.bad_input) {
      std::cerr << r.diagnostic;
      return 2;
    }
    points.push_back({v, std::move(r)});
  }
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.r.result.end_ns < b.r.result.end_ns; });
  int stopped = 0, mismatched = 0;
  for (const Point& p : points) {
    const std::string want = p.r.kernel.expect ? expectation_text(*p.r.kernel.expect) : "ok";
    std::cout << fmt::format("{:<4}  {}={:<12} {:10.2f} us  expect {:<12} got {}\n", p.r.matches_expect ? "ok" : "FAIL", name, p.value,
                             p.r.result.end_ns / 1000.0, want, outcome_text(p.r.result));
    if (stopped_unexpectedly(p.r)) ++stopped;
    else if (!p.r.matches_expect) ++mismatched;
  }
  return check_exit_code(0, stopped, mismatched);
}

// --delay: the check's run again with the warps held as the specs say (a schedule the adversarial
// search reported); a bad spec is bad input.
void replay_delays(CheckResult& r, const CheckOptions& co, const std::vector<std::string>& specs) {
  sim::RunOptions run = co.run;
  for (const std::string& spec : specs) {
    std::string error;
    const std::optional<sim::Delay> d = parse_delay(r.kernel, spec, error);
    if (!d) {
      r.bad_input = true;
      r.diagnostic = fmt::format("{}: error: {}\n", r.file, error);
      return;
    }
    run.delays.push_back(*d);
  }
  try {
    r.result = sim::run(r.kernel, run);
  } catch (const std::exception& e) {
    r.bad_input = true;
    r.diagnostic = fmt::format("{}: error: {}\n", r.file, e.what());
    return;
  }
  judge(r);
}

// --trail: the run is the untimed schedule the exhaustive search printed, judged as the search judged it.
void replay_schedule(CheckResult& r, const CheckOptions& co, const std::string& trail) {
  std::string error;
  std::optional<sim::RunResult> result;
  try {
    result = replay_trail(r.kernel, co.run, trail, error);
  } catch (const std::exception& e) {
    error = e.what();
  }
  if (!result) {
    r.bad_input = true;
    r.diagnostic = fmt::format("{}: error: {}\n", r.file, error);
    return;
  }
  r.result = std::move(*result);
  judge(r);
  r.report += "schedule: the untimed one --trail names (the times in this report are not a prediction)\n";
}

int run_check(const Options& o) {
  std::string error;
  const std::vector<std::string> files = scenario_files(o.inputs, error);
  if (!error.empty()) {
    std::cerr << error;
    return 2;
  }
  CheckOptions co;
  co.run.seed = o.seed;
  co.run.jitter = o.jitter;
  co.run.max_events = o.max_events;
  co.run.max_seconds = o.max_seconds;
  co.run.max_instructions = o.max_instructions;
  co.run.record_trace = !o.trace.empty();
  if (o.interp_cost) co.run.interp = model::interpreter_cost("sm_90a");
  // -D is a scenario parameter for scenarios and a launch short form for PTX kernels (docs/ptx.md).
  const bool any_ptx = std::any_of(files.begin(), files.end(), is_ptx_kernel);
  const bool any_scenario = !std::all_of(files.begin(), files.end(), is_ptx_kernel);
  if (any_ptx && any_scenario && !o.defines.empty()) {
    std::cerr << "pipesim: error: -D means a scenario parameter for scenarios and a launch setting for PTX kernels: check them separately\n";
    return 2;
  }
  if (any_ptx) co.launch_sets = o.defines;
  else if (std::string bad; !parse_defines(o.defines, co.defines, bad)) {
    std::cerr << fmt::format("pipesim: error: -D {}: expected NAME=INTEGER\n", bad);
    return 2;
  }
  co.launch = o.launch;
  if (!o.expect.empty()) {
    sim::Expectation e;
    if (!parse_expectation(o.expect, e)) {
      std::cerr << fmt::format("pipesim: error: --expect {}: expected ok, hang, error, error:KIND or stopped\n", o.expect);
      return 2;
    }
    co.expect = e;
  }
  if ((!o.launch.empty() || !o.expect.empty()) && !any_ptx) {
    std::cerr << "pipesim: error: --launch and --expect are for PTX kernels (FILE.ptx)\n";
    return 2;
  }
  if (o.sm_clock != 0 && !(o.sm_clock >= 0.1 && o.sm_clock <= 5.0)) {
    std::cerr << fmt::format("pipesim: error: --sm-clock {}: the SM clock must be in 0.1 .. 5 GHz\n", o.sm_clock);
    return 2;
  }
  co.run.sm_clock_ghz = o.sm_clock;
  for (const std::string& t : o.timing) {
    const size_t eq = t.find('=');
    const model::TimingField field = eq == std::string::npos ? nullptr : model::find_timing_field(t.substr(0, eq));
    if (!field) {
      std::string names;
      for (std::string_view n : model::timing_field_names()) names += fmt::format(" {}", n);
      std::cerr << fmt::format("pipesim: error: --timing {}: expected NAME=VALUE with NAME one of:{}\n", t, names);
      return 2;
    }
    double value = 0;
    const double bound = model::timing_field_bound(field);
    const bool count = model::timing_field_is_count(field);
    if (!parse_double(t.substr(eq + 1), value) || !(value >= 0 && value < bound) || (count && value != std::floor(value))) {
      std::cerr << fmt::format("pipesim: error: --timing {}: the value must be a {} >= 0{}\n", t,
                               count ? "whole number" : "number", std::isinf(bound) ? "" : fmt::format(" and < {}", bound));
      return 2;
    }
    co.run.timing_overrides.emplace_back(field, value);
  }
  if (!o.trace.empty() && files.size() != 1) {
    std::cerr << "pipesim: error: --trace writes one scenario's timeline; name exactly one file\n";
    return 2;
  }
  for (const std::string& a : o.assume) {
    if (a == "empty-commit-local=on") co.run.empty_commit_local = true;
    else if (a == "empty-commit-local=off") co.run.empty_commit_local = false;
    else if (a == "store-outlives-exit=on") co.run.store_outlives_exit = true;
    else if (a == "store-outlives-exit=off") co.run.store_outlives_exit = false;
    else {
      std::cerr << fmt::format("pipesim: error: --assume {}: known assumptions: empty-commit-local=on|off, store-outlives-exit=on|off\n", a);
      return 2;
    }
  }
  if (o.explore < 0 || o.explore > 1000 || o.explore_jitter <= 0 || o.explore_jitter >= 1) {
    std::cerr << "pipesim: error: --explore takes 0..1000 runs and --explore-jitter a value in (0, 1)\n";
    return 2;
  }
  if (!(o.max_seconds >= 0)) {
    std::cerr << "pipesim: error: --max-seconds must be a number >= 0 (0: no limit)\n";
    return 2;
  }
  if (o.jitter < 0 || o.jitter >= 1) {
    std::cerr << "pipesim: error: --jitter must be in [0, 1)\n";
    return 2;
  }

  if (!o.search.empty() && o.search != "adversarial" && o.search != "exhaustive") {
    std::cerr << fmt::format("pipesim: error: --search {}: known searches: adversarial, exhaustive\n", o.search);
    return 2;
  }
  if (o.search_states < 1) {
    std::cerr << "pipesim: error: --search-states must be at least 1\n";
    return 2;
  }
  if (!o.trail.empty() && (files.size() != 1 || !o.delays.empty())) {
    std::cerr << "pipesim: error: --trail replays one scenario's schedule; name exactly one file, without --delay\n";
    return 2;
  }
  if (o.search_runs < 1 || !(o.search_seconds >= 0)) {
    std::cerr << "pipesim: error: --search-runs must be at least 1 and --search-seconds a number >= 0 (0: no limit)\n";
    return 2;
  }
  if (!o.delays.empty() && files.size() != 1) {
    std::cerr << "pipesim: error: --delay replays one scenario's schedule; name exactly one file\n";
    return 2;
  }

  if (!o.sweep.empty()) {
    if (files.size() != 1 || o.json || !o.trace.empty() || o.explore > 0) {
      std::cerr << "pipesim: error: --sweep checks exactly one file, without --json, --trace or --explore\n";
      return 2;
    }
    return run_sweep(o, co, files.front());
  }

  std::vector<CheckResult> results;
  int bad_inputs = 0, stopped = 0, mismatched = 0;  // exit code: check_exit_code
  const bool single = files.size() == 1;
  // Colour only where a person reads it: --color=always, or auto on a terminal without NO_COLOR.
  const char* no_color = std::getenv("NO_COLOR");
  const bool color = !o.json && (o.color == "always" || (o.color == "auto" && isatty(fileno(stdout)) && !(no_color && *no_color)));
  Progress progress(!o.quiet);
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const std::string& f = files[fi];
    progress.update(fmt::format("pipesim: [{}/{}] {}", fi + 1, files.size(), f));
    CheckOptions with_progress = co;  // only the file's own run: the searches' runs report their own way
    with_progress.run.on_progress = [&](double ns, uint64_t events, uint64_t instructions) {
      std::string line = fmt::format("pipesim: [{}/{}] {}: {:.1f} us simulated, {:.1f} M events", fi + 1, files.size(), f, ns / 1000, static_cast<double>(events) / 1e6);
      if (instructions > 0) line += fmt::format(", {:.1f} M PTX instructions", static_cast<double>(instructions) / 1e6);
      progress.update(line);
    };
    CheckResult r = check_file(f, with_progress);
    if (!r.bad_input && !o.delays.empty()) replay_delays(r, co, o.delays);
    if (!r.bad_input && !o.trail.empty()) replay_schedule(r, co, o.trail);
    std::string searched;  // the outcome a search found under another schedule, for the verdict line
    if (!r.bad_input && (o.verbose || color)) r.report = human_report(r, {.verbose = o.verbose, .color = color});
    if (!r.bad_input && o.search == "exhaustive") {
      try {
        const ExhaustiveBounds b{.max_states = o.search_states, .max_seconds = o.search_seconds, .max_memory_mib = o.search_memory,
                                 .partial_order = o.search_por == "on"};
        const ExhaustiveResult s = exhaustive_search(r.kernel, co.run, b, [&](uint64_t states, uint64_t bound) {
          progress.update(fmt::format("pipesim: [{}/{}] {}: search exhaustive, {} of at most {} states", fi + 1, files.size(), f, states, bound));
        });
        if (!s.outcome.empty() && (!r.kernel.expect || !r.kernel.expect->racy)) r.matches_expect = false;
        searched = s.outcome;
        r.report += exhaustive_report(r, s, f, run_flags(o));
      } catch (const std::exception& ex) {
        r.report += std::string("search exhaustive: not run: ") + ex.what() + "\n";
      }
    } else if (!r.bad_input && !o.search.empty()) {
      try {
        const AdversarialBounds b{.max_runs = o.search_runs, .max_seconds = o.search_seconds, .max_pair_points = AdversarialBounds{}.max_pair_points};
        const AdversarialResult s = adversarial_search(r.kernel, co.run, b, [&](int done, int bound) {
          progress.update(fmt::format("pipesim: [{}/{}] {}: search adversarial, run {}/{}", fi + 1, files.size(), f, done, bound));
        });
        // A verdict some schedule changes is a race the default order hid: a problem unless `racy`.
        if (!s.found.empty() && (!r.kernel.expect || !r.kernel.expect->racy)) r.matches_expect = false;
        if (!s.found.empty()) searched = s.outcome;
        r.report += adversarial_report(r, s, f, run_flags(o));
      } catch (const std::exception& ex) {
        r.report += std::string("search adversarial: not run: ") + ex.what() + "\n";
      }
    }
    if (!r.bad_input && o.explore > 0) {
      try {
        const Exploration e = explore(r.kernel, co.run, o.explore, o.explore_jitter, [&](int done, int n) {
          progress.update(fmt::format("pipesim: [{}/{}] {}: interleaving {}/{}", fi + 1, files.size(), f, done, n));
        });
        r.interleavings = summarise(e, o.explore_jitter);
        std::string line = fmt::format("interleavings: {} runs with jitter {}:", o.explore, o.explore_jitter);
        for (const auto& [what, n] : e.outcomes) line += fmt::format(" {} x{}", what, n);
        if (e.timing_dependent()) {
          line += " -- the verdict depends on timing (a race)";
          // A race the scenario does not expect (`expect ... racy`) is a problem, even if this run's
          // order hid it.
          if (!r.kernel.expect || !r.kernel.expect->racy) r.matches_expect = false;
        }
        r.report += line + "\n" + trails_report(r, e, *r.interleavings, f, run_flags(o));
      } catch (const std::exception& ex) {
        r.interleavings = CheckResult::Interleavings{};
        r.interleavings->error = ex.what();
        r.report += std::string("interleavings: not explored: ") + ex.what() + "\n";
      }
    }
    progress.clear();
    if (r.bad_input) {
      ++bad_inputs;
      if (!o.json) std::cerr << r.diagnostic;
    } else {
      if (stopped_unexpectedly(r)) ++stopped;
      else if (!r.matches_expect) ++mismatched;
      if (!o.json) {
        const std::string want = r.kernel.expect ? expectation_text(*r.kernel.expect) : "ok";
        const std::string verdict = paint(fmt::format("{:<4}", r.matches_expect ? "ok" : "FAIL"), r.matches_expect ? Paint::Good : Paint::Bad, color);
        // A search's other outcome is part of what came out: "got ok, hang under --search".
        const std::string got = outcome_text(r.result) + (searched.empty() ? "" : ", " + searched + " under --search");
        std::cout << fmt::format("{}  {:<56}  expect {:<24} got {:<24} {:8.1f} ms\n", verdict, f, want, got, r.wall_ms);
        if (!o.quiet && (single || o.verbose || !r.matches_expect)) std::cout << r.report;
      }
      if (!o.trace.empty()) {
        std::ofstream out(o.trace, std::ios::binary);
        out << perfetto_trace(r.kernel, r.result);
        if (!out) {
          std::cerr << fmt::format("pipesim: error: cannot write trace {}\n", o.trace);
          ++bad_inputs;
        }
      }
    }
    results.push_back(std::move(r));
  }
  if (o.json) {
    ReportOptions ro;
    ro.seed = o.seed;
    ro.jitter = o.jitter;
    std::cout << to_json(std::span<const CheckResult>(results), ro).dump(2) << "\n";
  } else if (!single) {
    size_t ok = 0, bad = 0;
    for (const auto& r : results) (r.bad_input ? bad : ok) += r.bad_input ? 1 : (r.matches_expect ? 1 : 0);
    std::cout << fmt::format("{} scenarios: {} as expected, {} not, {} bad input\n", results.size(), ok,
                             results.size() - ok - bad, bad);
  }
  return check_exit_code(bad_inputs, stopped, mismatched);
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("check", "Run scenarios on the model: verdict per scenario, hang explanations");
  c->add_option("inputs", o->inputs, "scenario files or directories (every *.scn below), or a PTX kernel (FILE.ptx, with --launch)")->required();
  c->add_option("--launch", o->launch, "PTX kernels: the launch file (entry, grid, block, cluster, parameters; docs/ptx.md)")->type_name("FILE.json");
  c->add_option("--expect", o->expect, "PTX kernels: the verdict expected (ok, hang, error, error:KIND, stopped); default ok")->type_name("VERDICT");
  add_repeatable_option(*c, "-D", o->defines, "override a parameter: -D K=8192; for a PTX kernel a launch setting: -D grid=132 -D param.K=4096 (repeatable)")->type_name("NAME=VALUE");
  c->add_option("--seed", o->seed, "seed for latency jitter and tie-breaking")->check(not_negative())->capture_default_str();
  c->add_option("--jitter", o->jitter, "relative latency jitter in [0, 1), e.g. 0.1")->capture_default_str();
  c->add_option("--max-events", o->max_events, "budget: stop the run after this many simulated events (verdict `stopped`, exit 3; 0: no limit)")->check(not_negative())->capture_default_str();
  c->add_option("--max-seconds", o->max_seconds, "budget: stop the run after this many seconds of host time (verdict `stopped`, exit 3; 0: no limit)")->capture_default_str();
  c->add_option("--max-instructions", o->max_instructions, "budget: PTX kernels: stop after the warps executed this many instructions (verdict `stopped`, exit 3; 0: no limit)")->check(not_negative())->capture_default_str();
  c->add_flag("--json", o->json, "machine-readable report (schema pipesim.check/1)");
  c->add_flag("-v,--verbose", o->verbose, "print every scenario's full report, and under a grouped finding what its instances say beyond it");
  c->add_flag("-q,--quiet", o->quiet, "print the verdict lines only (and no progress line); exit codes unchanged");
  c->add_option("--color", o->color, "colour the verdict words and severities: auto (a terminal without NO_COLOR), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  add_repeatable_option(*c, "--assume", o->assume, "set a named model assumption: empty-commit-local=on|off, store-outlives-exit=on|off")
      ->type_name("NAME=on|off");
  c->add_option("--explore", o->explore, "race check: also run N seeds with latency jitter, out-of-order copies and skewed warp starts, and report every verdict reached")
      ->type_name("N");
  c->add_option("--explore-jitter", o->explore_jitter, "jitter of the --explore runs")->capture_default_str();
  c->add_option("--search", o->search, "schedule search: adversarial (hold warps and copies at synchronising points, singly then in pairs, by 1 us .. the kernel's length; reports the fewest delays that change the verdict) or exhaustive (every interleaving of synchronising actions, untimed, for small configurations; reports a trail that changes the verdict)")
      ->type_name("adversarial");
  c->add_option("--search-states", o->search_states, "bound of --search exhaustive: distinct states")->check(not_negative())->capture_default_str();
  c->add_option("--search-memory", o->search_memory, "bound of --search exhaustive: resident memory in MiB (0: no limit)")->check(not_negative())->capture_default_str();
  c->add_option("--search-por", o->search_por, "partial-order reduction of --search exhaustive (sleep sets, persistent sets): on, or off to explore every order")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  c->add_option("--trail", o->trail, "replay the untimed schedule --search exhaustive reported (DEPTH:CHOICE,...)");
  c->add_option("--search-runs", o->search_runs, "bound of --search: runs of the kernel")->capture_default_str();
  c->add_option("--search-seconds", o->search_seconds, "bound of --search: host seconds per scenario (0: no limit)")->capture_default_str();
  add_repeatable_option(*c, "--delay", o->delays, "replay a schedule --search reported: hold warp W of CTA C before pass K of its op at LINE:COL (repeatable)")
      ->type_name("ctaC.warpW@LINE:COL#K+NSns");
  c->add_option("--sweep", o->sweep, "check the one file at each value of one -D setting, one line each with the predicted time and verdict, fastest first: --sweep num_ab_stage=3,4,5")
      ->type_name("NAME=A,B,...");
  c->add_option("--trace", o->trace, "write a Chrome/Perfetto trace of one scenario")->type_name("FILE");
  c->add_flag("--interp-cost", o->interp_cost,
              "time the run as the device interpreter executes it on the H100 (its measured per-op cost added; what crosscheck compares)");
  c->add_option("--sm-clock", o->sm_clock,
                "what-if: run with the SM clocked at this many GHz (locked clocks, a power limit; Nsight Compute locks to base): SM-side costs scale, the memory system's do not")
      ->type_name("GHZ");
  add_repeatable_option(*c, "--timing", o->timing,
                        "what-if: set one field of the architecture's timing table, e.g. tma_latency_ns=400 (docs/calibration.md)")
      ->type_name("NAME=VALUE");
  c->callback([o, &action] { action = [o] { return run_check(*o); }; });
  return c;
}

}  // namespace pipesim::verify
