// What one PTX run did with its CTAs' resources, and the TMA rings read from it (docs/ptx.md,
// "Budget from the run"). The adapter (source.cpp) notes every request its warps make; nothing here
// changes the run. The rings are inferred here and only here: they exist only as shared-memory words
// and copy destinations of a compiled kernel, which only this front end sees (a scenario declares its
// pipelines), and the engine stays unaware of them.
//
// A TMA ring is a run of mbarriers at one stride in shared memory that TMA loads complete on, that the
// kernel initialised with one count, whose phases expect the same bytes and which complete their
// phases in rotation (each barrier of the ring at most one phase behind the first). Its stage count
// is the number of those barriers; a stage's bytes are what its copies bring into one CTA (the union
// of their destinations) and what one phase expects (the whole pair's under cta_group::2, where the
// leader arms for both CTAs).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/engine.hpp"
#include "verify/ptx/machine.hpp"

namespace pipesim::ptx {

struct SyncRequest;

// Byte ranges [begin, end) of one CTA's shared memory, kept merged.
class ByteRanges {
 public:
  void add(uint32_t begin, uint32_t end);
  uint64_t bytes() const;
  bool empty() const { return ranges_.empty(); }
  uint32_t lo() const { return ranges_.empty() ? 0 : ranges_.front().first; }
  uint32_t hi() const { return ranges_.empty() ? 0 : ranges_.back().second; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

class RunUse {
 public:
  // An mbarrier the kernel initialised (by its shared offset, the same in every CTA).
  struct Barrier {
    int64_t init_count = 0;
    uint32_t init_site = 0;        // the first mbarrier.init of it (Kernel::sites)
    uint32_t slot = UINT32_MAX;    // the engine's slot (RunResult::barriers[cta][slot])
    std::string name;              // as the reports name it
    int64_t expected_bytes = 0;    // summed over every expect_tx / arrive.expect_tx on it, all CTAs
    int64_t largest_expect = 0;    // the most one of them expected
    uint64_t arms = 0;             // how many there were
    uint64_t tma_loads = 0;        // TMA / bulk loads completing on it
    std::vector<ByteRanges> landed;  // by destination cluster rank: where those loads' bytes land
  };
  // A shared-memory source of bulk (TMA) stores.
  struct StoreSource {
    int64_t bytes = 0;             // the most one store took from here
    uint32_t site = 0;
  };

  // One request a warp of CTA `cta` made at site `site` (Kernel::sites).
  void note(const SyncRequest& r, uint32_t cta, uint32_t site);

  std::map<uint32_t, Barrier> barriers;
  std::map<uint32_t, StoreSource> stores;
  // mbarrier arrivals released at cluster scope, each a fence on its warp: by site, how many (all CTAs).
  std::map<uint32_t, uint64_t> fenced_arrivals;
  // Shared-memory accesses with bank conflicts: by site, over the run (set at its end).
  std::map<uint32_t, SharedConflicts> bank_conflicts;
  uint64_t smem_touched = 0;       // the highest shared byte any warp used, + 1 (set at the run's end)
  int64_t tmem_columns = 0;        // the most TMEM columns one CTA held at once
  bool tmem_cta_group2 = false;

 private:
  std::unordered_map<uint32_t, int64_t> tmem_held_;  // by CTA
};

struct TmaRing {
  std::vector<uint32_t> barriers;  // shared offsets, stage 0 first
  uint32_t stride = 0;
  int64_t init_count = 0;
  uint32_t site = 0;               // stage 0's mbarrier.init
  std::string first, last;         // the first and last barrier's names
  int64_t stage_bytes = 0;         // the most one stage's copies bring into one CTA's shared memory
  int64_t expected_bytes = 0;      // what one phase expects
  int64_t phases = 0;              // the most phases stage 0 completed in one CTA
  uint32_t buffer_lo = 0, buffer_hi = 0;  // the span the copies land in (one CTA)
  uint64_t buffer_bytes = 0;       // the bytes landing in that span over all stages
  int stages() const { return static_cast<int>(barriers.size()); }
};

// The epilogue's staging buffers: the sources of bulk stores, at one stride with the same bytes, in
// rotation (assumed: one store per buffer).
struct StoreRing {
  int buffers = 0;
  int64_t bytes = 0;
  uint32_t stride = 0;
  uint32_t lo = 0, hi = 0;
  uint32_t site = 0;               // the first buffer's store
};

// The rings of a finished run (`result` gives the phases each barrier completed), by offset.
std::vector<TmaRing> tma_rings(const RunUse& use, const sim::RunResult& result);
// The longest run of store buffers, if the kernel made bulk stores.
std::optional<StoreRing> store_ring(const RunUse& use);

}  // namespace pipesim::ptx
