// libFuzzer target: pipesim::fuzz::ptx_kernel (tests/fuzz/fuzz_entries.hpp says what counts as a bug).
// Built and run by tools/fuzz.sh; docs/fuzzing.md has the runs and what they found.
#include <cstddef>
#include <cstdint>
#include <string>

#include "tests/fuzz/fuzz_entries.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pipesim::fuzz::ptx_kernel(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
