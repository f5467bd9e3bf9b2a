// The discrete-event engine. Warps are processes pulling primitive ops from their lowered
// programs; asynchronous units (TMA, bulk stores, remote arrivals) are events. All mbarrier
// state changes go through sim/mbarrier.hpp; this file routes, times and observes them.
#include "sim/engine.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <unordered_map>

#include "sim/dram.hpp"
#include "sim/l2.hpp"
#include "sim/explain.hpp"
#include "sim/lowering.hpp"
#include "sim/mbarrier.hpp"
#include "sim/rules.hpp"

namespace pipesim::sim {

std::optional<CtaEnds> cta_ends(const RunResult& r) {
  std::map<int, double> end;  // cta -> its last exit; -1 once one of its warps did not exit
  for (const WarpEnd& w : r.warps) {
    double& e = end.try_emplace(w.cta, 0.0).first->second;
    if (w.status != WarpStatus::Exited || e < 0) e = -1;
    else e = std::max(e, w.exited_ns);
  }
  std::vector<double> ends;
  for (const auto& [c, e] : end)
    if (e >= 0) ends.push_back(e);
  if (ends.size() < 2) return std::nullopt;
  std::sort(ends.begin(), ends.end());
  return CtaEnds{ends.front(), ends[ends.size() / 2], ends.back(), static_cast<int>(ends.size())};
}

uint32_t barrier_slot(const Kernel& kernel, uint32_t array, uint32_t index) {
  uint32_t base = 0;
  for (uint32_t a = 0; a < array; ++a) base += kernel.barriers[a].size;
  return base + index;
}

namespace {

constexpr int kNamedBarriers = 16;

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

enum class EventKind : uint8_t { WarpStep, WakeBatch, TxLand, RemoteOp, AsyncArrive, DramDone };

struct Event {
  double t;
  uint64_t seq;
  EventKind kind;
  uint32_t target;  // warp id / cta / cluster
  uint32_t slot;    // barrier slot
  uint32_t site;
  uint32_t from_warp;
  OpKind op;        // RemoteOp: which operation
  int64_t value;
  int64_t phase = 0;  // TxLand: phases the target barrier had completed when the copy was issued;
                      // RemoteOp of an Arrive: the threads it stands for (threads_of)
};
// Heap entries are 16 bytes: the time and (sequence << 24 | payload index). The sequence
// breaks ties deterministically; payloads live in a free-listed pool.
struct QKey {
  uint64_t t_ps;     // event time in integer picoseconds: cheap, NaN-free comparisons
  uint64_t seq_idx;
};

// A binary heap with a one-entry hold in front of it: most pushes are the warp's own next step,
// which is often the earliest event of all and then never touches the heap.
class EventQueue {
 public:
  static constexpr uint64_t kIdxBits = 24;
  bool empty() const { return !held_ && heap_.empty(); }
  void push(const Event& e) {
    // The held event keeps its payload inline; its key has index 0 (sequence numbers are
    // unique, so the index never decides an order).
    const QKey k{static_cast<uint64_t>(std::max(0.0, e.t) * 1000.0 + 0.5), e.seq << kIdxBits};
    if (!held_) {
      if (heap_.empty() || before(k, heap_.front())) {
        hold_ = e;
        hold_key_ = k;
        held_ = true;
        return;
      }
    } else if (before(k, hold_key_)) {
      heap_insert(hold_, hold_key_);
      hold_ = e;
      hold_key_ = k;
      return;
    }
    heap_insert(e, k);
  }
  Event pop() {
    if (held_) {
      held_ = false;
      return hold_;
    }
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    const QKey k = heap_.back();
    heap_.pop_back();
    const uint32_t idx = static_cast<uint32_t>(k.seq_idx & ((1u << kIdxBits) - 1));
    free_.push_back(idx);
    return pool_[idx];
  }

 private:
  static bool before(const QKey& a, const QKey& b) {
    return a.t_ps < b.t_ps || (a.t_ps == b.t_ps && a.seq_idx < b.seq_idx);
  }
  struct Later {
    bool operator()(const QKey& a, const QKey& b) const { return before(b, a); }
  };
  void heap_insert(const Event& e, QKey k) {
    const uint32_t idx = take_slot(pool_, free_);
    if (idx >= (1u << kIdxBits)) throw std::runtime_error("more than 16M simultaneous events in flight");
    pool_[idx] = e;
    k.seq_idx |= idx;
    heap_.push_back(k);
    std::push_heap(heap_.begin(), heap_.end(), Later{});
  }
  std::vector<QKey> heap_;
  std::vector<Event> pool_;
  std::vector<uint32_t> free_;
  Event hold_{};
  QKey hold_key_{};
  bool held_ = false;
};

enum class Block : uint8_t { None, Mbarrier, Named, Cluster, Timed, Tmem };

struct LastArrival {
  int cta = -1, warp = -1;
  uint32_t site = 0;
};

struct WarpRt {
  WarpRt(WarpProgram p, int c, int w, int r) : prog(std::move(p)), cta(c), warp(w), role(r) {}
  WarpProgram prog;
  int cta, warp, role;
  WarpStatus status = WarpStatus::NotStarted;
  Op cur{};
  uint64_t instructions_seen = 0;  // a PTX warp's instruction count at the budget's last poll
  Block block = Block::None;
  double block_since = 0;
  double exited_at = -1;
  int64_t ops = 0;
  int64_t cluster_arrived = -1;  // cluster-barrier phase this warp last arrived on
  double remote_done = 0;        // when this warp's last remote arrival lands
  double tc_done = 0;            // when this warp's last tcgen05.mma completes
  int64_t mma_issued = 0;        // tcgen05.mma instructions issued by this warp
  // Per barrier array: mma_issued at this warp's last commit to it. A commit is "empty" when no
  // MMA was issued since the previous commit to the same array (docs/semantics.md).
  std::vector<std::pair<uint32_t, int64_t>> commit_marks;
  double tmem_done[2] = {0, 0};  // when its last tcgen05.ld / tcgen05.st completes
  bool retry = false;            // re-execute `cur` at the next step (ordering delay)
  // Bulk async-groups: committed groups in commit order + the open one. A store stays in its
  // group until a wait_group of this warp retires the group: only then is its smem source ordered
  // before what the warp does next (exit_inflight and smem_war judge that order, not the clock).
  struct PendingStore { int64_t stage_key; uint32_t site; };
  struct Group { double read_done = 0, write_done = 0, retired_at = 0; std::vector<PendingStore> stores; };
  std::vector<Group> groups;
  Group open;
  std::vector<Group> retiring;  // taken by a wait_group still running: retired at retired_at
  // wgmma groups: when each committed group's MMAs are done, oldest first (MmaWaitGroup pops them).
  std::vector<double> mma_groups;
  double mma_open_done = 0;      // the open group's MMAs end by then
  std::unique_ptr<ExternalWarp> ext;  // the warp's own code (Kernel::external); else `prog` runs
};

struct NamedRt {
  int64_t count = 0;      // thread count of the current phase (0: no arrival yet)
  int64_t arrived = 0;    // threads
  std::vector<uint32_t> warps;    // warps that arrived this phase (by id)
  std::vector<uint32_t> waiters;  // warp ids blocked in bar.sync
};

struct CtaRt {
  bool started = false, exited = false;
  int sm = 0;
  int64_t tmem_held = 0;         // TMEM columns this CTA holds
  int64_t tmem_last_alloc = 0;   // size of its previous allocation (they must not grow)
  bool tmem_relinquished = false;
  bool cluster_synced = false;   // has completed a cluster barrier wait
  double tmem_since = 0;         // for the trace: when its current allocation began
  int live = 0;  // warps not exited
  std::vector<MBarrier> bars;
  std::vector<LastArrival> last;         // per slot: the latest arrival, for hang reports
  // Per slot. fenced: bit 0 fence.mbarrier_init seen since the init, bit 1 a releasing cluster arrive
  // since the init. visible: 1 published to the cluster (fenced, then a cluster barrier, or carried by
  // an arrival), 2 published only by a relaxed cluster barrier (a warning, docs/semantics.md).
  std::vector<uint8_t> fenced, visible;
  std::vector<uint32_t> expect_site;     // per slot: site of the last expect_tx on it
  std::vector<std::vector<uint32_t>> waiters;  // per slot: warp ids
  NamedRt named[kNamedBarriers];
  int tma_inflight = 0;
  uint32_t inflight_site = 0, inflight_warp = 0;  // the latest copy into this CTA (for exit_inflight)
  uint32_t first_warp = 0;
};

struct SmRt {
  int resident = 0;              // CTAs on this SM
  double tc_free = 0;            // tensor pipe busy until
  double tc_busy = 0;            // total tensor pipe time
  int64_t tmem_free = 0;         // TMEM columns free
  std::vector<uint32_t> alloc_waiters;  // warps blocked in tcgen05.alloc, FIFO
  // Issue slots of its four sub-partitions (warp % 4): instructions of warps that share one issue
  // one after another (Compute ops with b = 1: a PTX warp's executed instructions).
  double issue_free[4] = {0, 0, 0, 0};
};

struct ClusterRt {
  bool started = false;
  int live = 0;           // warps not exited in the cluster
  int arrived = 0;
  int64_t phase = 0;      // completed cluster-barrier phases
  double release_at = 0;  // when the last completed phase releases its waiters
  std::vector<uint32_t> waiters;
};

class Engine {
 public:
  Engine(const Kernel& k, const RunOptions& o)
      : k_(k), o_(o), tm_(timing_of(k, o)), rng_(o.seed), dram_(tm_.hbm_bytes_per_ns, dram_weights(tm_, k.arch->cap.sms), tm_.dram_copy_overlap),
        l2_(tm_.l2_bytes_per_ns > 0 ? tm_.l2_bytes : 0),
        l2_hits_(tm_.l2_bytes_per_ns, std::vector<double>(static_cast<size_t>(k.arch->cap.sms), 1.0)) {
    tm_.op_issue_ns *= o.issue_scale;
    tm_.tma_issue_ns *= o.issue_scale;
    tm_.mma_issue_ns *= o.issue_scale;
    if (o.interp) tm_.mbarrier_wake_ns += o.interp->wake_ns;
    for (const BarrierArray& a : k.barriers) slots_ += a.size;
    if (k.external) run_ = k.external->start_run(tm_);
    array_of_slot_.reserve(slots_);
    for (uint32_t a = 0; a < k.barriers.size(); ++a)
      for (uint32_t i = 0; i < k.barriers[a].size; ++i) array_of_slot_.push_back(a);
    nctas_ = static_cast<int>(k.launch.ctas);
    csize_ = static_cast<int>(k.launch.cluster);
    wpc_ = k.launch.warps();
    ctas_.resize(static_cast<size_t>(nctas_));
    clusters_.resize(static_cast<size_t>(nctas_ / csize_));
    sms_.assign(static_cast<size_t>(k.arch->cap.sms), SmRt{});
    for (SmRt& sm : sms_) sm.tmem_free = k.arch->cap.tmem_columns;
    ctas_per_sm_ = static_cast<int>(std::max<int64_t>(1, k.launch.ctas_per_sm));
    warps_.reserve(static_cast<size_t>(nctas_) * static_cast<size_t>(wpc_));
    role_wait_ns_.assign(std::max<size_t>(1, k.roles.size()) * (k.barriers.size() + 3), 0.0);
  }

