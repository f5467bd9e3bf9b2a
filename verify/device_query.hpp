// The real limits of the GPU present, for `pipesim budget --device` (bug-catalog item 9: stage
// counts derived from the family's maximum rather than the device's limit). The CUDA runtime is
// called only in builds with CUDA (PIPESIM_HAVE_CUDA); elsewhere the query says so.
#pragma once

#include <string>

#include "model/arch.hpp"

namespace pipesim::verify {

struct DeviceLimits {
  bool ok = false;
  std::string error;       // when !ok: why (no CUDA in this build, no GPU, a runtime error)
  std::string name;        // "NVIDIA H100 80GB HBM3"
  int major = 0, minor = 0;
  model::Capacity cap;     // the table row of `arch` with the device's own numbers put in
};

// Device `ordinal`'s cudaGetDeviceProperties: sharedMemPerBlockOptin, sharedMemPerMultiprocessor,
// regsPerMultiprocessor, regsPerBlock, multiProcessorCount, maxThreadsPerMultiProcessor,
// maxThreadsPerBlock, maxBlocksPerMultiProcessor. `base` supplies what the runtime does not report
// (TMEM, cluster limits).
DeviceLimits query_device_limits(const model::Capacity& base, int ordinal = 0);

}  // namespace pipesim::verify
