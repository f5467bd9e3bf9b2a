#include "verify/ptx/run_use.hpp"

#include <algorithm>
#include <bit>

#include "verify/ptx/sync.hpp"

namespace pipesim::ptx {

void ByteRanges::add(uint32_t begin, uint32_t end) {
  if (end <= begin) return;
  // The first range ending at or after `begin`: everything from there that starts by `end` merges.
  auto it = std::lower_bound(ranges_.begin(), ranges_.end(), begin, [](const auto& r, uint32_t b) { return r.second < b; });
  if (it != ranges_.end() && it->first <= begin && it->second >= end) return;  // the common case: seen before
  auto last = it;
  while (last != ranges_.end() && last->first <= end) {
    begin = std::min(begin, last->first);
    end = std::max(end, last->second);
    ++last;
  }
  it = ranges_.erase(it, last);
  ranges_.insert(it, {begin, end});
}

uint64_t ByteRanges::bytes() const {
  uint64_t n = 0;
  for (const auto& [b, e] : ranges_) n += e - b;
  return n;
}

void RunUse::note(const SyncRequest& r, uint32_t cta, uint32_t site) {
  if (r.fence) ++fenced_arrivals[site];  // only arrivals carry it
  switch (r.kind) {
    case SyncKind::MbarInit: {
      auto [it, fresh] = barriers.try_emplace(shared_offset(r.bar));
      if (fresh) {
        it->second.init_count = r.a;
        it->second.init_site = site;
      }
      return;
    }
    case SyncKind::MbarArriveExpectTx: case SyncKind::MbarExpectTx: {
      auto it = barriers.find(shared_offset(r.bar));
      if (it == barriers.end()) return;  // never initialised: the engine's rules say so
      it->second.expected_bytes += r.a;
      it->second.largest_expect = std::max(it->second.largest_expect, r.a);
      ++it->second.arms;
      return;
    }
    case SyncKind::TmaLoad: {
      auto it = barriers.find(shared_offset(r.bar));
      if (it == barriers.end()) return;
      Barrier& b = it->second;
      ++b.tma_loads;
      // The bytes land at the same offset in each CTA of the multicast mask, else in the CTA the
      // destination names.
      const uint32_t at = shared_offset(r.dst);
      const auto end = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{at} + static_cast<uint64_t>(r.a), kSharedOffsetMask));
      uint64_t ranks = r.b != 0 ? static_cast<uint64_t>(r.b) : uint64_t{1} << std::max(0, shared_rank(r.dst));
      while (ranks) {
        const auto rank = static_cast<size_t>(std::countr_zero(ranks));
        ranks &= ranks - 1;
        if (b.landed.size() <= rank) b.landed.resize(rank + 1);
        b.landed[rank].add(at, end);
      }
      return;
    }
    case SyncKind::BulkStore: {
      auto [it, fresh] = stores.try_emplace(shared_offset(r.dst));
      if (fresh) it->second.site = site;
      it->second.bytes = std::max(it->second.bytes, r.a);
      return;
    }
    case SyncKind::TmemAlloc: {
      const int64_t held = tmem_held_[cta] += r.a;
      tmem_columns = std::max(tmem_columns, held);
      tmem_cta_group2 |= r.cta_group2;
      return;
    }
    case SyncKind::TmemDealloc: tmem_held_[cta] -= r.a; return;
    default: return;
  }
}

