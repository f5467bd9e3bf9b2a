#include "verify/calibrate.hpp"

#include <array>
#include <cmath>
#include <istream>
#include <regex>

#include "sim/engine.hpp"

namespace pipesim::verify {

std::vector<Measured> read_crosscheck_log(std::istream& in, bool stamped) {
  static const std::regex head(R"(^== (\S+)(.*)$)");
  static const std::regex define(R"(-D (\S+))");
  static const std::regex both_ok(R"(^\s+verdict\s+model: ok\s+device: ok\s+agree\s*$)");
  static const std::regex time(R"(^\s+time\s+kernel: model [0-9.]+ us, device ([0-9.]+) us)");
  std::vector<Measured> out;
  std::string line, file;
  std::vector<std::string> defines;
  bool ok = false;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, head)) {
      file = m[1];
      defines.clear();
      const std::string rest = m[2];
      for (std::sregex_iterator it(rest.begin(), rest.end(), define), end; it != end; ++it) defines.push_back((*it)[1]);
      ok = false;
      // The model charges every TMA byte to DRAM: runs that re-read one small source are not its timing.
      if (rest.find("--l2-sources") != std::string::npos) file.clear();
    } else if (!file.empty() && std::regex_search(line, both_ok)) {
      ok = true;
    } else if (ok && std::regex_search(line, m, time)) {
      const double dev = std::stod(m[1]) * 1e3;
      if (dev > 0) out.push_back({file, dev, line.find("timestamps off") == std::string::npos && stamped, defines});
      ok = false;
    }
  }
  return out;
}

namespace {
// The fields the search moves, with their first step (ns; poll_share is a fraction).
struct Field {
  double model::InterpreterCost::*member;
  double step;
};
constexpr std::array kFields{
    Field{&model::InterpreterCost::op_ns, 40},        Field{&model::InterpreterCost::wait_ns, 40},
    Field{&model::InterpreterCost::compute_ns, 40},   Field{&model::InterpreterCost::init_ns, 80},
    Field{&model::InterpreterCost::named_ns, 80},     Field{&model::InterpreterCost::cluster_ns, 80},
    Field{&model::InterpreterCost::copy_ns, 40},      Field{&model::InterpreterCost::wake_ns, 40},
    Field{&model::InterpreterCost::contention_ns, 20}, Field{&model::InterpreterCost::poll_share, 0.2},
    Field{&model::InterpreterCost::start_ns, 300},    Field{&model::InterpreterCost::timestamp_ns, 10},
};
}  // namespace

FitScore score(const std::vector<FitPoint>& points, const model::InterpreterCost& cost) {
  FitScore s;
  for (const FitPoint& p : points) {
    const double t = sim::run(p.kernel, sim::interpreter_run_options(&cost, p.measured.stamped)).end_ns;
    s.model_ns.push_back(t);
    if (t <= 0) continue;
    s.mean_abs_log += std::abs(std::log(t / p.measured.device_ns));
    if (std::abs(t - p.measured.device_ns) <= 0.10 * p.measured.device_ns) ++s.within_10pct;
    ++s.n;
  }
  if (s.n) s.mean_abs_log /= s.n;
  return s;
}

model::InterpreterCost fit_interpreter_cost(const std::vector<FitPoint>& points, model::InterpreterCost start, int rounds) {
  model::InterpreterCost best = start;
  double best_score = score(points, best).mean_abs_log;
  std::array<double, kFields.size()> step{};
  for (size_t i = 0; i < kFields.size(); ++i) step[i] = kFields[i].step;
  for (int r = 0; r < rounds; ++r) {
    for (size_t i = 0; i < kFields.size(); ++i) {
      for (const double dir : {1.0, -1.0}) {
        // Keep walking in one direction while it improves.
        for (;;) {
          model::InterpreterCost c = best;
          c.*kFields[i].member = std::max(0.0, c.*kFields[i].member + dir * step[i]);
          if (c.*kFields[i].member == best.*kFields[i].member) break;
          const double v = score(points, c).mean_abs_log;
          if (!(v < best_score)) break;
          best = c;
          best_score = v;
        }
      }
    }
    for (double& s : step) s /= 2;
  }
  return best;
}

}  // namespace pipesim::verify
