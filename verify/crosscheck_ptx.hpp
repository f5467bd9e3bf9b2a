// `pipesim crosscheck KERNEL.ptx --launch L.json`: the kernel's PTX on the model (`pipesim check`) and
// launched for real on the GPU (kernels/ptx_launch/), side by side: both verdicts, the predicted and
// the measured time (docs/ptx.md, "Crosscheck on a GPU"). The scenario crosscheck
// (crosscheck_command.cpp) dispatches here for .ptx inputs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/ptx_launch/ptx_runner.hpp"
#include "sim/engine.hpp"

namespace pipesim::verify {

struct PtxCrosscheckOptions {
  std::vector<std::string> inputs;       // exactly one FILE.ptx
  std::string launch;                    // the launch file ("" when -D gives it all)
  std::vector<std::string> launch_sets;  // -D short forms
  int runs = 10;                         // timed launches on the GPU (after one warm-up)
  std::optional<double> timeout_ms;      // watchdog per launch; default: see default_watchdog_ms
  bool json = false;
  bool back_to_back = false;             // a benchmark's timing (ptx_launch::GpuRunOptions::back_to_back)
  bool cold_l2 = false;                  // every timed launch from an empty L2 (ptx_launch::GpuRunOptions::cold_l2)
  bool scenario_options = false;         // a scenario-only option was given (--trace, --save-device ...)
  std::string stamps;                    // --stamps FILE: one more launch with stamps, every stamp to FILE (CSV)
  std::vector<uint32_t> stamp_lines;     // --stamp-lines: more lines stamped (1-based, of the .ptx)
};

// The watchdog when --timeout-ms is not given: 2 s, or 100 times the model's predicted time when
// that is longer (a kernel the model times at 30 ms is not hung at 2 s).
double default_watchdog_ms(double predicted_ns);

// What the GPU must show for a model verdict.
struct GpuExpectation {
  bool ok = false, hang = false, fault = false;
  std::string text;    // "ok", "hang", "fault", "hang or fault"
  std::string reason;  // why, for an error verdict ("the H100 traps on a pending-count underflow")
  bool accepts(ptx_launch::GpuOutcome o) const {
    return (o == ptx_launch::GpuOutcome::Ok && ok) || (o == ptx_launch::GpuOutcome::Hang && hang) ||
           (o == ptx_launch::GpuOutcome::Fault && fault);
  }
};
// `model` must not stop at a model-only rule (sim::is_model_only): run it with
// RunOptions::hardware_only first, as the hardware goes on past those.
GpuExpectation expected_gpu_outcome(const sim::RunResult& model);

int run_crosscheck_ptx(const PtxCrosscheckOptions& options);

}  // namespace pipesim::verify
