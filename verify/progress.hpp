// The progress line of long `pipesim check` runs: on stderr, "\r"-updated in place, and only when
// stderr is a terminal (a log or a pipe gets nothing) and the run has taken over a second.
#pragma once

#include <chrono>
#include <string>

namespace pipesim::verify {

class Progress {
 public:
  // enabled: the caller wants a line (not --quiet); it still shows only on a terminal.
  explicit Progress(bool enabled);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;
  // "[3/40] scenarios/x.scn": shown once a second has passed since construction, at most ten times a second.
  void update(const std::string& what);
  void clear();  // erases the line (before a report is printed, and at the end)

 private:
  bool on_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace pipesim::verify
