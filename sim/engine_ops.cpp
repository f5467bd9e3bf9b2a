// Executing a warp's ops: exec, the tcgen05 / wgmma / TMA / wait / named-barrier ops and their checks
// (TMEM allocation: sim/engine_tmem.cpp).
// The Engine and its state: sim/engine_impl.hpp.
#include "sim/engine_impl.hpp"
#include "sim/operand_rules.hpp"

#include <algorithm>
#include <bit>

namespace pipesim::sim::detail {

double Engine::interp_contention_ns(const WarpRt& w) const {
  const model::InterpreterCost& c = *o_.interp;
  if (c.contention_ns <= 0) return 0;
  double others = 0;
  const size_t first = cta(w.cta).first_warp;
  for (int x = w.warp % 4; x < wpc_; x += 4) {
    if (x == w.warp) continue;
    const WarpRt& o = warps_[first + static_cast<size_t>(x)];
    if (o.status != WarpStatus::Blocked) continue;  // exited, faulted, not started
    if (o.block == Block::None || o.block == Block::Timed) others += 1;
    else if (o.block == Block::Mbarrier) others += c.poll_share;
  }
  return others * c.contention_ns;
}

double Engine::interp_dispatch_ns(const Op& op) const {
  const model::InterpreterCost& c = *o_.interp;
  const double stamp = o_.interp_timestamps ? c.timestamp_ns : 0.0;
  // The interpreter's wgmma joins its warpgroup with a bar.sync before its timed spin (kernels/interp).
  if (op.kind == OpKind::Mma && (op.flags & kFlagWgmma)) return c.named_ns + c.compute_ns + stamp;
  switch (op.kind) {
    case OpKind::NamedSync: case OpKind::NamedArrive: return c.named_ns + stamp;
    case OpKind::ClusterArrive: case OpKind::ClusterWait: return c.cluster_ns + stamp;
    case OpKind::TmaLoad: case OpKind::BulkStore: return c.copy_ns + stamp;
    case OpKind::Wait: return c.wait_ns + stamp;
    case OpKind::Init: case OpKind::Inval: case OpKind::FenceInit: case OpKind::TestWait: case OpKind::CompleteTx:
      return c.init_ns + stamp;
    case OpKind::Compute: case OpKind::Mma: return c.compute_ns + stamp;
    default: return c.op_ns + stamp;
  }
}

void Engine::exec(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  const double issue = jit(tm_.op_issue_ns);
  switch (op.kind) {
    case OpKind::Compute: {
      const double d = jit(static_cast<double>(op.a));
      double begin = now_;
      if (op.b > 0) {
        // Instructions: the sub-partition issues them after those already queued there. Their issue
        // (b of the a ns) holds its slot; the rest, the warp waiting on its operands, leaves the slot
        // to other warps. (Letting the op start before the slot is free, its issue spread over it,
        // made CUTLASS 54 13-25 % fast against the H100: docs/calibration.md.)
        double& slot = sms_[static_cast<size_t>(cta(w.cta).sm)].issue_free[w.warp % 4];
        begin = std::max(begin, slot);
        slot = begin + d * std::min(1.0, static_cast<double>(op.b) / static_cast<double>(op.a));
      }
      if (o_.record_trace) span(w, begin, begin + d, "compute", false);
      push(begin + d, EventKind::WarpStep, id);
      return;
    }
    case OpKind::Wait: return do_wait(w, id);
    case OpKind::TestWait: {
      const uint32_t s = slot(op.bar);
      if (!check_local(w, op, "test_wait")) return;
      MBarrier& b = cta(w.cta).bars[s];
      if (!b.initialised) return fault("uninit", &w, op.site, "test_wait on " + bar_name(s) + ", which was never initialised");
      if (std::string why = operand::parity(op.a); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
      const bool got = mbar_parity_passed(b, op.a);
      // A compiled try_wait that returns true is a pass like any wait's (one that returned false
      // passed nothing). A scenario's `test_wait ... expect` only observes the barrier: it takes no
      // phase, so it is no pass for phase_reused to judge.
      if (got && (op.flags & kFlagAnswer) && !wait_passed(w, s, b)) return;
      if (op.flags & kFlagAnswer) {
        ext(w)->answer(got);
      } else if (got != (op.b != 0))
        return fault("assertion", &w, op.site,
                     "test_wait " + bar_name(s) + " parity " + std::to_string(op.a) + " returned " +
                         (got ? "true" : "false") + ", the scenario expects " + (op.b ? "true" : "false"),
                     {state_note(b)});
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::Arrive: case OpKind::ArriveExpectTx: case OpKind::ExpectTx:
    case OpKind::CompleteTx: case OpKind::ArriveDrop: {
      const int target = cta_of_rank(w.cta, op.bar.rank);
      const uint32_t s = slot(op.bar);
      if (target == w.cta) {
        if (op.flags & kFlagAnswer) ext(w)->answer(cta(target).bars[s].completed & 1);  // the token: the phase it arrived in
        apply(target, s, op.kind, op.a, op.site, &w, threads_of(op));
      } else {
        CtaRt& tc = cta(target);
        if (tc.exited)
          return fault("exited_target", &w, op.site,
                       std::string(op_name(op.kind)) + " on " + bar_name(s) + " of CTA " + std::to_string(target) +
                           ", which has already exited");
        const double at = now_ + jit(tm_.remote_arrive_ns);
        w.remote_done = std::max(w.remote_done, at);
        push(at, EventKind::RemoteOp, static_cast<uint32_t>(target), s, op.site, id, op.kind, op.a, threads_of(op));
      }
      if (!fatal_) push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::Init: {
      if (!check_local(w, op, "init")) return;
      const uint32_t s = slot(op.bar);
      CtaRt& c = cta(w.cta);
      const MbarOutcome r = mbar_init(c.bars[s], op.a);
      if (r.violation == MbarViolation::Reinit)
        return fault("reinit", &w, op.site, "init of " + bar_name(s) + ", which is live (initialised and not invalidated)",
                     {state_note(c.bars[s]), "invalidate it first (inval) or initialise it once"});
      if (r.violation == MbarViolation::CountRange) return fault("count_range", &w, op.site, operand::arrival_count(op.a));
      c.fenced[s] = c.visible[s] = 0;
      // A new barrier at that offset: no warp of the CTA has consumed any of its phases yet.
      for (uint32_t x = c.first_warp; x < c.first_warp + static_cast<uint32_t>(wpc_); ++x)
        if (s < warps_[x].consumed.size()) warps_[x].consumed[s] = {};
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::Inval: {
      if (!check_local(w, op, "inval")) return;
      const uint32_t s = slot(op.bar);
      mbar_inval(cta(w.cta).bars[s]);
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::FenceInit: {
      CtaRt& c = cta(w.cta);
      for (uint32_t s = 0; s < slots_; ++s)
        if (c.bars[s].initialised) c.fenced[s] |= 1;
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::TmaLoad: return do_tma(w, id);
    case OpKind::BulkStore: {
      if (std::string why = operand::copy_bytes("bulk store", op.a); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
      const double read_done = now_ + jit(tm_.tma_latency_ns * 0.25) + static_cast<double>(op.a) / tm_.smem_bytes_per_ns;
      const double start = std::max(read_done, stores_free_);
      stores_free_ = start + static_cast<double>(op.a) / tm_.hbm_bytes_per_ns;
      w.open.read_done = std::max(w.open.read_done, read_done);
      w.open.write_done = std::max(w.open.write_done, stores_free_);
      w.open.stores.push_back({op.b, op.site});
      dram_busy_ += static_cast<double>(op.a) / tm_.hbm_bytes_per_ns;
      l2_.write(op.box, op.a);  // write-back: the box is held, its bytes still go to the DRAM
      res_.dram_write_bytes += op.a;
      dram_add(cta(w.cta).sm, 0, DramCopy{.store = true, .dram_bytes = static_cast<double>(op.a)});
      if (o_.record_trace) res_.spans.push_back(TraceSpan{w.cta, -1, now_, stores_free_, op.site, "store " + std::to_string(op.a) + " B", false});
      push(now_ + jit(tm_.tma_issue_ns), EventKind::WarpStep, id);
      return;
    }
    case OpKind::CommitGroup:
      w.groups.push_back(std::move(w.open));
      w.open = {};
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    case OpKind::WaitGroup: {
      // Groups complete in commit order: wait until at most N of the newest are pending.
      if (std::string why = operand::wait_group_count(op.a); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
      double until = now_;
      const int64_t keep = op.a;
      const int64_t n = static_cast<int64_t>(w.groups.size());
      for (int64_t g = 0; g < n - keep; ++g) {
        const auto& gr = w.groups[static_cast<size_t>(g)];
        until = std::max(until, op.b ? gr.read_done : gr.write_done);
      }
      std::erase_if(w.retiring, [&](const WarpRt::Group& g) { return g.retired_at <= now_; });
      for (int64_t g = 0; g < n - keep; ++g) {
        w.groups[static_cast<size_t>(g)].retired_at = until;
        w.retiring.push_back(std::move(w.groups[static_cast<size_t>(g)]));
      }
      if (n > keep) w.groups.erase(w.groups.begin(), w.groups.begin() + (n - keep));
      if (until > now_) return timed_block(w, id, until);
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::NamedSync: case OpKind::NamedArrive: return do_named(w, id);
    case OpKind::Mma: return do_mma(w, id);
    case OpKind::Commit: return do_commit(w, id);
    case OpKind::TmemAlloc: return do_alloc(w, id);
    case OpKind::TmemDealloc: return do_dealloc(w, id);
    case OpKind::TmemRelinquish:
      cta(w.cta).tmem_relinquished = true;
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    case OpKind::TmemLoad: case OpKind::TmemStore: {
      const int which = op.kind == OpKind::TmemStore;
      w.tmem_done[which] = std::max(w.tmem_done[which], now_ + jit(tm_.tmem_ld_latency_ns) +
                                                            static_cast<double>(op.a) * tm_.tmem_ld_ns_per_col);
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::TmemWait: {
      const double until = w.tmem_done[op.a != 0];
      if (until > now_) return timed_block(w, id, until);
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::StageWrite: {
      // A store from this buffer that no wait_group.read has retired yet: a race whatever the
      // clock says (the store may finish reading first in this run, not in the next).
      const int64_t key = (op.a + 1) << 32 | op.b;
      const auto [ps, by] = pending_store_in_cta(w, key);
      if (ps && stop("smem_war", &w, op.site,
                     "staging buffer " + std::to_string(op.b) + " of " + k_->pipelines[static_cast<size_t>(op.a)].name +
                         " is written while " + (by == &w ? "no wait_group.read of this warp" : "no wait_group.read of warp " + std::to_string(by->warp)) +
                         " covers the bulk store from it at line " + std::to_string(k_->sites[ps->site].loc.line),
                     {"wait_group.read must cover every store from this buffer before it is rewritten: index buffers by a "
                      "state that runs on across tiles, or keep the number of staging buffers dividing the sub-tiles"}))
        return;
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::MmaCommitGroup:
      w.mma_groups.push_back(std::exchange(w.mma_open_done, 0.0));
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    case OpKind::MmaWaitGroup: {
      if (std::string why = operand::wgmma_wait_count(op.a); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
      double until = now_;
      const size_t keep = static_cast<size_t>(op.a);
      if (w.mma_groups.size() > keep) {
        const auto done = w.mma_groups.end() - static_cast<long>(keep);
        for (auto g = w.mma_groups.begin(); g != done; ++g) until = std::max(until, *g);
        w.mma_groups.erase(w.mma_groups.begin(), done);
      }
      if (until > now_) return timed_block(w, id, until);
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::Fault: {  // the warp's own code faulted, or the lowering refused a computed operand
      auto [kind, message] = w.external ? ext(w)->fault() : w.prog.fault();
      return fault(kind, &w, op.site, std::move(message));
    }
    case OpKind::ClcTryCancel: return do_try_cancel(w, id);
    case OpKind::SmemStore: return do_smem_store(w, id);
    case OpKind::SmemLoad: return do_smem_load(w, id);
    case OpKind::ClusterArrive: {
      // barrier.cluster.arrive has release semantics: this warp's remote arrivals land first.
      if (w.remote_done > now_) {
        w.retry = true;
        push(w.remote_done, EventKind::WarpStep, id);
        return;
      }
      ClusterRt& c = clusters_[static_cast<size_t>(cluster_of(w.cta))];
      if (w.cluster_arrived == c.phase)
        return fault("named_overrun", &w, op.site, "cluster_arrive twice in one cluster-barrier phase");
      w.cluster_arrived = c.phase;
      if (op.b == kClusterArriveRelease) {
        CtaRt& ct = cta(w.cta);
        for (uint32_t s = 0; s < slots_; ++s)
          if (ct.bars[s].initialised) ct.fenced[s] |= 2;
      }
      ++c.arrived;
      cluster_try_complete(cluster_of(w.cta));
      push(now_ + issue, EventKind::WarpStep, id);
      return;
    }
    case OpKind::ClusterWait: {
      ClusterRt& c = clusters_[static_cast<size_t>(cluster_of(w.cta))];
      if (c.phase > w.cluster_arrived && w.cluster_arrived >= 0) {
        push(std::max(now_ + issue, c.release_at), EventKind::WarpStep, id);  // the last arriver too
        return;
      }
      w.block = Block::Cluster;
      w.block_since = now_;
      c.waiters.push_back(id);
      return;
    }
  }
}

// All tcgen05 instructions of a kernel use one cta_group.
bool Engine::check_cta_group(WarpRt& w, const Op& op) {
  const int g = (op.flags & kFlagCtaGroup2) ? 2 : 1;
  if (std::string why = operand::cta_group(g, csize_); !why.empty()) {
    fault("bad_operand", &w, op.site, std::move(why));
    return false;
  }
  if (observed_cta_group_ == 0) observed_cta_group_ = g;
  if (observed_cta_group_ != g) {
    fault("cta_group_mismatch", &w, op.site,
          std::string(op_name(op.kind)) + " with cta_group::" + std::to_string(g) + " in a kernel whose earlier tcgen05 instructions used cta_group::" +
              std::to_string(observed_cta_group_),
          {"all tcgen05 instructions of a kernel must use the same cta_group"});
    return false;
  }
  return true;
}

void Engine::do_mma(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  if (op.flags & kFlagWgmma) return do_wgmma(w, id);
  if (!check_cta_group(w, op)) return;
  const MmaShape sh = unpack_mma(op.a);
  const int g = (op.flags & kFlagCtaGroup2) ? 2 : 1;
  if (std::string why = operand::mma_shape(sh.kind, sh.m, sh.n, sh.k, g); !why.empty()) return fault("bad_mma_shape", &w, op.site, std::move(why));
  const double rate = k_->arch->mma_flops_per_clk[static_cast<size_t>(sh.kind)] * tm_.tensor_clock_ghz;  // FLOP/ns per SM
  if (rate <= 0) return fault("bad_operand", &w, op.site, "this architecture has no tcgen05.mma");
  // Under cta_group::2 each SM of the pair computes M/2 rows, both pipes at once. Under cta_group::1 an
  // M = 64 MMA takes as long as an M = 128 one (SemiAnalysis's public B200 umma_throughput and
  // umma_latency: every kind, N 64 - 256, SS and TS, the same cycles at M 64 as at M 128).
  const int rows = g == 2 ? sh.m / 2 : std::max(sh.m, 128);
  const double per = 2.0 * rows * sh.n * sh.k / rate;
  SmRt& a = sms_[static_cast<size_t>(cta(w.cta).sm)];
  SmRt* b = g == 2 ? &sms_[static_cast<size_t>(cta(peer_cta(w.cta)).sm)] : nullptr;
  // The op's instructions one after another: each reaches the pipe an issue cost after the previous
  // one was accepted (a full queue holds the warp), and the warp goes on after the last.
  const double issue = jit(tm_.mma_issue_ns);
  double at = now_, start = now_, end = now_;
  for (int64_t i = 0; i < op.b; ++i) {
    const TensorPipe::Slot s = TensorPipe::issue_pair(a.tc, b ? &b->tc : nullptr, at + issue, per);
    if (i == 0) start = s.start;
    end = s.end;
    at = s.accepted;
  }
  w.tc_done = std::max(w.tc_done, end);
  w.mma_issued += op.b;
  if (o_.record_trace)
    res_.spans.push_back(TraceSpan{w.cta, -2, start, end, op.site,
                                   "mma " + std::string(model::mma_kind_name(sh.kind)) + " " + std::to_string(sh.m) + "x" +
                                       std::to_string(sh.n) + "x" + std::to_string(sh.k) + " x" + std::to_string(op.b), false});
  push(std::max(at, now_ + issue), EventKind::WarpStep, id);
}

// wgmma.mma_async (warpgroup-collective, WarpgroupRt): a warp's issue stalls until every warp of its
// warpgroup has issued the same wgmma (the H100 does: docs/runs/mmaprobe-lag-h100-2026-11-26.txt);
// then the warpgroup's MMA enters its SM's tensor pipe, in issue order with everything else there,
// and the warps go on, their open groups ending with it.
void Engine::do_wgmma(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  const MmaShape sh = unpack_mma(op.a);
  if (std::string why = operand::wgmma_shape(sh.kind, sh.m, sh.n, sh.k); !why.empty()) return fault("bad_mma_shape", &w, op.site, std::move(why));
  const double rate = k_->arch->wgmma_flops_per_clk[static_cast<size_t>(sh.kind)] * tm_.tensor_clock_ghz;  // FLOP/ns per SM
  if (rate <= 0) return fault("bad_operand", &w, op.site, "this architecture has no wgmma of kind " + std::string(model::mma_kind_name(sh.kind)));
  CtaRt& c = cta(w.cta);
  const size_t gi = static_cast<size_t>(w.warp / 4);
  if (c.warpgroups.size() <= gi) c.warpgroups.resize(gi + 1);
  WarpgroupRt& g = c.warpgroups[gi];
  WarpgroupRt::Issuing& is = g.issuing;
  if (is.warps != 0 && (is.shape != op.a || is.count != op.b)) {
    auto text = [](int64_t packed, int64_t count) {
      const MmaShape x = unpack_mma(packed);
      return operand::wgmma_shape_name(x.m, x.n, x.k) + "." + std::string(model::mma_kind_name(x.kind)) +
             (count > 1 ? " x" + std::to_string(count) : "");
    };
    return fault("wgmma_mismatch", &w, op.site,
                 "this warp's wgmma " + text(op.a, op.b) + " differs from " + text(is.shape, is.count) + ", which warp " +
                     std::to_string(gi * 4 + static_cast<size_t>(std::countr_zero(is.warps))) + " of its warpgroup issued at " +
                     site_text(*k_, is.site),
                 {"wgmma.mma_async is .aligned: the four warps of a warpgroup must issue the same instructions in the same order"});
  }
  if (is.warps == 0) is.shape = op.a, is.count = op.b, is.site = op.site;
  is.warps |= 1u << (w.warp % 4);
  if (std::popcount(is.warps) < warpgroup_size(static_cast<int>(gi))) {  // stalls until the others issue
    w.block = Block::Wgmma;
    w.block_since = now_;
    g.waiters.push_back(id);
    return;
  }
  const double dur = 2.0 * sh.m * sh.n * sh.k / rate * static_cast<double>(std::max<int64_t>(1, op.b));
  const TensorPipe::Slot s = sms_[static_cast<size_t>(c.sm)].tc.issue(now_ + tm_.op_issue_ns, dur);  // a full queue holds the warps
  const double go = std::max(s.accepted, now_ + jit(tm_.op_issue_ns));
  w.mma_open_done = std::max(w.mma_open_done, s.end);
  for (uint32_t x : std::exchange(g.waiters, {})) {
    warps_[x].mma_open_done = std::max(warps_[x].mma_open_done, s.end);
    resume(warps_[x], x, go);
  }
  is = {};
  if (o_.record_trace)
    res_.spans.push_back(TraceSpan{w.cta, -2, s.start, s.end, op.site,
                                   "wgmma " + std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k), false});
  push(go, EventKind::WarpStep, id);
}

// tcgen05.commit: one arrival per CTA of the mask once this warp's earlier tcgen05 ops are done.
void Engine::do_commit(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  if (!check_cta_group(w, op)) return;
  // A mask the scenario gave (or a pipeline's, which may come out 0: own CTA) must lie in the cluster.
  if ((op.flags & kFlagMulticast) || op.b != 0)
    if (std::string why = operand::multicast_mask(op.b, csize_); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
  int64_t mask = op.b;
  // Assumption (FA4): an empty commit group under cta_group::2 signals only the issuing CTA.
  // "The same barrier array" (docs/semantics.md): a PTX kernel has no arrays, so there it is the
  // same barrier.
  const uint32_t group = k_->external ? (uint32_t{1} << 31) | op.bar.index : op.bar.array;
  auto mark = std::find_if(w.commit_marks.begin(), w.commit_marks.end(), [&](auto& m) { return m.first == group; });
  if (mark == w.commit_marks.end()) mark = w.commit_marks.insert(w.commit_marks.end(), {group, 0});
  const bool empty = w.mma_issued == mark->second;
  mark->second = w.mma_issued;
  if (empty && (op.flags & kFlagCtaGroup2) && o_.empty_commit_local) mask = 0;
  // landing_delay: the adversarial search holds this commit's arrival back.
  const double at = std::max(now_ + jit(tm_.op_issue_ns), w.tc_done) + w.landing_delay;
  const uint32_t s = slot(op.bar);
  const int base = cluster_of(w.cta) * csize_;
  for (int r = 0; r < csize_; ++r) {
    const int dst = mask == 0 ? (r == 0 ? w.cta : -1) : (((mask >> r) & 1) ? base + r : -1);
    if (dst < 0) continue;
    if (cta(dst).exited)
      return fault("exited_target", &w, op.site, "tcgen05.commit to " + bar_name(s) + " of CTA " + std::to_string(dst) + ", which has already exited");
    const double when = dst == w.cta ? at : at + jit(tm_.remote_arrive_ns);
    if (dst != w.cta) w.remote_done = std::max(w.remote_done, when);
    push(when, EventKind::AsyncArrive, static_cast<uint32_t>(dst), s, op.site, id, OpKind::Arrive, 1);
  }
  if (empty && (op.flags & kFlagCtaGroup2) && o_.empty_commit_local && op.b != 0 && op.b != (int64_t{1} << (w.cta - base)))
    warn("empty_commit", w.cta, w.warp, op.site,
         "empty tcgen05.commit group under cta_group::2 signals only this CTA (assumption empty-commit-local), not the other CTAs of mask " +
             std::to_string(op.b),
         {"this warp issued no tcgen05.mma since its previous commit to " + (k_->external ? bar_name(s) : k_->barriers[op.bar.array].name)});
  push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
}

// Cluster launch control: the hardware hands out the grid's clusters not yet launched, in launch
// order; a cancelled cluster never launches, and the warp that cancelled it does its work. The
// response lands after the TMA round trip (assumption: CLC has no published latency of its own).
// A PTX kernel's response is written into its shared memory now (ExternalRun::clc_response) and
// completes its bytes at the landing; a scenario's lands in its smem cell at the landing
// (land_clc_response, sim/engine_values.cpp), where read_without_wait judges who reads it.
void Engine::do_try_cancel(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  int cancelled = -1;
  if (next_cluster_ < static_cast<int>(clusters_.size())) cancelled = next_cluster_++;
  const uint32_t s = slot(op.bar);
  const int base = cluster_of(w.cta) * csize_;
  const double at = now_ + jit(tm_.tma_latency_ns);
  for (int r = 0; r < csize_; ++r) {
    const int dst = op.b ? base + r : (r == 0 ? w.cta : -1);
    if (dst < 0) continue;
    if (run_) {
      run_->clc_response(dst, static_cast<uint32_t>(op.a), cancelled);
      push(at, EventKind::RemoteOp, static_cast<uint32_t>(dst), s, op.site, id, OpKind::CompleteTx, kClcResponseBytes);
    } else {
      push(at, EventKind::RemoteOp, static_cast<uint32_t>(dst), s, op.site, id, OpKind::ClcTryCancel, cancelled, op.a);
    }
  }
  push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
}

bool Engine::check_local(WarpRt& w, const Op& op, const char* what) {
  if (op.bar.rank != BarRef::kOwnCta && cta_of_rank(w.cta, op.bar.rank) != w.cta) {
    fault("remote_wait", &w, op.site,
          std::string(what) + " on " + bar_name(slot(op.bar)) + " of cluster rank " + std::to_string(op.bar.rank) +
              ": only the CTA's own barriers can be waited on or initialised");
    return false;
  }
  return true;
}

void Engine::do_wait(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  if (!check_local(w, op, "wait")) return;
  const uint32_t s = slot(op.bar);
  CtaRt& c = cta(w.cta);
  MBarrier& b = c.bars[s];
  if (!b.initialised)
    return fault("uninit", &w, op.site, "wait on " + bar_name(s) + ", which was never initialised");
  if (std::string why = operand::parity(op.a); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
  if (op.flags & kFlagPhaseTracked) {
    const int64_t d = mbar_wait_distance(b, op.b);
    if (d != 0 &&
        stop("stale_wait", &w, op.site,
                   "wait on " + bar_name(s) + " for its completion #" + std::to_string(op.b) + " (parity " +
                       std::to_string(op.a) + ") while it has completed " + std::to_string(b.completed) +
                       " phases: the parity bit aliases " + (d > 0 ? "an older" : "a later") + " phase",
                   {state_note(b), d > 0 ? "this warp is two or more phases behind the barrier: other parties completed phases without it"
                                         : "this warp runs ahead of the barrier by two or more phases"}))
      return;
  }
  if (mbar_poll(b, op.a, consumed_at(w, s).completed) != MbarPoll::Blocked) {
    if (wait_passed(w, s, b)) push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
    return;
  }
  // A peek (a PTX try_wait no loop repeats, kFlagAnswer) is held until the phase completes or the time
  // limit passes, then answered false (the H100: 4 us, kernels/interp/peekprobe.cu). Untimed (the
  // exhaustive search), false at once: a legal answer, and no time to wait out.
  if (peek_answered_at_once(op)) {
    ext(w)->answer(0);
    push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
    return;
  }
  w.block = Block::Mbarrier;
  w.block_since = now_;
  c.waiters[s].push_back(id);
  if (op.flags & kFlagAnswer)
    push(now_ + tm_.mbarrier_try_wait_limit_ns, EventKind::WaitLimit, id, s, op.site, 0, OpKind::Wait, std::bit_cast<int64_t>(now_));
}

// A peek's time limit: if the warp is still held by the same wait (blocked since the event's stamp),
// it leaves the barrier's waiters and its try_wait returns false.
void Engine::wait_limit(const Event& e) {
  WarpRt& w = warps_[e.target];
  if (!wait_limit_live(e)) return;
  auto& ws = cta(w.cta).waiters[e.slot];
  ws.erase(std::remove(ws.begin(), ws.end(), e.target), ws.end());
  ext(w)->answer(0);
  resume(w, e.target, now_);
}

bool Engine::wait_would_block(const WarpRt& w) const {
  const Op& op = w.cur;
  if (op.kind != OpKind::Wait || (op.bar.rank != BarRef::kOwnCta && cta_of_rank(w.cta, op.bar.rank) != w.cta)) return false;
  if (peek_answered_at_once(op)) return false;
  const uint32_t s = slot(op.bar);
  const MBarrier& b = cta(w.cta).bars[s];
  if (!b.initialised || !operand::parity(op.a).empty()) return false;            // faults
  if ((op.flags & kFlagPhaseTracked) && mbar_wait_distance(b, op.b) != 0) return false;  // stale_wait
  return !mbar_parity_passed(b, op.a);
}

bool Engine::wait_passed(WarpRt& w, uint32_t s, const MBarrier& b) {
  WarpRt::ConsumedPhase& last = consumed_at(w, s);
  // Two passes on one completion are harmless by themselves: compiled code re-checks a phase it has
  // not used yet (CUTLASS sm100's mainloop load peeks with producer_try_acquire at the next stage
  // and try-acquires it again at the next tile or in load_tail). The bug is acting on the phase
  // twice, so the second pass is an error only if the warp released an mbarrier (an arrive, a drop,
  // a tcgen05.commit: releases_mbarrier) while the first was its latest pass: it was done with that
  // phase and now takes the same one as new. The smallest evidence that still catches the consumers
  // of scenarios/races and the random protocols' constant parities. Left out: fills (arrive_expect_tx,
  // copies, try_cancel), which a producer issues for the stage before its peek; named barriers
  // (tests/data/ptx/clc.cu's warps sync between their waits and its unflipped parity is the
  // second arming, pending_underflow); and releases after a later pass, which belong to that one
  // (sm100's load warp releases the CLC response between its peek and its re-check). So a producer
  // whose phase bit does not flip is not this rule's: its second arming or copy is.
  if (mbar_poll(b, w.cur.a, last.completed) == MbarPoll::PassedOnConsumed && last.released &&
      stop("phase_reused", &w, w.cur.site,
           "wait on " + bar_name(s) + " for parity " + std::to_string(w.cur.a) + " passed on the phase this warp's previous wait on it returned on (" +
               std::to_string(b.completed) + " phases completed then and now), after the warp released that phase: its phase bit did not flip",
           {state_note(b), "the warp goes on with what that phase left, not a new one; a phase bit carried across tiles (PipelineState) makes this wait wait for the next phase"}))
    return false;
  last = {b.completed, false};
  w.last_pass_slot = s;
  return true;
}

namespace {
// The least time one SM's intake takes for a copy of `bytes` whose box rows are row16 x 16 bytes (0: rows
// of 128 bytes): its bytes at sm_copy_bytes_per_ns, or its requests (a row of up to 128 bytes each, a
// wider row one per 128) at sm_copy_ns_per_request, whichever is longer. 0: no limit.
double copy_intake_ns(const model::Timing& tm, int64_t bytes, uint8_t row16) {
  const double by_bytes = tm.sm_copy_bytes_per_ns > 0 ? static_cast<double>(bytes) / tm.sm_copy_bytes_per_ns : 0.0;
  if (tm.sm_copy_ns_per_request <= 0) return by_bytes;
  const int64_t row = row16 ? int64_t{row16} * 16 : 128;
  const int64_t requests = (bytes + row - 1) / row * ((row + 127) / 128);
  return std::max(by_bytes, static_cast<double>(requests) * tm.sm_copy_ns_per_request);
}
}  // namespace

void Engine::do_tma(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  if (std::string why = operand::copy_bytes("TMA", op.a); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
  if ((op.flags & kFlagMulticast) || op.b != 0)
    if (std::string why = operand::multicast_mask(op.b, csize_); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
  const uint32_t s = slot(op.bar);
  // The box is looked up once, whatever its destinations (a multicast copy is one read): a hit is
  // served by the L2 (no DRAM bytes, no loaded DRAM latency; the same round trip otherwise: the native
  // probe's 4 KiB copy took 425.8 ns from the L2, 435 from the DRAM), a miss by the DRAM.
  // A miss reads its L2 promotion's whole group of boxes from the DRAM (Op::l2_fill_boxes; native
  // probe kernels/interp/startprobe.cu: 132 SMs that each read two distinct 16 KiB boxes of 128-byte
  // rows from a cold L2 wait 4.5 us with 256-byte promotion, 2.9 without).
  const int64_t fill_bytes = op.a * op.l2_fill_boxes;
  const bool from_l2 = l2_.read(op.box, op.a, fill_bytes);
  // The L2 is slow once the launch's footprint passes the fast set: known from the start where sim::run
  // found it does (a launch among back-to-back launches of itself cycles through all of it), else
  // once the L2 holds more.
  const bool l2_slow = tm_.l2_slow_bytes_per_ns > 0 && (footprint_past_fast_set_ || l2_footprint_bytes() > tm_.l2_fast_set_bytes);
  if (!from_l2) dram_busy_ += static_cast<double>(fill_bytes) / tm_.hbm_bytes_per_ns;
  const double latency = jit(tm_.tma_latency_ns);
  const double loaded = from_l2 ? 0.0 : count_in_flight(fill_bytes);
  const int base = cluster_of(w.cta) * csize_;
  const int receivers = op.b == 0 ? 1 : std::popcount(static_cast<uint64_t>(op.b));
  // The issuing SM's TMA unit takes one load at a time, each for at least tma_copy_min_ns, whatever
  // its size and however many CTAs it multicasts to (native H100 probes: one SM's back-to-back small
  // copies land ~74 ns apart, but four SMs that each multicast 8 copies to all four fill every SM with
  // 32 copies in 0.9-1.0 us: the receiver is not what takes the time; docs/calibration.md).
  double start = now_;
  if (!o_.untimed && tm_.tma_copy_min_ns > 0) {
    double& unit = tma_unit_free_[static_cast<size_t>(cta(w.cta).sm)];
    start = std::max(now_, unit);
    unit = start + tm_.tma_copy_min_ns;
  }
  // The copy's trace span ends where its last destination's bytes land (dram_done stretches it).
  const size_t span = o_.record_trace ? res_.spans.size() : SIZE_MAX;
  if (o_.record_trace) res_.spans.push_back(TraceSpan{w.cta, -1, now_, now_, op.site, "tma " + std::to_string(op.a) + " B -> " + bar_name(s), false});
  for (int r = 0; r < csize_; ++r) {
    int dst = op.b == 0 ? (r == 0 ? w.cta : -1) : (((op.b >> r) & 1) ? base + r : -1);
    if (dst < 0) continue;
    const int dst_data = dst;  // where the bytes land (the barrier may be the pair leader's)
    // .cta_group::2: the data lands in dst, its bytes complete on the barrier of dst's pair leader.
    if (op.flags & kFlagCtaGroup2) dst = base + ((dst - base) & ~1);
    CtaRt& dc = cta(dst);
    if (dc.exited)
      return fault("exited_target", &w, op.site, "TMA into CTA " + std::to_string(dst) + ", which has already exited");
    const bool remote = dst != w.cta;
    if (!dc.bars[s].initialised)
      return fault("uninit", &w, op.site,
                   "TMA completes bytes on " + bar_name(s) + " of CTA " + std::to_string(dst) + ", which was never initialised");
    if (!init_visible(dc, s, remote, w, op.site) &&
        stop("init_not_fenced", &w, op.site,
             "TMA completes bytes on " + bar_name(s) + " of CTA " + std::to_string(dst) +
                 " before its init was made visible (fence_init" + std::string(remote ? " and a cluster barrier)" : ")")))
      return;
    // The destination SM takes its copies in one after another, each no faster than its intake
    // (copy_intake_ns: one SM cannot absorb a copy at the whole device's DRAM rate, and a box of
    // narrow rows is taken in row by row), and shares the DRAM with the other SMs (sim/dram.hpp). A
    // multicast copy is read once: each of its k destinations takes a k-th of its bytes from the DRAM.
    const double dram_bytes = static_cast<double>(from_l2 ? op.a : fill_bytes) / receivers;
    const double ingest_ns = copy_intake_ns(tm_, op.a, op.tma_row16);
    const double cap = ingest_ns > 0 ? dram_bytes / ingest_ns : 0;
    ++dc.tma_inflight;
    dc.inflight_site = op.site;
    dc.inflight_warp = id;
    dram_add(cta(dst_data).sm, cap,
             DramCopy{.store = false, .from_l2 = from_l2, .l2_slow = l2_slow, .target = static_cast<uint32_t>(dst), .slot = s, .site = op.site, .from = id, .bytes = op.a,
                      .phase = dc.bars[s].completed, .dram_bytes = dram_bytes,
                      // it enters the DRAM when its TMA unit takes it; the lane's issue cost overlaps it (the
                      // native probe's bursts land no later for it: docs/calibration.md, tma_issue_ns)
                      .latency = latency + tma_issue_added_ns_ + straggle() + w.landing_delay, .loaded = loaded, .span = span,
                      .box = op.box},
             start);
  }
  push(now_ + jit(tm_.tma_issue_ns), EventKind::WarpStep, id);
}

void Engine::do_named(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  const bool sync = op.kind == OpKind::NamedSync;
  if (std::string why = operand::named_barrier_id(op.a); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
  if (std::string why = operand::named_threads(op.b, k_->launch.threads); !why.empty()) return fault("bad_operand", &w, op.site, std::move(why));
  NamedRt& nb = cta(w.cta).named.use(op.a);
  if (nb.count != 0 && nb.count != op.b)
    return fault("named_count_mismatch", &w, op.site,
                 "barrier " + std::to_string(op.a) + " used with " + std::to_string(op.b) + " threads while this phase started with " +
                     std::to_string(nb.count),
                 {std::to_string(nb.arrived) + " threads have arrived so far"});
  if (std::find(nb.warps.begin(), nb.warps.end(), id) != nb.warps.end())
    return fault("named_overrun", &w, op.site, "warp arrives twice on barrier " + std::to_string(op.a) + " within one phase (it ran a full phase ahead)");
  nb.count = op.b;
  nb.arrived += 32;
  nb.warps.push_back(id);
  if (nb.arrived >= nb.count) {
    // Under jitter every released warp gets its own latency, so released warps can reorder.
    const double at = now_ + jit(tm_.named_barrier_ns);
    for (uint32_t x : nb.waiters) resume(warps_[x], x, o_.jitter > 0 ? now_ + jit(tm_.named_barrier_ns) : at);
    nb = NamedRt{};
    push(at, EventKind::WarpStep, id);
    return;
  }
  if (sync) {
    w.block = Block::Named;
    w.block_since = now_;
    nb.waiters.push_back(id);
  } else {
    push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
  }
}

}  // namespace pipesim::sim::detail
