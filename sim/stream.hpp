// The device interface: a Kernel materialised into flat per-(CTA, warp) op arrays for the device
// interpreter (kernels/interp/), and what a device run reports back. The streams come from
// WarpProgram (sim/lowering.hpp), the very lowering the engine runs, so the model and the GPU execute
// the same operations. Everything below the Kernel-taking functions is plain data: the CUDA side
// includes this header and reads DevOp / DevWarpRecord / DevBarrierRecord as they are laid out here.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/op.hpp"
#include "sim/program.hpp"

namespace pipesim::sim {

// One op as the device reads it (24 bytes). kind/flags/a/b are Op's; the barrier is flattened to its
// slot (barrier_slot) and its cluster rank (-1: own CTA). For Mma, the runner replaces `a` with the
// modelled duration in nanoseconds before upload (an sm_90a GPU has no tcgen05).
struct DevOp {
  uint8_t kind = 0;   // OpKind
  uint8_t flags = 0;  // OpFlag
  int8_t rank = -1;   // cluster rank of the barrier's CTA, -1 = own CTA
  uint8_t pad = 0;
  uint32_t slot = 0;  // flattened barrier element (Kernel::barriers arrays concatenated)
  int64_t a = 0;
  int64_t b = 0;
};
static_assert(sizeof(DevOp) == 24, "DevOp is read by device code: keep it 24 bytes");

struct StreamLimits {
  uint64_t max_ops = uint64_t{64} << 20;  // 64 M ops (1.5 GiB of DevOp) in all
};

// A scenario the device interpreter cannot run (the message says why): too large, a value loaded
// from shared memory steering it, or a computed operand the lowering refused (the model's fault).
struct StreamUnavailable : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// Too large for the device: the message says how large and what the limit is.
struct StreamTooLarge : StreamUnavailable {
  using StreamUnavailable::StreamUnavailable;
};

struct OpStreams {
  int ctas = 1, cluster = 1, threads = 32, warps_per_cta = 1;
  int64_t ctas_per_sm = 1;
  std::string arch;                 // "sm_90a" ...
  uint32_t slots = 0;               // barrier elements per CTA
  std::vector<int64_t> init_count;  // per slot: declared count (initialised before roles), 0: none
  std::vector<uint32_t> array_base; // first slot of each barrier array
  std::vector<DevOp> ops;           // all streams back to back, CTA-major then warp
  std::vector<uint32_t> sites;      // per op: Kernel::sites index (host side, for reports)
  std::vector<uint64_t> offsets;    // ctas * warps_per_cta + 1 entries; stream of (c, w) = [off[i], off[i+1])
  int64_t max_tma_bytes = 0;        // largest single TMA load (shared-memory scratch it needs)
  int64_t max_store_bytes = 0;      // largest single bulk store
  bool uses_tcgen05 = false;        // Mma / Commit / TMEM ops present (emulated on sm_90a)
  bool uses_cluster_ops = false;    // remote ops, multicast or cluster barriers present

