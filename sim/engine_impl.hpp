// The engine's runtime state and the Engine class, shared by the files that define its members
// (internal to sim/, not installed): engine.cpp runs the loop, launches, dispatches and finishes;
// engine_ops.cpp executes ops (exec and the do_* ops); engine_delivery.cpp models the DRAM and lands
// copies, delivers arrivals and applies mbarrier operations. Tiny hot members stay inline here.
#pragma once

#include "sim/engine.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "sim/dram.hpp"
#include "sim/event_queue.hpp"
#include "sim/l2.hpp"
#include "sim/slot_pool.hpp"
#include "sim/tensor_pipe.hpp"
#include "sim/untimed_tables.hpp"
#include "sim/explain.hpp"
#include "sim/explore.hpp"
#include "sim/lowering.hpp"
#include "sim/mbarrier.hpp"
#include "sim/rules.hpp"

namespace pipesim::sim::detail {

inline constexpr int kNamedBarriers = 16;

// The ops where schedules meet: mbarrier and named/cluster barrier operations, copies and commits.
// An untimed run stops a warp before each (sim/explore.hpp).
inline bool synchronises(OpKind k) {
  switch (k) {
    case OpKind::Wait: case OpKind::TestWait: case OpKind::Arrive: case OpKind::ArriveExpectTx: case OpKind::ExpectTx:
    case OpKind::CompleteTx: case OpKind::ArriveDrop: case OpKind::TmaLoad: case OpKind::NamedSync: case OpKind::NamedArrive:
    case OpKind::ClusterArrive: case OpKind::ClusterWait: case OpKind::Commit: case OpKind::ClcTryCancel:
    case OpKind::SmemStore: case OpKind::SmemLoad:  // a load's value and verdict depend on what came first
      return true;
    default:
      return false;
  }
}

enum class EventKind : uint8_t { WarpStep, WakeBatch, TxLand, RemoteOp, AsyncArrive, DramDone, CopyStart, WaitLimit };

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
                      // RemoteOp of an Arrive: the threads it stands for (threads_of); of a
                      // ClcTryCancel (a scenario's response): the smem cell it lands in
};
using EventQueue = sim::EventQueue<Event>;

// The owner of an external program's run (a PTX run with its warps and memory). Engines are copied
// only by the exhaustive search (sim/explore.hpp), which copies the run with them (ExternalRun::clone).
struct ClonedRun : std::unique_ptr<ExternalRun> {
  using std::unique_ptr<ExternalRun>::unique_ptr;
  using std::unique_ptr<ExternalRun>::operator=;
  ClonedRun() = default;
  ClonedRun(std::unique_ptr<ExternalRun> p) : std::unique_ptr<ExternalRun>(std::move(p)) {}
  ClonedRun(ClonedRun&&) noexcept = default;
  ClonedRun& operator=(ClonedRun&&) noexcept = default;
  ClonedRun(const ClonedRun& o) : std::unique_ptr<ExternalRun>(o ? o->clone() : nullptr) {}
  ClonedRun& operator=(const ClonedRun& o) {
    if (this != &o) this->reset(o ? o->clone().release() : nullptr);
    return *this;
  }
};

