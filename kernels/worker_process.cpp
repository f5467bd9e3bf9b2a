#include "kernels/worker_process.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace pipesim::worker {

bool write_all(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    const ssize_t k = ::write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

bool read_all(int fd, void* p, size_t n) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    const ssize_t k = ::read(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    c += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "killed by signal " + std::to_string(sig) + (name ? std::string(" (") + name + ")" : std::string());
  }
  return "status " + std::to_string(status);
}

bool WorkerProcess::start(const std::function<void(int, int)>& body, std::string& why) {
  int down[2], up[2];
  if (::pipe(down) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (::pipe(up) != 0) {
    why = std::string("pipe: ") + std::strerror(errno);
    ::close(down[0]);
    ::close(down[1]);
    return false;
  }
  const pid_t pid = ::fork();
  if (pid < 0) {
    why = std::string("fork: ") + std::strerror(errno);
    for (int fd : {down[0], down[1], up[0], up[1]}) ::close(fd);
    return false;
  }
  if (pid == 0) {
    ::close(down[1]);
    ::close(up[0]);
    body(down[0], up[1]);
    _exit(0);
  }
  ::close(down[0]);
  ::close(up[1]);
  pid_ = pid;
  to_child_ = down[1];
  from_child_ = up[0];
  return true;
}

bool WorkerProcess::wait_readable(double seconds) const {
  pollfd pf{from_child_, POLLIN, 0};
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    const double left = seconds - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) return false;
    const int k = ::poll(&pf, 1, static_cast<int>(std::min(left * 1e3 + 1, 500.0)));
    if (k > 0) return true;
    if (k < 0 && errno != EINTR) return true;  // let the read find out what is wrong
  }
}

int WorkerProcess::stop(bool kill) {
  if (to_child_ >= 0) ::close(to_child_);
  if (from_child_ >= 0) ::close(from_child_);
  to_child_ = from_child_ = -1;
  int status = 0;
  if (pid_ > 0) {
    if (kill) ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
  return status;
}

}  // namespace pipesim::worker