  size_t warp_index(int cta, int warp) const { return static_cast<size_t>(cta) * warps_per_cta + warp; }
  uint64_t begin(int cta, int warp) const { return offsets[warp_index(cta, warp)]; }
  uint64_t end(int cta, int warp) const { return offsets[warp_index(cta, warp) + 1]; }
};

// Runs WarpProgram for every (CTA, warp) of the kernel. Throws StreamTooLarge past limits.max_ops,
// StreamUnavailable at a `load` or a refused operand, and ScenarioError where the lowering does
// (division by zero ...).
OpStreams materialise(const Kernel& kernel, const StreamLimits& limits = {});

// ------------------------------------------------------------------------------------ results
// What one warp did on the device. Status codes are written by device code.
enum class DevWarpStatus : uint8_t {
  NotStarted = 0,    // never ran (the kernel was stopped, or the launch failed)
  Running = 1,       // still running when the host gave up (watchdog)
  Done = 2,          // ran its whole stream
  TimedOut = 3,      // an mbarrier wait exceeded the timeout: it declared the hang
  StoppedOnHang = 4, // blocked on an mbarrier when a hang was declared (and still blocked 1 ms later)
  BlockedNamed = 5,  // blocked in bar.sync when the hang was declared (or when the host gave up)
  BlockedCluster = 6,// blocked in barrier.cluster.wait, likewise
  Assertion = 7,     // a test_wait returned what the scenario did not expect
  SkippedOnHang = 8, // its CTA started after a hang was declared: it ran nothing
};
std::string_view dev_status_name(DevWarpStatus s);

struct DevWarpRecord {   // 64 bytes, written by lane 0 of the warp
  uint8_t status = 0;    // DevWarpStatus
  uint8_t pad[3] = {};
  uint32_t slot = 0;     // barrier slot of the op it stopped on (mbarrier waits)
  int64_t op = -1;       // index within the warp's stream of the op it is in / stopped on
  uint64_t raw = 0;      // raw 64-bit mbarrier state at the timeout
  uint64_t start_ns = 0, end_ns = 0;  // %globaltimer
  uint64_t blocked_ns = 0;            // time spent in waits (mbarrier, named, cluster, bulk groups)
  int32_t parity = 0;    // the parity it waited for
  int32_t smid = -1;
  uint64_t cycles = 0;   // SM clock cycles (clock64) from start_ns to end_ns, for the SM clock of the run
};
static_assert(sizeof(DevWarpRecord) == 64, "DevWarpRecord is written by device code");

struct DevBarrierRecord {  // 16 bytes per (CTA, slot), written by the CTA's last warp to finish
  uint8_t valid = 0;       // the CTA took the snapshot (every warp of it finished or stopped)
  uint8_t initialised = 0; // initialised and not invalidated, as the interpreter tracked it
  uint8_t parity = 0;      // completed phases & 1 (test_wait.parity(0) is true iff 1)
  uint8_t pad[5] = {};
  uint64_t raw = 0;
};
static_assert(sizeof(DevBarrierRecord) == 16, "DevBarrierRecord is written by device code");

enum class DeviceOutcome : uint8_t {
  Ok,         // every warp ran its stream
  Hang,       // a wait timed out, or the host's watchdog fired (named / cluster barrier waits)
  Fault,      // the launch failed: a trap such as a pending-count underflow (unspecified launch failure)
  Assertion,  // a test_wait returned the other value
  Skipped,    // not run: the scenario breaks a rule that has no hardware behaviour to compare
  Unavailable,// no device: built without CUDA, no GPU, or the scenario does not fit (message)
};
std::string_view device_outcome_name(DeviceOutcome o);

struct DeviceOptions {
  double timeout_ms = 200;     // bound of every mbarrier wait
  bool timestamps = true;      // per-op begin times (timelines, time per role)
  bool stream_sources = true;  // TMA sources walk a buffer larger than L2 (every byte from DRAM)
  bool model_occupancy = true; // size shared memory so that at most ctas_per_sm CTAs share an SM
  double watchdog_s = 0;       // 0: derived from the timeout and the predicted duration
  double predicted_ns = 0;     // the model's duration, for the watchdog
  int repeats = 1;             // launches; timing from the fastest (the first warms up)
  double warmup_ms = 0;        // before the launches, keep every SM busy this long so that the SM clock
                               // is at its boost value (an idle H100 sits at 540 MHz, not 1980)
};

struct DeviceResult {
  DeviceOutcome outcome = DeviceOutcome::Unavailable;
  std::string message;               // launch error text, watchdog note, why unavailable
  std::string device;                // "NVIDIA H100 80GB HBM3, sm_90, 132 SMs"
  bool watchdog = false;             // the host stopped a kernel stuck in a wait it cannot bound
  double kernel_ns = 0;              // cudaEvent time of the (fastest) launch
  double span_ns = 0;                // last warp end - first warp start (%globaltimer)
  double cycles_per_ns = 0;          // SM clock measured by the runner (compute spins use it)
  double globaltimer_resolution_ns = 0;
  double sm_mhz = 0;                 // SM clock during the timed launch (clock64 cycles / %globaltimer, over warps)
  int residency = 0;                 // CTAs per SM the launch allowed (occupancy API)
  std::vector<DevWarpRecord> warps;  // ctas * warps_per_cta
  std::vector<DevBarrierRecord> barriers;  // ctas * slots
  std::vector<uint64_t> op_begin_ns; // per op, when timestamps (0: not reached)
};

}  // namespace pipesim::sim
