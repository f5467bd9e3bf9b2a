// Untimed stepping for the exhaustive search (sim/explore.hpp): the same engine and the same rules,
// with the explorer choosing the order of synchronising actions where the clock would. A warp's own
// steps between two synchronising ops touch nothing another warp sees, so they run at once (the
// partial-order reduction: they commute with everything); what is left to choose is which poised
// warp acts next, or which copy, remote arrival or commit lands.
#include "sim/explore.hpp"

#include "sim/engine_impl.hpp"

#include <bit>
#include <cstring>

namespace pipesim::sim {
namespace detail {
namespace {

bool is_choice(const Event& e, const WarpList& warps) {
  switch (e.kind) {
    case EventKind::WarpStep: {
      const WarpRt& w = warps[e.target];
      return w.retry;  // poised at a synchronising op
    }
    case EventKind::WakeBatch: case EventKind::DramDone: case EventKind::CopyStart: return false;
    case EventKind::WaitLimit: return false;  // never untimed: a peek is answered at once there
    case EventKind::TxLand: case EventKind::RemoteOp: case EventKind::AsyncArrive: return true;
  }
  return true;
}

}  // namespace

void Engine::start_untimed() {
  continuations_ = std::make_shared<ProgramPoints>();
  persistent_sets_ = std::make_shared<PersistentSetMemo>();
  launch_pending(0.0);
}

const std::vector<uint64_t>& Engine::settle() {
  for (;;) {
    choices_.clear();
    while (!fatal_ && !stopped_) {
      if (o_.max_events > 0 && res_.events >= o_.max_events) {
        stopped_ = true;
        res_.stopped_by = RunResult::StopCause::Events;
        break;
      }
      size_t pick = SIZE_MAX;  // the oldest event that is no choice
      for (size_t i = 0; i < pending_.size(); ++i)
        if (!is_choice(pending_[i], warps_) && (pick == SIZE_MAX || pending_[i].seq < pending_[pick].seq)) pick = i;
      if (pick == SIZE_MAX) break;
      const Event e = pending_[pick];
      pending_[pick] = pending_.back();
      pending_.pop_back();
      happen(e);
    }
    if (fatal_ || stopped_) break;
    // A wait on a phase that has not completed is no choice yet (docs/semantics.md, "The exhaustive
    // search's untimed semantics"): taking it would only add the warp to the waiters, and which warps
    // had begun waiting before a completion is no state worth telling apart.
    thread_local std::vector<uint64_t> guarded;  // keeps its capacity: settle runs at every step of the search
    guarded.clear();
    for (const Event& e : pending_)
      (e.kind == EventKind::WarpStep && wait_would_block(std::as_const(warps_)[e.target]) ? guarded : choices_).push_back(e.seq);
    if (!choices_.empty() || guarded.empty()) break;
    // Nothing else can happen: the waits block as the timed run's would, and the run ends in a hang.
    for (uint64_t seq : guarded) take(seq);
  }
  std::sort(choices_.begin(), choices_.end());
  return choices_;
}

void Engine::take(uint64_t seq) {
  for (size_t i = 0; i < pending_.size(); ++i)
    if (pending_[i].seq == seq) {
      const Event e = pending_[i];
      pending_[i] = pending_.back();
      pending_.pop_back();
      happen(e);
      return;
    }
  throw std::logic_error("untimed run: no pending event " + std::to_string(seq));
}

Engine::ChoiceView Engine::view(uint64_t seq) const {
  for (const Event& e : pending_) {
    if (e.seq != seq) continue;
    if (e.kind == EventKind::WarpStep) {
      const WarpRt& w = warps_[e.target];
      const bool mbar = w.cur.kind == OpKind::Wait || w.cur.kind == OpKind::TestWait || w.cur.kind == OpKind::Arrive ||
                        w.cur.kind == OpKind::ArriveExpectTx || w.cur.kind == OpKind::ExpectTx ||
                        w.cur.kind == OpKind::ArriveDrop || w.cur.kind == OpKind::CompleteTx || w.cur.kind == OpKind::TmaLoad ||
                        w.cur.kind == OpKind::Commit;
      return {e.kind, w.cta, w.warp, w.role, w.cur.site, mbar ? slot(w.cur.bar) : kNoWarp, w.cur.kind, -1, -1};
    }
    const WarpRt& from = warps_[e.from_warp];
    return {e.kind, static_cast<int>(e.target), -1, -1, e.site, e.slot, e.op, from.cta, from.warp};
  }
  throw std::logic_error("untimed run: no pending event " + std::to_string(seq));
}

namespace {
// Warps as a set: a sum of their mixed ids, so that the order they arrived in does not count.
uint64_t warp_set(const std::vector<uint32_t>& ws) {
  uint64_t set = 0;
  for (uint32_t x : ws) set += StateHash::mix(x + 1);
  return set;
}

// A barrier's pending, expected and tx in one word: the mbarrier rules keep the counts within
// 0 .. kMbarMaxCount and tx within +-kMbarMaxCount (sim/mbarrier.cpp refuses an op that would
// leave them), 20 bits and 21.
uint64_t barrier_counts(const MBarrier& b) {
  static_assert(kMbarMaxCount < (1 << 20));
  return static_cast<uint64_t>(b.pending) | static_cast<uint64_t>(b.expected) << 20 | static_cast<uint64_t>(b.tx + kMbarMaxCount) << 40;
}

// Per-slot flags, eight to a word.
void add_bytes(LanedHash& h, const std::vector<uint8_t>& bytes) {
  h.add(bytes.size());
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, bytes.data() + i, std::min<size_t>(8, bytes.size() - i));
    h.add(word);
  }
}
}  // namespace

