// Values through shared memory (scenarios' `smem` cells): a store, a load, and the rule that a load
// is ordered after the store it reads (read_without_wait).
//
// Ordered means: the writer released a barrier after its store (an arrive, arrive_expect_tx,
// arrive_drop or tcgen05.commit arrival on it, in any CTA) and the reader has passed a wait on that
// barrier at a completion that includes that arrival. The reader's side is the engine's per-warp
// consumed-phase record (WarpRt::consumed: the completion its latest pass returned on), the writer's
// its releases in order (WarpRt::releases, noted by note_release from Engine::apply). A chain through
// a third warp (A releases to B, B releases to C) does not order A's store for C: the rule asks for
// the direct handshake, as a scheduler warp and its consumers have.
// A cluster launch control response (clc_try_cancel) is written by no warp: it lands in the cell with
// its complete_tx on the barrier, and a load is ordered after it when the reader has passed a wait on
// that barrier at the completion the complete_tx counts toward (as for a TMA-loaded buffer).
// The Engine and its state: sim/engine_impl.hpp.
#include "sim/engine_impl.hpp"

namespace pipesim::sim::detail {

std::string Engine::cell_name(uint32_t cell) const {
  for (const SmemArray& a : k_->smem)
    if (cell >= a.first && cell < a.first + a.size)
      return a.size == 1 ? a.name : a.name + "[" + std::to_string(cell - a.first) + "]";
  return "cell " + std::to_string(cell);
}

void Engine::note_release(WarpRt* w, int c, uint32_t s, OpKind kind, int64_t completed_before) {
  if (!w) return;
  if (kind != OpKind::Arrive && kind != OpKind::ArriveExpectTx && kind != OpKind::ArriveDrop) return;
  // The arrival counts toward the barrier's next completion.
  w->releases.push_back({c, s, completed_before + 1});
}

void Engine::land_clc_response(const Event& e) {
  CtaRt& ct = cta(static_cast<int>(e.target));
  // The phase the bytes count toward: the barrier's next completion (bytes that land before the
  // arrive.expect_tx count toward it too, as a copy's do).
  const int64_t completion = ct.exited ? 0 : ct.bars[e.slot].completed + 1;
  Event tx = e;
  tx.op = OpKind::CompleteTx;
  tx.value = kClcResponseBytes;
  tx.phase = 0;
  deliver(tx, "clusterlaunchcontrol.try_cancel response");
  if (fatal_ || ct.exited) return;
  ct.cells[static_cast<size_t>(e.phase)] = SmemCellRt{true, e.value, kNoWarp, 0, e.site, e.slot, completion};
}

void Engine::do_smem_store(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  const int c = cta_of_rank(w.cta, op.bar.rank);
  CtaRt& target = cta(c);
  if (target.exited)
    return fault("exited_target", &w, op.site, "store to " + cell_name(static_cast<uint32_t>(op.b)) + " of CTA " + std::to_string(c) + ", which has already exited");
  target.cells[static_cast<size_t>(op.b)] = SmemCellRt{true, op.a, id, w.releases.size(), op.site, 0, 0};
  push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
}

void Engine::do_smem_load(WarpRt& w, uint32_t id) {
  const Op& op = w.cur;
  const uint32_t n = static_cast<uint32_t>(op.b);
  const SmemCellRt& cell = cta(w.cta).cells[n];
  const std::string hint = "publish a value as a release: store it, then arrive on a barrier (or commit to it); read it after a wait on that barrier";
  if (!cell.written)
    return fault("read_without_wait", &w, op.site, "load of " + cell_name(n) + ", which no warp has stored to", {hint});
  if (cell.writer == kNoWarp) {
    const WarpRt::ConsumedPhase& seen = consumed_at(w, cell.slot);
    if (seen.completed < cell.completion) {
      std::vector<std::string> notes{"wait on " + bar_name(cell.slot) + " until the phase the response completes (the consumer_wait of the CLC pipeline), then load it"};
      if (seen.completed >= 0)
        notes.push_back("this warp's latest wait on " + bar_name(cell.slot) + " returned on completion " + std::to_string(seen.completed) +
                        "; the response in the cell counts toward completion " + std::to_string(cell.completion) +
                        ": a later try_cancel overwrote the response it waited for (was the stage released before it was read?)");
      return fault("read_without_wait", &w, op.site,
                   "load of " + cell_name(n) + " is not ordered after the clusterlaunchcontrol.try_cancel response that landed in it (line " +
                       std::to_string(k_->sites[cell.site].loc.line) + "): no wait of this warp on " + bar_name(cell.slot) +
                       " has returned on the completion its complete_tx counts toward",
                   std::move(notes));
    }
  } else if (cell.writer != id) {
    const WarpRt& writer = warps_[cell.writer];
    bool ordered = false;
    for (size_t i = cell.releases_before; i < writer.releases.size() && !ordered; ++i) {
      const WarpRt::Release& r = writer.releases[i];
      ordered = r.cta == w.cta && consumed_at(w, r.slot).completed >= r.completion;
    }
    if (!ordered) {
      const std::string by = "warp " + std::to_string(writer.warp) + (writer.cta == w.cta ? "" : " of CTA " + std::to_string(writer.cta));
      return fault("read_without_wait", &w, op.site,
                   "load of " + cell_name(n) + " is not ordered after its latest store (" + by + " at line " +
                       std::to_string(k_->sites[cell.site].loc.line) + "): no wait of this warp has returned on a completion that includes an arrival " +
                       by + " made after that store",
                   {hint});
    }
  }
  w.prog.set_value(static_cast<uint32_t>(op.a), cell.value);
  w.loaded.push_back(cell.value);
  push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
}

}  // namespace pipesim::sim::detail
