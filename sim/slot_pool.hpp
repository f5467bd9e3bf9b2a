// Free-listed pools: the engine's event payloads (sim/event_queue.hpp), wake lists and DRAM copy
// tokens (sim/engine_impl.hpp) reuse freed slots instead of growing.
#pragma once

#include <cstdint>
#include <vector>

namespace pipesim::sim {

// A slot of `pool` for reuse: the last one freed, else a new one at the end.
template <class T>
uint32_t take_slot(std::vector<T>& pool, std::vector<uint32_t>& free) {
  if (free.empty()) {
    pool.emplace_back();
    return static_cast<uint32_t>(pool.size() - 1);
  }
  const uint32_t i = free.back();
  free.pop_back();
  return i;
}

}  // namespace pipesim::sim