uint64_t Engine::state_hash() const {
  // The hash is a chain of dependent multiplies: each warp goes into a chain of its own, and the long
  // per-slot lists (barriers, flags, waiters) into four (LanedHash), which the processor runs side by
  // side; their digests join the main one. A warp's digest is kept until the warp is written (WarpList).
  StateHash h;
  LanedHash lists;
  h.add(fatal_).add(stopped_).add(next_cluster_);
  for (const WarpRt& w : warps_) {
    if (w.kept.digest) {
      h.add(w.digest);
      continue;
    }
    StateHash wh;
    // Small fields share words (fewer words, less time): sizes and slot indices stay below 2^32.
    static_assert(sizeof(w.status) == 1 && sizeof(w.block) == 1);
    hash_op(wh, w.cur, static_cast<uint32_t>(w.status) | static_cast<uint32_t>(w.block) << 8 | static_cast<uint32_t>(w.retry) << 16);
    wh.add(w.cluster_arrived).add(w.mma_issued).add(static_cast<uint64_t>(static_cast<uint32_t>(w.last_pass_slot)) | uint64_t{w.releases.size()} << 32);
    // Two fields in one word where one is a flag (fewer words, less time; counts stay far below 2^62).
    wh.add(w.consumed.size());
    for (const WarpRt::ConsumedPhase& c : w.consumed) wh.add(static_cast<uint64_t>(c.completed) << 1 | c.released);
    for (const auto& [array, issued] : w.commit_marks) wh.add(array).add(issued);
    wh.add(w.groups.size() | w.open.stores.size() << 32).add(w.retiring.size() | w.mma_groups.size() << 32);
    for (const WarpRt::Release& r : w.releases) wh.add(r.cta).add(r.slot).add(r.completion);
    w.prog.hash_into(wh);
    w.digest = wh.value();
    w.kept.digest = true;
    h.add(w.digest);
  }
  for (const CtaRt& c : ctas_) {
    h.add(static_cast<uint64_t>(c.started) | static_cast<uint64_t>(c.exited) << 1 | static_cast<uint64_t>(c.tmem_relinquished) << 2 |
          static_cast<uint64_t>(c.tmem_pair_waiter) << 32);
    h.add(static_cast<uint64_t>(static_cast<uint32_t>(c.live)) | static_cast<uint64_t>(static_cast<uint32_t>(c.tma_inflight)) << 32);
    h.add(c.tmem_held).add(c.tmem_last_alloc);
    for (const MBarrier& b : c.bars) lists.add(static_cast<uint64_t>(b.completed) << 1 | b.initialised).add(barrier_counts(b));
    for (const SmemCellRt& cell : c.cells)
      h.add(cell.written).add(cell.value).add(cell.writer).add(cell.releases_before).add(cell.slot).add(cell.completion);
    add_bytes(lists, c.fenced);
    add_bytes(lists, c.visible);
    // A barrier's waiters as a set: the order they blocked in is an accident of the path (two waits
    // on one barrier commute, engine_footprint.cpp), and a completion releases them together.
    for (const auto& ws : c.waiters) lists.add(ws.size()).add(warp_set(ws));
    // Likewise a named barrier's and the cluster barrier's: all leave together when the last arrives.
    // Only the named barriers in use, by id: most kernels use one or two of the 16, and the idle ones
    // were a third of the words hashed (and looking through all 16 a tenth of the hash's time).
    for (uint32_t used = c.named.used(); used != 0; used &= used - 1) {
      const int id = std::countr_zero(used);
      const NamedRt& n = c.named[id];
      if (n.count == 0 && n.arrived == 0 && n.warps.empty() && n.waiters.empty()) continue;
      h.add(id).add(n.count).add(n.arrived).add(n.warps.size()).add(warp_set(n.warps)).add(n.waiters.size()).add(warp_set(n.waiters));
    }
    h.add(kNamedBarriers);  // ends the list
    for (const WarpgroupRt& g : c.warpgroups) h.add(g.issuing.warps).add(g.issuing.shape).add(g.issuing.count).add(warp_set(g.waiters));
  }
  for (const ClusterRt& cl : clusters_) h.add(cl.started).add(cl.live).add(cl.arrived).add(cl.phase).add(cl.waiters.size()).add(warp_set(cl.waiters));
  for (const SmRt& sm : sms_) {
    h.add(sm.resident).add(sm.tmem_free).add(sm.alloc_waiters.size());
    for (uint32_t x : sm.alloc_waiters) h.add(x);
  }
  // The pending events as a multiset: their order in pending_ is an accident of the path.
  uint64_t events = 0;
  for (const Event& e : pending_)
    events += StateHash()
                  .add(static_cast<uint64_t>(e.kind) | static_cast<uint64_t>(e.op) << 8 | static_cast<uint64_t>(e.site) << 16)
                  .add(static_cast<uint64_t>(e.target) | static_cast<uint64_t>(e.slot) << 32)
                  .add(e.from_warp)
                  .add(e.value)
                  .add(e.phase)
                  .value();
  h.add(pending_.size()).add(events);
  h.add(lists.value());
  if (run_) run_->hash_into(h);  // a PTX kernel's memory and its warps' registers
  return h.value();
}

