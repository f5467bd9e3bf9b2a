// The only translation unit of pipesim_verify that calls the CUDA runtime (device_query.hpp), and
// only when the build has CUDA.
#include "verify/device_query.hpp"

#ifdef PIPESIM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace pipesim::verify {

DeviceLimits query_device_limits(const model::Capacity& base, int ordinal) {
  DeviceLimits d;
  d.cap = base;
#ifndef PIPESIM_HAVE_CUDA
  (void)ordinal;
  d.error = "this pipesim was built without CUDA (no nvcc at configure time): it cannot query a GPU";
  return d;
#else
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    d.error = std::string("no GPU: cudaGetDeviceCount: ") + cudaGetErrorString(e);
    return d;
  }
  if (count <= ordinal) {
    d.error = count == 0 ? "no GPU present" : "no GPU " + std::to_string(ordinal) + " (" + std::to_string(count) + " present)";
    return d;
  }
  cudaDeviceProp p{};
  if (cudaError_t e = cudaGetDeviceProperties(&p, ordinal); e != cudaSuccess) {
    d.error = std::string("cudaGetDeviceProperties: ") + cudaGetErrorString(e);
    return d;
  }
  d.ok = true;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.cap.sms = p.multiProcessorCount;
  d.cap.smem_per_block = static_cast<int64_t>(p.sharedMemPerBlockOptin);
  d.cap.smem_per_sm = static_cast<int64_t>(p.sharedMemPerMultiprocessor);
  d.cap.regs_per_sm = p.regsPerMultiprocessor;
  d.cap.threads_per_sm = p.maxThreadsPerMultiProcessor;
  d.cap.threads_per_block = p.maxThreadsPerBlock;
  d.cap.blocks_per_sm = p.maxBlocksPerMultiProcessor;
  return d;
#endif
}

}  // namespace pipesim::verify