  RunResult run() {
    launch_pending(0.0);
    const auto started = std::chrono::steady_clock::now();
    uint64_t polls = 0;
    while (!q_.empty() && !fatal_) {
      if (o_.max_events > 0 && res_.events >= o_.max_events) {
        stop(RunResult::StopCause::Events, started);
        break;
      }
      // The clock and the instruction count are polled every 1024 events: a PTX warp spinning
      // without synchronising still returns to the engine every few thousand instructions.
      if ((++polls & 1023) == 0 && budget_spent(started)) break;
      const Event e = q_.pop();
      // Simulated events: every op a warp executes and every asynchronous completion (a batch
      // of wake-ups counts its warps' steps, not itself).
      if (e.kind != EventKind::WakeBatch && e.kind != EventKind::WarpStep && e.kind != EventKind::DramDone) ++res_.events;
      now_ = std::max(now_, e.t);  // keys round to 1 ps; time never runs backwards
      dispatch(e);
    }
    finish();
    return std::move(res_);
  }

 private:
  // ----------------------------------------------------------------- budget
  double seconds_since(std::chrono::steady_clock::time_point t0) const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  void stop(RunResult::StopCause cause, std::chrono::steady_clock::time_point t0) {
    stopped_ = true;
    res_.stopped_by = cause;
    res_.stopped_after_s = seconds_since(t0);
  }
  bool budget_spent(std::chrono::steady_clock::time_point t0) {
    if (o_.max_seconds > 0 && seconds_since(t0) >= o_.max_seconds) {
      stop(RunResult::StopCause::Seconds, t0);
      return true;
    }
    if (run_ && o_.max_instructions > 0) {
      // Only the warps that ran since the last poll can have new instructions: asking all of them
      // (a cold cache line each, 1344 warps for a persistent GEMM) was ~4 % of a PTX run.
      for (uint32_t id : ext_stepped_) {
        WarpRt& w = warps_[id];
        const uint64_t n = w.ext->instructions();
        ext_executed_ += n - w.instructions_seen;
        w.instructions_seen = n;
      }
      ext_stepped_.clear();
      if (ext_executed_ >= o_.max_instructions) {
        stop(RunResult::StopCause::Instructions, t0);
        return true;
      }
    }
    return false;
  }

  // --------------------------------------------------------------- plumbing
  void push(double t, EventKind kind, uint32_t target, uint32_t slot = 0, uint32_t site = 0,
            uint32_t from = 0, OpKind op = OpKind::Compute, int64_t value = 0, int64_t phase = 0) {
    q_.push(Event{t, seq_++, kind, target, slot, site, from, op, value, phase});
  }
  double jit(double ns) {
    if (o_.jitter <= 0 || ns <= 0) return ns;
    std::uniform_real_distribution<double> d(-o_.jitter, o_.jitter);
    return ns * (1.0 + d(rng_));
  }
  // Under jitter only: a warp's first op starts up to warp_start_skew_ns late, so the first barrier
  // ops of different roles race as their prologues do on silicon (docs/semantics.md). A replay takes
  // the starts from the device's stamps.
  double start_skew() {
    if (o_.jitter <= 0 || tm_.warp_start_skew_ns <= 0 || o_.replay) return 0;
    return std::uniform_real_distribution<double>(0, tm_.warp_start_skew_ns)(rng_);
  }
  // Under jitter only: one copy in eight lands up to tma_straggler_ns late, so copies to one barrier
  // may land out of issue order, as the DRAM serves them on silicon (docs/semantics.md).
  double straggle() {
    if (o_.jitter <= 0 || tm_.tma_straggler_ns <= 0 || rng_() % 8 != 0) return 0;
    return std::uniform_real_distribution<double>(0, tm_.tma_straggler_ns)(rng_);
  }
  CtaRt& cta(int c) { return ctas_[static_cast<size_t>(c)]; }
  const CtaRt& cta(int c) const { return ctas_[static_cast<size_t>(c)]; }
  int cluster_of(int c) const { return c / csize_; }
  int cta_of_rank(int own, int32_t rank) const {
    return rank == BarRef::kOwnCta ? own : cluster_of(own) * csize_ + rank;
  }
  std::string bar_name(uint32_t slot) const {
    if (run_) return run_->barrier_name(slot);
    const uint32_t a = array_of_slot_[slot];
    return k_.barriers[a].name + "[" + std::to_string(slot - barrier_slot(k_, a, 0)) + "]";
  }

  // An external program found new barriers: every started CTA gets their slots (a CTA launched
  // later is sized at launch).
  void grow_slots(uint32_t n) {
    for (CtaRt& c : ctas_) {
      if (!c.started) continue;
      c.bars.resize(n);
      c.last.resize(n);
      c.fenced.resize(n, 0);
      c.visible.resize(n, 0);
      c.waiters.resize(n);
      c.expect_site.resize(n, 0);
    }
    array_of_slot_.resize(n, 0);
    slots_ = n;
  }

