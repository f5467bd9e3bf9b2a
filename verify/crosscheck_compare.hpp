// The comparison of a scenario's model run with its run on the GPU (the device interpreter,
// kernels/interp/): verdicts, hang points, end phases, per-role times, and the model's other
// interleavings tried before a disagreement stands. Plain host code, unit-tested without a GPU
// (tests/test_crosscheck.cpp) on synthetic device results; `pipesim crosscheck` (crosscheck_command.hpp)
// runs it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/engine.hpp"
#include "sim/stream.hpp"
#include "verify/explore.hpp"

namespace pipesim::verify {

// What the device must show for the model's verdict. nullopt: the model's verdict is a rule the
// hardware has no behaviour for that can be compared (stale_wait, early_completion ...).
std::optional<sim::DeviceOutcome> expected_device_outcome(const sim::RunResult& model);

// Whether the scenario may be run on the device at all: false for rules whose hardware behaviour is
// undefined in a way that can wreck the run (uninit, reinit, bad operands, remote waits ...). `why`
// says which.
bool device_may_run(const sim::RunResult& model, std::string& why);

// AgreeTimingDependent: the model's fixed-order run disagrees, but one of its explored
// interleavings (verify/explore.hpp) reaches exactly what the device showed: a race, counted apart.
enum class Agreement : uint8_t { Agree, AgreeTimingDependent, Disagree, NotComparable, Skipped, Unavailable };
std::string_view agreement_name(Agreement a);

// A warp that is stuck at the end of the run.
struct HangPoint {
  int cta = 0, warp = 0;
  int64_t op = 0;       // index in the warp's stream
  std::string what;     // "blocked", "timed out", "blocked (named barrier)" ...
  bool operator<(const HangPoint& o) const { return cta != o.cta ? cta < o.cta : warp != o.warp ? warp < o.warp : op < o.op; }
};

struct RoleTiming {
  std::string role;
  int warps = 0;
  double model_end_ns = 0, device_end_ns = 0;          // mean finish time of its warps from kernel start
  double model_blocked_ns = 0, device_blocked_ns = 0;  // mean time a warp of it spent waiting
};

struct Comparison {
  Agreement agreement = Agreement::Unavailable;
  std::string model_verdict;    // "ok", "hang", "error pending_underflow"
  std::string device_verdict;   // "ok", "hang", "fault", "error assertion", "skipped", "unavailable"
  std::string expected_device;  // what the device should show ("" when not comparable)
  std::vector<HangPoint> model_hang, device_hang;
  bool hang_points_match = true;
  int model_unlaunched_ctas = 0, device_unlaunched_ctas = 0;
  int barriers_compared = 0;
  std::vector<std::string> phase_mismatches;  // "CTA 0 full[1]: model parity 1, device parity 0"
  std::vector<RoleTiming> roles;
  double model_kernel_ns = 0, device_span_ns = 0, device_kernel_ns = 0;
  double model_native_ns = 0;  // the model's time for a native kernel (no interpreter cost); 0: not run
  double device_sm_mhz = 0;  // SM clock during the device run (0: unknown)
  std::vector<std::string> notes;
  bool disagrees() const { return agreement == Agreement::Disagree; }
};

// Compares a model run with a device run of the same streams.
Comparison compare(const sim::Kernel& kernel, const sim::RunResult& model, const sim::OpStreams& streams,
                   const sim::DeviceResult& device);

// A disagreement judged against the interleavings the model can take: the first explored run that
// agrees with the device turns it into AgreeTimingDependent (with a note), and so do explored runs
// that together reach every cluster's device outcome (an ok or hang); otherwise it stands.
Comparison reconcile(const sim::Kernel& kernel, Comparison fixed, const Exploration& explored, const sim::OpStreams& streams,
                     const sim::DeviceResult& device);

// A disagreement judged against the device's own order of events: the model re-run with every op
// held until the device's timestamp of it (sim::Replay). Agreement there turns it into
// AgreeTimingDependent (with a note): the model's rules, given the device's interleaving, give the
// device's outcome. Needs per-op device times.
Comparison replay_device_order(const sim::Kernel& kernel, Comparison fixed, const sim::RunOptions& base,
                               const sim::OpStreams& streams, const sim::DeviceResult& device);

// A disagreement judged against every way the copies can land in parts (verify::enumerate_parts, up
// to 4096 runs per order), in the fixed order and, with per-op device times, in the device's order:
// a run that agrees, or runs that together reach every cluster's device outcome, turn it into
// AgreeTimingDependent (with a note).
Comparison search_parts(const sim::Kernel& kernel, Comparison fixed, const sim::RunOptions& base, const sim::OpStreams& streams,
                        const sim::DeviceResult& device);

// (model - device) / device in percent; 0 where the device's time is not known.
double error_pct(double model, double device);

// The human side-by-side block for one scenario.
std::string render_comparison(const sim::Kernel& kernel, const sim::OpStreams& streams, const sim::DeviceResult& device,
                              const Comparison& c);

// The device run as a RunResult timeline (spans from the per-op timestamps, relative to the first warp
// start), for TraceWriter: verdict, warps and barriers (parity only) filled as far as the device knows.
sim::RunResult device_timeline(const sim::Kernel& kernel, const sim::OpStreams& streams, const sim::DeviceResult& device);

}  // namespace pipesim::verify
