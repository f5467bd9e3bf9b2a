// A resolved launch (verify/ptx/launch.hpp) moved onto real GPU memory: the parameter bytes with every
// pointer into a launch buffer rewritten to that buffer's real allocation, and the places where a real
// CUtensorMap goes. Pure host code (no CUDA): the GPU runner (ptx_runner.cpp) calls it with the
// addresses cuMemAlloc returned; tests call it with made-up ones.
//
// ASSUMPTION (named in docs/ptx.md, "Crosscheck on a GPU", and in crosscheck's output): every 8-byte
// aligned 8-byte value of the parameter buffer that lies inside a buffer's model range
// [address, address + bytes) is a pointer into that buffer. The launch file's struct parameters given
// as raw `hex` (the CUTLASS corpus) carry the model's buffer addresses with no type information; a
// scalar that happens to equal such an address would be rewritten too. Every rewrite is listed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "verify/ptx/launch.hpp"

namespace pipesim::ptx_launch {

// One pointer rewritten in the parameter buffer.
struct Relocation {
  uint64_t offset = 0;         // in the parameter buffer
  std::string param;           // the PTX parameter it lies in
  uint64_t param_offset = 0;   // bytes into that parameter
  std::string buffer;          // the launch buffer it points into
  uint64_t buffer_offset = 0;  // bytes into that buffer
  uint64_t model_address = 0;  // as the launch laid it out
  uint64_t real_address = 0;   // the same byte of the real allocation
};

// Where pipesim's tag (kTensorMapTag + index) sits in the parameter buffer: a real CUtensorMap,
// encoded from launch.tensormaps[index], replaces those 128 bytes.
struct TensorMapSlot {
  uint64_t offset = 0;
  uint32_t index = 0;
  std::string param;
};

struct RelocatedLaunch {
  std::vector<uint8_t> param_bytes;          // relocated; tensor-map slots still hold the tags
  std::vector<Relocation> relocations;
  std::vector<TensorMapSlot> tensormap_slots;
  std::vector<uint64_t> tensormap_addresses;  // per launch.tensormaps entry: its real global address
  std::vector<std::string> notes;             // things worth saying that do not stop the run
};

// `real_addresses[i]` is where launch.buffers[i] really lives. Throws ptx::LaunchError (no file
// position) for what the GPU cannot run: a tensor map whose address lies in no buffer, a tag naming a
// tensor map the launch does not have, a tag that does not fit the parameter buffer.
RelocatedLaunch relocate_launch(const ptx::Launch& launch, const std::vector<uint64_t>& real_addresses);

// The assumption above in one sentence, for reports.
inline constexpr const char* kRelocationAssumption =
    "every 8-byte aligned value of the parameter bytes inside a buffer's model range [address, address+bytes) is taken "
    "for a pointer into that buffer and rewritten to the real allocation";

}  // namespace pipesim::ptx_launch
