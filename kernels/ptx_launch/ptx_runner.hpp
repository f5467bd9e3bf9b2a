// A PTX kernel launched for real on the GPU under its launch file (`pipesim crosscheck KERNEL.ptx
// --launch L.json`). No CUDA types here: the command includes this header from plain C++, and the
// result types exist in every build; run_on_gpu itself is built only with CUDA (PIPESIM_HAVE_CUDA).
//
// Everything CUDA happens in a forked worker (kernels/worker_process.hpp), which loads the NVIDIA
// driver library at run time (so pipesim starts where there is none), JITs the PTX for the device
// (cuModuleLoadDataEx), allocates every launch buffer (contents from its file, else zeros), rewrites
// the parameters' pointers and tensor maps onto that memory (relocate.hpp), and launches with the
// grid, block, cluster and dynamic shared memory of the launch (cuLaunchKernelEx). Each launch starts
// from the buffers' initial contents (back to back: the timed batch as a whole does). The caller's watchdog kills the worker (SIGKILL) when a launch
// outlives `timeout_ms`: a hung kernel costs only that process.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/ptx_launch/stamps.hpp"
#include "verify/ptx/launch.hpp"

namespace pipesim::ptx_launch {

enum class GpuOutcome : uint8_t {
  Ok,           // every launch ran to its end
  Hang,         // a launch outlived the watchdog; the worker was killed
  Fault,        // a launch failed on the GPU (illegal address, trap, illegal instruction ...) or the worker died
  NotRun,       // the GPU would not run it: JIT error, allocation, tensor-map encoding, launch refused
  Unavailable,  // no GPU to run on: no driver, cuInit failed, another architecture
};

inline std::string_view gpu_outcome_name(GpuOutcome o) {
  switch (o) {
    case GpuOutcome::Ok: return "ok";
    case GpuOutcome::Hang: return "hang";
    case GpuOutcome::Fault: return "fault";
    case GpuOutcome::NotRun: return "not run";
    case GpuOutcome::Unavailable: return "unavailable";
  }
  return "?";
}

struct GpuRunOptions {
  int warmup = 1;             // untimed launches first (the first one finds a hang or fault too)
  int runs = 10;              // timed launches
  double timeout_ms = 2000;   // watchdog per launch, from the moment it is issued
  double setup_timeout_s = 600;  // the driver's start and the JIT of the PTX (CUTLASS kernels take seconds)
  // A benchmark's timing: after the warm-up, the buffers are filled once and the timed launches are
  // queued back to back behind a spin kernel, so none waits for the host or for a refill, with CUDA
  // events around each. Only for kernels that keep no state in their buffers.
  bool back_to_back = false;
  // Each timed launch (and the stamped one) finds an L2 that holds none of the kernel's data, as the
  // model assumes (it starts every launch with an empty L2): a scratch buffer twice the L2's size is
  // written on the launch's stream right before it, outside its events.
  bool cold_l2 = false;
  // Concurrent crosschecks on one machine take turns on the GPU (flock), so that none times the
  // others' kernels; the wait for it is not watched.
  std::string lock_file = "/tmp/pipesim-gpu.lock";
  // The same entry with stamps (stamps.hpp): after the timed launches, one more launch of it, whose
  // stamps come back (GpuRun::stamps): from freshly filled buffers, or back to back from what the
  // timed launches left (buffers, L2). Not owned; null: none.
  const StampedPtx* stamps = nullptr;
};

// How long the spin kernel holds the stream while the host queues `runs` launches behind it (the
// worker spins this long; the caller's watchdog allows it on the first timed launch).
inline double back_to_back_spin_ms(int runs) { return 5.0 + 0.02 * runs; }

struct GpuRun {
  GpuOutcome outcome = GpuOutcome::Unavailable;
  std::string message;           // hang: the watchdog; fault, not run, unavailable: what the driver said
  std::string device;            // "NVIDIA H100 80GB HBM3, sm_90, 132 SMs"
  std::vector<double> times_ms;  // the timed launches, in order
  int launches_done = 0;         // launches that ran to their end (warm-up included)
  int launches_total = 0;
  double hung_ms = 0;            // hang: how long the last launch ran before the kill
  std::string jit_log;           // the JIT's info log (ptxas -v style), when it said something
  std::vector<uint64_t> stamps;  // the stamped launch's buffer (GpuRunOptions::stamps), as written
  double stamped_ms = 0;         // that launch's time between CUDA events

  double median_ms() const {
    if (times_ms.empty()) return 0;
    std::vector<double> t = times_ms;
    std::sort(t.begin(), t.end());
    const size_t n = t.size();
    return n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
  }
  double min_ms() const { return times_ms.empty() ? 0 : *std::min_element(times_ms.begin(), times_ms.end()); }
};

// Runs `entry` (the resolved, mangled name) of the PTX text under the resolved launch. Never throws
// for GPU trouble: the outcome says what happened. The calling process must not have used CUDA.
GpuRun run_on_gpu(const std::string& ptx_text, const std::string& entry, const ptx::Launch& launch, const GpuRunOptions& options);

}  // namespace pipesim::ptx_launch
