// A forked worker process for GPU work that may hang or fault. A kernel that traps poisons its CUDA
// context and one stuck in a wait that cannot be bounded never returns: either costs only the worker,
// which the caller kills (SIGKILL) when its watchdog fires. Used by the device interpreter's pool
// (kernels/interp/runner.cpp) and the PTX runner (kernels/ptx_launch/ptx_runner.cpp). Plain POSIX:
// the caller must not have touched CUDA itself before it forks.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <string>

namespace pipesim::worker {

// Whole-buffer transfers over a pipe (retrying on EINTR); false once the other end is gone.
bool write_all(int fd, const void* p, size_t n);
bool read_all(int fd, void* p, size_t n);

// Byte transports for sim::Writer / sim::Reader (sim/device_io.hpp).
struct FdSink {
  int fd;
  bool write(const void* p, size_t n) { return write_all(fd, p, n); }
};
struct FdSource {
  int fd;
  bool read(void* p, size_t n) { return read_all(fd, p, n); }
};

// What a waitpid status says: "exited with status 3", "killed by signal 11 (Segmentation fault)".
std::string describe_wait_status(int status);

class WorkerProcess {
 public:
  WorkerProcess() = default;
  ~WorkerProcess() { stop(true); }
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Forks a child that runs body(from_parent_fd, to_parent_fd) and then exits (_exit(0); the body may
  // _exit itself). False with `why` when the pipes or the fork fail.
  bool start(const std::function<void(int, int)>& body, std::string& why);
  bool running() const { return pid_ > 0; }
  int to_child() const { return to_child_; }
  int from_child() const { return from_child_; }
  // Waits until the child has written something or closed its end (true), or `seconds` pass (false).
  bool wait_readable(double seconds) const;
  // Closes both pipes, kills the child first when asked, and reaps it; returns its waitpid status
  // (0 when there was none).
  int stop(bool kill);

 private:
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
};

}  // namespace pipesim::worker
