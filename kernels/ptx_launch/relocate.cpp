#include "kernels/ptx_launch/relocate.hpp"

#include <fmt/format.h>

namespace pipesim::ptx_launch {
namespace {

uint64_t load_u64(const std::vector<uint8_t>& b, uint64_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[at + static_cast<uint64_t>(i)];
  return v;
}
uint32_t load_u32(const std::vector<uint8_t>& b, uint64_t at) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | b[at + static_cast<uint64_t>(i)];
  return v;
}
void store_u64(std::vector<uint8_t>& b, uint64_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + static_cast<uint64_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
}

// The buffer whose model range holds `address`, or -1.
int buffer_holding(const ptx::Launch& l, uint64_t address) {
  for (size_t i = 0; i < l.buffers.size(); ++i)
    if (address >= l.buffers[i].address && address - l.buffers[i].address < l.buffers[i].bytes) return static_cast<int>(i);
  return -1;
}

// The parameter the byte at `offset` belongs to ("" past every parameter: padding).
const ptx::ParamValue* param_at(const ptx::Launch& l, uint64_t offset) {
  for (const ptx::ParamValue& p : l.params)
    if (offset >= p.offset && offset < p.offset + p.bytes) return &p;
  return nullptr;
}

}  // namespace

RelocatedLaunch relocate_launch(const ptx::Launch& l, const std::vector<uint64_t>& real) {
  if (real.size() != l.buffers.size())
    throw ptx::LaunchError(fmt::format("relocation: {} real addresses for {} buffers", real.size(), l.buffers.size()));
  RelocatedLaunch r;
  r.param_bytes = l.param_bytes;
  const uint64_t n = r.param_bytes.size();
  for (uint64_t at = 0; at + 8 <= n; at += 8) {
    const uint64_t v = load_u64(r.param_bytes, at);
    const ptx::ParamValue* p = param_at(l, at);
    const std::string pname = p ? p->name : "(padding)";
    if (v == ptx::kTensorMapTag) {
      if (at + ptx::kTensorMapBytes > n)
        throw ptx::LaunchError(fmt::format("parameter '{}': the tensor-map tag at byte {} of the parameters leaves no room "
                                           "for a {} B CUtensorMap (the parameters end at byte {})",
                                           pname, at, ptx::kTensorMapBytes, n));
      const uint32_t index = load_u32(r.param_bytes, at + 8);
      if (index >= l.tensormaps.size())
        throw ptx::LaunchError(fmt::format("parameter '{}': the tensor-map tag at byte {} names tensor map {}, but the launch "
                                           "has {}",
                                           pname, at, index, l.tensormaps.size()));
      // cp.async.bulk.tensor needs the CUtensorMap 64-byte aligned (PTX ISA, tensormap); the driver
      // aligns the parameter space, so an offset off 64 faults the TMA rather than the launch.
      if (at % 64 != 0)
        r.notes.push_back(fmt::format("tensor map '{}' sits at byte {} of the parameters, not 64-byte aligned: its TMA "
                                      "copies will fault",
                                      l.tensormaps[index].name, at));
      r.tensormap_slots.push_back(TensorMapSlot{at, index, pname});
      at += ptx::kTensorMapBytes - 8;  // the rest of the 128 bytes is the map, never a pointer
      continue;
    }
    const int b = buffer_holding(l, v);
    if (b < 0) continue;
    const ptx::BufferDesc& buf = l.buffers[static_cast<size_t>(b)];
    const uint64_t moved = real[static_cast<size_t>(b)] + (v - buf.address);
    store_u64(r.param_bytes, at, moved);
    r.relocations.push_back(Relocation{at, pname, p ? at - p->offset : 0, buf.name, v - buf.address, v, moved});
  }
  std::vector<bool> placed(l.tensormaps.size(), false);
  for (const TensorMapSlot& slot : r.tensormap_slots) placed[slot.index] = true;
  for (size_t i = 0; i < l.tensormaps.size(); ++i) {
    const ptx::TensorMapDesc& t = l.tensormaps[i];
    const int b = buffer_holding(l, t.global_address);
    if (b < 0 && placed[i])
      throw ptx::LaunchError(fmt::format("tensor map '{}': its global address {:#x} lies in no buffer of the launch, so the "
                                         "GPU run has no memory behind it (give it a \"buffer\", or an \"address\" inside one)",
                                         t.name, t.global_address));
    if (!placed[i])
      r.notes.push_back(fmt::format("tensor map '{}' is not in the parameters: a kernel that reads it from elsewhere (a "
                                    "buffer's contents) finds pipesim's tag there on the GPU, not a CUtensorMap",
                                    t.name));
    r.tensormap_addresses.push_back(b < 0 ? 0 : real[static_cast<size_t>(b)] + (t.global_address - l.buffers[static_cast<size_t>(b)].address));
  }
  return r;
}

}  // namespace pipesim::ptx_launch