  void fault(const std::string& kind, const WarpRt* w, uint32_t site, std::string msg,
             std::vector<std::string> notes = {}) {
    Finding f;
    f.kind = kind;
    f.fatal = true;
    if (w) {
      f.cta = w->cta;
      f.warp = w->warp;
    }
    f.site = site;
    f.message = std::move(msg);
    f.notes = std::move(notes);
    res_.findings.push_back(std::move(f));
    if (w) const_cast<WarpRt*>(w)->status = WarpStatus::Faulted;
    fatal_ = true;
  }
  // A broken rule: fault (true: the caller stops), or under hardware_only, for a rule the hardware
  // does not check, a warning (its first occurrence per rule) and false: the run goes on.
  bool stop(const std::string& kind, const WarpRt* w, uint32_t site, std::string msg, std::vector<std::string> notes = {}) {
    if (!o_.hardware_only || !is_model_only(kind)) {
      fault(kind, w, site, std::move(msg), std::move(notes));
      return true;
    }
    for (const Finding& f : res_.findings)
      if (f.kind == kind) return false;
    warn(kind, w ? w->cta : -1, w ? w->warp : -1, site, std::move(msg) + " (the hardware goes on)", std::move(notes));
    return false;
  }
  void warn(const std::string& kind, int c, int w, uint32_t site, std::string msg, std::vector<std::string> notes = {}) {
    res_.findings.push_back(Finding{kind, false, c, w, site, std::move(msg), std::move(notes)});
  }
  std::string state_note(const MBarrier& b) const {
    return "barrier state: phase " + std::to_string(b.completed) + " (parity " + std::to_string(b.completed & 1) +
           "), pending " + std::to_string(b.pending) + " of " + std::to_string(b.expected) + ", tx " +
           std::to_string(b.tx);
  }

  // ------------------------------------------------------------- launching
  // Starts clusters in order while their CTAs fit: each CTA of a cluster on a distinct SM, the
  // least loaded first (CTAs spread over SMs before SMs double up).
  void launch_pending(double t) {
    while (next_cluster_ < static_cast<int>(clusters_.size())) {
      std::vector<int> order;
      for (int i = 0; i < static_cast<int>(sms_.size()); ++i)
        if (sms_[static_cast<size_t>(i)].resident < ctas_per_sm_) order.push_back(i);
      if (static_cast<int>(order.size()) < csize_) return;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return sms_[static_cast<size_t>(a)].resident < sms_[static_cast<size_t>(b)].resident;
      });
      order.resize(static_cast<size_t>(csize_));
      launch_cluster(next_cluster_, t, order);
    }
  }

  void launch_cluster(int cl, double t, const std::vector<int>& on_sms) {
    ClusterRt& c = clusters_[static_cast<size_t>(cl)];
    c.started = true;
    ++next_cluster_;
    for (int r = 0; r < csize_; ++r) {
      const int id = cl * csize_ + r;
      CtaRt& ct = cta(id);
      ct.started = true;
      ct.sm = on_sms[static_cast<size_t>(r)];
      ++sms_[static_cast<size_t>(ct.sm)].resident;
      sms_used_ = std::max(sms_used_, ct.sm + 1);
      ct.bars.assign(slots_, MBarrier{});
      ct.last.assign(slots_, LastArrival{});
      ct.fenced.assign(slots_, 0);
      ct.visible.assign(slots_, 0);
      ct.waiters.assign(slots_, {});
      ct.expect_site.assign(slots_, 0);
      for (uint32_t a = 0; a < k_.barriers.size(); ++a) {
        if (!k_.barriers[a].init_count) continue;
        for (uint32_t i = 0; i < k_.barriers[a].size; ++i) {
          const uint32_t s = barrier_slot(k_, a, i);
          mbar_init(ct.bars[s], *k_.barriers[a].init_count);
          ct.fenced[s] = ct.visible[s] = 1;  // constructor: init, fence, cluster sync
        }
      }
      ct.first_warp = static_cast<uint32_t>(warps_.size());
      ct.live = wpc_;
      c.live += wpc_;
      for (int w = 0; w < wpc_; ++w) {
        warps_.emplace_back(WarpProgram(k_, id, w), id, w, role_of_warp(k_, w));
        if (run_) warps_.back().ext = run_->start_warp(id, w, ct.sm);
        warps_.back().status = WarpStatus::Blocked;
        push(t + (o_.interp ? o_.interp->start_ns : 0.0) + start_skew(), EventKind::WarpStep,
             static_cast<uint32_t>(warps_.size() - 1));
      }
    }
  }

  // -------------------------------------------------------------- dispatch
  void dispatch(const Event& e) {
    switch (e.kind) {
      case EventKind::WarpStep: step(e.target); break;
      case EventKind::WakeBatch: {
        // Warps woken together step in the order they were woken, exactly as their own
        // consecutive events would have. The list stays out of the free pool until its steps are
        // done (they may wake others, which takes a list).
        const auto idx = static_cast<uint32_t>(e.value);
        std::vector<uint32_t> ids;
        ids.swap(wake_lists_[idx]);
        for (uint32_t id : ids) step(id);
        ids.clear();
        wake_lists_[idx].swap(ids);  // keep the capacity
        free_wake_lists_.push_back(idx);
        break;
      }
      case EventKind::TxLand: land(e); break;
      case EventKind::DramDone: dram_done(e); break;
      case EventKind::RemoteOp: deliver(e, std::string(op_name(e.op))); break;
      case EventKind::AsyncArrive: deliver(e, "tcgen05.commit arrival"); break;
    }
  }

  void close_block(WarpRt& w) {
    if (w.block != Block::None) {
      add_role_wait(w, now_ - w.block_since);
      if (o_.record_trace) span(w, w.block_since, now_, wait_label(w), true);
      w.block = Block::None;
    }
    w.status = WarpStatus::Blocked;  // scheduled, not yet running
  }
  void resume(WarpRt& w, uint32_t id, double at) {
    close_block(w);
    push(at, EventKind::WarpStep, id);
  }
  // One event for several warps that resume at the same instant.
  std::vector<uint32_t>& new_wake_list(double at) {
    const uint32_t idx = take_slot(wake_lists_, free_wake_lists_);
    push(at, EventKind::WakeBatch, 0, 0, 0, 0, OpKind::Compute, idx);
    return wake_lists_[idx];
  }

  void add_role_wait(const WarpRt& w, double ns) {
    if (w.role < 0) return;
    size_t col = k_.barriers.size();
    if (w.block == Block::Mbarrier) col = w.cur.bar.array;
    else if (w.block == Block::Named) col = k_.barriers.size() + 0;
    else if (w.block == Block::Cluster) col = k_.barriers.size() + 1;
    else if (w.block == Block::Timed || w.block == Block::Tmem) col = k_.barriers.size() + 2;
    role_wait_ns_[static_cast<size_t>(w.role) * (k_.barriers.size() + 3) + col] += ns;
  }

  std::string wait_label(const WarpRt& w) const {
    switch (w.block) {
      case Block::Mbarrier: return "wait " + bar_name(barrier_slot(k_, w.cur.bar.array, w.cur.bar.index)) + " parity " + std::to_string(w.cur.a);
      case Block::Named: return "bar_sync " + std::to_string(w.cur.a);
      case Block::Cluster: return "cluster_wait";
      case Block::Timed: return std::string(op_name(w.cur.kind)) + " " + std::to_string(w.cur.a);
      case Block::Tmem: return "tmem_alloc " + std::to_string(w.cur.a) + " cols";
      case Block::None: break;
    }
    return "";
  }
  void span(const WarpRt& w, double b, double e, std::string label, bool blocked) {
    res_.spans.push_back(TraceSpan{w.cta, w.warp, b, e, w.cur.site, std::move(label), blocked});
  }

  // One op of warp `id` at now_.
  void step(uint32_t id) {
    ++res_.events;
    WarpRt& w = warps_[id];
    if (w.status == WarpStatus::Faulted || w.status == WarpStatus::Exited) return;
    if (w.retry) {
      w.retry = false;
      exec(w, id);
      return;
    }
    if (w.ext && o_.max_instructions > 0) ext_stepped_.push_back(id);  // the budget's poll reads its count
    if (!(w.ext ? w.ext->next(w.cur, now_) : w.prog.next(w.cur))) {
      exit_warp(id);
      return;
    }
    if (run_ && run_->barrier_slots() > slots_) grow_slots(run_->barrier_slots());
    w.status = WarpStatus::Blocked;
    ++w.ops;
    if (o_.interp || o_.replay) {  // the interpreter fetches and dispatches the op before it takes effect
      double at = now_ + (o_.interp ? jit(interp_dispatch_ns(w.cur.kind) + interp_contention_ns(w)) : 0.0);
      if (o_.replay) {
        const size_t wi = static_cast<size_t>(w.cta) * static_cast<size_t>(wpc_) + static_cast<size_t>(w.warp);
        const uint64_t i = o_.replay->offsets[wi] + static_cast<uint64_t>(w.ops - 1);
        if (wi + 1 < o_.replay->offsets.size() && i < o_.replay->offsets[wi + 1] && o_.replay->begin_ns[i] >= 0) {
          double noise = 0;
          if (o_.replay->noise_ns > 0)
            noise = std::uniform_real_distribution<double>(-o_.replay->noise_ns, o_.replay->noise_ns)(rng_);
          // Stamps count from the device's first op; the model's first op is at the interpreter's start.
          const double start = o_.interp ? o_.interp->start_ns : 0.0;
          at = std::max(now_, start + o_.replay->begin_ns[i] + noise + (o_.interp ? interp_dispatch_ns(w.cur.kind) : 0.0));
        }
      }
      w.retry = true;
      push(at, EventKind::WarpStep, id);
      return;
    }
    exec(w, id);
  }

