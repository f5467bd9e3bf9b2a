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

// Length-prefixed plain data over any byte transport. Sink: bool write(const void*, size_t);
// Source: bool read(void*, size_t). `ok` turns false on the first failure (or an absurd length).
template <class Sink>
struct Writer {
  Sink sink;
  bool ok = true;
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    ok = ok && sink.write(&v, sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<uint64_t>(v.size()));
    if (!v.empty()) ok = ok && sink.write(v.data(), v.size() * sizeof(T));
  }
  void str(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    ok = ok && sink.write(s.data(), s.size());
  }
};

template <class Source>
struct Reader {
  Source source;
  bool ok = true;
  template <typename T>
  void pod(T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    ok = ok && source.read(&v, sizeof v);
  }
  template <typename T>
  void vec(std::vector<T>& v) {
    uint64_t n = 0;
    pod(n);
    if (!ok || n > (uint64_t{1} << 34) / sizeof(T)) {
      ok = false;
      return;
    }
    v.resize(n);
    if (n) ok = ok && source.read(v.data(), n * sizeof(T));
  }
  void str(std::string& s) {
    uint64_t n = 0;
    pod(n);
    if (!ok || n > (1u << 24)) {
      ok = false;
      return;
    }
    s.resize(n);
    if (n) ok = ok && source.read(s.data(), n);
  }
};

// Archive (Writer or Reader): one list of a DeviceResult's fields for both directions.
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
