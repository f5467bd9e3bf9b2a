// DevicePool: device runs in a forked worker process (see runner.hpp). Jobs and results travel through
// two pipes as length-prefixed plain data.
#include "kernels/interp/runner.hpp"

#include "kernels/worker_process.hpp"
#include "sim/device_io.hpp"

#include <unistd.h>

#include <algorithm>
#include <string>

namespace pipesim::interp {
namespace {

using worker::FdSink;
using worker::FdSource;
using Out = sim::Writer<FdSink>;
using In = sim::Reader<FdSource>;

// One list of a job's fields for both directions (Out: const refs, In: refs), as sim::serialize_result.
template <class Archive, class Streams, class Options>
void serialize_job(Archive& a, Streams& s, Options& d) {
  a.pod(s.ctas), a.pod(s.cluster), a.pod(s.threads), a.pod(s.warps_per_cta), a.pod(s.ctas_per_sm);
  a.str(s.arch);
  a.pod(s.slots);
  a.vec(s.init_count);
  a.vec(s.array_base);
  a.vec(s.ops);
  a.vec(s.offsets);
  a.pod(s.max_tma_bytes), a.pod(s.max_store_bytes), a.pod(s.uses_tcgen05), a.pod(s.uses_cluster_ops);
  a.pod(d);
}
void put_job(Out& o, const sim::OpStreams& s, const sim::DeviceOptions& d) { serialize_job(o, s, d); }
void get_job(In& i, sim::OpStreams& s, sim::DeviceOptions& d) { serialize_job(i, s, d); }
void put_result(Out& o, const sim::DeviceResult& r) { sim::serialize_result(o, r); }
void get_result(In& i, sim::DeviceResult& r) { sim::serialize_result(i, r); }

// The worker: answers a hello with its device state, then runs jobs until the pipe closes or its
// context is lost (a fault, or a kernel it had to abandon).
[[noreturn]] void worker(int in_fd, int out_fd) {
  In in{in_fd};
  Out out{out_fd};
  {
    sim::OpStreams empty;
    sim::DeviceOptions d;
    empty.ctas = 0;
    // Hello: run_in_process on nothing reports availability without launching.
    sim::DeviceResult hello;
    empty.offsets = {0};
    hello = run_in_process(empty, d);
    put_result(out, hello);
    if (!out.ok || hello.outcome == sim::DeviceOutcome::Unavailable) _exit(0);
  }
  while (true) {
    sim::OpStreams s;
    sim::DeviceOptions d;
    get_job(in, s, d);
    if (!in.ok) _exit(0);
    const sim::DeviceResult r = run_in_process(s, d);
    put_result(out, r);
    if (!out.ok || r.outcome == sim::DeviceOutcome::Fault || r.watchdog) _exit(0);
  }
}

}  // namespace

DevicePool::~DevicePool() { stop(false); }

void DevicePool::stop(bool kill) { process_.stop(kill); }

bool DevicePool::start(std::string& why) {
  if (!process_.start([](int in_fd, int out_fd) { worker(in_fd, out_fd); }, why)) return false;
  sim::DeviceResult hello;
  In in{FdSource{process_.from_child()}};
  get_result(in, hello);
  if (!in.ok || hello.outcome == sim::DeviceOutcome::Unavailable) {
    why = in.ok ? hello.message : "the device worker died while starting";
    stop(true);
    return false;
  }
  device_ = hello.device;
  return true;
}

bool DevicePool::available(std::string& why) {
  if (process_.running()) return true;
  return start(why);
}

sim::DeviceResult DevicePool::run(const sim::OpStreams& s, const sim::DeviceOptions& d) {
  sim::DeviceResult r;
  std::string why;
  if (!process_.running() && !start(why)) {
    r.outcome = sim::DeviceOutcome::Unavailable;
    r.message = why;
    return r;
  }
  Out out{FdSink{process_.to_child()}};
  put_job(out, s, d);
  if (!out.ok) {
    stop(true);
    r.outcome = sim::DeviceOutcome::Fault;
    r.message = "device: the worker process died (lost while sending the job)";
    return r;
  }
  // The worker has its own watchdog; this one only guards against a worker that stops answering.
  const double limit_s = (d.watchdog_s > 0 ? d.watchdog_s : 3.0 * d.timeout_ms * 1e-3 + 50.0 * d.predicted_ns * 1e-9 + 2.0) *
                             static_cast<double>(std::max(1, d.repeats)) + 60.0;
  if (!process_.wait_readable(limit_s)) {
    stop(true);
    r.outcome = sim::DeviceOutcome::Hang;
    r.watchdog = true;
    r.message = "the device worker stopped answering; killed after " + std::to_string(limit_s) + " s";
    return r;
  }
  In in{FdSource{process_.from_child()}};
  get_result(in, r);
  if (!in.ok) {
    stop(true);
    r = {};
    r.outcome = sim::DeviceOutcome::Fault;
    r.message = "device: fault (the worker process died during the run)";
    return r;
  }
  if (r.outcome == sim::DeviceOutcome::Fault || r.watchdog) stop(false);  // that worker has exited
  return r;
}

}  // namespace pipesim::interp
