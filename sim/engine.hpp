// The discrete-event engine: runs a lowered Kernel on the model and returns what happened.
// The engine only observes; explain.hpp turns a blocked end state into a hang explanation.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sim/program.hpp"

namespace pipesim::sim {

// A schedule observed elsewhere (the device's per-op timestamps): op i of warp w does not take
// effect before begin_ns[offsets[w] + i] (w = cta * warps_per_cta + warp; < 0: no constraint).
// Replaying the device's order of events asks whether the model's rules, given that order,
// reach the device's outcome (crosscheck, for races no jitter reaches).
struct Replay {
  std::vector<uint64_t> offsets;  // per warp, plus one
  std::vector<double> begin_ns;
  // The stamps' own uncertainty: each op is held until its stamp plus a uniform draw in
  // [-noise_ns, +noise_ns] (seeded by RunOptions::seed), for orders the stamps cannot resolve.
  double noise_ns = 0;
};

// A landing that could complete a phase early in parts (docs/semantics.md, "TMA delivery in parts"):
// a copy reaches barrier `slot` of `cta`, with `completed` phases done, bringing more bytes than the
// phase still expects, and a part can end where they would make up the rest.
struct PartsChoice {
  int cta = 0;
  uint32_t slot = 0;
  int64_t completed = 0;
};

// A synchronising op a warp is about to execute (mbarrier and named/cluster barrier ops, copies,
// commits), as the adversarial schedule search sees it (verify/search.hpp). `occurrence` counts the
// warp's earlier executions of the same site, so (cta, warp, site, occurrence) names one point alike
// in every run of the kernel.
struct SyncPoint {
  int cta = 0, warp = 0;
  uint32_t site = 0;
  uint32_t occurrence = 0;
  OpKind kind = OpKind::Wait;
  double at_ns = 0;
};

// A schedule perturbation: warp `warp` of CTA `cta` is held `ns` before it executes its op at `site`
// for the `occurrence`-th time (0-based); with `landing`, the warp goes on and the bytes (or the
// arrival) of the copy or commit that op issues land `ns` late instead.
struct Delay {
  int cta = 0, warp = 0;
  uint32_t site = 0;
  uint32_t occurrence = 0;
  double ns = 0;
  bool landing = false;
};

struct RunOptions {
  uint64_t seed = 1;
  double jitter = 0.0;              // relative latency jitter in [0, 1): 0.1 = +-10 %
  double issue_scale = 1.0;         // multiplies every instruction's issue cost (interleaving search)
  // The run's budget (docs/scenario-language.md, "Budget"): past any of these the run ends with
  // Verdict::Stopped and the state of every warp. Defaults end a runaway in seconds; the largest
  // scenario in scenarios/ takes 1.4 million events (35x below max_events). 0 = no limit.
  uint64_t max_events = kDefaultMaxEvents;
  double max_seconds = kDefaultMaxSeconds;           // host wall time of the run
  uint64_t max_instructions = kDefaultMaxInstructions;  // PTX kernels: instructions the warps executed
  static constexpr uint64_t kDefaultMaxEvents = 50'000'000ULL;
  static constexpr double kDefaultMaxSeconds = 60.0;
  static constexpr uint64_t kDefaultMaxInstructions = 2'000'000'000ULL;
  bool record_trace = false;        // keep the per-warp timeline for --trace
  // Named assumptions (docs/semantics.md): an empty tcgen05.commit group under cta_group::2
  // signals only the issuing CTA (FA4's report). On by default.
  bool empty_commit_local = true;
  // Assumption store-outlives-exit: a CTA's shared memory stays alive until its bulk stores have read
  // it, so exiting with stores no wait_group retired is a warning, not exit_inflight. Unset: on where
  // the architecture has tcgen05 (CUTLASS's sm100 epilogues exit without a final wait_group), off
  // elsewhere (CUTLASS's sm90 epilogues always wait).
  std::optional<bool> store_outlives_exit;
  // The device interpreter's own cost per op (model::interpreter_cost), added when the model
  // times the interpreter's run of the scenario rather than a native kernel (crosscheck).
  const model::InterpreterCost* interp = nullptr;
  bool interp_timestamps = true;    // the interpreter records a timestamp per op
  // Record model-only rules (sim::is_model_only) as warnings and go on as the hardware would.
  bool hardware_only = false;
  const Replay* replay = nullptr;
  // Where copies land in parts, chosen from outside (verify::enumerate_parts, crosscheck's search):
  // when set, every landing that could complete a phase early in parts asks it, with or without
  // jitter: true splits the copy there, false lands it whole.
  std::function<bool(const PartsChoice&)> parts_choice;
  // The adversarial search's hooks (verify/search.hpp): delays to apply, and an observer of every
  // synchronising point a warp reaches. Both empty: the run counts nothing.
  std::vector<Delay> delays;
  std::function<void(const SyncPoint&)> on_sync;
  // Hears (simulated ns, events, PTX instructions counted so far) every 65,536 events: the
  // progress line of one long run. Empty: nothing is called.
  std::function<void(double, uint64_t, uint64_t)> on_progress;
  // The SM clock to run at (model::at_sm_clock; `pipesim check --sm-clock`): 0, the architecture's.
  double sm_clock_ghz = 0;
  // Timing fields set over the architecture's table (what-if runs: `pipesim check --timing`), after
  // the clock.
  std::vector<std::pair<model::TimingField, double>> timing_overrides;
  // Set by sim::Explorer (sim/explore.hpp), not for sim::run: no clock decides the order of
  // synchronising actions; the explorer does.
  bool untimed = false;
};

// The model timing the device interpreter's run of a scenario, as `pipesim crosscheck` compares it
// and `pipesim calibrate` fits it: the interpreter's per-op cost added, and past the rules the
// hardware does not check, on as the hardware would.
inline RunOptions interpreter_run_options(const model::InterpreterCost* cost, bool timestamps) {
  RunOptions o;
  o.interp = cost;
  o.interp_timestamps = timestamps;
  o.hardware_only = true;
  return o;
}

// A snapshot of one mbarrier, for reports.
struct BarrierState {
  bool initialised = false;
  int64_t completed = 0;  // phases completed ("phase" in semantics.md); parity = completed & 1
  int64_t pending = 0;
  int64_t expected = 0;
  int64_t tx = 0;
  // The latest arrival or landing on it (the warp that arrived or issued the copy), -1: none.
  int last_cta = -1, last_warp = -1;
  uint32_t last_site = 0;
};

// Where a warp is at the end of a run.
enum class WarpStatus : uint8_t { Exited, Blocked, Faulted, NotStarted };

struct WarpEnd {
  int cta = 0, warp = 0, role = -1;
  WarpStatus status = WarpStatus::Exited;
  uint32_t site = 0;       // the op's site when blocked or faulted
  Op op;                   // the op it is blocked on
  int64_t ops_done = 0;
  double exited_ns = -1;   // when it exited (Exited only)
  std::vector<int64_t> loaded;  // what its `load`s read, in order: replays of its program feed them back
};

// A broken hardware rule (verdict error) or a hazard worth a warning.
struct Finding {
  std::string kind;        // rule id, docs/scenario-language.md "Expectations"
  bool fatal = true;       // false: warning only
  int cta = -1, warp = -1;
  uint32_t site = 0;
  std::string message;     // one sentence, for people
  std::vector<std::string> notes;  // further lines: barrier state, what would be needed
};

// Timeline, recorded only with RunOptions::record_trace.
struct TraceSpan {
  int cta, warp;           // warp -1: the CTA's copy engine (TMA loads, stores); -2: its SM's
                           // tensor pipe (tcgen05.mma); -3: its TMEM allocation
  double begin_ns, end_ns;
  uint32_t site;
  std::string label;       // "wait ab.full[2] parity 0", "compute", "tma 32768 B"
  bool blocked;            // a wait interval
};
struct TraceInstant {
  int cta;
  double at_ns;
  std::string label;       // "ab.full[2] phase 3 complete"
};

// Why a run hangs: blocked warps grouped by identical situation, the wait-for cycles among
// them, and hints derived from the barrier states (explain.cpp).
struct HangGroup {
  std::vector<std::pair<int, int>> members;  // (cta, warp), first one is described
  int role = -1;
  uint32_t site = 0;
  std::string waits_on;                      // "ab.empty[0] parity 0", "named barrier 1", ...
  std::optional<BarrierState> state;         // mbarrier waits
  std::vector<std::string> unblockers;       // who could still make progress possible, and where they are
  std::vector<std::string> hints;
  std::string key;                           // grouping signature (internal)
};
struct HangReport {
  std::vector<HangGroup> groups;
  std::vector<std::string> cycles;           // rendered wait-for cycles, cluster-relative
  int unlaunched_clusters = 0;
};

struct RunResult {
  Verdict verdict = Verdict::Ok;
  double end_ns = 0;                // simulated time of the last event
  uint64_t events = 0;
  std::vector<Finding> findings;    // fatal first
  std::vector<WarpEnd> warps;       // every warp of every CTA that started
  // Final state of every barrier, [cta][flattened element]; element order = Kernel::barriers
  // arrays concatenated.
  std::vector<std::vector<BarrierState>> barriers;
  std::vector<TraceSpan> spans;
  std::vector<TraceInstant> instants;
  // Time each role spent blocked, summed over its warps, per barrier array.
  struct RoleWait { int role; std::string what; double ns; };
  std::vector<RoleWait> role_waits;
  HangReport hang;                  // filled when verdict == Hang; when Stopped, its groups say what every live warp was doing
  // Verdict::Stopped: which budget ran out, and the host time the run had taken then.
  enum class StopCause : uint8_t { None, Events, Seconds, Instructions };
  StopCause stopped_by = StopCause::None;
  double stopped_after_s = 0;
  // Kernel::external: the barriers' names by slot, as the program found them ("mbarrier at shared 0x40"),
  // and the instructions its warps executed.
  std::vector<std::string> barrier_names;
  uint64_t instructions = 0;
  // Unit utilisation: tensor pipe time summed over SMs, DRAM transfer time, SMs that ran CTAs.
  double tensor_busy_ns = 0;
  double dram_busy_ns = 0;
  int64_t l2_hit_bytes = 0, l2_miss_bytes = 0;  // TMA load bytes the L2 served / the DRAM served
  int64_t dram_read_bytes = 0;      // what the misses read from the DRAM (their L2 promotion's groups)
  int64_t dram_write_bytes = 0;     // bulk-store and st.global bytes written back to the DRAM
  // The architecture's Timing::launch_floor_ns (with overrides): a launch between CUDA events costs
  // end_ns plus this. 0: not measured.
  double launch_floor_ns = 0;
  int sms_used = 0;
  int cta_group = 0;                // of the tcgen05 instructions (0: none ran)
};

// When the CTAs ended (the last exit of each CTA's warps), over the CTAs whose warps all exited:
// how unequal a static split of the work came out. Empty when fewer than two CTAs ended.
struct CtaEnds { double first_ns, median_ns, last_ns; int ctas; };
std::optional<CtaEnds> cta_ends(const RunResult& result);

// Host memory a run holds, estimated before anything is allocated: every CTA, every warp and every
// barrier element of every CTA stay in memory until the run ends. Measured (pipesim check, max RSS
// by /usr/bin/time, RelWithDebInfo, 2026-11): 10,000 -> 40,000 CTAs of 32 warps grew 1.86 GB (62 KB
// a CTA), 10,000 -> 80,000 CTAs of 1 warp 223 MB (3.2 KB a CTA), 1,000 CTAs with 1,024 -> 16,384
// barrier elements 2.09 GB (139 B an element). A PTX kernel adds what its front end knows it holds
// (shared memory per CTA, registers per warp): `extra_per_cta`, `extra_per_warp`.
struct RunFootprint {
  uint64_t ctas = 0;
  uint64_t warps_per_cta = 0;
  uint64_t barrier_elements = 0;  // per CTA
  uint64_t extra_per_cta = 0, extra_per_warp = 0;
  // CTAs whose extras are held at once (0: every CTA): a PTX warp gives its registers and a CTA its
  // shared memory back when it exits, so only the resident CTAs hold them.
  uint64_t live_ctas = 0;
  static constexpr uint64_t kBytesPerCta = 1300, kBytesPerWarp = 1900, kBytesPerBarrierElement = 140;
  // The most a run may need; past it, the launch is refused (exit 2) instead of failing to allocate.
  static constexpr uint64_t kLimitBytes = 8'000'000'000;
  uint64_t bytes() const;
  // "" when under kLimitBytes; else one sentence: "1,000,000 CTAs x 32 warps need ~62 GB of warp
  // state; the limit is 8 GB".
  std::string refusal() const;
};
RunFootprint run_footprint(const Kernel& kernel);

// Runs the kernel to completion, hang or first fatal error. Throws ScenarioError on
// operands that are bad input (evaluated counts out of range, division by zero ...).
RunResult run(const Kernel& kernel, const RunOptions& options);
// The architecture's timing as a run with these options uses it: the SM clock and the overrides applied.
model::Timing run_timing(const Kernel& kernel, const RunOptions& options);

// Flattened element number of a barrier (array, index) in RunResult::barriers.
uint32_t barrier_slot(const Kernel& kernel, uint32_t array, uint32_t index);

}  // namespace pipesim::sim
