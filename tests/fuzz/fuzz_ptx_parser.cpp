// libFuzzer target for the PTX parser: any input must parse or end in a ParseError.
//   cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DPIPESIM_FUZZ=ON -DPIPESIM_CUDA=OFF -DPIPESIM_BENCH=OFF
//   cmake --build build-fuzz --target fuzz_ptx_parser && build-fuzz/tests/fuzz/fuzz_ptx_parser -max_len=4096
#include <cstddef>
#include <cstdint>
#include <string>

#include "verify/ptx/parser.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    pipesim::ptx::parse_module("fuzz.ptx", std::string(reinterpret_cast<const char*>(data), size));
  } catch (const pipesim::ptx::ParseError&) {
  }
  return 0;
}
