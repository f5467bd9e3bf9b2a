#include "verify/progress.hpp"

#include <cstdio>
#include <iostream>

#include <unistd.h>

namespace pipesim::verify {

Progress::Progress(bool enabled) : on_(enabled && isatty(fileno(stderr))), start_(std::chrono::steady_clock::now()), last_(start_) {}

Progress::~Progress() { clear(); }

void Progress::update(const std::string& what) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - start_ < std::chrono::seconds(1) || (shown_ && now - last_ < std::chrono::milliseconds(100))) return;
  last_ = now;
  shown_ = true;
  std::cerr << "\r\x1b[K" << what << std::flush;
}

void Progress::clear() {
  if (!shown_) return;
  shown_ = false;
  std::cerr << "\r\x1b[K" << std::flush;
}

}  // namespace pipesim::verify
