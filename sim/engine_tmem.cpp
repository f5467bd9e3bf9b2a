// Tensor memory allocation (sm_100a): tcgen05.alloc / dealloc on an SM's 512 columns, and the CTA
// pair's collective forms. With cta_group::2 one warp of each CTA of the pair (cluster ranks 2k and
// 2k+1) issues the instruction, and it completes only when both have (PTX ISA, tcgen05 "Issue
// Granularity": the first warp may block until the peer's warp issues it too); a warp of the pair
// waits for its peer's (Block::TmemPair). The pair's two warps must issue the same operation: a
// dealloc meeting the peer's alloc frees an allocation that never completed
// (tmem_dealloc_before_peer_alloc). The Engine and its state: sim/engine_impl.hpp.
#include "sim/engine_impl.hpp"
#include "sim/operand_rules.hpp"
#include "sim/explain.hpp"

namespace pipesim::sim::detail {

namespace {
const char* pair_op_name(OpKind k) {
  return k == OpKind::TmemAlloc ? "tcgen05.alloc.cta_group::2" : "tcgen05.dealloc.cta_group::2";
}
}  // namespace

int Engine::tmem_peer(int c) const { return cluster_of(c) * csize_ + ((c % csize_) ^ 1); }

void Engine::do_alloc(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  if (!check_cta_group(w, op)) return;
  CtaRt& c = cta(w.cta);
  const int64_t cols = op.a;
  if (std::string why = operand::tmem_alloc_cols(cols); !why.empty()) return fault("tmem_bad_alloc", &w, op.site, std::move(why));
  if (c.tmem_relinquished)
    return fault("tmem_bad_alloc", &w, op.site, "tcgen05.alloc after tcgen05.relinquish_alloc_permit in this CTA");
  if (c.tmem_last_alloc != 0 && cols > c.tmem_last_alloc)
    return fault("tmem_bad_alloc", &w, op.site, "tcgen05.alloc of " + std::to_string(cols) + " columns after one of " +
                                                  std::to_string(c.tmem_last_alloc) + ": successive allocations in a CTA must not grow");
  if (op.flags & kFlagCtaGroup2) return join_tmem_pair(w, id);
  alloc_on_sm(w, id, false);
}

// This CTA's part of an allocation: granted at once when the SM has the columns and nobody queues
// before it, else queued (FIFO) until deallocations free them. `blocked`: the warp already waits
// (for its pair peer) and is resumed when granted.
void Engine::alloc_on_sm(WarpRt& w, uint32_t id, bool blocked) {
  SmRt& sm = sms_[static_cast<size_t>(cta(w.cta).sm)];
  if (sm.tmem_free >= w.cur.a && sm.alloc_waiters.empty()) {
    grant_alloc(w, w.cur.a);
    if (blocked) resume(w, id, now_ + jit(tm_.op_issue_ns));
    else push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
    return;
  }
  if (blocked) close_block(w);
  w.block = Block::Tmem;
  w.block_since = now_;
  sm.alloc_waiters.push_back(id);
}

void Engine::grant_alloc(WarpRt& w, int64_t cols) {
  CtaRt& c = cta(w.cta);
  SmRt& sm = sms_[static_cast<size_t>(c.sm)];
  // The first column: the SM's columns are modelled as a count, so the address is where a
  // first-fit allocator would put it with no holes (a kernel's verdict never depends on it).
  if ((w.cur.flags & kFlagAnswer) && w.external) ext(w)->answer(k_->arch->cap.tmem_columns - sm.tmem_free);
  sm.tmem_free -= cols;
  if (c.tmem_held == 0) c.tmem_since = now_;
  c.tmem_held += cols;
  c.tmem_last_alloc = cols;
}

void Engine::do_dealloc(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  if (!check_cta_group(w, op)) return;
  CtaRt& c = cta(w.cta);
  const bool pair = op.flags & kFlagCtaGroup2;
  if (pair && c.tmem_held == 0 && op.a > 0) {
    const int peer = tmem_peer(w.cta);
    const uint32_t pw = cta(peer).tmem_pair_waiter;
    const bool peer_allocating = pw != kNoWarp && warps_[pw].cur.kind == OpKind::TmemAlloc;
    return fault("tmem_dealloc_before_peer_alloc", &w, op.site,
                 "tcgen05.dealloc.cta_group::2 of " + std::to_string(op.a) + " columns in CTA " + std::to_string(w.cta) +
                     ", whose pair allocation has not completed: " +
                     (peer_allocating ? "its peer CTA " + std::to_string(peer) + " waits in tcgen05.alloc.cta_group::2 for this CTA to join"
                                      : "this CTA never issued tcgen05.alloc.cta_group::2 with its peer CTA " + std::to_string(peer)),
                 {"a cta_group::2 allocation is collective: one warp of each CTA of the pair issues tcgen05.alloc, and it completes when both have"});
  }
  if (std::string why = operand::tmem_alloc_cols(op.a); !why.empty()) return fault("tmem_bad_alloc", &w, op.site, std::move(why));
  if (op.a > c.tmem_held)
    return fault("tmem_bad_alloc", &w, op.site, "tcgen05.dealloc of " + std::to_string(op.a) + " columns while this CTA holds " + std::to_string(c.tmem_held));
  if (pair) return join_tmem_pair(w, id);
  free_on_sm(w);
  push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
}

void Engine::free_on_sm(WarpRt& w) {
  const Op& op = w.cur;
  CtaRt& c = cta(w.cta);
  c.tmem_held -= op.a;
  SmRt& sm = sms_[static_cast<size_t>(c.sm)];
  sm.tmem_free += op.a;
  if (o_.record_trace && c.tmem_held == 0)
    res_.spans.push_back(TraceSpan{w.cta, -3, c.tmem_since, now_, op.site, "TMEM " + std::to_string(c.tmem_last_alloc) + " cols", false});
  // Blocked allocations on this SM proceed in order while they fit.
  size_t n = 0;
  while (n < sm.alloc_waiters.size()) {
    WarpRt& x = warps_[sm.alloc_waiters[n]];
    if (x.cur.a > sm.tmem_free) break;
    grant_alloc(x, x.cur.a);
    resume(x, sm.alloc_waiters[n], now_ + jit(tm_.op_issue_ns));
    ++n;
  }
  sm.alloc_waiters.erase(sm.alloc_waiters.begin(), sm.alloc_waiters.begin() + static_cast<long>(n));
}

// A cta_group::2 alloc or dealloc: the first warp of the pair waits for the other's; the second
// completes both (each CTA's columns on its own SM).
void Engine::join_tmem_pair(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  CtaRt& c = cta(w.cta);
  const int peer = tmem_peer(w.cta);
  if (c.tmem_pair_waiter != kNoWarp)
    return fault("tmem_bad_alloc", &w, op.site,
                 std::string(pair_op_name(op.kind)) + " by warp " + std::to_string(w.warp) + " while warp " +
                     std::to_string(warps_[c.tmem_pair_waiter].warp) + " of this CTA waits in " + pair_op_name(warps_[c.tmem_pair_waiter].cur.kind) +
                     ": one warp of each CTA takes part in the pair's allocation");
  CtaRt& p = cta(peer);
  if (p.tmem_pair_waiter == kNoWarp) {
    c.tmem_pair_waiter = id;
    w.block = Block::TmemPair;
    w.block_since = now_;
    return;
  }
  const uint32_t xid = p.tmem_pair_waiter;
  WarpRt& x = warps_[xid];
  if (x.cur.kind != op.kind) {  // one CTA frees while its peer allocates
    const bool this_frees = op.kind == OpKind::TmemDealloc;
    const WarpRt& freer = this_frees ? w : x;
    const WarpRt& allocator = this_frees ? x : w;
    return fault("tmem_dealloc_before_peer_alloc", &freer, freer.cur.site,
                 "tcgen05.dealloc.cta_group::2 in CTA " + std::to_string(freer.cta) + " meets tcgen05.alloc.cta_group::2 of its peer CTA " +
                     std::to_string(allocator.cta) + ": it frees the pair's columns before the peer's allocation has completed",
                 {"the peer's allocation (warp " + std::to_string(allocator.warp) + ") is at " + site_text(*k_, allocator.cur.site),
                  "the two CTAs of a pair issue their cta_group::2 tcgen05.alloc and tcgen05.dealloc in the same order"});
  }
  if (x.cur.a != op.a)
    return fault("tmem_bad_alloc", &w, op.site,
                 std::string(pair_op_name(op.kind)) + " of " + std::to_string(op.a) + " columns while its peer CTA " + std::to_string(peer) +
                     " issued it with " + std::to_string(x.cur.a) + ": the two CTAs of a pair must ask for the same columns");
  p.tmem_pair_waiter = kNoWarp;
  if (op.kind == OpKind::TmemAlloc) {
    alloc_on_sm(x, xid, true);
    alloc_on_sm(w, id, false);
    return;
  }
  free_on_sm(x);
  resume(x, xid, now_ + jit(tm_.op_issue_ns));
  free_on_sm(w);
  push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
}

}  // namespace pipesim::sim::detail
