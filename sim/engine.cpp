// The discrete-event engine. Warps are processes pulling primitive ops from their lowered
// programs; asynchronous units (TMA, bulk stores, remote arrivals) are events. All mbarrier
// state changes go through sim/mbarrier.hpp; this file routes, times and observes them.
#include "sim/engine_impl.hpp"
#include "sim/explain.hpp"

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

namespace detail {

namespace {
// SMs the engine keeps state for. An untimed run (sim/explore.hpp) is copied at every choice, so it
// keeps only the SMs its CTAs can occupy (one each at most, as the launch places them) and queues
// with one SM (its copies bypass the DRAM and the L2: dram_add).
int64_t modelled_sms(const Kernel& k, const RunOptions& o) {
  return o.untimed ? std::clamp<int64_t>(k.launch.ctas, 1, k.arch->cap.sms) : k.arch->cap.sms;
}
int64_t queued_sms(const Kernel& k, const RunOptions& o) { return o.untimed ? 1 : k.arch->cap.sms; }
}  // namespace

// Where a site is, for messages about another warp's instruction: its PTX line, or its scenario line.
std::string site_text(const Kernel& k, uint32_t site) {
  const Site& s = k.sites[site];
  if (!s.origin.empty()) return short_origin(s.origin) + " (PTX line " + std::to_string(s.loc.line) + ")";
  return "line " + std::to_string(s.loc.line) + " (" + s.what + ")";
}

Engine::Engine(const Kernel& k, const RunOptions& o)
    : k_(&k), o_(o), tm_(run_timing(k, o)),
      timed_(o.untimed ? CopiedBox<TimedParts>() : CopiedBox<TimedParts>(TimedParts{std::mt19937_64(o.seed), EventQueue()})),
      dram_(tm_.hbm_bytes_per_ns, lane_weights(tm_, queued_sms(k, o)), tm_.dram_copy_overlap),
      // Untimed runs keep no L2 (nothing there is timed; the explorer copies engines, sim/explore.hpp).
      l2_(tm_.l2_bytes_per_ns > 0 && !o.untimed ? tm_.l2_bytes : 0) {
  tma_unit_free_.assign(static_cast<size_t>(queued_sms(k, o)), 0.0);
  lanes_per_kind_ = static_cast<int>(queued_sms(k, o));
  tm_.op_issue_ns *= o.issue_scale;
  tma_issue_added_ns_ = tm_.tma_issue_ns * (o.issue_scale - 1.0);
  tm_.tma_issue_ns *= o.issue_scale;
  tm_.mma_issue_ns *= o.issue_scale;
  if (o.interp) tm_.mbarrier_wake_ns += o.interp->wake_ns;
  for (const BarrierArray& a : k.barriers) slots_ += a.size;
  if (k.external) {
    run_ = k.external->start_run(tm_);
    if (o.untimed) run_->set_untimed();
  }
  array_of_slot_.reserve(slots_);
  for (uint32_t a = 0; a < k.barriers.size(); ++a)
    for (uint32_t i = 0; i < k.barriers[a].size; ++i) array_of_slot_.push_back(a);
  nctas_ = static_cast<int>(k.launch.ctas);
  csize_ = static_cast<int>(k.launch.cluster);
  wpc_ = k.launch.warps();
  ctas_.resize(static_cast<size_t>(nctas_));
  clusters_.resize(static_cast<size_t>(nctas_ / csize_));
  sms_.assign(static_cast<size_t>(modelled_sms(k, o)), SmRt{});
  for (SmRt& sm : sms_) {
    sm.tmem_free = k.arch->cap.tmem_columns;
    sm.tc = TensorPipe(static_cast<int>(tm_.mma_queue_depth));
  }
  ctas_per_sm_ = static_cast<int>(std::max<int64_t>(1, k.launch.ctas_per_sm));
  warps_.reserve(static_cast<size_t>(nctas_) * static_cast<size_t>(wpc_));
  role_wait_ns_.assign(std::max<size_t>(1, k.roles.size()) * (k.barriers.size() + 3), 0.0);
}

RunResult Engine::run() {
  launch_pending(0.0);
  const auto started = std::chrono::steady_clock::now();
  uint64_t polls = 0;
  while (!timed_->q.empty() && !fatal_) {
    if (o_.max_events > 0 && res_.events >= o_.max_events) {
      stop(RunResult::StopCause::Events, started);
      break;
    }
    // The clock and the instruction count are polled every 1024 events: a PTX warp spinning
    // without synchronising still returns to the engine every few thousand instructions. So is the
    // footprint of a first pass (probe_fast_set): past the fast set, the rest of the run is not needed.
    if ((++polls & 1023) == 0 && (budget_spent(started) || footprint_passes_fast_set())) break;
    if ((polls & 0xffff) == 0 && o_.on_progress) o_.on_progress(now_, res_.events, ext_executed_);
    happen(timed_->q.pop());
  }
  // However the first pass ended (its footprint can pass the fast set between two polls), sim::run
  // runs the launch again; what this run found is not reported.
  if (footprint_passes_fast_set()) {
    passed_fast_set_ = true;
    return {};
  }
  finish();
  return std::move(res_);
}

bool Engine::l2_fast_set_matters() const {
  return !o_.untimed && l2_.capacity() > 0 && tm_.l2_slow_bytes_per_ns > 0 && tm_.l2_fast_set_bytes > 0;
}

bool Engine::budget_spent(std::chrono::steady_clock::time_point t0) {
  if (o_.max_seconds > 0 && seconds_since(t0) >= o_.max_seconds) {
    stop(RunResult::StopCause::Seconds, t0);
    return true;
  }
  if (run_ && o_.max_instructions > 0) {
    // Only the warps that ran since the last poll can have new instructions: asking all of them
    // (a cold cache line each, 1344 warps for a persistent GEMM) was ~4 % of a PTX run.
    for (uint32_t id : ext_stepped_) {
      WarpRt& w = warps_[id];
      const uint64_t n = ext_view(w)->instructions();
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

// An external program found new barriers: every started CTA gets their slots (a CTA launched
// later is sized at launch).
void Engine::grow_slots(uint32_t n) {
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

void Engine::fault(const std::string& kind, const WarpRt* w, uint32_t site, std::string msg,
                   std::vector<std::string> notes) {
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
bool Engine::stop(const std::string& kind, const WarpRt* w, uint32_t site, std::string msg, std::vector<std::string> notes) {
  if (!o_.hardware_only || !is_model_only(kind)) {
    fault(kind, w, site, std::move(msg), std::move(notes));
    return true;
  }
  for (const Finding& f : res_.findings)
    if (f.kind == kind) return false;
  warn(kind, w ? w->cta : -1, w ? w->warp : -1, site, std::move(msg) + " (the hardware goes on)", std::move(notes));
  return false;
}

// Starts clusters in order while their CTAs fit: each CTA of a cluster on a distinct SM, the
// least loaded first (CTAs spread over SMs before SMs double up).
void Engine::launch_pending(double t) {
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

void Engine::launch_cluster(int cl, double t, const std::vector<int>& on_sms) {
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
    ct.cells.assign(k_->smem_cells, SmemCellRt{});
    ct.last.assign(slots_, LastArrival{});
    ct.fenced.assign(slots_, 0);
    ct.visible.assign(slots_, 0);
    ct.waiters.assign(slots_, {});
    ct.expect_site.assign(slots_, 0);
    for (uint32_t a = 0; a < k_->barriers.size(); ++a) {
      if (!k_->barriers[a].init_count) continue;
      for (uint32_t i = 0; i < k_->barriers[a].size; ++i) {
        const uint32_t s = barrier_slot(*k_, a, i);
        mbar_init(ct.bars[s], *k_->barriers[a].init_count);
        ct.fenced[s] = ct.visible[s] = 1;  // constructor: init, fence, cluster sync
      }
    }
    ct.first_warp = static_cast<uint32_t>(warps_.size());
    ct.live = wpc_;
    c.live += wpc_;
    for (int w = 0; w < wpc_; ++w) {
      warps_.emplace_back(WarpProgram(*k_, id, w), id, w, role_of_warp(*k_, w));
      if (run_) {
        run_->start_warp(static_cast<uint32_t>(warps_.size() - 1), id, w, ct.sm);
        warps_.back().external = true;
      }
      warps_.back().status = WarpStatus::Blocked;
      push(t + (o_.interp ? o_.interp->start_ns : 0.0) + start_skew(), EventKind::WarpStep,
           static_cast<uint32_t>(warps_.size() - 1));
    }
  }
}

void Engine::dispatch(const Event& e) {
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
    case EventKind::CopyStart: copy_start(e); break;
    case EventKind::RemoteOp:
      if (e.op == OpKind::ClcTryCancel) land_clc_response(e);
      else deliver(e, std::string(op_name(e.op)));
      break;
    case EventKind::AsyncArrive: deliver(e, "tcgen05.commit arrival"); break;
    case EventKind::WaitLimit: wait_limit(e); break;
  }
}

void Engine::close_block(WarpRt& w) {
  if (w.block != Block::None) {
    add_role_wait(w, now_ - w.block_since);
    if (o_.record_trace) span(w, w.block_since, now_, wait_label(w), true);
    w.block = Block::None;
  }
  w.status = WarpStatus::Blocked;  // scheduled, not yet running
}

void Engine::add_role_wait(const WarpRt& w, double ns) {
  if (w.role < 0) return;
  size_t col = k_->barriers.size();
  if (w.block == Block::Mbarrier) col = w.cur.bar.array;
  else if (w.block == Block::Named) col = k_->barriers.size() + 0;
  else if (w.block == Block::Cluster) col = k_->barriers.size() + 1;
  else if (w.block == Block::Timed || w.block == Block::Tmem || w.block == Block::TmemPair || w.block == Block::Wgmma)
    col = k_->barriers.size() + 2;
  role_wait_ns_[static_cast<size_t>(w.role) * (k_->barriers.size() + 3) + col] += ns;
}

std::string Engine::wait_label(const WarpRt& w) const {
  switch (w.block) {
    case Block::Mbarrier: return "wait " + bar_name(barrier_slot(*k_, w.cur.bar.array, w.cur.bar.index)) + " parity " + std::to_string(w.cur.a);
    case Block::Named: return "bar_sync " + std::to_string(w.cur.a);
    case Block::Cluster: return "cluster_wait";
    case Block::Timed: return std::string(op_name(w.cur.kind)) + " " + std::to_string(w.cur.a);
    case Block::Tmem: return "tmem_alloc " + std::to_string(w.cur.a) + " cols";
    case Block::TmemPair: return std::string(op_name(w.cur.kind)) + " " + std::to_string(w.cur.a) + " cols (the pair peer's)";
    case Block::Wgmma: return "wgmma.mma_async (the warpgroup's other warps)";
    case Block::None: break;
  }
  return "";
}

namespace {
// The ops by which a warp releases what it waited for (consumer_release's arrive, a drop, an MMA
// warp's tcgen05.commit): the consumed-phase rule's evidence that the warp used the phase of its
// latest passed wait (Engine::wait_passed).
bool releases_mbarrier(OpKind k) {
  switch (k) {
    case OpKind::Arrive: case OpKind::ArriveDrop: case OpKind::Commit:
      return true;
    default:
      return false;
  }
}
}  // namespace

// One op of warp `id` at now_.
void Engine::step(uint32_t id) {
  ++res_.events;
  WarpRt& w = warps_[id];
  if (w.status == WarpStatus::Faulted || w.status == WarpStatus::Exited) return;
  if (w.retry) {
    w.retry = false;
    exec(w, id);
    return;
  }
  if (w.external && o_.max_instructions > 0) ext_stepped_.push_back(id);  // the budget's poll reads its count
  if (!(w.external ? ext(w)->next(w.cur, now_) : w.prog.next(w.cur))) {
    exit_warp(id);
    return;
  }
  if (run_ && run_->barrier_slots() > slots_) grow_slots(run_->barrier_slots());
  w.status = WarpStatus::Blocked;
  ++w.ops;
  if (releases_mbarrier(w.cur.kind) && w.last_pass_slot >= 0)
    consumed_at(w, static_cast<uint32_t>(w.last_pass_slot)).released = true;
  // Poised: the explorer decides when it happens. So is an external warp's step that ran out of
  // budget without synchronising: a warp spinning on memory must let the others go on.
  if (o_.untimed && (synchronises(w.cur.kind) || (w.external && w.cur.kind == OpKind::Compute && ext(w)->yielded()))) {
    w.retry = true;
    push(now_, EventKind::WarpStep, id);
    return;
  }
  const double hold = o_.delays.empty() && !o_.on_sync ? 0.0 : schedule_hook(w);
  if (o_.interp || o_.replay) {  // the interpreter fetches and dispatches the op before it takes effect
    double at = now_ + hold + (o_.interp ? jit(interp_dispatch_ns(w.cur) + interp_contention_ns(w)) : 0.0);
    if (o_.replay) {
      const size_t wi = static_cast<size_t>(w.cta) * static_cast<size_t>(wpc_) + static_cast<size_t>(w.warp);
      const uint64_t i = o_.replay->offsets[wi] + static_cast<uint64_t>(w.ops - 1);
      if (wi + 1 < o_.replay->offsets.size() && i < o_.replay->offsets[wi + 1] && o_.replay->begin_ns[i] >= 0) {
        double noise = 0;
        if (o_.replay->noise_ns > 0)
          noise = std::uniform_real_distribution<double>(-o_.replay->noise_ns, o_.replay->noise_ns)(timed_->rng);
        // Stamps count from the device's first op; the model's first op is at the interpreter's start.
        const double start = o_.interp ? o_.interp->start_ns : 0.0;
        at = std::max(now_, start + o_.replay->begin_ns[i] + noise + (o_.interp ? interp_dispatch_ns(w.cur) : 0.0));
      }
    }
    w.retry = true;
    push(at, EventKind::WarpStep, id);
    return;
  }
  if (hold > 0) {  // held by the adversarial search: the op takes effect later
    w.retry = true;
    push(now_ + hold, EventKind::WarpStep, id);
    return;
  }
  exec(w, id);
}


double Engine::schedule_hook(WarpRt& w) {
  w.landing_delay = 0;
  if (!synchronises(w.cur.kind)) return 0;
  const uint32_t pass = w.site_passes[w.cur.site]++;
  if (o_.on_sync) o_.on_sync(SyncPoint{w.cta, w.warp, w.cur.site, pass, w.cur.kind, now_});
  double hold = 0;
  for (const Delay& d : o_.delays)
    if (d.cta == w.cta && d.warp == w.warp && d.site == w.cur.site && d.occurrence == pass) (d.landing ? w.landing_delay : hold) += d.ns;
  return hold;
}

void Engine::exit_warp(uint32_t id) {
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
    if (!o_.store_outlives_exit.value_or(k_->arch->has_tcgen05))
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

void Engine::finish() {
  res_.end_ns = now_;
  if (o_.record_trace)  // waits that never return still get their span, up to the end
    for (const WarpRt& w : warps_)
      if (w.status == WarpStatus::Blocked && w.block != Block::None)
        res_.spans.push_back(TraceSpan{w.cta, w.warp, w.block_since, now_, w.cur.site, wait_label(w) + " (never returns)", true});
  res_.sms_used = sms_used_;
  res_.dram_busy_ns = dram_busy_;
  res_.l2_hit_bytes = l2_.hit_bytes();
  res_.l2_miss_bytes = l2_.miss_bytes();
  res_.dram_read_bytes = l2_.brought_bytes();
  // Busy within the run: MMAs still queued when the last warp exits (nobody waited for them) run back to
  // back from now on, so the pipe's time past the end is its drain time.
  for (const SmRt& sm : sms_) res_.tensor_busy_ns += sm.tc.busy_ns() - std::max(0.0, sm.tc.drained() - now_);
  res_.launch_floor_ns = tm_.launch_floor_ns;
  res_.cta_group = observed_cta_group_;
  if (run_) {
    // A PTX kernel's st.global bytes are written back too (a CUTLASS epilogue that stores element by
    // element writes its whole D this way).
    res_.dram_write_bytes += static_cast<int64_t>(run_->global_bytes_stored());
    for (uint32_t s = 0; s < slots_; ++s) res_.barrier_names.push_back(run_->barrier_name(s));
    for (const WarpRt& w : warps_) res_.instructions += ext_view(w)->instructions();
  }
  bool waiting = false;
  for (WarpRt& w : warps_.all())
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
    res_.warps.push_back(WarpEnd{w.cta, w.warp, w.role, w.status, w.cur.site, w.cur, w.ops, w.exited_at, w.loaded});
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
  for (size_t r = 0; r < k_->roles.size(); ++r)
    for (size_t col = 0; col < k_->barriers.size() + 3; ++col) {
      const double ns = role_wait_ns_[r * (k_->barriers.size() + 3) + col];
      if (ns <= 0) continue;
      std::string what = col < k_->barriers.size() ? k_->barriers[col].name
                         : col == k_->barriers.size() ? "named barriers"
                         : col == k_->barriers.size() + 1 ? "cluster barrier" : "bulk groups, wgmma, tcgen05.wait and TMEM allocation";
      res_.role_waits.push_back({static_cast<int>(r), std::move(what), ns});
    }
  if (res_.verdict == Verdict::Hang || res_.verdict == Verdict::Stopped) {
    HangInput in{*k_, res_, unlaunched ? static_cast<int>(clusters_.size()) - next_cluster_ : 0, {}, {}, {}, {}};
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
      } else if (w.block == Block::TmemPair) {
        hw.wait = WaitKind::TmemPair;
      } else if (w.block == Block::Wgmma) {
        hw.wait = WaitKind::Wgmma;
        const int g = w.warp / 4;  // the explainer names the warps of the group that have not issued it
        hw.slot = ((1u << warpgroup_size(g)) - 1) & ~cta(w.cta).warpgroups[static_cast<size_t>(g)].issuing.warps;
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

}  // namespace detail

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

model::Timing run_timing(const Kernel& k, const RunOptions& o) {
  model::Timing t = k.arch->time;
  if (o.sm_clock_ghz > 0 && t.clock_ghz > 0) t = model::at_sm_clock(t, o.sm_clock_ghz);
  for (const auto& [field, value] : o.timing_overrides) t.*field = value;
  return t;
}

RunResult run(const Kernel& kernel, const RunOptions& options) {
  if (!kernel.arch) throw std::runtime_error("kernel has no architecture");
  // The front ends refuse such a launch at its line (verify/parser.cpp, verify/ptx/launch_resolve.cpp);
  // this is the last guard for kernels built elsewhere (generated protocols, tests).
  if (const std::string no = run_footprint(kernel).refusal(); !no.empty()) throw std::runtime_error(no);
  {
    detail::Engine probe(kernel, options);
    if (!probe.l2_fast_set_matters()) return probe.run();
    probe.probe_fast_set();
    RunResult r = probe.run();
    if (!probe.passed_fast_set()) return r;
  }
  detail::Engine e(kernel, options);
  e.footprint_past_fast_set();
  return e.run();
}

}  // namespace pipesim::sim
