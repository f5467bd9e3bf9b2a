// Plain-data serialisation of device runs: one description of a DeviceResult's fields serves the
// device worker's pipe (kernels/interp/runner.cpp) and saved runs on disk (`pipesim crosscheck
// --save-device / --from-device`), so the two cannot drift apart.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <type_traits>
#include <vector>

#include "sim/stream.hpp"

namespace pipesim::sim {

// Archive: pod(T), vec(std::vector<T>), str(std::string); writers take const refs, readers refs.
template <class Archive, class Result>
void serialize_result(Archive& a, Result& r) {
  a.pod(r.outcome);
  a.str(r.message);
  a.str(r.device);
  a.pod(r.watchdog), a.pod(r.kernel_ns), a.pod(r.span_ns), a.pod(r.cycles_per_ns), a.pod(r.globaltimer_resolution_ns);
  a.pod(r.residency), a.pod(r.sm_mhz);
  a.vec(r.warps);
  a.vec(r.barriers);
  a.vec(r.op_begin_ns);
}

// What identifies the program a device run executed: the launch shape and every op of every warp.
// A saved run is only compared with a scenario whose streams have the same fingerprint.
uint64_t stream_fingerprint(const OpStreams& s);

// A saved device run: "pipesim-device-run 1", the fingerprint, the result. False + `error` when the
// file cannot be written / read, is not such a file, or is of other streams.
bool save_device_run(const std::string& path, const OpStreams& s, const DeviceResult& r, std::string& error);
bool load_device_run(const std::string& path, const OpStreams& s, DeviceResult& r, std::string& error);

}  // namespace pipesim::sim