namespace {

struct Candidate {
  uint32_t offset = 0;
  const RunUse::Barrier* b = nullptr;
  int64_t per_phase = 0;  // bytes one phase expects
  int64_t phases = 0;     // the most phases it completed in one CTA
};

Candidate candidate(uint32_t offset, const RunUse::Barrier& b, const sim::RunResult& result) {
  Candidate c{offset, &b, b.largest_expect, 0};
  int64_t completed = 0;
  for (const auto& per_cta : result.barriers) {
    if (b.slot >= per_cta.size()) continue;
    completed += per_cta[b.slot].completed;
    c.phases = std::max<int64_t>(c.phases, per_cta[b.slot].completed);
  }
  // Several expect_tx per phase (operands armed one by one): the phase's bytes are their sum.
  if (completed > 0 && b.arms >= 2 * static_cast<uint64_t>(completed)) c.per_phase = b.expected_bytes / completed;
  return c;
}

// The most bytes the barrier's copies bring into one CTA, and that CTA's rank.
std::pair<int64_t, size_t> landed_bytes(const RunUse::Barrier& b) {
  std::pair<int64_t, size_t> best{0, 0};
  for (size_t rank = 0; rank < b.landed.size(); ++rank)
    best = std::max(best, {static_cast<int64_t>(b.landed[rank].bytes()), rank}, [](auto& x, auto& y) { return x.first < y.first; });
  return best;
}

constexpr uint32_t kMostBarrierStride = 64;  // barriers further apart are not one array

TmaRing make_ring(const std::vector<Candidate>& run) {
  TmaRing ring;
  const RunUse::Barrier& first = *run.front().b;
  ring.stride = run.size() > 1 ? run[1].offset - run[0].offset : 8;
  ring.init_count = first.init_count;
  ring.site = first.init_site;
  ring.first = first.name;
  ring.last = run.back().b->name;
  ring.expected_bytes = run.front().per_phase;
  ring.phases = run.front().phases;
  // The buffer span in the CTA the most bytes land in.
  size_t rank = 0;
  uint64_t most = 0;
  for (const Candidate& c : run) {
    ring.barriers.push_back(c.offset);
    const auto [bytes, r] = landed_bytes(*c.b);
    ring.stage_bytes = std::max(ring.stage_bytes, bytes);
    if (static_cast<uint64_t>(bytes) > most) most = static_cast<uint64_t>(bytes), rank = r;
  }
  bool any = false;
  for (const Candidate& c : run) {
    if (c.b->landed.size() <= rank || c.b->landed[rank].empty()) continue;
    const ByteRanges& l = c.b->landed[rank];
    ring.buffer_lo = any ? std::min(ring.buffer_lo, l.lo()) : l.lo();
    ring.buffer_hi = any ? std::max(ring.buffer_hi, l.hi()) : l.hi();
    ring.buffer_bytes += l.bytes();
    any = true;
  }
  return ring;
}

}  // namespace

std::vector<TmaRing> tma_rings(const RunUse& use, const sim::RunResult& result) {
  std::vector<TmaRing> rings;
  std::vector<Candidate> run;
  auto close = [&] {
    if (!run.empty()) rings.push_back(make_ring(run));
    run.clear();
  };
  // Barriers in offset order: one that no TMA load completes on ends a ring.
  for (const auto& [offset, b] : use.barriers) {
    if (b.tma_loads == 0) {
      close();
      continue;
    }
    const Candidate c = candidate(offset, b, result);
    if (!run.empty()) {
      const Candidate& prev = run.back();
      const uint32_t stride = run.size() > 1 ? run[1].offset - run[0].offset : offset - prev.offset;
      const bool same = offset - prev.offset == stride && stride <= kMostBarrierStride && b.init_count == prev.b->init_count &&
                        c.per_phase == prev.per_phase && c.phases <= prev.phases && c.phases + 1 >= run.front().phases;
      if (!same) close();
    }
    run.push_back(c);
  }
  close();
  return rings;
}

std::optional<StoreRing> store_ring(const RunUse& use) {
  std::optional<StoreRing> best;
  StoreRing cur;
  uint32_t prev = 0;
  for (const auto& [offset, s] : use.stores) {
    const bool extends = cur.buffers > 0 && s.bytes == cur.bytes && (cur.buffers == 1 ? offset - prev >= static_cast<uint64_t>(s.bytes) && offset - prev < 2 * static_cast<uint64_t>(s.bytes)
                                                                                      : offset - prev == cur.stride);
    if (extends) {
      if (cur.buffers == 1) cur.stride = offset - prev;
      ++cur.buffers;
      cur.hi = static_cast<uint32_t>(offset + static_cast<uint64_t>(s.bytes));
    } else {
      cur = StoreRing{1, s.bytes, 0, offset, static_cast<uint32_t>(offset + static_cast<uint64_t>(s.bytes)), s.site};
    }
    prev = offset;
    if (!best || cur.buffers > best->buffers) best = cur;
  }
  return best;
}

}  // namespace pipesim::ptx
