// Footprints of an untimed run's choices, for the exhaustive search's partial-order reduction
// (sim/explore.hpp Footprint, verify/search_exhaustive.cpp). A choice is a transition of the search:
// the op a poised warp executes (or the copy, remote arrival or commit that lands) and every step the
// engine runs after it before the next choice, i.e. the warp's own non-synchronising steps up to its
// next synchronising op, the steps of warps it wakes, an exit and what the exit releases. The
// footprint names the objects those read and write; exec (engine_ops.cpp), apply / land / deliver
// (engine_delivery.cpp) and exit_warp (engine.cpp) are the rules it summarises.
//
// Conservative where it is cheap to be: every current waiter of a barrier a choice writes counts as
// woken (a wait is a read of its barrier: the waiter set it joins is hashed as a set, engine_explore.cpp,
// and read only by what writes the barrier), a warp's future counts the landings its copies and remote
// arrivals will make as its own writes, and TMEM operations, launches and branches on loaded values touch everything. Left out on purpose: warnings (tx_overshoot, dangling_expect_tx, the relaxed-init
// note) and hang-report bookkeeping (LastArrival), which do not decide an outcome (report.cpp
// outcome_text: the verdict and its first fatal finding); and the clock, which nothing in an untimed
// run decides by (sim/explore.hpp).
#include "sim/engine_impl.hpp"

namespace pipesim::sim {

using Object = Footprint::Object;
using Access = Footprint::Access;

namespace {

// Whether touch t is what only a CTA's last exit does (Engine::exit_touches: it marks the CTA ended
// and checks its copies and stores in flight), for a CTA in `pinned`, which does not end on the
// paths in question (Footprint::conflicts).
bool last_exit_of_pinned(const Footprint::Touch& t, const std::vector<uint8_t>* pinned) {
  if (!pinned || !t.last_exit) return false;
  const uint32_t scope = static_cast<uint32_t>(t.object >> 32) & 0xffffffu;
  return scope < pinned->size() && (*pinned)[scope];
}

bool clash(const Footprint::Touch& a, const Footprint::Touch& b, const std::vector<uint8_t>* pinned) {
  if (a.access == Access::Read && b.access == Access::Read) return false;
  if (last_exit_of_pinned(b, pinned)) return false;
  if (a.access == Access::Add && b.access == Access::Add) return false;
  if ((a.object >> 32) != (b.object >> 32)) return false;  // object kind and scope
  const uint32_t ia = static_cast<uint32_t>(a.object), ib = static_cast<uint32_t>(b.object);
  return ia == ib || ia == Footprint::kAnyIndex || ib == Footprint::kAnyIndex;
}

}  // namespace

bool Footprint::conflicts(const Footprint& o, const std::vector<uint8_t>* pinned) const {
  if (everything || o.everything) return true;
  if (!sorted || !o.sorted) {
    for (const Touch& a : touches)
      for (const Touch& b : o.touches)
        if (clash(a, b, pinned)) return true;
    return false;
  }
  // Both sorted: walk them together, one (object kind, scope) group at a time. Within a group an index
  // clashes with the same index, and kAnyIndex (sorted last) with every index.
  const auto& a = touches;
  const auto& b = o.touches;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const uint64_t ga = a[i].object >> 32, gb = b[j].object >> 32;
    if (ga != gb) {
      (ga < gb ? i : j) += 1;
      continue;
    }
    size_t ie = i, je = j;
    while (ie < a.size() && a[ie].object >> 32 == ga) ++ie;
    while (je < b.size() && b[je].object >> 32 == ga) ++je;
    const bool a_any = static_cast<uint32_t>(a[ie - 1].object) == kAnyIndex, b_any = static_cast<uint32_t>(b[je - 1].object) == kAnyIndex;
    if (a_any)
      for (size_t y = j; y < je; ++y)
        if (clash(a[ie - 1], b[y], pinned)) return true;
    if (b_any)
      for (size_t x = i; x < ie; ++x)
        if (clash(a[x], b[je - 1], pinned)) return true;
    for (size_t x = i, y = j; x < ie && y < je;) {
      if (a[x].object < b[y].object) ++x;
      else if (b[y].object < a[x].object) ++y;
      else if (clash(a[x++], b[y++], pinned)) return true;
    }
    i = ie;
    j = je;
  }
  return false;
}