  // Every store of the warp that no wait_group has retired by `now`, oldest first; `committed` is
  // false for the open group's, which no wait_group can cover.
  template <class Fn>
  static void for_each_unretired_store(const WarpRt& w, double now, Fn&& fn) {
    for (const auto& g : w.retiring)
      if (g.retired_at > now)
        for (const auto& st : g.stores) fn(st, true);
    for (const auto& g : w.groups)
      for (const auto& st : g.stores) fn(st, true);
    for (const auto& st : w.open.stores) fn(st, false);
  }

  // The warp's newest store from a staging buffer that no wait_group of it has retired yet.
  static const WarpRt::PendingStore* pending_store(const WarpRt& w, int64_t stage_key, double now) {
    const WarpRt::PendingStore* newest = nullptr;
    for_each_unretired_store(w, now, [&](const WarpRt::PendingStore& st, bool) {
      if (st.stage_key == stage_key) newest = &st;
    });
    return newest;
  }

  // A store from the staging buffer not yet retired in this CTA: the writing warp's own first (the
  // usual bug), then any other warp's (one elected warp stores what all warps wrote).
  std::pair<const WarpRt::PendingStore*, const WarpRt*> pending_store_in_cta(const WarpRt& w, int64_t stage_key) const {
    if (const auto* ps = pending_store(w, stage_key, now_)) return {ps, &w};
    const uint32_t first = cta(w.cta).first_warp;
    for (uint32_t i = first; i < first + static_cast<uint32_t>(wpc_); ++i)
      if (const auto* ps = pending_store(warps_[i], stage_key, now_)) return {ps, &warps_[i]};
    return {nullptr, nullptr};
  }