// An owned T that is copied with its owner (a deep copy), or absent. Holds what only timed runs use:
// an untimed run leaves it empty, so the exhaustive search's copies of runs do not copy it.
template <class T>
class CopiedBox {
 public:
  CopiedBox() = default;
  explicit CopiedBox(T value) : p_(std::make_unique<T>(std::move(value))) {}
  CopiedBox(const CopiedBox& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  CopiedBox& operator=(const CopiedBox& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  CopiedBox(CopiedBox&&) noexcept = default;
  CopiedBox& operator=(CopiedBox&&) noexcept = default;
  T* operator->() const { return p_.get(); }

 private:
  std::unique_ptr<T> p_;
};

// TmemPair: in a cta_group::2 tcgen05.alloc / dealloc, waiting for the pair peer's (sim/engine_tmem.cpp).
// Wgmma: in wgmma.mma_async, until the warpgroup's other warps have issued it too.
enum class Block : uint8_t { None, Mbarrier, Named, Cluster, Timed, Tmem, TmemPair, Wgmma };
inline constexpr uint32_t kNoWarp = UINT32_MAX;

// Where a site is, for a note: the kernel's source line (and its PTX line), or the scenario's line.
std::string site_text(const Kernel& k, uint32_t site);

struct LastArrival {
  int cta = -1, warp = -1;
  uint32_t site = 0;
};

// What a warp's future key (Engine::future_key) takes from the engine besides the warp: the next
// cluster to launch, the tcgen05 cta_group seen so far, the cluster's published inits.
struct FutureContext {
  int next_cluster = -1, cta_group = 0;
  uint64_t published = 0;
  bool operator==(const FutureContext&) const = default;
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
  // Per barrier slot, for the consumed-phase rule (mbar_poll, Engine::wait_passed): the completed
  // count at which this warp's last passed wait on it returned (-1: none), and whether the warp
  // released an mbarrier while that was its latest pass (releases_mbarrier in engine.cpp). Grows on
  // first use.
  struct ConsumedPhase { int64_t completed = -1; bool released = false; };
  std::vector<ConsumedPhase> consumed;
  int64_t last_pass_slot = -1;  // the slot of the warp's latest passed wait (-1: none yet)
  // The adversarial search (RunOptions::delays, on_sync): passes so far per site of this warp's
  // synchronising ops, and how late the copy or commit being issued lands. Empty / 0 without it.
  std::unordered_map<uint32_t, uint32_t> site_passes;
  double landing_delay = 0;
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
  bool external = false;  // the warp runs its own code (Kernel::external, Engine::ext); else `prog` runs
  // Values through shared memory (only when the kernel declares `smem`): the releases this warp made,
  // in order: an arrival on barrier `slot` of CTA `cta` that counts toward its completion
  // #`completion` (sim/engine_values.cpp, read_without_wait).
  struct Release { int cta; uint32_t slot; int64_t completion; };
  std::vector<Release> releases;
  std::vector<int64_t> loaded;  // the values its loads read, in order (WarpEnd::loaded)
  // Values derived from this warp alone, valid until a WarpList hands the warp out for writing.
  struct Kept { bool digest = false, key = false; };
  mutable Kept kept;
  // An untimed run's Engine::future_key of this warp and its entry in Engine::continuations_ (shared by
  // every copy of the run), as they were after event #future_key_at; the key, while kept.key and the
  // engine's part of it is still `key_context`.
  mutable uint64_t future_key_at = UINT64_MAX, future_key = 0;
  mutable FutureContext key_context;
  mutable ProgramPoint* point = nullptr;
  // This warp's part of the untimed run's state hash (Engine::state_hash), while kept.digest.
  mutable uint64_t digest = 0;
};

// The run's warps. Reaching a warp for writing (the non-const accessors) clears what it keeps
// (WarpRt::kept), so that the state hash and the future keys are computed again only for the warps an
// event may have changed: the search does both at every state it reaches, and most warps did not move
// since the last. Read through a const WarpList (or std::as_const) where nothing is written.
class WarpList {
 public:
  WarpRt& operator[](size_t i) {
    v_[i].kept = {};
    return v_[i];
  }
  const WarpRt& operator[](size_t i) const { return v_[i]; }
  size_t size() const { return v_.size(); }
  const WarpRt* data() const { return v_.data(); }
  std::vector<WarpRt>::const_iterator begin() const { return v_.begin(); }
  std::vector<WarpRt>::const_iterator end() const { return v_.end(); }
  // Every warp, for writing.
  std::vector<WarpRt>& all() {
    for (WarpRt& w : v_) w.kept = {};
    return v_;
  }
  template <class... Args>
  WarpRt& emplace_back(Args&&... args) {
    return v_.emplace_back(std::forward<Args>(args)...);
  }
  WarpRt& back() { return (*this)[v_.size() - 1]; }
  void reserve(size_t n) { v_.reserve(n); }

 private:
  std::vector<WarpRt> v_;
};

// The bytes a clusterlaunchcontrol.try_cancel response completes on its mbarrier (PTX ISA: .b128).
inline constexpr int64_t kClcResponseBytes = 16;

// A shared-memory value cell (Kernel::smem) of one CTA: its latest store, or the latest
// clusterlaunchcontrol.try_cancel response that landed in it (writer kNoWarp: no warp's store
// orders it, the completion of its barrier does).
struct SmemCellRt {
  bool written = false;
  int64_t value = 0;
  uint32_t writer = kNoWarp;  // warp id; kNoWarp: a try_cancel response
  size_t releases_before = 0; // the writer's releases.size() at the store: later ones order it
  uint32_t site = 0;
  uint32_t slot = 0;          // a response: the barrier its complete_tx landed on ...
  int64_t completion = 0;     // ... counting toward that barrier's completion #completion
};

struct NamedRt {
  int64_t count = 0;      // thread count of the current phase (0: no arrival yet)
  int64_t arrived = 0;    // threads
  std::vector<uint32_t> warps;    // warps that arrived this phase (by id)
  std::vector<uint32_t> waiters;  // warp ids blocked in bar.sync
};

// A CTA's named barriers by id, allocated at the first use of one: most kernels use none, and each copy
// of an untimed run copied sixteen idle ones (a KiB and 32 vectors).
class NamedBarriers {
 public:
  const NamedRt& operator[](int64_t id) const {
    static const NamedRt kIdle;
    return v_.empty() ? kIdle : v_[static_cast<size_t>(id)];
  }
  // Barrier `id` (0 .. kNamedBarriers - 1), to arrive on it.
  NamedRt& use(int64_t id) {
    if (v_.empty()) v_.resize(kNamedBarriers);
    used_ |= 1u << id;
    return v_[static_cast<size_t>(id)];
  }
  uint32_t used() const { return used_; }  // bit id: the barriers used so far (the state hash reads only these)

 private:
  std::vector<NamedRt> v_;
  uint32_t used_ = 0;
};

// wgmma.mma_async is warpgroup-collective: a warp's issue stalls until each warp of its warpgroup has
// issued it; then the warpgroup's MMA runs on the tensor pipe as one.
struct WarpgroupRt {
  struct Issuing { int64_t shape = 0, count = 0; uint32_t warps = 0; uint32_t site = 0; };  // warps: bit per warp of the group
  Issuing issuing;                // the wgmma some of its warps are issuing
  std::vector<uint32_t> waiters;  // their warp ids, stalled in it
};

struct CtaRt {
  bool started = false, exited = false;
  int sm = 0;
  int64_t tmem_held = 0;         // TMEM columns this CTA holds
  int64_t tmem_last_alloc = 0;   // size of its previous allocation (they must not grow)
  bool tmem_relinquished = false;
  uint32_t tmem_pair_waiter = kNoWarp;  // its warp waiting in a cta_group::2 alloc / dealloc for the peer's
  double tmem_since = 0;         // for the trace: when its current allocation began
  int live = 0;  // warps not exited
  std::vector<MBarrier> bars;
  std::vector<SmemCellRt> cells;         // Kernel::smem, flattened (empty without `smem`)
  std::vector<LastArrival> last;         // per slot: the latest arrival, for hang reports
  // Per slot. fenced: bit 0 fence.mbarrier_init seen since the init, bit 1 a releasing cluster arrive
  // since the init. visible: 1 published to the cluster (fenced, then a cluster barrier, or carried by
  // an arrival), 2 published only by a relaxed cluster barrier (a warning, docs/semantics.md).
  std::vector<uint8_t> fenced, visible;
  std::vector<uint32_t> expect_site;     // per slot: site of the last expect_tx on it
  std::vector<std::vector<uint32_t>> waiters;  // per slot: warp ids
  NamedBarriers named;
  std::vector<WarpgroupRt> warpgroups;  // by warp / 4; grows on the first wgmma
  int tma_inflight = 0;
  uint32_t inflight_site = 0, inflight_warp = 0;  // the latest copy into this CTA (for exit_inflight)
  uint32_t first_warp = 0;
};

struct SmRt {
  int resident = 0;              // CTAs on this SM
  TensorPipe tc;                 // its tensor pipe: wgmma, tcgen05.mma (sim/tensor_pipe.hpp)
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
  Engine(const Kernel& k, const RunOptions& o);

  RunResult run();

  // The L2's fast set (Timing::l2_fast_set_bytes) is about the lines a launch cycles through, which
  // for a launch timed among back-to-back launches of itself is its whole footprint (docs/semantics.md,
  // "The L2"). sim::run learns whether that passes the fast set from a first run that stops once its
  // footprint (l2_footprint_bytes) does (probe_fast_set), then runs again with every hit slow
  // (footprint_past_fast_set).
  bool l2_fast_set_matters() const;
  void probe_fast_set() { probe_fast_set_ = true; }
  void footprint_past_fast_set() { footprint_past_fast_set_ = true; }
  bool passed_fast_set() const { return passed_fast_set_; }
  // The launch's footprint in the L2 so far: what it holds and what the warps stored past the engine's
  // copies (ExternalRun::global_bytes_stored; a kernel's own st.global epilogue writes its output).
  double l2_footprint_bytes() const { return l2_.held_bytes() + (run_ ? run_->global_bytes_stored() : 0.0); }
  // A first pass (probe_fast_set) whose footprint has passed the fast set.
  bool footprint_passes_fast_set() const { return probe_fast_set_ && l2_footprint_bytes() > tm_.l2_fast_set_bytes; }

  // ------------------------------------------- untimed stepping (sim/explore.hpp, engine_explore.cpp)
  // RunOptions::untimed: every event goes to pending_ and nothing but the explorer orders them.
  // A warp stops before each synchronising op (poised); the explorer picks which poised warp or
  // asynchronous arrival (a copy landing, a remote arrive, a commit) happens next.
  void start_untimed();
  // Runs every pending event that commutes with all others (a warp's own steps up to its next
  // synchronising op, the DRAM's bookkeeping) and returns the sequence numbers of the rest, oldest
  // first: the choices. A warp poised at an mbarrier wait that would block is no choice (a guard,
  // as a Promela `(cond)`): it is taken once its phase completes. Empty when the run has ended (or
  // stopped at an error); when only such waits are left, they block first, so the end is a hang.
  const std::vector<uint64_t>& settle();
  const std::vector<uint64_t>& choice_list() const { return choices_; }
  // Makes choice `seq` (from settle) happen now.
  void take(uint64_t seq);
  // What choice `seq` is, for a trail: the warp (kNoWarp for an arrival), its op's site, the event.
  struct ChoiceView { EventKind kind; int cta, warp, role; uint32_t site, slot; OpKind op; int from_cta, from_warp; };
  ChoiceView view(uint64_t seq) const;
  std::string barrier_name(uint32_t slot) const { return bar_name(slot); }
  // A hash of everything that decides what can happen next (warps' programs and blocks, barriers,
  // pending events without their times); equal states, equal hashes.
  uint64_t state_hash() const;
  RunResult end_untimed();

  // ------------------------------------ partial-order reduction (sim/explore.hpp, engine_footprint.cpp)
  // What choice `seq` touches: its op or landing, then the steps that run before the next choice
  // (the warp's own up to its next synchronising op, those of the warps it may wake, an exit).
  void footprint(uint64_t seq, Footprint& f) const;  // replaces f's touches (keeping its capacity)
  uint64_t choice_id(uint64_t seq) const;
  // The warp's remaining program (every op, what its copies and arrivals will touch, its exit) and
  // a key of where it stands in it (equal keys, equal futures).
  // futures() computes it for the warp's current op and, on the way, for every synchronising op
  // ahead of it (where the warp will stand poised later), handing each to `store` with its key: one
  // walk of the program per warp instead of one per state.
  void futures(uint32_t id, const std::function<void(uint64_t key, const Footprint&)>& store) const;
  uint64_t future_key(uint32_t id) const {
    point_of(id);
    return warps_[id].future_key;
  }
  // Warp `id`'s entry in continuations_ (created empty where new).
  ProgramPoint& point_of(uint32_t id) const {
    const WarpRt& w = warps_[id];
    if (w.future_key_at != events_happened_) {  // asked for each footprint and each persistent set of a state
      w.future_key_at = events_happened_;
      const FutureContext now{next_cluster_, observed_cta_group_, cluster_inits_published(w.cta)};
      if (!w.kept.key || !(w.key_context == now)) {  // a warp that did not move keeps its key and entry
        const uint64_t key = future_key(id, w.cur, w.prog, now.published);
        if (!w.point || key != w.future_key) w.point = &(*continuations_)[key];
        w.future_key = key;
        w.key_context = now;
        w.kept.key = true;
      }
    }
    return *w.point;
  }
  // `published`: cluster_inits_published of the warp's CTA (a future leaves out publications that
  // change nothing now, publish_touches, so the flags are part of the key).
  uint64_t future_key(uint32_t id, const Op& at, const WarpProgram& rest, uint64_t published) const;
  uint64_t cluster_inits_published(int c) const;  // bit r: inits_published of the cluster's rank r
  // A persistent set of this state's choices (indices into choice_list(); `prints` their footprints,
  // `asleep` those not to be taken): the smallest found from any one choice by closing it under
  // conflicts with what other warps and events may still do (futures from `future_of`). Empty: none
  // smaller than all choices. Into `best` (replaced).
  void persistent_set(const std::vector<Footprint>& prints, const std::vector<uint8_t>& asleep, std::vector<size_t>& best) const;
  // Warp `id`'s future from where it stands (futures(), computed once per program point).
  const Future& future_of(uint32_t id) const;

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
  bool budget_spent(std::chrono::steady_clock::time_point t0);

  // --------------------------------------------------------------- plumbing
  void push(double t, EventKind kind, uint32_t target, uint32_t slot = 0, uint32_t site = 0,
            uint32_t from = 0, OpKind op = OpKind::Compute, int64_t value = 0, int64_t phase = 0) {
    const Event e{t, seq_++, kind, target, slot, site, from, op, value, phase};
    if (o_.untimed) pending_.push_back(e);
    else timed_->q.push(e);
  }
  double jit(double ns) {
    if (o_.jitter <= 0 || ns <= 0) return ns;
    std::uniform_real_distribution<double> d(-o_.jitter, o_.jitter);
    return ns * (1.0 + d(timed_->rng));
  }
  // Under jitter only: a warp's first op starts up to warp_start_skew_ns late, so the first barrier
  // ops of different roles race as their prologues do on silicon (docs/semantics.md). A replay takes
  // the starts from the device's stamps.
  double start_skew() {
    if (o_.jitter <= 0 || tm_.warp_start_skew_ns <= 0 || o_.replay) return 0;
    return std::uniform_real_distribution<double>(0, tm_.warp_start_skew_ns)(timed_->rng);
  }
  // Under jitter only: one copy in eight lands up to tma_straggler_ns late, so copies to one barrier
  // may land out of issue order, as the DRAM serves them on silicon (docs/semantics.md).
  double straggle() {
    if (o_.jitter <= 0 || tm_.tma_straggler_ns <= 0 || timed_->rng() % 8 != 0) return 0;
    return std::uniform_real_distribution<double>(0, tm_.tma_straggler_ns)(timed_->rng);
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
    return k_->barriers[a].name + "[" + std::to_string(slot - barrier_slot(*k_, a, 0)) + "]";
  }

  void grow_slots(uint32_t n);

  void fault(const std::string& kind, const WarpRt* w, uint32_t site, std::string msg,
             std::vector<std::string> notes = {});
  bool stop(const std::string& kind, const WarpRt* w, uint32_t site, std::string msg, std::vector<std::string> notes = {});
  void warn(const std::string& kind, int c, int w, uint32_t site, std::string msg, std::vector<std::string> notes = {}) {
    res_.findings.push_back(Finding{kind, false, c, w, site, std::move(msg), std::move(notes)});
  }
  std::string state_note(const MBarrier& b) const {
    return "barrier state: phase " + std::to_string(b.completed) + " (parity " + std::to_string(b.completed & 1) +
           "), pending " + std::to_string(b.pending) + " of " + std::to_string(b.expected) + ", tx " +
           std::to_string(b.tx);
  }

  // ------------------------------------------------------------- launching
  void launch_pending(double t);

  void launch_cluster(int cl, double t, const std::vector<int>& on_sms);

  // -------------------------------------------------------------- dispatch
  void happen(const Event& e) {
    // A peek's time limit whose wait has already passed is no event: it must not move the clock (the
    // run would end at it).
    if (e.kind == EventKind::WaitLimit && !wait_limit_live(e)) return;
    // Simulated events: every op a warp executes and every asynchronous completion (a batch
    // of wake-ups counts its warps' steps, not itself).
    if (e.kind != EventKind::WakeBatch && e.kind != EventKind::WarpStep && e.kind != EventKind::DramDone) ++res_.events;
    ++events_happened_;
    now_ = std::max(now_, e.t);  // keys round to 1 ps; time never runs backwards
    dispatch(e);
  }
  void dispatch(const Event& e);

  void close_block(WarpRt& w);
  void wait_limit(const Event& e);
  // A peek (a Wait with kFlagAnswer) that gets its answer at once: untimed, or no limit in the table.
  bool peek_answered_at_once(const Op& op) const {
    return (op.flags & kFlagAnswer) && (o_.untimed || tm_.mbarrier_try_wait_limit_ns <= 0);
  }
  // Whether a WaitLimit event's warp is still held by the wait that set it (blocked since its stamp).
  bool wait_limit_live(const Event& e) const {
    const WarpRt& w = warps_[e.target];
    return w.block == Block::Mbarrier && std::bit_cast<int64_t>(w.block_since) == e.value;
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

  void add_role_wait(const WarpRt& w, double ns);

  std::string wait_label(const WarpRt& w) const;
  void span(const WarpRt& w, double b, double e, std::string label, bool blocked) {
    res_.spans.push_back(TraceSpan{w.cta, w.warp, b, e, w.cur.site, std::move(label), blocked});
  }

  void step(uint32_t id);
  // The adversarial search's hook at a synchronising op the warp is about to execute: counts the
  // pass, tells RunOptions::on_sync, and returns how long RunOptions::delays hold the warp there
  // (setting landing_delay for a late copy or commit).
  double schedule_hook(WarpRt& w);
  // The op source of an external warp (the run owns it), to run or answer it; null for a scenario
  // warp. ext_view only reads it (a copy of the run never copies a warp for that).
  ExternalWarp* ext(const WarpRt& w) {
    return w.external ? &run_->warp(static_cast<uint32_t>(&w - warps_.data())) : nullptr;
  }
  const ExternalWarp* ext_view(const WarpRt& w) const {
    return w.external ? &std::as_const(*run_).warp(static_cast<uint32_t>(&w - warps_.data())) : nullptr;
  }
  WarpRt::ConsumedPhase& consumed_at(WarpRt& w, uint32_t s) {
    if (w.consumed.size() <= s) w.consumed.resize(std::max<size_t>(slots_, s + 1));
    return w.consumed[s];
  }
  // A wait (or a test_wait that returned true) of warp w on slot s passed: judges a pass on the
  // consumed phase (the phase_reused finding) and records this one. False: the run stopped.
  bool wait_passed(WarpRt& w, uint32_t s, const MBarrier& b);

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

  double interp_contention_ns(const WarpRt& w) const;

  double interp_dispatch_ns(const Op& op) const;

  void exec(WarpRt& w, uint32_t id);

  uint32_t slot(const BarRef& r) const { return barrier_slot(*k_, r.array, r.index); }

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

  bool check_cta_group(WarpRt& w, const Op& op);

  void do_mma(WarpRt& w, uint32_t id);

  void do_wgmma(WarpRt& w, uint32_t id);

  void do_commit(WarpRt& w, uint32_t id);

  void do_alloc(WarpRt& w, uint32_t id);

  void do_try_cancel(WarpRt& w, uint32_t id);
  // sim/engine_values.cpp: store / load of a shared-memory value cell, and the releases that order them.
  void do_smem_store(WarpRt& w, uint32_t id);
  void do_smem_load(WarpRt& w, uint32_t id);
  void note_release(WarpRt* w, int c, uint32_t s, OpKind kind, int64_t completed_before);
  // A scenario's try_cancel response landing (RemoteOp ClcTryCancel: value the cancelled cluster or
  // -1, phase the cell): complete_tx on the barrier, then the cell holds the response.
  void land_clc_response(const Event& e);
  std::string cell_name(uint32_t cell) const;

  void grant_alloc(WarpRt& w, int64_t cols);
  void alloc_on_sm(WarpRt& w, uint32_t id, bool blocked);
  void free_on_sm(WarpRt& w);
  void join_tmem_pair(WarpRt& w, uint32_t id);
  int tmem_peer(int c) const;  // the other CTA of its cta_group::2 pair
  int warpgroup_size(int g) const { return std::min(4, wpc_ - 4 * g); }  // warps in warpgroup g (the last may be short)

  void do_dealloc(WarpRt& w, uint32_t id);

  bool check_local(WarpRt& w, const Op& op, const char* what);

  void do_wait(WarpRt& w, uint32_t id);
  // Whether do_wait would only block warp w now: it breaks no rule and its phase has not completed.
  // The untimed run leaves such a wait out of the choices until it would pass (engine_explore.cpp).
  bool wait_would_block(const WarpRt& w) const;

  void do_tma(WarpRt& w, uint32_t id);

  // ------------------------------------------------------------- the DRAM
  // What a copy (or a store) waits on in the DRAM queue, and what happens when the DRAM has served it.
  struct DramCopy {
    bool store = false;  // a bulk store takes bandwidth; its completion is timed by the store itself
    bool from_l2 = false;  // an L2 hit: its bytes are the L2's, not the DRAM's (DramQueue::add's `hit`)
    bool l2_slow = false;  // issued once the launch's footprint passed the fast set: the L2 gives Timing::l2_slow_bytes_per_ns
    uint32_t target = 0, slot = 0, site = 0, from = 0;
    int64_t bytes = 0, phase = 0;
    double dram_bytes = 0;
    double entered = 0, unloaded_ns = 0, latency = 0, loaded = 0;  // entered, unloaded_ns: set by dram_add
    int sm = 0;
    double cap = 0;  // a copy waiting for its start: the queue and cap it enters with
    size_t span = SIZE_MAX;  // its trace span, stretched to the landing
    uint64_t box = 0;        // the L2's key of the box it reads (0: not known)
  };
  // An L2 hit served before the miss that brought its box in has landed: it lands with that miss.
  struct CopyAwaitingFill {
    DramCopy copy;
    double at;  // when it would land by itself
  };
  std::vector<CopyAwaitingFill> awaiting_fill_;
  void land_copy(const DramCopy& c, double at);
  // From `start` (no earlier than now): a copy waiting for its issuing SM's TMA unit is queued then,
  // through a CopyStart event.
  void dram_add(int sm, double cap, DramCopy c, double start);
  void dram_add(int sm, double cap, DramCopy c) { dram_add(sm, cap, c, now_); }
  void copy_start(const Event& e);
  // Keeps a finish event pending no later than the DRAM's next finish. A change that puts the next
  // finish later leaves the earlier event pending (it fires, finds nothing done and schedules again),
  // so only changes that bring a finish forward cost an event.
  void schedule_dram() {
    const double t = dram_.next_done();
    if (t < dram_event_at_) {
      dram_event_at_ = t;
      push(t, EventKind::DramDone, 0);
    }
  }
  void dram_done(const Event& e);

  // Counts a copy of `bytes` issued now among the bytes in flight (issued, not yet landed,
  // device-wide; a multicast copy is read once and counts once) and returns its loaded DRAM latency
  // (Timing::dram_loaded_*) from them, its own included. dram_done records when the bytes land.
  bool loaded_tracked() const { return tm_.dram_loaded_ns_per_mib > 0; }
  double count_in_flight(int64_t bytes);

  void do_named(WarpRt& w, uint32_t id);

  void cluster_try_complete(int cl);

  void violation(MbarViolation v, int c, uint32_t s, OpKind kind, int64_t value, uint32_t site, WarpRt* w);

  // Threads an Arrive stands for (op.hpp): a warp's arrive lands as one arrival per thread.
  static int64_t threads_of(const Op& op) { return op.kind == OpKind::Arrive && op.b > 1 ? op.b : 1; }

  void apply(int c, uint32_t s, OpKind kind, int64_t value, uint32_t site, WarpRt* w, int64_t threads = 1);

  // Can a copy of `bytes` have landed exactly `x` of them at some moment? It completes in 32-byte
  // sectors of its source, in no fixed order; a copy of an odd number of 16-byte halves ends in a
  // 16-byte half-sector that may come at any point. (H100, kernels/interp/tmaprobe.cu case 3.)
  static bool part_can_end_at(int64_t x, int64_t bytes) {
    return x % 32 == 0 || (x % 16 == 0 && bytes % 32 == 16);
  }

  void land(const Event& e);

  bool init_visible(CtaRt& c, uint32_t s, bool remote, const WarpRt& w, uint32_t site);

  void deliver(const Event& e, const std::string& what);

  // Footprints (engine_footprint.cpp): what executing `op` as warp w touches (with `issued`, also
  // what the copies and arrivals it issues will touch when they land); the steps warp `id` runs
  // after its current op up to its next synchronising op; its exit; the continuations of `waiters`.
  void op_touches(const WarpRt& w, const Op& op, bool issued, Footprint& f) const;
  void continuation(uint32_t id, Footprint& f, std::vector<uint32_t>& seen) const;
  void exit_touches(uint32_t id, Footprint& f, std::vector<uint32_t>& seen, bool wakes = true) const;
  void wake_touches(const std::vector<uint32_t>& waiters, Footprint& f, std::vector<uint32_t>& seen) const;
  void cluster_release_touches(int cl, Footprint& f, std::vector<uint32_t>& seen, bool wakes = true) const;
  void landing_touches(const Event& e, Footprint& f, std::vector<uint32_t>& seen) const;
  // A release that publishes CTA c's mbarrier inits (a fence, a remote arrive, a cluster barrier's
  // completion): an update of c's visibility flags, unless every init of c is fenced and visible
  // already (inits_published), when it changes nothing a verdict depends on and touches nothing.
  void publish_touches(uint32_t c, Footprint& f) const;
  bool inits_published(uint32_t c) const;
  // `f` as bitsets over this run's objects (DenseFootprint), into `out`; CTA c's block of them, into `bits`.
  void densify(const Footprint& f, DenseFootprint& out) const;
  void dense_cta_bits(uint32_t c, DenseFootprint::Bits& bits) const;
  size_t dense_per_cta() const { return 2 * static_cast<size_t>(slots_) + 3 + kNamedBarriers + static_cast<size_t>(wpc_) + k_->smem_cells; }

  void exit_warp(uint32_t id);

  void finish();

  // The copies' queue has two lanes an SM: its misses (lane sm) and its hits (lane sms + sm), served
  // side by side, so a hit does not wait behind its own SM's misses (kernels/interp/l2mixprobe.cu
  // `order`: a hit issued right after its SM's miss lands before it). Each lane's weight is its SM's share: a loaded DRAM's misses spread evenly over
  // [1 - s, 1 + s] along the golden-ratio sequence of SM ids (Timing::dram_share_spread; neighbouring
  // ids mix fast and slow: the device's slow SMs change between machines, and the model claims only
  // how slow the slowest is); hits 1, or 1 + extra for the l2_favoured_sms SMs spread evenly over the
  // ids (docs/semantics.md, "Unequal shares").
  static std::vector<double> lane_weights(const model::Timing& t, int64_t sms) {
    const auto n = static_cast<size_t>(sms);
    const auto favoured = static_cast<size_t>(t.l2_favoured_sms);
    std::vector<double> w(2 * n);
    for (size_t i = 0; i < n; ++i) {
      w[i] = 1.0 + t.dram_share_spread * (2.0 * std::fmod((static_cast<double>(i) + 0.5) * 0.6180339887498949, 1.0) - 1.0);
      w[n + i] = (i + 1) * favoured / n > i * favoured / n ? 1.0 + t.l2_favoured_extra : 1.0;
    }
    return w;
  }
  int lane(int sm, bool hit) const { return hit ? sm + lanes_per_kind_ : sm; }

  const Kernel* k_;  // a pointer, not a reference: engines are assigned (the search reuses finished runs' storage)
  RunOptions o_;
  model::Timing tm_;
  // The timed run's random numbers (jitter, replay noise, parts of a copy) and its event queue; an
  // untimed run has neither (its events wait in pending_, it has no jitter): 4 KiB less to copy.
  struct TimedParts {
    std::mt19937_64 rng;
    EventQueue q;
  };
  CopiedBox<TimedParts> timed_;
  uint64_t seq_ = 0;
  double now_ = 0;
  double stores_free_ = 0;  // the stores' first-come queue to DRAM: busy until (their completion, not their share)
  // The copies' one queue, misses and hits alike (lane_weights): a hit beside misses goes no faster
  // than they do (DramQueue::set_hit_rate; kernels/interp/l2mixprobe.cu).
  DramQueue dram_;
  int lanes_per_kind_ = 1;  // the SMs queued: lane(sm, hit)
  L2Cache l2_;          // which boxes the L2 holds (hit or miss)
  double dram_event_at_ = std::numeric_limits<double>::infinity();  // the earliest DramDone pending
  // Copies in flight for the loaded latency: (landing time, bytes), earliest landing on top; the
  // bytes of copies the DRAM has not served yet are counted but have no landing time.
  using InflightCopy = std::pair<double, double>;
  std::priority_queue<InflightCopy, std::vector<InflightCopy>, std::greater<>> dram_inflight_;
  double dram_inflight_bytes_ = 0;
  std::vector<DramCopy> copies_;  // indexed by DRAM token
  // When each SM's TMA unit can take its next load (Timing::tma_copy_min_ns after its last one).
  std::vector<double> tma_unit_free_;
  // What an interleaving search's slower issue (RunOptions::issue_scale) adds to a TMA issue: code
  // before the copy, which delays its landing too (the issue cost itself overlaps the copy).
  double tma_issue_added_ns_ = 0;
  std::vector<uint32_t> free_copies_, done_tokens_;
  ClonedRun run_;  // Kernel::external's state for this run, its warps included
  bool fatal_ = false;
  bool stopped_ = false;  // the budget ran out (Verdict::Stopped)
  bool probe_fast_set_ = false, footprint_past_fast_set_ = false, passed_fast_set_ = false;  // l2_fast_set_matters
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
  WarpList warps_;
  std::vector<uint32_t> ext_stepped_;  // PTX warps stepped since the last budget poll (repeats allowed)
  uint64_t ext_executed_ = 0;          // their instructions as of that poll
  std::vector<double> role_wait_ns_;
  std::vector<std::vector<uint32_t>> wake_lists_;
  std::vector<uint32_t> free_wake_lists_;
  RunResult res_;
  // An untimed run's program points by future_key. Shared by every copy of the run (the search is
  // single-threaded); null in a timed run.
  std::shared_ptr<ProgramPoints> continuations_;
  std::shared_ptr<PersistentSetMemo> persistent_sets_;  // likewise
  std::vector<Event> pending_;      // RunOptions::untimed: the events, unordered (engine_explore.cpp)
  // Every event that happened (all state changes after the launch come through happen()), and
  // inits_published of CTAs 0..63 as it was after the `published_at_`-th: bit c known / published.
  uint64_t events_happened_ = 0;
  mutable uint64_t published_at_ = UINT64_MAX, published_known_ = 0, published_ = 0;
  std::vector<uint64_t> choices_;   // settle's answer
};

}  // namespace pipesim::sim::detail
