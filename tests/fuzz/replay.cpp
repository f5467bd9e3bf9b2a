// Replays the fuzzers' regression inputs (tests/fuzz/regressions/TARGET/*) through the same entry
// functions the libFuzzer targets call, without libFuzzer: a crash that was fixed stays fixed.
//   fuzz_replay DIR   (DIR holds scenario/, ptx_launch/, ptx_kernel/)
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
      entry(text.str());  // a bug throws past here or crashes: the test fails
      ++replayed;
    }
  }
  std::printf("%d inputs replayed\n", replayed);
  return replayed > 0 ? 0 : 1;
}