  double interp_contention_ns(const WarpRt& w) const {
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

  double interp_dispatch_ns(OpKind k) const {
    const model::InterpreterCost& c = *o_.interp;
    const double stamp = o_.interp_timestamps ? c.timestamp_ns : 0.0;
    switch (k) {
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

  void exec(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    const double issue = jit(tm_.op_issue_ns);
    switch (op.kind) {
      case OpKind::Compute: {
        const double d = jit(static_cast<double>(op.a));
        double begin = now_;
        if (op.b == 1) {  // instructions: its sub-partition issues them after those already queued
          double& slot = sms_[static_cast<size_t>(cta(w.cta).sm)].issue_free[w.warp % 4];
          begin = std::max(begin, slot);
          slot = begin + d;
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
        if (op.a != 0 && op.a != 1)
          return fault("bad_operand", &w, op.site, "test_wait parity " + std::to_string(op.a) + " is not 0 or 1");
        const bool got = mbar_parity_passed(b, op.a);
        if (op.flags & kFlagAnswer) {
          w.ext->answer(got);
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
          if (op.flags & kFlagAnswer) w.ext->answer(cta(target).bars[s].completed & 1);  // the token: the phase it arrived in
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
        if (r.violation == MbarViolation::CountRange)
          return fault("count_range", &w, op.site, "init count " + std::to_string(op.a) + " is outside 1 .. 2^20-1");
        c.fenced[s] = c.visible[s] = 0;
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
        if (op.a <= 0 || op.a % 16 != 0)
          return fault("bad_operand", &w, op.site, "bulk store of " + std::to_string(op.a) + " bytes: sizes must be positive multiples of 16");
        const double read_done = now_ + jit(tm_.tma_latency_ns * 0.25) + static_cast<double>(op.a) / tm_.smem_bytes_per_ns;
        const double start = std::max(read_done, stores_free_);
        stores_free_ = start + static_cast<double>(op.a) / tm_.hbm_bytes_per_ns;
        w.open.read_done = std::max(w.open.read_done, read_done);
        w.open.write_done = std::max(w.open.write_done, stores_free_);
        w.open.stores.push_back({op.b, op.site});
        dram_busy_ += static_cast<double>(op.a) / tm_.hbm_bytes_per_ns;
        l2_.write(op.box, op.a);  // write-back: the box is held, its bytes still go to the DRAM
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
        if (op.a < 0 || op.a > 63)
          return fault("bad_operand", &w, op.site, "wait_group " + std::to_string(op.a) + " is outside 0..63");
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
                       "staging buffer " + std::to_string(op.b) + " of " + k_.pipelines[static_cast<size_t>(op.a)].name +
                           " is written while " + (by == &w ? "no wait_group.read of this warp" : "no wait_group.read of warp " + std::to_string(by->warp)) +
                           " covers the bulk store from it at line " + std::to_string(k_.sites[ps->site].loc.line),
                       {"wait_group.read must cover every store from this buffer before it is rewritten: index buffers by a "
                        "state that runs on across tiles, or keep the number of staging buffers dividing the sub-tiles"}))
          return;
        push(now_ + issue, EventKind::WarpStep, id);
        return;
      }
      case OpKind::MmaCommitGroup:
        w.mma_groups.push_back(w.mma_open_done);
        w.mma_open_done = 0;
        push(now_ + issue, EventKind::WarpStep, id);
        return;
      case OpKind::MmaWaitGroup: {
        if (op.a < 0 || op.a > 7)
          return fault("bad_operand", &w, op.site, "wgmma.wait_group " + std::to_string(op.a) + " is outside 0..7");
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
      case OpKind::Fault: {
        auto [kind, message] = w.ext->fault();
        return fault(kind, &w, op.site, std::move(message));
      }
      case OpKind::ClcTryCancel: return do_try_cancel(w, id);
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
          cta(w.cta).cluster_synced = true;
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

  uint32_t slot(const BarRef& r) const { return barrier_slot(k_, r.array, r.index); }

  static std::string fmt_ns(double ns) { return std::to_string(static_cast<int64_t>(ns)) + " ns"; }

  // A wait whose end is already known (bulk groups, tcgen05.wait): account it, resume then.
  void timed_block(WarpRt& w, uint32_t id, double until) {
    w.block = Block::Timed;
    add_role_wait(w, until - now_);
    if (o_.record_trace) span(w, now_, until, wait_label(w), true);
    w.block = Block::None;
    push(until + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
  }

  int peer_cta(int c) const { return cluster_of(c) * csize_ + ((c % csize_) ^ 1); }

  // All tcgen05 instructions of a kernel use one cta_group.
  bool check_cta_group(WarpRt& w, const Op& op) {
    const int g = (op.flags & kFlagCtaGroup2) ? 2 : 1;
    if (g == 2 && csize_ % 2 != 0) {
      fault("bad_operand", &w, op.site, "cta_group::2 needs clusters of an even size, this kernel has " + std::to_string(csize_));
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

  void do_mma(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    if (op.flags & kFlagWgmma) return do_wgmma(w, id);
    if (!check_cta_group(w, op)) return;
    const MmaShape sh = unpack_mma(op.a);
    const int g = (op.flags & kFlagCtaGroup2) ? 2 : 1;
    if (std::string why = model::mma_shape_error(sh.kind, sh.m, sh.n, sh.k, g); !why.empty())
      return fault("bad_mma_shape", &w, op.site, "tcgen05.mma kind::" + std::string(model::mma_kind_name(sh.kind)) + " " +
                                                   std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k) + ": " + why);
    const double rate = k_.arch->mma_flops_per_clk[static_cast<size_t>(sh.kind)] * tm_.clock_ghz;  // FLOP/ns per SM
    if (rate <= 0) return fault("bad_operand", &w, op.site, "this architecture has no tcgen05.mma");
    // Under cta_group::2 each SM of the pair computes M/2 rows.
    const double per = 2.0 * (sh.m / g) * sh.n * sh.k / rate;
    const double dur = per * static_cast<double>(op.b);
    SmRt& a = sms_[static_cast<size_t>(cta(w.cta).sm)];
    SmRt* b = g == 2 ? &sms_[static_cast<size_t>(cta(peer_cta(w.cta)).sm)] : nullptr;
    const double issue = jit(tm_.mma_issue_ns) * static_cast<double>(op.b);
    double start = std::max(now_ + tm_.mma_issue_ns, a.tc_free);
    if (b) start = std::max(start, b->tc_free);
    const double end = start + dur;
    a.tc_free = end;
    a.tc_busy += dur;
    if (b) {
      b->tc_free = end;
      b->tc_busy += dur;
    }
    w.tc_done = std::max(w.tc_done, end);
    w.mma_issued += op.b;
    if (o_.record_trace)
      res_.spans.push_back(TraceSpan{w.cta, -2, start, end, op.site,
                                     "mma " + std::string(model::mma_kind_name(sh.kind)) + " " + std::to_string(sh.m) + "x" +
                                         std::to_string(sh.n) + "x" + std::to_string(sh.k) + " x" + std::to_string(op.b), false});
    push(now_ + issue, EventKind::WarpStep, id);
  }

  // wgmma.mma_async: this warp's share (a quarter of the warpgroup's M rows) on its SM's tensor pipe,
  // in issue order with everything else on that pipe; its group is done when its last MMA is.
  void do_wgmma(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    const MmaShape sh = unpack_mma(op.a);
    const double rate = k_.arch->wgmma_flops_per_clk[static_cast<size_t>(sh.kind)] * tm_.clock_ghz;  // FLOP/ns per SM
    if (rate <= 0) return fault("bad_operand", &w, op.site, "this architecture has no wgmma of kind " + std::string(model::mma_kind_name(sh.kind)));
    const double dur = 2.0 * sh.m * sh.n * sh.k / rate * static_cast<double>(std::max<int64_t>(1, op.b));
    SmRt& sm = sms_[static_cast<size_t>(cta(w.cta).sm)];
    const double start = std::max(now_ + tm_.op_issue_ns, sm.tc_free);
    sm.tc_free = start + dur;
    sm.tc_busy += dur;
    w.mma_open_done = std::max(w.mma_open_done, sm.tc_free);
    if (o_.record_trace)
      res_.spans.push_back(TraceSpan{w.cta, -2, start, sm.tc_free, op.site,
                                     "wgmma " + std::to_string(sh.m) + "x" + std::to_string(sh.n) + "x" + std::to_string(sh.k), false});
    push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
  }

  // tcgen05.commit: one arrival per CTA of the mask once this warp's earlier tcgen05 ops are done.
  void do_commit(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    if (!check_cta_group(w, op)) return;
    if (op.b < 0 || (op.b >> csize_) != 0)
      return fault("bad_operand", &w, op.site, "commit multicast mask " + std::to_string(op.b) + " names ranks outside a cluster of " + std::to_string(csize_));
    int64_t mask = op.b;
    // Assumption (FA4): an empty commit group under cta_group::2 signals only the issuing CTA.
    // "The same barrier array" (docs/semantics.md): a PTX kernel has no arrays, so there it is the
    // same barrier.
    const uint32_t group = k_.external ? (uint32_t{1} << 31) | op.bar.index : op.bar.array;
    auto mark = std::find_if(w.commit_marks.begin(), w.commit_marks.end(), [&](auto& m) { return m.first == group; });
    if (mark == w.commit_marks.end()) mark = w.commit_marks.insert(w.commit_marks.end(), {group, 0});
    const bool empty = w.mma_issued == mark->second;
    mark->second = w.mma_issued;
    if (empty && (op.flags & kFlagCtaGroup2) && o_.empty_commit_local) mask = 0;
    const double at = std::max(now_ + jit(tm_.op_issue_ns), w.tc_done);
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
           {"this warp issued no tcgen05.mma since its previous commit to " + (k_.external ? bar_name(s) : k_.barriers[op.bar.array].name)});
    push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
  }

  void do_alloc(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    if (!check_cta_group(w, op)) return;
    CtaRt& c = cta(w.cta);
    const int64_t cols = op.a;
    if (cols < 32 || cols > 512 || (cols & (cols - 1)) != 0)
      return fault("tmem_bad_alloc", &w, op.site, "tcgen05.alloc of " + std::to_string(cols) + " columns: it must be a power of two in 32..512");
    if (c.tmem_relinquished)
      return fault("tmem_bad_alloc", &w, op.site, "tcgen05.alloc after tcgen05.relinquish_alloc_permit in this CTA");
    if (c.tmem_last_alloc != 0 && cols > c.tmem_last_alloc)
      return fault("tmem_bad_alloc", &w, op.site, "tcgen05.alloc of " + std::to_string(cols) + " columns after one of " +
                                                    std::to_string(c.tmem_last_alloc) + ": successive allocations in a CTA must not grow");
    if ((op.flags & kFlagCtaGroup2) && !c.cluster_synced)
      return fault("tmem_alloc_unsynced", &w, op.site,
                   "cta_group::2 tcgen05.alloc before CTA " + std::to_string(w.cta) + " has completed a cluster barrier: the peer CTA is not known to be running",
                   {"CUTLASS syncs the cluster (cluster_arrive + cluster_wait) before a 2-CTA allocation"});
    SmRt& sm = sms_[static_cast<size_t>(c.sm)];
    if (sm.tmem_free >= cols && sm.alloc_waiters.empty()) {
      grant_alloc(w, cols);
      push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
      return;
    }
    w.block = Block::Tmem;
    w.block_since = now_;
    sm.alloc_waiters.push_back(id);
  }

  // Cluster launch control: the hardware hands out the grid's clusters not yet launched, in launch
  // order; a cancelled cluster never launches, and the warp that cancelled it does its work. The
  // response lands after the TMA round trip (assumption: CLC has no published latency of its own).
  void do_try_cancel(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    if (!run_) return fault("bad_operand", &w, op.site, "clusterlaunchcontrol.try_cancel needs a kernel's own code (PTX)");
    int cancelled = -1;
    if (next_cluster_ < static_cast<int>(clusters_.size())) cancelled = next_cluster_++;
    const uint32_t s = slot(op.bar);
    const int base = cluster_of(w.cta) * csize_;
    const double at = now_ + jit(tm_.tma_latency_ns);
    for (int r = 0; r < csize_; ++r) {
      const int dst = op.b ? base + r : (r == 0 ? w.cta : -1);
      if (dst < 0) continue;
      run_->clc_response(dst, static_cast<uint32_t>(op.a), cancelled);
      push(at, EventKind::RemoteOp, static_cast<uint32_t>(dst), s, op.site, id, OpKind::CompleteTx, 16);
    }
    push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
  }

  void grant_alloc(WarpRt& w, int64_t cols) {
    CtaRt& c = cta(w.cta);
    SmRt& sm = sms_[static_cast<size_t>(c.sm)];
    // The first column: the SM's columns are modelled as a count, so the address is where a
    // first-fit allocator would put it with no holes (a kernel's verdict never depends on it).
    if ((w.cur.flags & kFlagAnswer) && w.ext) w.ext->answer(k_.arch->cap.tmem_columns - sm.tmem_free);
    sm.tmem_free -= cols;
    if (c.tmem_held == 0) c.tmem_since = now_;
    c.tmem_held += cols;
    c.tmem_last_alloc = cols;
  }

  void do_dealloc(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    if (!check_cta_group(w, op)) return;
    CtaRt& c = cta(w.cta);
    if (op.a <= 0 || op.a > c.tmem_held)
      return fault("tmem_bad_alloc", &w, op.site, "tcgen05.dealloc of " + std::to_string(op.a) + " columns while this CTA holds " + std::to_string(c.tmem_held));
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
    push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
  }

  bool check_local(WarpRt& w, const Op& op, const char* what) {
    if (op.bar.rank != BarRef::kOwnCta && cta_of_rank(w.cta, op.bar.rank) != w.cta) {
      fault("remote_wait", &w, op.site,
            std::string(what) + " on " + bar_name(slot(op.bar)) + " of cluster rank " + std::to_string(op.bar.rank) +
                ": only the CTA's own barriers can be waited on or initialised");
      return false;
    }
    return true;
  }

  void do_wait(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    if (!check_local(w, op, "wait")) return;
    const uint32_t s = slot(op.bar);
    CtaRt& c = cta(w.cta);
    MBarrier& b = c.bars[s];
    if (!b.initialised)
      return fault("uninit", &w, op.site, "wait on " + bar_name(s) + ", which was never initialised");
    if (op.a != 0 && op.a != 1)
      return fault("bad_operand", &w, op.site, "wait parity " + std::to_string(op.a) + " is not 0 or 1");
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
    if (mbar_parity_passed(b, op.a)) {
      push(now_ + jit(tm_.op_issue_ns), EventKind::WarpStep, id);
      return;
    }
    w.block = Block::Mbarrier;
    w.block_since = now_;
    c.waiters[s].push_back(id);
  }

  void do_tma(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    if (op.a <= 0 || op.a % 16 != 0)
      return fault("bad_operand", &w, op.site, "TMA of " + std::to_string(op.a) + " bytes: sizes must be positive multiples of 16");
    if (op.b < 0 || (op.b >> csize_) != 0 || ((op.flags & kFlagMulticast) && op.b == 0))
      return fault("bad_operand", &w, op.site, "multicast mask " + std::to_string(op.b) + (op.b == 0 ? " names no CTA" : " names ranks outside a cluster of " + std::to_string(csize_)));
    const uint32_t s = slot(op.bar);
    const double issued = now_ + jit(tm_.tma_issue_ns);
    // The box is looked up once, whatever its destinations (a multicast copy is one read): a hit is
    // served by the L2 (no DRAM bytes, no loaded DRAM latency; the same round trip otherwise: the native
    // probe's 4 KiB copy took 425.8 ns from the L2, 435 from the DRAM), a miss by the DRAM.
    const bool from_l2 = l2_.read(op.box, op.a);
    if (!from_l2) dram_busy_ += static_cast<double>(op.a) / tm_.hbm_bytes_per_ns;
    const double latency = jit(tm_.tma_latency_ns);
    const double loaded = from_l2 ? 0.0 : count_in_flight(op.a);
    const int base = cluster_of(w.cta) * csize_;
    const int receivers = op.b == 0 ? 1 : std::popcount(static_cast<uint64_t>(op.b));
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
      // The destination SM takes its copies in one after another, each no faster than
      // bytes / max(tma_copy_min_ns, bytes / sm_copy_bytes_per_ns) (native H100 probe: one SM cannot
      // absorb a copy at the whole device's DRAM rate, and back-to-back small copies land ~70 ns apart
      // whatever their size), and shares the DRAM with the other SMs (sim/dram.hpp). A multicast copy
      // is read once: each of its k destinations takes a k-th of its bytes from the DRAM.
      const double dram_bytes = static_cast<double>(op.a) / receivers;
      const double ingest_ns = std::max(tm_.tma_copy_min_ns, static_cast<double>(op.a) / tm_.sm_copy_bytes_per_ns);
      const double cap = tm_.sm_copy_bytes_per_ns > 0 ? dram_bytes / ingest_ns : 0;
      ++dc.tma_inflight;
      dc.inflight_site = op.site;
      dc.inflight_warp = id;
      dram_add(cta(dst_data).sm, cap,
               DramCopy{.store = false, .from_l2 = from_l2, .target = static_cast<uint32_t>(dst), .slot = s, .site = op.site, .from = id, .bytes = op.a,
                        .phase = dc.bars[s].completed, .dram_bytes = dram_bytes,
                        // it enters the DRAM with the op; the issue cost delays its landing instead
                        .latency = latency + (issued - now_) + straggle(), .loaded = loaded, .span = span});
    }
    push(now_ + jit(tm_.tma_issue_ns), EventKind::WarpStep, id);
  }

  // ------------------------------------------------------------- the DRAM
  // What a copy (or a store) waits on in the DRAM queue, and what happens when the DRAM has served it.
  struct DramCopy {
    bool store = false;  // a bulk store takes bandwidth; its completion is timed by the store itself
    bool from_l2 = false;  // an L2 hit: served by l2_hits_ instead of the DRAM
    uint32_t target = 0, slot = 0, site = 0, from = 0;
    int64_t bytes = 0, phase = 0;
    double dram_bytes = 0;
    double entered = 0, unloaded_ns = 0, latency = 0, loaded = 0;  // entered, unloaded_ns: set by dram_add
    size_t span = SIZE_MAX;  // its trace span, stretched to the landing
  };
  // Queues `c` at SM `sm`'s share of the DRAM (or of the L2, for a hit), no faster than `cap` bytes/ns
  // (0: no cap), from now.
  void dram_add(int sm, double cap, DramCopy c) {
    c.entered = now_;
    c.unloaded_ns = cap > 0 ? c.dram_bytes / cap : 0;  // its own transfer, unshared
    const uint32_t token = take_slot(copies_, free_copies_);
    copies_[token] = c;
    DramQueue& q = c.from_l2 ? l2_hits_ : dram_;
    q.advance(now_);
    q.add(sm, c.dram_bytes, cap, token);
    schedule_dram();
  }
  // Keeps a finish event pending no later than the DRAM's next finish. A change that puts the next
  // finish later leaves the earlier event pending (it fires, finds nothing done and schedules again),
  // so only changes that bring a finish forward cost an event.
  void schedule_dram() {
    const double t = std::min(dram_.next_done(), l2_hits_.next_done());
    if (t < dram_event_at_) {
      dram_event_at_ = t;
      push(t, EventKind::DramDone, 0);
    }
  }
  // The DRAM has served copies: each lands after the TMA latency, and after the loaded latency
  // where the DRAM queue has not already made it wait that long (Timing::dram_loaded_*).
  void dram_done(const Event& e) {
    if (e.t == dram_event_at_) dram_event_at_ = std::numeric_limits<double>::infinity();
    dram_.advance(now_);
    l2_hits_.advance(now_);
    done_tokens_.clear();
    dram_.take_done(done_tokens_);
    l2_hits_.take_done(done_tokens_);
    for (uint32_t t : done_tokens_) {
      const DramCopy c = copies_[t];
      free_copies_.push_back(t);
      if (c.store) continue;
      const double waited = now_ - c.entered - c.unloaded_ns;  // beyond its own transfer: sharing
      const double at = now_ + c.latency + std::max(0.0, c.loaded - waited);
      if (loaded_tracked() && !c.from_l2) dram_inflight_.push({at, c.dram_bytes});
      push(at, EventKind::TxLand, c.target, c.slot, c.site, c.from, OpKind::CompleteTx, c.bytes, c.phase);
      if (c.span != SIZE_MAX) res_.spans[c.span].end_ns = std::max(res_.spans[c.span].end_ns, at);
    }
    schedule_dram();
  }

  // Counts a copy of `bytes` issued now among the bytes in flight (issued, not yet landed,
  // device-wide; a multicast copy is read once and counts once) and returns its loaded DRAM latency
  // (Timing::dram_loaded_*) from them, its own included. dram_done records when the bytes land.
  bool loaded_tracked() const { return tm_.dram_loaded_ns_per_mib > 0; }
  double count_in_flight(int64_t bytes) {
    if (!loaded_tracked()) return 0;
    while (!dram_inflight_.empty() && dram_inflight_.top().first <= now_) {
      dram_inflight_bytes_ -= dram_inflight_.top().second;
      dram_inflight_.pop();
    }
    dram_inflight_bytes_ += static_cast<double>(bytes);
    const double mib = dram_inflight_bytes_ / (1024.0 * 1024.0);
    return std::min(tm_.dram_loaded_max_ns, tm_.dram_loaded_ns_per_mib * std::max(0.0, mib - tm_.dram_loaded_knee_mib));
  }

  void do_named(WarpRt& w, uint32_t id) {
    const Op& op = w.cur;
    const bool sync = op.kind == OpKind::NamedSync;
    if (op.a < 0 || op.a >= kNamedBarriers)
      return fault("bad_operand", &w, op.site, "named barrier id " + std::to_string(op.a) + " is outside 0..15");
    if (op.b <= 0 || op.b % 32 != 0 || op.b > k_.launch.threads)
      return fault("bad_operand", &w, op.site, "named barrier thread count " + std::to_string(op.b) +
                                                   " must be a positive multiple of 32 and at most the CTA's " +
                                                   std::to_string(k_.launch.threads) + " threads");
    NamedRt& nb = cta(w.cta).named[op.a];
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

  void cluster_try_complete(int cl) {
    ClusterRt& c = clusters_[static_cast<size_t>(cl)];
    if (c.live == 0 || c.arrived < c.live) return;
    c.arrived = 0;
    ++c.phase;
    // A completed cluster barrier publishes every fenced mbarrier init in the cluster.
    for (int r = 0; r < csize_; ++r) {
      CtaRt& ct = cta(cl * csize_ + r);
      for (uint32_t s = 0; s < slots_; ++s)
        if (ct.fenced[s]) ct.visible[s] = 1;
        else if (ct.bars[s].initialised && !ct.visible[s] && k_.external) ct.visible[s] = 2;
    }
    const double at = now_ + jit(tm_.cluster_barrier_ns);
    c.release_at = at;
    std::vector<uint32_t> ws;
    ws.swap(c.waiters);
    for (uint32_t x : ws) {
      cta(warps_[x].cta).cluster_synced = true;
      resume(warps_[x], x, o_.jitter > 0 ? now_ + jit(tm_.cluster_barrier_ns) : at);
    }
  }

  void violation(MbarViolation v, int c, uint32_t s, OpKind kind, int64_t value, uint32_t site, WarpRt* w) {
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
        return fault("tx_range", w, site, std::string(op_name(kind)) + " " + std::to_string(value) + " on " + where +
                                              " takes tx outside -(2^20-1) .. 2^20-1", {state_note(b)});
      case MbarViolation::CountRange:
        return fault("count_range", w, site, std::string(op_name(kind)) + " count " + std::to_string(value) + " on " + where + " is outside its range", {state_note(b)});
      case MbarViolation::Uninit:
        return fault("uninit", w, site, std::string(op_name(kind)) + " on " + where + ", which was never initialised");
      case MbarViolation::Reinit: break;
    }
  }

  // Threads an Arrive stands for (op.hpp): a warp's arrive lands as one arrival per thread.
  static int64_t threads_of(const Op& op) { return op.kind == OpKind::Arrive && op.b > 1 ? op.b : 1; }

  // Applies an mbarrier operation on CTA `c`'s slot `s`, wakes waiters, reports violations.
  void apply(int c, uint32_t s, OpKind kind, int64_t value, uint32_t site, WarpRt* w, int64_t threads = 1) {
    CtaRt& ct = cta(c);
    MBarrier& b = ct.bars[s];
    MbarOutcome r;
    if (kind == OpKind::ArriveExpectTx || kind == OpKind::ExpectTx) ct.expect_site[s] = site;
    if (w && kind != OpKind::ExpectTx) ct.last[s] = LastArrival{w->cta, w->warp, site};
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

  // Can a copy of `bytes` have landed exactly `x` of them at some moment? It completes in 32-byte
  // sectors of its source, in no fixed order; a copy of an odd number of 16-byte halves ends in a
  // 16-byte half-sector that may come at any point. (H100, kernels/interp/tmaprobe.cu case 3.)
  static bool part_can_end_at(int64_t x, int64_t bytes) {
    return x % 32 == 0 || (x % 16 == 0 && bytes % 32 == 16);
  }

  void land(const Event& e) {
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
        (o_.parts_choice ? o_.parts_choice(PartsChoice{static_cast<int>(e.target), e.slot, b.completed}) : (rng_() & 1))) {
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
  bool init_visible(CtaRt& c, uint32_t s, bool remote, const WarpRt& w, uint32_t site) {
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
  void deliver(const Event& e, const std::string& what) {
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

  void exit_warp(uint32_t id) {
    WarpRt& w = warps_[id];
    w.status = WarpStatus::Exited;
    w.exited_at = now_;
    CtaRt& ct = cta(w.cta);
    ClusterRt& cl = clusters_[static_cast<size_t>(cluster_of(w.cta))];
    --cl.live;
    cluster_try_complete(cluster_of(w.cta));
    if (--ct.live > 0) return;
    // The whole CTA exits.
    ct.exited = true;
    // Reported at the copy still in flight, which is what the fix is about.
    if (ct.tma_inflight > 0)
      return fault("exit_inflight", &warps_[ct.inflight_warp], ct.inflight_site,
                   "CTA " + std::to_string(w.cta) + " exits with " + std::to_string(ct.tma_inflight) +
                       " TMA load(s) still landing in its shared memory",
                   {"the last warp of the CTA exited at " + std::string(op_name(w.cur.kind)) + " (warp " + std::to_string(w.warp) +
                    "); wait on the load's barrier before exiting"});
    // A store no wait_group retired may still read the CTA's shared memory when it is handed to the
    // next CTA: an error even in a run where the store happened to finish first.
    int unretired = 0, uncommitted = 0;
    const WarpRt::PendingStore* first = nullptr;  // reported: the fix goes at a store
    uint32_t store_warp = 0;
    for (uint32_t i = ct.first_warp; i < ct.first_warp + static_cast<uint32_t>(wpc_); ++i)
      for_each_unretired_store(warps_[i], now_, [&](const WarpRt::PendingStore& st, bool committed) {
        ++(committed ? unretired : uncommitted);
        if (!first) first = &st, store_warp = i;
      });
    if (first) {
      std::string msg = "CTA " + std::to_string(w.cta) + " exits with " + std::to_string(unretired + uncommitted) +
                        " bulk store(s) that no wait_group waited for: they may still read its shared memory";
      std::vector<std::string> notes{uncommitted ? std::to_string(uncommitted) + " of them never committed (commit_group), so no wait_group can cover them"
                                                 : "a wait_group 0 read (or PipelineTmaStore's producer_tail) before the CTA exits keeps the buffer alive until the store has read it"};
      if (!o_.store_outlives_exit.value_or(k_.arch->has_tcgen05))
        return fault("exit_inflight", &warps_[store_warp], first->site, std::move(msg), std::move(notes));
      if (!warned_store_exit_) {  // once per run: CUTLASS's sm100 epilogues do this in every CTA
        warned_store_exit_ = true;
        notes.push_back("assumption store-outlives-exit: the hardware keeps the CTA's shared memory until its stores have read it");
        warn("exit_inflight", w.cta, warps_[store_warp].warp, first->site, std::move(msg), std::move(notes));
      }
    }
    for (uint32_t s = 0; s < slots_; ++s) {
      const MBarrier& b = ct.bars[s];
      if (b.initialised && b.tx > 0 && b.pending == 0)
        warn("dangling_expect_tx", w.cta, -1, ct.expect_site[s],
             bar_name(s) + " of CTA " + std::to_string(w.cta) + " is left expecting " + std::to_string(b.tx) +
                 " bytes that never came (harmless at exit; a hazard if the barrier is reused)",
             {state_note(b)});
    }
    if (ct.tmem_held > 0)
      return fault("tmem_leak", &w, w.cur.site,
                   "CTA " + std::to_string(w.cta) + " exits holding " + std::to_string(ct.tmem_held) +
                       " TMEM columns on SM " + std::to_string(ct.sm),
                   {"every tcgen05.alloc needs its tcgen05.dealloc before the CTA exits; assumption: later "
                    "allocations on that SM would block forever"});
    --sms_[static_cast<size_t>(ct.sm)].resident;
    launch_pending(now_);
  }

  void finish() {
    res_.end_ns = now_;
    if (o_.record_trace)  // waits that never return still get their span, up to the end
      for (const WarpRt& w : warps_)
        if (w.status == WarpStatus::Blocked && w.block != Block::None)
          res_.spans.push_back(TraceSpan{w.cta, w.warp, w.block_since, now_, w.cur.site, wait_label(w) + " (never returns)", true});
    res_.sms_used = sms_used_;
    res_.dram_busy_ns = dram_busy_;
    res_.l2_hit_bytes = l2_.hit_bytes();
    res_.l2_miss_bytes = l2_.miss_bytes();
    for (const SmRt& sm : sms_) res_.tensor_busy_ns += sm.tc_busy;
    res_.cta_group = observed_cta_group_;
    if (run_) {
      for (uint32_t s = 0; s < slots_; ++s) res_.barrier_names.push_back(run_->barrier_name(s));
      for (const WarpRt& w : warps_) res_.instructions += w.ext->instructions();
    }
    bool waiting = false;
    for (WarpRt& w : warps_)
      if (w.status == WarpStatus::Blocked && w.block != Block::None) waiting = true;
    const bool unlaunched = next_cluster_ < static_cast<int>(clusters_.size());
    if (fatal_) res_.verdict = Verdict::Error;
    else if (stopped_) res_.verdict = Verdict::Stopped;
    else if (waiting || unlaunched) res_.verdict = Verdict::Hang;
    else res_.verdict = Verdict::Ok;
    std::stable_sort(res_.findings.begin(), res_.findings.end(),
                     [](const Finding& a, const Finding& b) { return a.fatal > b.fatal; });
    res_.warps.reserve(warps_.size());
    for (const WarpRt& w : warps_)
      res_.warps.push_back(WarpEnd{w.cta, w.warp, w.role, w.status, w.cur.site, w.cur, w.ops, w.exited_at});
    res_.barriers.reserve(ctas_.size());
    for (const CtaRt& c : ctas_) {
      std::vector<BarrierState> v;
      v.reserve(c.bars.size());
      for (size_t i = 0; i < c.bars.size(); ++i) {
        const MBarrier& b = c.bars[i];
        v.push_back(BarrierState{b.initialised, b.completed, b.pending, b.expected, b.tx, c.last[i].cta, c.last[i].warp, c.last[i].site});
      }
      res_.barriers.push_back(std::move(v));
    }
    for (size_t r = 0; r < k_.roles.size(); ++r)
      for (size_t col = 0; col < k_.barriers.size() + 3; ++col) {
        const double ns = role_wait_ns_[r * (k_.barriers.size() + 3) + col];
        if (ns <= 0) continue;
        std::string what = col < k_.barriers.size() ? k_.barriers[col].name
                           : col == k_.barriers.size() ? "named barriers"
                           : col == k_.barriers.size() + 1 ? "cluster barrier" : "bulk groups, tcgen05.wait and TMEM allocation";
        res_.role_waits.push_back({static_cast<int>(r), std::move(what), ns});
      }
    if (res_.verdict == Verdict::Hang || res_.verdict == Verdict::Stopped) {
      HangInput in{k_, res_, unlaunched ? static_cast<int>(clusters_.size()) - next_cluster_ : 0, {}, {}, {}, {}};
      for (const CtaRt& c : ctas_) {
        in.sm_of_cta.push_back(c.started ? c.sm : -1);
        in.tmem_held.push_back(c.tmem_held);
      }
      for (const SmRt& sm : sms_) in.tmem_free.push_back(sm.tmem_free);
      for (const WarpRt& w : warps_) {
        if (w.status == WarpStatus::Exited) continue;
        HangInput::Warp hw{w.cta, w.warp, w.role, w.cur, w.prog, WaitKind::None, 0, 0, 0, false};
        if (w.block == Block::Mbarrier) {
          hw.wait = WaitKind::Mbarrier;
          hw.slot = slot(w.cur.bar);
        } else if (w.block == Block::Named) {
          hw.wait = WaitKind::Named;
          hw.named_arrived = cta(w.cta).named[w.cur.a].arrived;
        } else if (w.block == Block::Cluster) {
          hw.wait = WaitKind::Cluster;
        } else if (w.block == Block::Tmem) {
          hw.wait = WaitKind::Tmem;
        }
        for (int b = 0; b < kNamedBarriers; ++b) {
          const auto& ws = cta(w.cta).named[b].warps;
          if (std::find(ws.begin(), ws.end(), static_cast<uint32_t>(&w - warps_.data())) != ws.end())
            hw.named_arrived_mask |= 1u << b;
        }
        hw.cluster_arrived = w.cluster_arrived == clusters_[static_cast<size_t>(cluster_of(w.cta))].phase;
        in.warps.push_back(std::move(hw));
      }
      if (res_.verdict == Verdict::Stopped) describe_stop(in);
      else explain_hang(in);
    }
  }

  // The architecture's timing with the run's overrides.
  static model::Timing timing_of(const Kernel& k, const RunOptions& o) {
    model::Timing t = k.arch->time;
    for (const auto& [field, value] : o.timing_overrides) t.*field = value;
    return t;
  }
  // Unequal shares of a loaded DRAM (Timing::dram_share_spread, docs/semantics.md): SM i's weight,
  // spread evenly over [1 - s, 1 + s] along the golden-ratio sequence of SM ids. Neighbouring ids mix
  // fast and slow: the device's slow SMs change between machines, and the model claims only how slow
  // the slowest is.
  static std::vector<double> dram_weights(const model::Timing& t, int64_t sms) {
    std::vector<double> w(static_cast<size_t>(sms));
    for (size_t i = 0; i < w.size(); ++i)
      w[i] = 1.0 + t.dram_share_spread * (2.0 * std::fmod((static_cast<double>(i) + 0.5) * 0.6180339887498949, 1.0) - 1.0);
    return w;
  }

  const Kernel& k_;
  RunOptions o_;
  model::Timing tm_;
  std::mt19937_64 rng_;
  EventQueue q_;
  uint64_t seq_ = 0;
  double now_ = 0;
  double stores_free_ = 0;  // the stores' first-come queue to DRAM: busy until (their completion, not their share)
  DramQueue dram_;
  L2Cache l2_;          // which boxes the L2 holds (hit or miss)
  DramQueue l2_hits_;   // the L2's bandwidth, shared by the SMs as the DRAM's is
  double dram_event_at_ = std::numeric_limits<double>::infinity();  // the earliest DramDone pending
  // Copies in flight for the loaded latency: (landing time, bytes), earliest landing on top; the
  // bytes of copies the DRAM has not served yet are counted but have no landing time.
  using InflightCopy = std::pair<double, double>;
  std::priority_queue<InflightCopy, std::vector<InflightCopy>, std::greater<>> dram_inflight_;
  double dram_inflight_bytes_ = 0;
  std::vector<DramCopy> copies_;  // indexed by DRAM token
  std::vector<uint32_t> free_copies_, done_tokens_;
  std::unique_ptr<ExternalRun> run_;  // Kernel::external's state for this run
  bool fatal_ = false;
  bool stopped_ = false;  // the budget ran out (Verdict::Stopped)
  bool overshoot_warned_ = false;
  uint32_t slots_ = 0;
  std::vector<uint32_t> array_of_slot_;
  int nctas_ = 0, csize_ = 1, wpc_ = 1;
  std::vector<SmRt> sms_;
  int ctas_per_sm_ = 1;
  int sms_used_ = 0;
  int observed_cta_group_ = 0;   // cta_group of the kernel's first tcgen05 op
  double dram_busy_ = 0;
  int next_cluster_ = 0;
  bool warned_relaxed_init_ = false;
  bool warned_store_exit_ = false;
  std::vector<CtaRt> ctas_;
  std::vector<ClusterRt> clusters_;
  std::vector<WarpRt> warps_;
  std::vector<uint32_t> ext_stepped_;  // PTX warps stepped since the last budget poll (repeats allowed)
  uint64_t ext_executed_ = 0;          // their instructions as of that poll
  std::vector<double> role_wait_ns_;
  std::vector<std::vector<uint32_t>> wake_lists_;
  std::vector<uint32_t> free_wake_lists_;
  RunResult res_;
};

}  // namespace

namespace {

// 1234567 as "1,234,567".
std::string grouped(uint64_t v) {
  std::string s = std::to_string(v);
  for (int at = static_cast<int>(s.size()) - 3; at > 0; at -= 3) s.insert(static_cast<size_t>(at), ",");
  return s;
}

// Saturating: a hostile launch's product must not wrap around into a small number.
uint64_t mul_sat(uint64_t a, uint64_t b) { return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b; }
uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

std::string gigabytes(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", static_cast<double>(bytes) / 1e9);
  return buf;
}

}  // namespace

uint64_t RunFootprint::bytes() const {
  const uint64_t per_cta = add_sat(add_sat(kBytesPerCta, mul_sat(warps_per_cta, kBytesPerWarp)),
                                   mul_sat(barrier_elements, kBytesPerBarrierElement));
  const uint64_t extras = add_sat(extra_per_cta, mul_sat(warps_per_cta, extra_per_warp));
  const uint64_t live = live_ctas == 0 ? ctas : std::min(ctas, live_ctas);
  return add_sat(mul_sat(ctas, per_cta), mul_sat(live, extras));
}

std::string RunFootprint::refusal() const {
  const uint64_t need = bytes();
  if (need <= kLimitBytes) return {};
  std::string what = grouped(ctas) + " CTA" + (ctas == 1 ? "" : "s") + " x " + grouped(warps_per_cta) + " warp" + (warps_per_cta == 1 ? "" : "s");
  if (barrier_elements > 0) what += " and " + grouped(barrier_elements) + " barrier element" + (barrier_elements == 1 ? "" : "s") + " per CTA";
  return what + " need ~" + gigabytes(need) + " of simulator state; the limit is " + gigabytes(kLimitBytes) +
         " (fewer CTAs, a smaller barrier array, or a persistent launch: ctas = persistent)";
}

RunFootprint run_footprint(const Kernel& kernel) {
  RunFootprint f;
  f.ctas = static_cast<uint64_t>(std::max<int64_t>(0, kernel.launch.ctas));
  f.warps_per_cta = static_cast<uint64_t>(std::max(0, kernel.launch.warps()));
  for (const BarrierArray& a : kernel.barriers) f.barrier_elements = add_sat(f.barrier_elements, a.size);
  return f;
}

RunResult run(const Kernel& kernel, const RunOptions& options) {
  if (!kernel.arch) throw std::runtime_error("kernel has no architecture");
  // The front ends refuse such a launch at its line (verify/parser.cpp, verify/ptx/launch_resolve.cpp);
  // this is the last guard for kernels built elsewhere (generated protocols, tests).
  if (const std::string no = run_footprint(kernel).refusal(); !no.empty()) throw std::runtime_error(no);
  Engine e(kernel, options);
  return e.run();
}

}  // namespace pipesim::sim
