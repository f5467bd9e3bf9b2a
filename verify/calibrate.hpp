// Fitting the device interpreter's own cost (model::InterpreterCost) to measured runs: the
// crosscheck logs hold, per scenario, the device's time; the model re-runs each scenario with a
// candidate cost and a coordinate search minimises the mean |log(model / device)|.
// `pipesim calibrate` is the command; docs/calibration.md says which logs produced the table.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "model/arch.hpp"
#include "sim/program.hpp"

namespace pipesim::verify {

// One scenario both sides ran to the end, with the device's time (first warp start to last warp end).
struct Measured {
  std::string file;
  double device_ns = 0;
  bool stamped = true;  // per-op timestamps were on
  std::vector<std::string> defines;  // the run's -D NAME=INT overrides
};

// The scenarios of a `pipesim crosscheck` log that both sides ran to the end and that agree (its
// "== FILE [-D N=V]...", "verdict" and "time" lines; tcgen05 emulations are not counted).
// `stamped` applies where the log does not say ("timestamps off" on the time line).
std::vector<Measured> read_crosscheck_log(std::istream& in, bool stamped);

struct FitPoint {
  Measured measured;
  sim::Kernel kernel;
};

struct FitScore {
  double mean_abs_log = 0;  // mean |log(model / device)|
  int within_10pct = 0;
  int n = 0;
  std::vector<double> model_ns;  // per point
};

FitScore score(const std::vector<FitPoint>& points, const model::InterpreterCost& cost);

// Coordinate search from `start` (steps halve each round); every field of InterpreterCost stays >= 0.
model::InterpreterCost fit_interpreter_cost(const std::vector<FitPoint>& points, model::InterpreterCost start, int rounds);

}  // namespace pipesim::verify
