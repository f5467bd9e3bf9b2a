// Replays the fuzzers' regression inputs (tests/fuzz/regressions/TARGET/*) through the same entry
// functions the libFuzzer targets call, without libFuzzer: a crash that was fixed stays fixed, and an
// input that once ran past the fuzzers' 10 s timeout stays under it.
//   fuzz_replay DIR   (DIR holds scenario/, ptx_launch/, ptx_kernel/)
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "tests/fuzz/fuzz_entries.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_replay REGRESSIONS_DIR\n");
    return 2;
  }
  namespace fs = std::filesystem;
  const std::pair<const char*, std::function<void(const std::string&)>> targets[] = {
      {"scenario", pipesim::fuzz::scenario_front_end},
      {"ptx_launch", pipesim::fuzz::ptx_launch},
      {"ptx_kernel", pipesim::fuzz::ptx_kernel},
  };
  int replayed = 0;
  for (const auto& [name, entry] : targets) {
    const fs::path dir = fs::path(argv[1]) / name;
    if (!fs::is_directory(dir)) continue;
    for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      std::ifstream in(e.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      std::printf("%s: %s\n", name, e.path().filename().c_str());
      std::fflush(stdout);
      const auto t0 = std::chrono::steady_clock::now();
      entry(text.str());  // a bug throws past here or crashes: the test fails
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (s > 10) {  // tools/fuzz.sh and fuzz_long.sh run libFuzzer with -timeout=10
        std::fprintf(stderr, "%s: %s took %.1f s, past the fuzzers' 10 s timeout\n", name, e.path().filename().c_str(), s);
        return 1;
      }
      ++replayed;
    }
  }
  std::printf("%d inputs replayed\n", replayed);
  return replayed > 0 ? 0 : 1;
}
