#include "verify/calibrate_command.hpp"

#include <cmath>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "verify/calibrate.hpp"
#include "verify/parser.hpp"

namespace pipesim::verify {
namespace {

struct Options {
  std::vector<std::string> unstamped, stamped, check_unstamped, check_stamped;
  int rounds = 8;
  bool from_zero = false;
};

// Reads the logs and parses every scenario they name; false (with a message) on anything unreadable.
bool load(const std::vector<std::string>& logs, bool stamped, std::vector<FitPoint>& out) {
  for (const std::string& path : logs) {
    std::ifstream in(path);
    if (!in) {
      std::cerr << fmt::format("pipesim calibrate: cannot read {}\n", path);
      return false;
    }
    for (Measured& m : read_crosscheck_log(in, stamped)) {
      std::ifstream sf(m.file, std::ios::binary);
      std::ostringstream text;
      text << sf.rdbuf();
      try {
        if (!sf) throw std::runtime_error("cannot read the file");
        std::vector<Define> defs;
        if (std::string bad; !parse_defines(m.defines, defs, bad)) throw std::runtime_error("bad -D " + bad + " in the log");
        sim::Kernel k = parse_scenario(m.file, text.str(), defs);
        out.push_back({std::move(m), std::move(k)});
      } catch (const std::exception& e) {
        std::cerr << fmt::format("pipesim calibrate: {} names {}, which cannot be read or parsed (random protocols: "
                                 "regenerate them at that path with the same `pipesim generate` command):\n{}\n",
                                 path, m.file, e.what());
        return false;
      }
    }
  }
  return true;
}

void print_score(std::string_view what, const std::vector<FitPoint>& pts, const FitScore& s, bool per_file) {
  std::cout << fmt::format("{}: {} scenarios, mean |log(model/device)| {:.4f}, within 10 %: {} of {}\n", what, pts.size(),
                           s.mean_abs_log, s.within_10pct, s.n);
  if (!per_file) return;
  for (size_t i = 0; i < pts.size(); ++i)
    std::cout << fmt::format("  {:<64} model {:10.3f} us  device {:10.3f} us  {:+6.1f} %{}\n", pts[i].measured.file, s.model_ns[i] / 1e3,
                             pts[i].measured.device_ns / 1e3, 100.0 * (s.model_ns[i] - pts[i].measured.device_ns) / pts[i].measured.device_ns,
                             pts[i].measured.stamped ? "" : "  (no timestamps)");
}

int run_calibrate(const Options& o) {
  if (o.rounds < 0 || o.rounds > 64) {
    std::cerr << "pipesim calibrate: --rounds takes 0..64\n";
    return 2;
  }
  std::vector<FitPoint> fit, check;
  if (!load(o.unstamped, false, fit) || !load(o.stamped, true, fit) || !load(o.check_unstamped, false, check) ||
      !load(o.check_stamped, true, check))
    return 2;
  if (fit.empty()) {
    std::cerr << "pipesim calibrate: the logs hold no scenario that finished on both sides\n";
    return 2;
  }
  const model::InterpreterCost* current = model::interpreter_cost("sm_90a");
  const model::InterpreterCost start = o.from_zero || !current ? model::InterpreterCost{} : *current;
  print_score("current table, fit set", fit, score(fit, start), false);
  const model::InterpreterCost c = fit_interpreter_cost(fit, start, o.rounds);
  print_score("fitted, fit set", fit, score(fit, c), false);
  if (!check.empty()) {
    print_score("current table, check set", check, score(check, start), false);
    print_score("fitted, check set", check, score(check, c), true);
  }
  std::cout << fmt::format(
      "fitted InterpreterCost (model/arch.cpp):\n"
      "    .op_ns = {:.1f},\n    .wait_ns = {:.1f},\n    .compute_ns = {:.1f},\n    .init_ns = {:.1f},\n    .named_ns = {:.1f},\n"
      "    .cluster_ns = {:.1f},\n    .copy_ns = {:.1f},\n    .wake_ns = {:.1f},\n    .contention_ns = {:.1f},\n    .poll_share = {:.2f},\n"
      "    .start_ns = {:.1f},\n    .timestamp_ns = {:.1f},\n",
      c.op_ns, c.wait_ns, c.compute_ns, c.init_ns, c.named_ns, c.cluster_ns, c.copy_ns, c.wake_ns, c.contention_ns, c.poll_share,
      c.start_ns, c.timestamp_ns);
  return 0;
}

}  // namespace

CLI::App* add_calibrate_command(CLI::App& app, std::function<int()>& action) {
  auto o = std::make_shared<Options>();
  CLI::App* c = app.add_subcommand("calibrate", "Fit the device interpreter's per-op cost to pipesim crosscheck logs (docs/calibration.md)");
  c->add_option("--unstamped", o->unstamped, "crosscheck log of runs with --no-timestamps (fit set; repeatable)")->type_name("LOG");
  c->add_option("--stamped", o->stamped, "crosscheck log of runs with per-op timestamps (fit set; repeatable)")->type_name("LOG");
  c->add_option("--check-unstamped", o->check_unstamped, "held-out log, --no-timestamps runs: reported, not fitted")->type_name("LOG");
  c->add_option("--check-stamped", o->check_stamped, "held-out log, timestamped runs: reported, not fitted")->type_name("LOG");
  c->add_option("--rounds", o->rounds, "coordinate-search rounds (steps halve each round)")->capture_default_str();
  c->add_flag("--from-zero", o->from_zero, "start the search from zero costs instead of the current table");
  c->callback([o, &action] { action = [o] { return run_calibrate(*o); }; });
  return c;
}

}  // namespace pipesim::verify
