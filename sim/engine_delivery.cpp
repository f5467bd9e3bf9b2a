// The DRAM queue and where operations land: copies landing, arrivals delivered to other CTAs,
// mbarrier operations applied (through sim/mbarrier.hpp) and their violations reported, cluster
// barriers completing. The Engine and its state: sim/engine_impl.hpp.
#include "sim/engine_impl.hpp"
#include "sim/operand_rules.hpp"

namespace pipesim::sim::detail {

// Queues `c` in SM `sm`'s lane of the copies' queue (its misses' or its hits'), no faster than `cap` bytes/ns
// (0: no cap), from `start` (now, or when the issuing SM's TMA unit takes the copy).
void Engine::dram_add(int sm, double cap, DramCopy c, double start) {
  if (o_.untimed) {  // no DRAM queue: a copy lands when the explorer says (its TxLand is a choice)
    if (!c.store) push(now_ + c.latency, EventKind::TxLand, c.target, c.slot, c.site, c.from, OpKind::CompleteTx, c.bytes, c.phase);
    return;
  }
  if (start > now_) {  // its issuing SM's TMA unit is still busy: queued when it starts
    c.sm = sm;
    c.cap = cap;
    const uint32_t token = take_slot(copies_, free_copies_);
    copies_[token] = c;
    push(start, EventKind::CopyStart, token);
    return;
  }
  c.entered = now_;
  c.unloaded_ns = cap > 0 ? c.dram_bytes / cap : 0;  // its own transfer, unshared
  const uint32_t token = take_slot(copies_, free_copies_);
  copies_[token] = c;
  dram_.advance(now_);
  // The L2's rate is the launch's (its footprint against the fast set), set by each load as it enters.
  if (!c.store) dram_.set_hit_rate(c.l2_slow ? tm_.l2_slow_bytes_per_ns : tm_.l2_bytes_per_ns);
  dram_.add(lane(sm, c.from_l2), c.dram_bytes, cap, token, c.from_l2);
  schedule_dram();
}

void Engine::copy_start(const Event& e) {
  const DramCopy c = copies_[e.target];
  free_copies_.push_back(e.target);
  dram_add(c.sm, c.cap, c);
}

// The DRAM has served copies: each lands after the TMA latency, and after the loaded latency
// where the DRAM queue has not already made it wait that long (Timing::dram_loaded_*).
void Engine::dram_done(const Event& e) {
  if (e.t == dram_event_at_) dram_event_at_ = std::numeric_limits<double>::infinity();
  dram_.advance(now_);
  done_tokens_.clear();
  dram_.take_done(done_tokens_);
  for (uint32_t t : done_tokens_) {
    const DramCopy c = copies_[t];
    free_copies_.push_back(t);
    if (c.store) continue;
    const double waited = now_ - c.entered - c.unloaded_ns;  // beyond its own transfer: sharing
    double at = now_ + c.latency + std::max(0.0, c.loaded - waited);
    if (loaded_tracked() && !c.from_l2) dram_inflight_.push({at, c.dram_bytes});
    if (c.from_l2) {
      // A hit on a box still filling rides on the miss that brought it in (native probe
      // kernels/interp/startprobe.cu: 132 SMs that read 2 boxes from a cold L2 all wait ~0.8 us,
      // as long as a lone miss, where hits take ~0.45).
      const double filled = l2_.filled_at(c.box);
      if (filled == L2Cache::kFilling) {
        awaiting_fill_.push_back({c, at});
        continue;
      }
      at = std::max(at, filled);
    } else if (c.box != 0) {
      l2_.fill(c.box, at);
      // Release the hits that waited for these bytes (a later miss of the same box, after an
      // eviction, releases those that rode on an earlier one too: they wait no longer than it).
      std::erase_if(awaiting_fill_, [&](const CopyAwaitingFill& w) {
        if (w.copy.box != c.box) return false;
        land_copy(w.copy, std::max(w.at, at));
        return true;
      });
    }
    land_copy(c, at);
  }
  schedule_dram();
}

void Engine::land_copy(const DramCopy& c, double at) {
  push(at, EventKind::TxLand, c.target, c.slot, c.site, c.from, OpKind::CompleteTx, c.bytes, c.phase);
  if (c.span != SIZE_MAX) res_.spans[c.span].end_ns = std::max(res_.spans[c.span].end_ns, at);
}

double Engine::count_in_flight(int64_t bytes) {
  if (!loaded_tracked()) return 0;
  while (!dram_inflight_.empty() && dram_inflight_.top().first <= now_) {
    dram_inflight_bytes_ -= dram_inflight_.top().second;
    dram_inflight_.pop();
  }
  dram_inflight_bytes_ += static_cast<double>(bytes);
  const double mib = dram_inflight_bytes_ / (1024.0 * 1024.0);
  return std::min(tm_.dram_loaded_max_ns, tm_.dram_loaded_ns_per_mib * std::max(0.0, mib - tm_.dram_loaded_knee_mib));
}

void Engine::cluster_try_complete(int cl) {
  ClusterRt& c = clusters_[static_cast<size_t>(cl)];
  if (c.live == 0 || c.arrived < c.live) return;
  c.arrived = 0;
  ++c.phase;
  // A completed cluster barrier publishes every fenced mbarrier init in the cluster.
  for (int r = 0; r < csize_; ++r) {
    CtaRt& ct = cta(cl * csize_ + r);
    for (uint32_t s = 0; s < slots_; ++s)
      if (ct.fenced[s]) ct.visible[s] = 1;
      else if (ct.bars[s].initialised && !ct.visible[s] && k_->external) ct.visible[s] = 2;
  }
  const double at = now_ + jit(tm_.cluster_barrier_ns);
  c.release_at = at;
  std::vector<uint32_t> ws;
  ws.swap(c.waiters);
  for (uint32_t x : ws) resume(warps_[x], x, o_.jitter > 0 ? now_ + jit(tm_.cluster_barrier_ns) : at);
}

void Engine::violation(MbarViolation v, int c, uint32_t s, OpKind kind, int64_t value, uint32_t site, WarpRt* w) {
  const MBarrier& b = cta(c).bars[s];
  const std::string where = bar_name(s) + (w && c != w->cta ? " of CTA " + std::to_string(c) : "");
  switch (v) {
    case MbarViolation::None: break;
    case MbarViolation::PendingUnderflow:
      return fault("pending_underflow", w, site,
                   std::string(op_name(kind)) + (kind == OpKind::ArriveExpectTx ? "" : " count " + std::to_string(value)) + " on " + where +
                       " takes pending below zero (the H100 faults: unspecified launch failure)",
                   {state_note(b), b.pending == 0 ? "every expected arrival is already in; the phase waits only for " + std::to_string(b.tx) + " bytes"
                                                   : "more arrivals than the barrier's count: check the init count against the arriving threads"});
    case MbarViolation::TxRange:
      if (!mbar_tx_in_range(value)) return fault("tx_range", w, site, operand::tx_bytes(value), {state_note(b)});  // the value alone
      return fault("tx_range", w, site, std::string(op_name(kind)) + " " + std::to_string(value) + " on " + where +
                                            " takes tx outside -(2^20-1) .. 2^20-1", {state_note(b)});
    case MbarViolation::CountRange:
      if (!mbar_count_in_range(value)) return fault("count_range", w, site, operand::arrival_count(value), {state_note(b)});  // the value alone
      return fault("count_range", w, site, std::string(op_name(kind)) + " count " + std::to_string(value) + " on " + where + " is outside its range", {state_note(b)});
    case MbarViolation::Uninit:
      return fault("uninit", w, site, std::string(op_name(kind)) + " on " + where + ", which was never initialised");
    case MbarViolation::Reinit: break;
  }
}

// Applies an mbarrier operation on CTA `c`'s slot `s`, wakes waiters, reports violations.
void Engine::apply(int c, uint32_t s, OpKind kind, int64_t value, uint32_t site, WarpRt* w, int64_t threads) {
  CtaRt& ct = cta(c);
  MBarrier& b = ct.bars[s];
  MbarOutcome r;
  if (kind == OpKind::ArriveExpectTx || kind == OpKind::ExpectTx) ct.expect_site[s] = site;
  if (w && kind != OpKind::ExpectTx) ct.last[s] = LastArrival{w->cta, w->warp, site};
  if (!k_->smem.empty()) note_release(w, c, s, kind, b.completed);
  switch (kind) {
    case OpKind::Arrive: r = threads > 1 ? mbar_arrive_threads(b, value, threads) : mbar_arrive(b, value); break;
    case OpKind::ArriveExpectTx: r = mbar_arrive_expect_tx(b, value); break;
    case OpKind::ExpectTx: r = mbar_expect_tx(b, value); break;
    case OpKind::CompleteTx: r = mbar_complete_tx(b, value); break;
    case OpKind::ArriveDrop: r = mbar_arrive_drop(b, value); break;
    default: return;
  }
  if (r.violation != MbarViolation::None) return violation(r.violation, c, s, kind, value, site, w);
  if (kind == OpKind::CompleteTx && b.tx < 0 && b.pending == 0 && !overshoot_warned_) {
    overshoot_warned_ = true;
    warn("tx_overshoot", w ? w->cta : c, w ? w->warp : -1, site,
         std::to_string(-b.tx) + " more byte(s) landed on " + bar_name(s) + " of CTA " + std::to_string(c) +
             " than its arrivals expected; the phase cannot complete unless another expect_tx of that many bytes follows",
         {state_note(b)});
  }
  if (r.phases_completed) {

    if (o_.record_trace)
      res_.instants.push_back(TraceInstant{c, now_, bar_name(s) + " phase " + std::to_string(b.completed - 1) + " complete"});
    auto& ws = ct.waiters[s];
    size_t keep = 0;
    const double at = now_ + jit(tm_.mbarrier_wake_ns);
    std::vector<uint32_t>* batch = nullptr;
    for (size_t i = 0; i < ws.size(); ++i) {
      WarpRt& x = warps_[ws[i]];
      if (!mbar_parity_passed(b, x.cur.a)) {
        ws[keep++] = ws[i];
        continue;
      }
      // The completion wakes it and its try_wait returns true on this phase, whatever completes
      // after (H100, kernels/interp/pollprobe.cu: 0 of 50 missed with the next completion one
      // instruction later; docs/semantics.md "Polling and missed phases"). Only a test_wait spin
      // reads a parity that may have flipped twice.
      if (!wait_passed(x, s, b)) return;
      if (o_.jitter > 0) {  // each waiter its own latency: no batching
        resume(x, ws[i], now_ + jit(tm_.mbarrier_wake_ns));
        continue;
      }
      close_block(x);
      if (!batch) batch = &new_wake_list(at);
      batch->push_back(ws[i]);
    }
    ws.resize(keep);
  }
}

void Engine::land(const Event& e) {
  CtaRt& ct = cta(static_cast<int>(e.target));
  --ct.tma_inflight;
  const MBarrier& b = ct.bars[e.slot];
  WarpRt* from = &warps_[e.from_warp];
  // The phase these bytes were issued for completed without them: tx reached zero early,
  // so its consumers were released while this copy was still writing their buffer.
  if (b.initialised && b.completed > e.phase &&
      stop("early_completion", from, e.site,
                 std::to_string(e.value) + " bytes landed on " + bar_name(e.slot) + " of CTA " + std::to_string(e.target) +
                     " after the phase they were issued for (phase " + std::to_string(e.phase) + ") had completed without them",
           {state_note(b), "the expect_tx of that phase was smaller than the bytes its copies deliver: consumers read a buffer still being written"}))
    return;
  // A copy lands in parts, in order (docs/semantics.md, "TMA delivery in parts"): when its bytes
  // would take tx past zero, the phase completes on the part that reaches zero and the rest lands
  // in the next phase. Seen on the H100 for over-delivering copies in some runs and not in others,
  // so the interleaving search (jitter) takes it with probability 1/2; the fixed run lands whole.
  // Where a part can end (native probe, case 3): after whole 32-byte sectors, and for a copy of an
  // odd number of 16-byte halves also after its half-sector tail, which may land first (x = 16,
  // 48, ...). A crossing anywhere else cannot complete the phase early.
  if ((o_.jitter > 0 || o_.parts_choice) && b.initialised && b.completed == e.phase && b.pending == 0 && b.tx > 0 &&
      b.tx < e.value && part_can_end_at(b.tx, e.value) &&
      (o_.parts_choice ? o_.parts_choice(PartsChoice{static_cast<int>(e.target), e.slot, b.completed}) : (timed_->rng() & 1))) {
    const int64_t rest = e.value - b.tx;
    ++ct.tma_inflight;
    push(now_ + 1.0, EventKind::TxLand, e.target, e.slot, e.site, e.from_warp, OpKind::CompleteTx, rest, e.phase);
    apply(static_cast<int>(e.target), e.slot, OpKind::CompleteTx, e.value - rest, e.site, from);
    return;
  }
  apply(static_cast<int>(e.target), e.slot, OpKind::CompleteTx, e.value, e.site, from);
}

// Whether the TMA (local) or another CTA (remote) may use barrier slot `s` of `c`. A remote use of
// an init published only by a relaxed cluster barrier goes on with a warning (once per run): no
// release orders the init before it, though the hardware runs it (CUTLASS's sm100 GEMMs do this).
bool Engine::init_visible(CtaRt& c, uint32_t s, bool remote, const WarpRt& w, uint32_t site) {
  if (!remote) return c.fenced[s] & 1;
  if (c.visible[s] == 2 && !warned_relaxed_init_) {
    warned_relaxed_init_ = true;
    warn("init_not_fenced", w.cta, w.warp, site,
         bar_name(s) + "'s init reached CTA " + std::to_string(w.cta) + " only through a relaxed cluster barrier",
         {"no fence.mbarrier_init and no release orders the init before this use (PTX memory model); the hardware "
          "runs it, but fence.mbarrier_init.release.cluster after the init makes it certain"});
  }
  return c.visible[s] != 0;
}

// An arrival or tx operation landing on another CTA (remote arrive, tcgen05.commit) or on
// this one from the async proxy (tcgen05.commit): the target must still run, and the barrier's
// init must be visible — published to the cluster for another CTA, fenced for its own.
void Engine::deliver(const Event& e, const std::string& what) {
  CtaRt& ct = cta(static_cast<int>(e.target));
  WarpRt& from = warps_[e.from_warp];
  const std::string where = bar_name(e.slot) + " of CTA " + std::to_string(e.target);
  if (ct.exited) return fault("exited_target", &from, e.site, what + " on " + where + " arrived after that CTA exited");
  const bool remote = static_cast<int>(e.target) != from.cta;
  if (ct.bars[e.slot].initialised && !init_visible(ct, e.slot, remote, from, e.site) &&
      stop("init_not_fenced", &from, e.site,
           what + " on " + where + " before its init was made visible (" + (remote ? "fence_init and a cluster barrier)" : "fence_init)")))
    return;
  apply(static_cast<int>(e.target), e.slot, e.op, e.value, e.site, &from, e.op == OpKind::Arrive ? std::max<int64_t>(1, e.phase) : 1);
  // An arrival is a release at cluster scope: it carries every mbarrier init its CTA made before it
  // to the CTA it reaches (the memory model's release-acquire chain; CUTLASS's sm100 kernels publish
  // their tmem_dealloc barrier's init this way, docs/semantics.md).
  if (remote && e.op == OpKind::Arrive) {
    CtaRt& src = cta(from.cta);
    for (uint32_t s = 0; s < slots_; ++s)
      if (src.bars[s].initialised) src.visible[s] = 1;
  }
}

}  // namespace pipesim::sim::detail
