// Host side of the device interpreter (built only with CUDA: PIPESIM_HAVE_CUDA). No CUDA types here:
// the crosscheck command includes this header from plain C++.
//
// Every run happens in a worker process forked from the caller, so that a kernel that faults (a
// pending-count underflow traps and poisons the CUDA context) or sticks in a wait that cannot be
// bounded (bar.sync, barrier.cluster.wait) costs only that worker: the pool starts a new one for the
// next scenario. The caller must not have touched CUDA itself before the pool forks.
#pragma once

#include <string>

#include "kernels/worker_process.hpp"
#include "sim/stream.hpp"

namespace pipesim::interp {

// sm_90a: tcgen05 is emulated (MMA = a timed spin, commit = the arrive it would make, TMEM allocation
// = bookkeeping). Shown in reports; never a hardware result.
inline constexpr const char* kTcgen05Note =
    "tcgen05 is emulated on sm_90a (MMA = timed spin, commit = plain arrive, TMEM alloc = bookkeeping): not a hardware result";

class DevicePool {
 public:
  DevicePool() = default;
  ~DevicePool();
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  // Whether a GPU the interpreter can run on is present (starts the first worker). `why` says what
  // is missing otherwise.
  bool available(std::string& why);

  // Runs one scenario's streams. Never throws for device trouble: the outcome says what happened.
  sim::DeviceResult run(const sim::OpStreams& streams, const sim::DeviceOptions& options);

 private:
  bool start(std::string& why);
  void stop(bool kill);
  worker::WorkerProcess process_;
  std::string device_;
};

// In-process run (the worker's body; also usable by a program that owns its process).
sim::DeviceResult run_in_process(const sim::OpStreams& streams, const sim::DeviceOptions& options);

}  // namespace pipesim::interp