RunResult Engine::end_untimed() {
  finish();
  return std::move(res_);
}

}  // namespace detail

UntimedRun::UntimedRun(const Kernel& kernel, RunOptions options) {
  options.untimed = true;
  options.jitter = 0;
  options.delays.clear();
  options.on_sync = nullptr;
  options.record_trace = false;
  options.interp = nullptr;
  options.replay = nullptr;
  e_ = std::make_unique<detail::Engine>(kernel, options);
  e_->start_untimed();
}
UntimedRun::UntimedRun(const UntimedRun& o) : e_(std::make_unique<detail::Engine>(*o.e_)) {}
UntimedRun& UntimedRun::operator=(const UntimedRun& o) {
  if (this == &o) return *this;
  if (e_) *e_ = *o.e_;
  else e_ = std::make_unique<detail::Engine>(*o.e_);
  return *this;
}
UntimedRun::UntimedRun(UntimedRun&&) noexcept = default;
UntimedRun& UntimedRun::operator=(UntimedRun&&) noexcept = default;
UntimedRun::~UntimedRun() = default;

size_t UntimedRun::settle() { return e_->settle().size(); }

size_t UntimedRun::choice_count() const { return e_->choice_list().size(); }

void UntimedRun::take(size_t i) { e_->take(choice_seq(i)); }

uint64_t UntimedRun::choice_seq(size_t i) const {
  // settle() left the choices in e_'s list; an index past them is the caller's error.
  return e_->choice_list().at(i);
}

UntimedRun::Choice UntimedRun::describe(size_t i) const {
  const detail::Engine::ChoiceView v = e_->view(choice_seq(i));
  Choice c;
  switch (v.kind) {
    case detail::EventKind::WarpStep: c.kind = Choice::Kind::Op; break;
    case detail::EventKind::TxLand: c.kind = Choice::Kind::Land; break;
    case detail::EventKind::AsyncArrive: c.kind = Choice::Kind::Commit; break;
    default: c.kind = Choice::Kind::Remote; break;
  }
  c.cta = v.cta;
  c.warp = v.warp;
  c.role = v.role;
  c.site = v.site;
  c.op = v.op;
  c.barrier = v.slot == detail::kNoWarp ? std::string() : e_->barrier_name(v.slot);
  c.from_cta = v.from_cta;
  c.from_warp = v.from_warp;
  return c;
}

uint64_t UntimedRun::state_hash() const { return e_->state_hash(); }

uint64_t UntimedRun::choice_id(size_t i) const { return e_->choice_id(choice_seq(i)); }

void UntimedRun::footprint(size_t i, Footprint& out) const { e_->footprint(choice_seq(i), out); }

void UntimedRun::persistent_set(const std::vector<Footprint>& prints, const std::vector<uint8_t>& asleep, std::vector<size_t>& set) const {
  e_->persistent_set(prints, asleep, set);
}

RunResult UntimedRun::finish() && { return e_->end_untimed(); }

}  // namespace pipesim::sim