void Footprint::merge(const Footprint& o) {
  if (&o == this) return;
  everything |= o.everything;
  const bool both_sorted = sorted && o.sorted;
  const size_t mid = touches.size();
  touches.resize(mid + o.touches.size());
  if (!both_sorted) {
    std::copy(o.touches.begin(), o.touches.end(), touches.begin() + static_cast<long>(mid));
    sorted = touches.size() <= 1;
    return;
  }
  // Merged from the back into the grown vector (std::inplace_merge would allocate a buffer per call).
  size_t i = mid, j = o.touches.size(), k = touches.size();
  while (j > 0) {
    if (i > 0 && o.touches[j - 1].object < touches[i - 1].object) touches[--k] = touches[--i];
    else touches[--k] = o.touches[--j];
  }
  compact();  // sorted already: only folds the duplicates
}

void Footprint::compact() {
  if (!sorted) std::sort(touches.begin(), touches.end(), [](const Touch& a, const Touch& b) { return a.object < b.object; });
  size_t out = 0;
  for (size_t i = 0; i < touches.size(); ++i) {
    if (out > 0 && touches[out - 1].object == touches[i].object) {
      // Read and Add together are no single access that commutes with either: a write.
      Access& a = touches[out - 1].access;
      if (a != touches[i].access) a = Access::Write;
      touches[out - 1].last_exit &= touches[i].last_exit;
      continue;
    }
    touches[out++] = touches[i];
  }
  touches.resize(out);
  sorted = true;
}

namespace detail {
namespace {

constexpr size_t kPeekLimit = 100'000;  // ops of one warp's future; past it: everything

uint32_t u(int v) { return static_cast<uint32_t>(v); }

}  // namespace

void Engine::op_touches(const WarpRt& w, const Op& op, bool issued, Footprint& f) const {
  const uint32_t own = u(w.cta), cl = u(cluster_of(w.cta));
  const uint32_t base = u(cluster_of(w.cta) * csize_);
  // The CTAs a multicast names, or all of the cluster where the mask is decided at run time.
  const auto each_cta = [&](bool multicast, auto&& fn) {
    if (!multicast) return fn(own);
    for (uint32_t r = 0; r < u(csize_); ++r) fn(base + r);
  };
  switch (op.kind) {
    case OpKind::Wait: case OpKind::TestWait:
      if (op.flags & kFlagAnswer) f.everything = true;  // a PTX warp's branch on the answer
      f.add(Object::Mbarrier, u(cta_of_rank(w.cta, op.bar.rank)), slot(op.bar), Access::Read);
      return;
    case OpKind::Arrive: case OpKind::ArriveExpectTx: case OpKind::ExpectTx: case OpKind::CompleteTx: case OpKind::ArriveDrop: {
      const uint32_t target = u(cta_of_rank(w.cta, op.bar.rank));
      if (!k_->smem.empty()) f.add(Object::Releases, 0, 0, Access::Add);
      if (target == own || issued) {
        f.add(Object::Mbarrier, target, slot(op.bar), Access::Write);
        if (target == own) return;
      }
      f.add(Object::CtaLife, target, 0, Access::Read);  // a remote one: the RemoteOp lands later
      if (issued) {
        f.add(Object::InitVisible, target, Footprint::kAnyIndex, Access::Read);
        publish_touches(own, f);
      }
      return;
    }
    case OpKind::TmaLoad:  // cta_group::2: the bytes complete on the pair leader's barrier
      each_cta(op.b != 0 || (op.flags & kFlagCtaGroup2), [&](uint32_t dst) {
        f.add(Object::Mbarrier, dst, slot(op.bar), issued ? Access::Write : Access::Read);  // the phase it is issued for
        f.add(Object::InitVisible, dst, Footprint::kAnyIndex, Access::Read);
        f.add(Object::CopiesInFlight, dst, 0, Access::Add);
        f.add(Object::CtaLife, dst, 0, Access::Read);
      });
      return;
    case OpKind::Commit:
      f.add(Object::CtaGroup, 0, 0, observed_cta_group_ == 0 ? Access::Write : Access::Read);
      each_cta(true, [&](uint32_t dst) {
        f.add(Object::CtaLife, dst, 0, Access::Read);
        if (issued) {
          f.add(Object::Mbarrier, dst, slot(op.bar), Access::Write);
          f.add(Object::InitVisible, dst, Footprint::kAnyIndex, Access::Read);
        }
      });
      return;
    case OpKind::Mma:
      if (!(op.flags & kFlagWgmma)) f.add(Object::CtaGroup, 0, 0, observed_cta_group_ == 0 ? Access::Write : Access::Read);
      return;
    case OpKind::NamedSync: case OpKind::NamedArrive:
      f.add(Object::Named, own, static_cast<uint32_t>(op.a), Access::Write);
      return;
    case OpKind::ClusterArrive: case OpKind::ClusterWait:
      f.add(Object::Cluster, cl, 0, Access::Write);
      if (op.kind == OpKind::ClusterArrive) publish_touches(own, f);  // a releasing arrive marks the CTA's inits; a completion publishes them
      return;
    case OpKind::Init: case OpKind::Inval:
      f.add(Object::Mbarrier, own, slot(op.bar), Access::Write);
      f.add(Object::MbarrierInit, own, slot(op.bar), Access::Write);
      f.add(Object::InitVisible, own, Footprint::kAnyIndex, Access::Write);
      return;
    case OpKind::FenceInit:
      publish_touches(own, f);
      return;
    case OpKind::BulkStore: case OpKind::CommitGroup: case OpKind::WaitGroup:
      f.add(Object::BulkStores, own, u(w.warp), Access::Write);  // the warp's own groups
      return;
    case OpKind::StageWrite:  // smem_war: any warp's store from the buffer that no wait_group.read retired
      f.add(Object::BulkStores, own, Footprint::kAnyIndex, Access::Read);
      return;
    case OpKind::SmemStore: {
      const uint32_t target = u(cta_of_rank(w.cta, op.bar.rank));
      f.add(Object::Cell, target, static_cast<uint32_t>(op.b), Access::Write);
      f.add(Object::CtaLife, target, 0, Access::Read);
      return;
    }
    case OpKind::SmemLoad:  // the warp's program goes on with the value it reads
      f.add(Object::Cell, own, static_cast<uint32_t>(op.b), Access::Read);
      f.add(Object::Releases, 0, 0, Access::Read);
      f.everything = true;
      return;
    case OpKind::TmemAlloc: case OpKind::TmemDealloc: case OpKind::TmemRelinquish: case OpKind::ClcTryCancel:
      f.everything = true;  // TMEM of the SM and its waiters; CLC hands out clusters
      return;
    case OpKind::Compute: case OpKind::TmemLoad: case OpKind::TmemStore: case OpKind::TmemWait: case OpKind::MmaCommitGroup:
    case OpKind::MmaWaitGroup: case OpKind::Fault:
      return;  // the warp's own state (a fault ends the run: an end is judged by what it read)
  }
  f.everything = true;
}

void Engine::continuation(uint32_t id, Footprint& f, std::vector<uint32_t>& seen) const {
  if (std::find(seen.begin(), seen.end(), id) != seen.end()) return;
  seen.push_back(id);
  const WarpRt& w = warps_[id];
  if (w.external) {
    f.everything = true;
    return;
  }
  // What the steps touch depends only on the program point and what future_key adds to it, so an
  // untimed run walks each point once (walking copies the warp's program); the exit's touches read
  // the live state and are taken each time.
  const auto walk = [&](Footprint& into) {
    WarpProgram p = w.prog;
    Op op;
    for (size_t n = 0; n < kPeekLimit; ++n) {
      if (!p.next(op)) return true;
      if (synchronises(op.kind)) return false;
      op_touches(w, op, false, into);
    }
    into.everything = true;
    return false;
  };
  if (!continuations_) {
    if (walk(f)) exit_touches(id, f, seen);
    return;
  }
  ProgramPoint& c = point_of(id);
  if (!c.steps_known) {
    c.exits = walk(c.steps);
    c.steps.compact();
    c.steps_known = true;
  }
  f.merge(c.steps);
  if (c.exits) exit_touches(id, f, seen);
}

void Engine::exit_touches(uint32_t id, Footprint& f, std::vector<uint32_t>& seen, bool wakes) const {
  const WarpRt& w = warps_[id];
  const uint32_t c = u(w.cta);
  // Exits commute with each other: each takes one from the CTA's and the cluster's live warps (Add);
  // whichever is last runs the CTA's exit checks, which read its copies and stores in flight. This
  // choice's exits cannot be the last while the CTA has more live warps than the choice runs steps of
  // (`seen`: each exits at most once); for a warp's whole future (`wakes` false) it may be.
  // What reads CtaLife is whether the CTA has exited (exited_target): only the last exit changes it.
  f.add(Object::Cluster, u(cluster_of(w.cta)), 0, Access::Add);
  const auto in_cta = [&](uint32_t x) { return warps_[x].cta == w.cta; };
  if (!wakes || cta(w.cta).live <= std::count_if(seen.begin(), seen.end(), in_cta)) {
    f.add(Object::CtaLife, c, 0, Access::Add, true);
    f.add(Object::CopiesInFlight, c, 0, Access::Read, true);  // exit_inflight
    f.add(Object::BulkStores, c, Footprint::kAnyIndex, Access::Read, true);  // stores no wait_group retired
  }
  // The last warp of the CTA frees its SM for the next launch. (Its TMEM check, tmem_leak, reads
  // what only TMEM operations write, and those touch everything.)
  if (next_cluster_ < static_cast<int>(clusters_.size())) f.everything = true;
  cluster_release_touches(cluster_of(w.cta), f, seen, wakes);
}

void Engine::cluster_release_touches(int cl, Footprint& f, std::vector<uint32_t>& seen, bool wakes) const {
  // A completed cluster barrier publishes the cluster's fenced inits and wakes its waiters.
  for (int r = 0; r < csize_; ++r) publish_touches(u(cl * csize_ + r), f);
  if (wakes) wake_touches(clusters_[static_cast<size_t>(cl)].waiters, f, seen);
}

void Engine::wake_touches(const std::vector<uint32_t>& waiters, Footprint& f, std::vector<uint32_t>& seen) const {
  for (uint32_t x : waiters) continuation(x, f, seen);
}

void Engine::landing_touches(const Event& e, Footprint& f, std::vector<uint32_t>& seen) const {
  const CtaRt& ct = cta(static_cast<int>(e.target));
  f.add(Object::Mbarrier, e.target, e.slot, Access::Write);
  wake_touches(ct.waiters[e.slot], f, seen);
  if (!k_->smem.empty()) f.add(Object::Releases, 0, 0, Access::Add);
  if (e.kind == EventKind::TxLand) {
    f.add(Object::CopiesInFlight, e.target, 0, Access::Add);
    return;
  }
  if (e.op == OpKind::ClcTryCancel) {  // a CLC response: it also writes its shared-memory cell
    f.everything = true;
    return;
  }
  // deliver: the target must run and its init be visible; a remote arrival publishes its CTA's inits.
  f.add(Object::CtaLife, e.target, 0, Access::Read);
  f.add(Object::InitVisible, e.target, Footprint::kAnyIndex, Access::Read);
  const uint32_t from = u(warps_[e.from_warp].cta);
  if (from != e.target && e.op == OpKind::Arrive) publish_touches(from, f);
}

bool Engine::inits_published(uint32_t c) const {
  // Asked several times per state (each footprint and future key): remembered for the first 64 CTAs
  // until the next event happens.
  const bool remembered = c < 64;
  const uint64_t bit = remembered ? uint64_t{1} << c : 0;
  if (remembered) {
    if (published_at_ != events_happened_) {
      published_at_ = events_happened_;
      published_known_ = 0;
    }
    if (published_known_ & bit) return (published_ & bit) != 0;
  }
  const CtaRt& ct = cta(static_cast<int>(c));
  bool published = true;
  for (uint32_t s = 0; s < slots_ && published; ++s) published = !ct.bars[s].initialised || ((ct.fenced[s] & 1) && ct.visible[s]);
  published_known_ |= bit;
  published_ = published ? published_ | bit : published_ & ~bit;
  return published;
}

void Engine::publish_touches(uint32_t c, Footprint& f) const {
  // Published already: fence and publication set flags that are set (visible 2 -> 1 changes only
  // the relaxed-init warning). Only an init or inval (a write of InitVisible) unsets one, so along
  // any path this holds until such a write, which conflicts with what reads the flags anyway; a
  // warp's future is keyed by these flags (future_key).
  if (inits_published(c)) return;
  f.add(Object::InitVisible, c, Footprint::kAnyIndex, Access::Add);
  f.add(Object::MbarrierInit, c, Footprint::kAnyIndex, Access::Read);
}

void Engine::footprint(uint64_t seq, Footprint& f) const {
  f.clear();
  thread_local std::vector<uint32_t> seen;  // every state asks for each choice's: no allocation each time
  seen.clear();
  for (const Event& e : pending_) {
    if (e.seq != seq) continue;
    if (e.kind != EventKind::WarpStep) {
      landing_touches(e, f, seen);
      return;
    }
    const WarpRt& w = warps_[e.target];
    op_touches(w, w.cur, false, f);
    // The warps this op may release: every waiter of what it writes.
    const Op& op = w.cur;
    const uint32_t own = static_cast<uint32_t>(w.cta);
    switch (op.kind) {
      case OpKind::Arrive: case OpKind::ArriveExpectTx: case OpKind::ExpectTx: case OpKind::CompleteTx: case OpKind::ArriveDrop:
        if (static_cast<uint32_t>(cta_of_rank(w.cta, op.bar.rank)) == own) wake_touches(cta(w.cta).waiters[slot(op.bar)], f, seen);
        break;
      case OpKind::NamedSync: case OpKind::NamedArrive:
        if (op.a >= 0 && op.a < kNamedBarriers) wake_touches(cta(w.cta).named[op.a].waiters, f, seen);
        break;
      case OpKind::ClusterArrive: cluster_release_touches(cluster_of(w.cta), f, seen); break;
      default: break;
    }
    continuation(e.target, f, seen);
    return;
  }
  throw std::logic_error("untimed run: no pending event " + std::to_string(seq));
}

uint64_t Engine::choice_id(uint64_t seq) const {
  for (const Event& e : pending_) {
    if (e.seq != seq) continue;
    if (e.kind == EventKind::WarpStep) return uint64_t{1} << 63 | e.target;
    return StateHash().add(e.kind).add(e.target).add(e.slot).add(e.site).add(e.from_warp).add(e.op).add(e.value).add(e.phase).value() >> 1;
  }
  throw std::logic_error("untimed run: no pending event " + std::to_string(seq));
}

uint64_t Engine::cluster_inits_published(int c) const {
  uint64_t mask = 0;
  const int base = cluster_of(c) * csize_;
  for (int r = 0; r < csize_; ++r) mask |= static_cast<uint64_t>(inits_published(u(base + r))) << r;
  return mask;
}

uint64_t Engine::future_key(uint32_t id, const Op& o, const WarpProgram& rest, uint64_t published) const {
  StateHash h;
  h.add(id).add(next_cluster_).add(observed_cta_group_).add(published);
  hash_op(h, o);
  rest.hash_into(h);
  return h.value();
}

void Engine::futures(uint32_t id, const std::function<void(uint64_t, const Footprint&)>& store) const {
  const WarpRt& w = warps_[id];
  if (w.external || !k_->smem.empty()) {  // branches on values this search does not follow
    Footprint f;
    f.everything = true;
    return store(future_key(id), f);
  }
  // Segments: each synchronising op with the steps after it up to the next one, keyed by where the
  // warp stands poised at it; a future is the union of its segment and every later one.
  struct Segment { uint64_t key; Footprint f; };
  std::vector<Segment> segs;
  const uint64_t published = cluster_inits_published(w.cta);  // the same engine state for every segment
  segs.push_back({future_key(id, w.cur, w.prog, published), {}});
  op_touches(w, w.cur, true, segs.back().f);
  WarpProgram p = w.prog;
  Op op;
  size_t n = 0;
  for (; n < kPeekLimit && p.next(op); ++n) {
    if (synchronises(op.kind)) segs.push_back({future_key(id, op, p, published), {}});
    op_touches(w, op, true, segs.back().f);
  }
  Footprint acc;
  std::vector<uint32_t> seen;
  exit_touches(id, acc, seen, false);  // the warps its exit wakes: their futures are their own
  acc.everything |= n == kPeekLimit;
  acc.compact();
  for (size_t i = segs.size(); i-- > 0;) {
    segs[i].f.compact();
    acc.merge(segs[i].f);
    store(segs[i].key, acc);
  }
}

DenseFootprint::Clash DenseFootprint::clash(const DenseFootprint& a, const DenseFootprint& o, const Bits& pinned) {
  if (!a.valid || !o.valid) return Clash::Unknown;
  constexpr size_t R = static_cast<size_t>(Access::Read), A = static_cast<size_t>(Access::Add), W = static_cast<size_t>(Access::Write);
  uint64_t any = 0;
  for (size_t i = 0; i < a.words; ++i) {
    // o's touches that count: all but the last exits of pinned CTAs.
    const uint64_t r = o.lasting[R][i] | (o.all[R][i] & ~pinned[i]), ad = o.lasting[A][i] | (o.all[A][i] & ~pinned[i]),
                   w = o.lasting[W][i] | (o.all[W][i] & ~pinned[i]);
    // Pairs of accesses that clash (clash() above): a write with anything, a read with an add.
    any |= (a.all[W][i] & (r | ad | w)) | ((a.all[R][i] | a.all[A][i]) & w) | (a.all[R][i] & ad) | (a.all[A][i] & r);
  }
  return any != 0 ? Clash::Yes : Clash::No;
}

void Engine::dense_cta_bits(uint32_t c, DenseFootprint::Bits& bits) const {
  // Bits [first, end) a word at a time.
  const size_t per_cta = dense_per_cta(), first = c * per_cta, end = std::min(first + per_cta, DenseFootprint::kWords * 64);
  for (size_t bit = first; bit < end;) {
    const size_t in_word = std::min<size_t>(64 - bit % 64, end - bit);
    bits[bit / 64] |= (in_word == 64 ? ~uint64_t{0} : ((uint64_t{1} << in_word) - 1)) << (bit % 64);
    bit += in_word;
  }
}

void Engine::densify(const Footprint& f, DenseFootprint& out) const {
  out.valid = false;
  if (f.everything) return;
  // The objects' bits: per CTA its slots' Mbarrier and MbarrierInit, InitVisible, the 16 named
  // barriers, CtaLife, CopiesInFlight, its warps' BulkStores and its cells; then a bit per cluster,
  // Releases and CtaGroup.
  const size_t slots = slots_, warps = static_cast<size_t>(wpc_), cells = k_->smem_cells;
  const size_t per_cta = dense_per_cta();
  const size_t ctas = static_cast<size_t>(nctas_), clusters = clusters_.size();
  const size_t total = ctas * per_cta + clusters + 2;
  if (total > DenseFootprint::kWords * 64) return;
  out.words = static_cast<uint8_t>((total + 63) / 64);
  for (size_t a = 0; a < 3; ++a)
    for (size_t i = 0; i < out.words; ++i) out.all[a][i] = out.lasting[a][i] = 0;
  for (const Footprint::Touch& t : f.touches) {
    const auto kind = static_cast<Object>(t.object >> 56);
    const size_t scope = static_cast<size_t>(t.object >> 32) & 0xffffffu;
    const uint32_t index = static_cast<uint32_t>(t.object);
    size_t first = 0, count = 1;  // the group's bits
    const size_t cta_base = scope * per_cta;
    switch (kind) {
      case Object::Mbarrier: first = cta_base, count = slots; break;
      case Object::MbarrierInit: first = cta_base + slots, count = slots; break;
      case Object::InitVisible: first = cta_base + 2 * slots; break;
      case Object::Named: first = cta_base + 2 * slots + 1, count = kNamedBarriers; break;
      case Object::CtaLife: first = cta_base + 2 * slots + 1 + kNamedBarriers; break;
      case Object::CopiesInFlight: first = cta_base + 2 * slots + 2 + kNamedBarriers; break;
      case Object::BulkStores: first = cta_base + 2 * slots + 3 + kNamedBarriers, count = warps; break;
      case Object::Cell: first = cta_base + 2 * slots + 3 + kNamedBarriers + warps, count = cells; break;
      case Object::Cluster: first = ctas * per_cta + scope; break;
      case Object::Releases: first = ctas * per_cta + clusters; break;
      case Object::CtaGroup: first = ctas * per_cta + clusters + 1; break;
    }
    const bool in_range = kind == Object::Cluster ? scope < clusters
                          : kind == Object::Releases || kind == Object::CtaGroup ? scope == 0
                                                                                   : scope < ctas;
    // Out of the run's range, or a group without bits (two kAnyIndex touches of it would clash), or a
    // last exit that is not a CTA's (a pinned CTA excuses it by its scope): not valid.
    const bool cta_scoped = kind != Object::Cluster && kind != Object::Releases && kind != Object::CtaGroup;
    if (!in_range || count == 0 || (index != Footprint::kAnyIndex && index >= count) || (t.last_exit && !cta_scoped)) return;
    if (index != Footprint::kAnyIndex) first += index, count = 1;
    const size_t a = static_cast<size_t>(t.access);
    for (size_t bit = first; bit < first + count; ++bit) {
      out.all[a][bit / 64] |= uint64_t{1} << (bit % 64);
      if (!t.last_exit) out.lasting[a][bit / 64] |= uint64_t{1} << (bit % 64);
    }
  }
  out.valid = true;
}

// Persistent sets (Godefroid; a stubborn-set closure). T is persistent in s when no path from s that
// takes no choice of T takes one that conflicts with a choice of T. Grown from one choice: a poised
// warp outside T may take every op of its future, so T takes its current op when that future
// conflicts with T; a pending event outside T, when it conflicts; a blocked warp outside T runs its
// future only once something writes what it waits on, so when its future conflicts with T, T's
// footprint gains a read of that object (whatever would wake it joins T in turn). A warp in T moves
// only through T. The search takes the members of T that are not asleep (T \ Z); the set chosen is
// the one that leaves the fewest to take. A cluster arrive may re-poll into its own state (a cycle):
// it never starts a reduced set, and one that reaches it is dropped.
const Future& Engine::future_of(uint32_t id) const {
  ProgramPoint& point = point_of(id);
  if (point.future_known) return point.future;
  futures(id, [&](uint64_t k, const Footprint& f) {
    ProgramPoint& p = (*continuations_)[k];
    if (p.future_known) return;
    p.future.print = f;
    densify(f, p.future.dense);
    p.future.id = persistent_sets_->future_id(f);
    p.future_known = true;
  });
  // futures() stored it: its first segment is the warp's own point.
  if (!point.future_known) throw std::logic_error("untimed run: a warp's future is missing at its own program point");
  return point.future;
}

void Engine::persistent_set(const std::vector<Footprint>& prints, const std::vector<uint8_t>& asleep, std::vector<size_t>& best) const {
  best.clear();
  const size_t n = choices_.size();
  if (n < 2 || next_cluster_ < static_cast<int>(clusters_.size())) return;
  // Called at every state of the search: its working vectors keep their capacity from call to call
  // (allocation was a third of its time).
  struct Scratch {
    std::vector<uint32_t> warp_of;
    std::vector<uint8_t> poised, retrying, in, woken, pinned;
    std::vector<uint32_t> waiting;       // warps that wait ...
    std::vector<Footprint> wakes;        // ... and what wakes them (a write to it); capacity reused
    std::vector<DenseFootprint> dense_wakes, dense_prints;
    std::vector<const Future*> futures;
    std::vector<size_t> seeds;
    std::vector<Footprint> compacted;           // prints not sorted, compacted (capacity reused)
    struct Part { const Footprint* print; const DenseFootprint* dense; };
    std::vector<Part> parts_of;                 // per choice: its print, sorted
    std::vector<Part> parts;                    // the set's footprint, in parts
    std::vector<size_t> checked;
    DenseFootprint::Bits pinned_bits;   // the pinned CTAs' objects
  };
  thread_local Scratch x;
  x.warp_of.assign(n, kNoWarp);
  x.poised.assign(warps_.size(), 0);
  x.retrying.assign(n, 0);
  for (size_t i = 0; i < n; ++i)
    for (const Event& e : pending_)
      if (e.seq == choices_[i] && e.kind == EventKind::WarpStep) {
        x.warp_of[i] = e.target;
        x.poised[e.target] = 1;
        x.retrying[i] = warps_[e.target].cur.kind == OpKind::ClusterArrive;
      }
  // Warps that wait: what wakes them (a write to it).
  x.waiting.clear();
  for (uint32_t id = 0; id < warps_.size(); ++id) {
    const WarpRt& w = warps_[id];
    if (x.poised[id] || w.status == WarpStatus::Exited || w.status == WarpStatus::Faulted) continue;
    if (x.wakes.size() <= x.waiting.size()) x.wakes.emplace_back();
    Footprint& wake = x.wakes[x.waiting.size()];
    wake.clear();
    // A guarded wait (poised, no choice until its phase completes: Engine::settle) waits as a blocked one.
    if (w.block == Block::Mbarrier || wait_would_block(w)) wake.add(Object::Mbarrier, u(w.cta), slot(w.cur.bar), Access::Read);
    else if (w.block == Block::Named) wake.add(Object::Named, u(w.cta), static_cast<uint32_t>(w.cur.a), Access::Read);
    else if (w.block == Block::Cluster) wake.add(Object::Cluster, u(cluster_of(w.cta)), 0, Access::Read);
    else wake.everything = true;
    x.waiting.push_back(id);
  }
  // Each warp's future once per state (future_of looks it up by the warp's program point).
  x.futures.assign(warps_.size(), nullptr);
  const auto future_at = [&](uint32_t id) -> const Future& {
    if (!x.futures[id]) x.futures[id] = &future_of(id);
    return *x.futures[id];
  };
  // Found before: the same set (PersistentSetMemo).
  PersistentSetMemo& memo = *persistent_sets_;
  const bool remembered = memo.in_use();
  thread_local PersistentSetMemo::Key key;
  if (remembered) {
    key.assign(1, n);
    for (size_t i = 0; i < n; ++i) {
      key.push_back(static_cast<uint64_t>(x.warp_of[i]) << 2 | static_cast<uint64_t>(x.retrying[i]) << 1 | asleep[i]);
      if (x.warp_of[i] != kNoWarp) key.push_back(future_at(x.warp_of[i]).id);
      PersistentSetMemo::append(prints[i], key);
    }
    for (size_t k = 0; k < x.waiting.size(); ++k) {
      key.push_back(x.waiting[k]);
      key.push_back(future_at(x.waiting[k]).id);
      PersistentSetMemo::append(x.wakes[k], key);
    }
    ++memo.lookups;
    if (memo.recall(key, best)) {
      ++memo.hits;
      return;
    }
  }
  if (x.dense_wakes.size() < x.waiting.size()) x.dense_wakes.resize(x.waiting.size());
  for (size_t k = 0; k < x.waiting.size(); ++k) densify(x.wakes[k], x.dense_wakes[k]);
  size_t best_size = n;
  // CTAs with a warp in the set or woken only through it: on the paths that avoid the set they
  // never end, so their other warps' exits change nothing the set reads (Footprint::conflicts).
  // Seeds in a fixed order (warps by id, then events), not the path's order of the choices: states
  // that pick the same warp's set again serialise independent parts of the kernel instead of
  // interleaving them (ties keep the first).
  x.seeds.resize(n);
  for (size_t i = 0; i < n; ++i) x.seeds[i] = i;
  // (By warp, then by index: the order std::stable_sort gives, without its buffer allocated per state.)
  std::sort(x.seeds.begin(), x.seeds.end(), [&](size_t a, size_t b) { return std::pair(x.warp_of[a], a) < std::pair(x.warp_of[b], b); });
  // The set's footprint is kept as its parts (the members' prints, the woken warps' wakes) rather
  // than merged: a choice or waiter outside the set joins when any part conflicts with its future,
  // and each future is checked against each part once (a part that did not conflict under fewer
  // pinned CTAs does not under more: pinning only takes clashes away). Merged, a read and an add of
  // one object make a write, which clashes exactly where one of the two does: the same answers as
  // checking the merged footprint at every round, for a check of a few touches per part.
  x.parts_of.resize(n);
  if (x.compacted.size() < n) x.compacted.resize(n);
  if (x.dense_prints.size() < n) x.dense_prints.resize(n);
  for (size_t i = 0; i < n; ++i) {
    densify(prints[i], x.dense_prints[i]);
    x.parts_of[i] = {&prints[i], &x.dense_prints[i]};
    if (prints[i].sorted || x.dense_prints[i].valid) continue;  // the walk needs it sorted only without bitsets
    x.compacted[i] = prints[i];  // keeps its capacity
    x.compacted[i].compact();
    x.parts_of[i].print = &x.compacted[i];
  }
  for (size_t seed : x.seeds) {
    if (best_size == 0) break;  // nothing to take: no later seed does better
    if (x.retrying[seed] || prints[seed].everything || (asleep[seed] ? 0u : 1u) >= best_size) continue;
    x.in.assign(n, 0);
    x.woken.assign(x.waiting.size(), 0);
    x.pinned.assign(ctas_.size(), 0);
    x.pinned_bits.fill(0);
    const auto pin = [&](int c) {
      if (x.pinned[static_cast<size_t>(c)]) return;
      x.pinned[static_cast<size_t>(c)] = 1;
      dense_cta_bits(static_cast<uint32_t>(c), x.pinned_bits);
    };
    x.checked.assign(n + x.waiting.size(), 0);  // per choice, then per waiter: parts checked so far
    x.in[seed] = 1;
    if (x.warp_of[seed] != kNoWarp) pin(warps_[x.warp_of[seed]].cta);
    size_t size = asleep[seed] ? 0 : 1;  // what the set leaves to take: its members awake
    x.parts.assign(1, x.parts_of[seed]);
    // Whether a part of the set not checked yet against `future` conflicts with it: by their bitsets,
    // or where those cannot tell (a pinned CTA may excuse a last exit), by their touches.
    const auto conflicts_with_set = [&](const Footprint& future, const DenseFootprint& dense_future, size_t& checked) {
      for (; checked < x.parts.size(); ++checked) {
        const Scratch::Part& part = x.parts[checked];
        const DenseFootprint::Clash c = DenseFootprint::clash(*part.dense, dense_future, x.pinned_bits);
        if (c == DenseFootprint::Clash::Yes || (c == DenseFootprint::Clash::Unknown && part.print->conflicts(future, &x.pinned))) return true;
      }
      return false;
    };
    bool grew = true, failed = false;
    while (grew && !failed && size < best_size) {
      grew = false;
      for (size_t j = 0; j < n && !failed; ++j) {
        if (x.in[j]) continue;
        if (x.warp_of[j] == kNoWarp ? !conflicts_with_set(prints[j], x.dense_prints[j], x.checked[j])
                                    : !conflicts_with_set(future_at(x.warp_of[j]).print, future_at(x.warp_of[j]).dense, x.checked[j]))
          continue;
        failed |= x.retrying[j] != 0 || prints[j].everything;  // everything conflicts with every later future: no set
        x.in[j] = 1;
        if (x.warp_of[j] != kNoWarp) pin(warps_[x.warp_of[j]].cta);
        size += !asleep[j];
        x.parts.push_back(x.parts_of[j]);
        grew = true;
      }
      for (size_t k = 0; k < x.waiting.size() && !failed; ++k) {
        if (x.woken[k]) continue;
        const Future& future = future_at(x.waiting[k]);
        if (!conflicts_with_set(future.print, future.dense, x.checked[n + k])) continue;
        failed |= x.wakes[k].everything;
        x.woken[k] = 1;
        pin(warps_[x.waiting[k]].cta);
        x.parts.push_back({&x.wakes[k], &x.dense_wakes[k]});
        grew = true;
      }
    }
    if (failed || size >= best_size) continue;  // ties keep the first
    best.clear();
    for (size_t j = 0; j < n; ++j)
      if (x.in[j]) best.push_back(j);
    best_size = size;
  }
  if (remembered) memo.remember(key, best);
}

}  // namespace detail
}  // namespace pipesim::sim
