#include "verify/ptx/source.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "sim/external.hpp"
#include "verify/ptx/machine.hpp"
#include "verify/ptx/machine_impl.hpp"  // GridState is complete here: a run owns its grid
#include "verify/ptx/run_use.hpp"
#include "verify/ptx/sync.hpp"

namespace pipesim::ptx {
namespace {

std::string hex(uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  do {
    s.insert(s.begin(), digits[v & 15]);
    v >>= 4;
  } while (v);
  return "0x" + s;
}

// A mangled C++ name as people write it; the name itself when it does not demangle.
std::string demangle(const std::string& name) {
  int status = 0;
  char* out = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !out) return name;
  std::string s(out);
  std::free(out);
  return s;
}

// A variable's own name: the last component of its demangled name ("empty" of
// "(anonymous namespace)::pipeline<1>(unsigned char const*, int)::empty").
std::string short_name(const std::string& mangled) {
  std::string name = demangle(mangled);
  if (const size_t c = name.rfind("::"); c != std::string::npos) name = name.substr(c + 2);
  return name;
}

// What the engine needs to know of the program, shared by every run.
struct PtxProgram final : sim::ExternalProgram {
  std::shared_ptr<const Module> module;
  std::shared_ptr<const Program> program;
  const Function* entry = nullptr;
  const model::Arch* arch = nullptr;
  Launch launch;
  std::vector<uint32_t> site_base;  // per function of the module: its first instruction's site
  uint32_t warps_per_cta = 1;
  std::string trace_warp;  // PIPESIM_PTX_TRACE: "CTA:WARP" whose requests go to stderr
  std::shared_ptr<RunUse> use;  // where each run notes what it used (make_kernel's caller reads it)
  std::unique_ptr<sim::ExternalRun> start_run(const model::Timing& timing) const override;
};

class PtxRun;

class PtxWarp final : public sim::ExternalWarp {
 public:
  PtxWarp(PtxRun& run, Warp warp, int cta, int32_t rank, uint32_t w);
  bool next(sim::Op& op, double now_ns) override;
  void answer(int64_t value) override {
    digested_ = false;
    if (awaiting_ == Awaiting::Engine || awaiting_ == Awaiting::Peek) warp_.answer(static_cast<uint64_t>(value));
    if (awaiting_ == Awaiting::Peek && value == 0) false_peek_ = peek_;  // (see convert, MbarTryWait)
    awaiting_ = Awaiting::None;
  }
  uint64_t instructions() const override { return warp_.instructions(); }
  bool yielded() const override { return yielded_; }
  uint64_t home() const { return home_; }
  void hash_into(sim::StateHash& h) const override {
    if (!digested_) {  // registers are many: digested again only after the warp ran or was answered
      sim::StateHash d;
      warp_.hash_into(d);
      digest_ = d.value();
      digested_ = true;
    }
    h.add(awaiting_).add(digest_).add(false_peek_.instr).add(false_peek_.bar).add(false_peek_.parity);
  }
  // The same warp on `run`, a copy of its run.
  std::shared_ptr<PtxWarp> clone_onto(PtxRun& run, GridState& grid) const {
    auto w = std::make_shared<PtxWarp>(run, warp_.clone_onto(grid), cta_, rank_, warp_id_);
    w->awaiting_ = awaiting_;
    w->peek_ = peek_;
    w->false_peek_ = false_peek_;
    w->yielded_ = yielded_;
    w->digest_ = digest_;
    w->digested_ = digested_;
    return w;
  }
  std::pair<std::string, std::string> fault() const override {
    const KernelFault* f = warp_.fault();
    if (!f) return {"kernel_fault", "the kernel trapped"};
    return {"kernel_fault", f->kind + ": " + f->message};
  }

 private:
  // What the last op left to answer: the engine's answer (test_wait, a local arrive's token), or a
  // wait that only returns once it has passed.
  // WaitPassed: the engine resumes the wait only once it passed (true); Peek: the same, or it answers 0 at
  // the peek's time limit.
  enum class Awaiting : uint8_t { None, Engine, WaitPassed, Peek };
  bool convert(const SyncRequest& r, sim::Op& op);
  sim::BarRef bar(uint64_t address);
  PtxRun& run_;  // valid while the warp is its run's own (PtxRun::own); only then does it change
  Warp warp_;
  void trace(const SyncRequest& r, double now_ns) const;
  int cta_;
  int32_t rank_;
  uint32_t warp_id_;
  bool traced_ = false;  // PIPESIM_PTX_TRACE=CTA:WARP names this warp
  Awaiting awaiting_ = Awaiting::None;
  // A peek that returned false and the warp came back to with nothing synchronising in between is a
  // wait loop mark_peeks could not see (its back edge further on: a watchdog's checks): the warp then
  // waits there without a limit, so a hang stays a hang and no loop spins. peek_ is the peek in flight,
  // false_peek_ the last one answered false (instr kNone: none).
  struct PeekSite {
    static constexpr uint64_t kNone = ~uint64_t{0};
    uint64_t instr = kNone, bar = 0, parity = 0;
    bool operator==(const PeekSite&) const = default;
  };
  PeekSite peek_, false_peek_;
  bool yielded_ = false;  // the last op is a Compute that ran the step's budget out (SyncRequest::yield)
  mutable uint64_t digest_ = 0;     // hash_into's digest of warp_, while digested_
  mutable bool digested_ = false;
  uint64_t home_;  // the serial of run_
};

class PtxRun final : public sim::ExternalRun {
 public:
  PtxRun(const PtxProgram& p, const model::Timing& timing) : prog_(p), grid_(make_grid(p.program, p.launch)) {
    set_instruction_ns(*grid_, timing.ptx_instr_cycles / timing.clock_ghz);
    set_clock_ghz(*grid_, timing.clock_ghz);
    set_instruction_timing(*grid_, instruction_timing(timing));
    set_sm_count(*grid_, static_cast<uint32_t>(p.arch->cap.sms));
  }
  // The run has ended: what it used is complete once the barriers are named and the memory measured.
  ~PtxRun() override {
    if (!use()) return;
    prog_.use->smem_touched = shared_bytes_touched(*grid_);
    prog_.use->bank_conflicts.clear();
    for (const auto& [key, c] : shared_conflicts(*grid_))
      prog_.use->bank_conflicts[prog_.site_base[static_cast<size_t>(key >> 32)] + static_cast<uint32_t>(key)] = c;
    for (auto& [offset, b] : prog_.use->barriers) {
      b.slot = slot(offset);
      b.name = barrier_name(b.slot);
    }
  }
  // A copy for the exhaustive search: it notes nothing in the program's RunUse (the plain run did).
  // The warps are shared with `o` until either run changes one (own): a choice moves one or two
  // warps, and a warp's registers are tens of KiB.
  PtxRun(const PtxRun& o)
      : prog_(o.prog_), grid_(clone_grid(*o.grid_)), slots_(o.slots_), offsets_(o.offsets_), warps_(o.warps_), notes_use_(false) {}
  uint64_t serial() const { return serial_; }
  // Where the run notes what it used: a timed run's only (the search's runs leave the plain run's).
  RunUse* use() const { return notes_use_ ? prog_.use.get() : nullptr; }
  sim::ExternalWarp& start_warp(uint32_t id, int cta, int warp, int sm) override {
    const uint32_t csize = prog_.launch.cluster_size();
    const CtaPlace place = place_of(static_cast<uint32_t>(cta), csize, static_cast<uint32_t>(sm));
    if (id >= warps_.size()) warps_.resize(id + 1);
    if (!started_ && use()) *use() = RunUse{};  // a fresh record per run
    started_ = true;
    warps_[id] = std::make_shared<PtxWarp>(*this, Warp(*grid_, place, static_cast<uint32_t>(warp)), cta,
                                           static_cast<int32_t>(place.rank), static_cast<uint32_t>(warp));
    return *warps_[id];
  }
  sim::ExternalWarp& warp(uint32_t id) override { return own(id); }
  const sim::ExternalWarp& warp(uint32_t id) const override { return *warps_.at(id); }
  void set_untimed() override {
    notes_use_ = false;
    set_instruction_timing(*grid_, InstructionTiming{});  // no operand waits, no store or shared paths
  }
  std::unique_ptr<sim::ExternalRun> clone() const override { return std::make_unique<PtxRun>(*this); }
  void hash_into(sim::StateHash& h) const override {
    hash_grid(*grid_, h);
    // The slot numbering is part of the state: the engine's barriers are indexed by it.
    for (uint32_t off : offsets_) h.add(off);
    for (const auto& w : warps_)
      if (w) w->hash_into(h);
  }
  uint32_t barrier_slots() const override { return static_cast<uint32_t>(offsets_.size()); }
  double global_bytes_stored() const override { return static_cast<double>(ptx::global_bytes_stored(*grid_)); }
  // "full[2] (shared 0x10)" where a static .shared variable holds the barrier; "mbarrier at dynamic
  // shared +0x40 (shared 0x40)" in the dynamic area.
  std::string barrier_name(uint32_t slot) const override {
    if (slot >= offsets_.size()) return "mbarrier ?";
    const uint64_t off = offsets_[slot];
    const Program& p = *prog_.program;
    for (const SymInfo& s : p.symbols) {
      if (s.kind != SymKind::Shared || s.bytes == 0 || off < s.addr || off >= s.addr + s.bytes) continue;
      // A function-scope symbol is named "function::variable#N" by the decoder.
      std::string raw = s.name;
      if (const size_t h = raw.find('#'); h != std::string::npos) raw = raw.substr(raw.find("::") + 2, h - raw.find("::") - 2);
      std::string name = short_name(raw);
      const uint64_t in = off - s.addr;
      name += s.bytes > 8 && in % 8 == 0 ? "[" + std::to_string(in / 8) + "]" : in ? "+" + hex(in) : "";
      return name + " (shared " + hex(off) + ")";
    }
    if (off >= p.dynamic_smem_base)
      return "mbarrier at dynamic shared +" + hex(off - p.dynamic_smem_base) + " (shared " + hex(off) + ")";
    return "mbarrier at shared " + hex(off);
  }
  // The slot of the barrier at shared offset `offset` (the same offset in every CTA).
  uint32_t slot(uint32_t offset) {
    auto [it, fresh] = slots_.try_emplace(offset, static_cast<uint32_t>(offsets_.size()));
    if (fresh) offsets_.push_back(offset);
    return it->second;
  }
  const PtxProgram& program() const { return prog_; }
  void clc_response(int cta, uint32_t offset, int cluster) override {
    const uint32_t csize = prog_.launch.cluster_size();
    uint64_t word = 0;
    if (cluster >= 0) {
      const auto c = grid_->cta_coords(place_of(static_cast<uint32_t>(cluster) * csize, csize, 0).cta);
      word = clc_encode(true, c[0], c[1], c[2]);
    }
    // The low 8 bytes as the host stores them (the interpreter's memory is little-endian, exec_mem.cpp),
    // the high 8 zero (the try_cancel's exec checked the 16 bytes lie inside shared memory).
    if (uint64_t{offset} + 16 > shared_bytes_per_cta(*grid_)) return;
    uint8_t* dst = grid_->cta_shared(place_of(static_cast<uint32_t>(cta), csize, 0).cta) + offset;
    std::memcpy(dst, &word, 8);
    std::memset(dst + 8, 0, 8);
  }

 private:
  // The engine numbers CTAs cluster by cluster; CUDA numbers them x fastest over the grid. A
  // cluster's CTAs are a box of the grid: cluster c's position in the grid of clusters and rank r's
  // position in the cluster box give the CTA's blockIdx.
  CtaPlace place_of(uint32_t engine_cta, uint32_t csize, uint32_t sm) const {
    const Launch& l = prog_.launch;
    const uint32_t cl = engine_cta / csize, rank = engine_cta % csize;
    const uint32_t ncx = l.grid[0] / l.cluster[0], ncy = l.grid[1] / l.cluster[1];
    const uint32_t cx = cl % ncx, cy = (cl / ncx) % ncy, cz = cl / (ncx * ncy);
    const uint32_t rx = rank % l.cluster[0], ry = (rank / l.cluster[0]) % l.cluster[1], rz = rank / (l.cluster[0] * l.cluster[1]);
    const uint32_t bx = cx * l.cluster[0] + rx, by = cy * l.cluster[1] + ry, bz = cz * l.cluster[2] + rz;
    return CtaPlace{bx + l.grid[0] * (by + l.grid[1] * bz), cl, rank, sm};
  }
  const PtxProgram& prog_;
  std::unique_ptr<GridState> grid_;
  std::unordered_map<uint32_t, uint32_t> slots_;
  std::vector<uint32_t> offsets_;
  // The warp `id`, for this run to change: one shared with another copy of the run, or made by one,
  // is copied onto this run first (a warp's home is the serial of the run it belongs to: an address
  // could be reused by a later run).
  PtxWarp& own(uint32_t id) {
    std::shared_ptr<PtxWarp>& w = warps_.at(id);
    if (w.use_count() > 1 || w->home() != serial_) w = w->clone_onto(*this, *grid_);
    return *w;
  }
  static uint64_t next_serial() {
    static std::atomic<uint64_t> n{0};
    return ++n;
  }
  std::vector<std::shared_ptr<PtxWarp>> warps_;  // by the engine's warp id (shared between copies: own)
  uint64_t serial_ = next_serial();
  bool notes_use_ = true;  // a timed run notes what it used in the program's RunUse
  bool started_ = false;
};

std::unique_ptr<sim::ExternalRun> PtxProgram::start_run(const model::Timing& timing) const {
  return std::make_unique<PtxRun>(*this, timing);
}

PtxWarp::PtxWarp(PtxRun& run, Warp warp, int cta, int32_t rank, uint32_t w)
    : run_(run), warp_(std::move(warp)), cta_(cta), rank_(rank), warp_id_(w), home_(run.serial()) {
  const std::string& t = run_.program().trace_warp;
  traced_ = !t.empty() && t == std::to_string(cta) + ":" + std::to_string(w);
}

// A debugging aid (docs/ptx.md): every request of one warp on stderr, with its PTX line and time.
void PtxWarp::trace(const SyncRequest& r, double now_ns) const {
  std::fprintf(stderr, "%.1f ns CTA %d warp %u: request %d, lanes %u, barrier 0x%llx, a %lld, b %lld, PTX line %u\n", now_ns, cta_,
               warp_id_, static_cast<int>(r.kind), r.lanes, static_cast<unsigned long long>(r.bar), static_cast<long long>(r.a),
               static_cast<long long>(r.b), run_.program().module->functions[r.function].body[r.instr].pos.line);
}

sim::BarRef PtxWarp::bar(uint64_t address) {
  sim::BarRef r;
  r.array = 0;
  r.index = run_.slot(shared_offset(address));
  const int32_t rank = shared_rank(address);
  r.rank = rank == rank_ ? sim::BarRef::kOwnCta : rank;
  return r;
}

bool PtxWarp::next(sim::Op& op, double now_ns) {
  digested_ = false;
  if (awaiting_ == Awaiting::WaitPassed || awaiting_ == Awaiting::Peek) warp_.answer(1);  // resumed once it passed
  else if (awaiting_ == Awaiting::Engine) warp_.answer(0);  // a remote arrive has no token
  awaiting_ = Awaiting::None;
  SyncRequest r;
  yielded_ = false;
  while (warp_.step(r, now_ns)) {
    yielded_ = r.yield;
    op = sim::Op{};
    op.site = run_.program().site_base[r.function] + r.instr;
    if (traced_ && r.kind != SyncKind::Compute) trace(r, now_ns);
    if (RunUse* use = run_.use(); use && r.kind != SyncKind::Compute) use->note(r, static_cast<uint32_t>(cta_), op.site);
    if (convert(r, op)) return true;
  }
  return false;
}

// One request as the engine's op; false for what the engine does not model (it goes on at once).
bool PtxWarp::convert(const SyncRequest& r, sim::Op& op) {
  using sim::OpKind;
  if (r.kind != SyncKind::Compute && r.kind != SyncKind::MbarTryWait) false_peek_ = PeekSite{};  // something synchronised
  switch (r.kind) {
    case SyncKind::Compute:
      op.kind = OpKind::Compute;
      op.a = std::max<int64_t>(1, r.a);
      op.b = std::clamp<int64_t>(r.b, 1, op.a);  // of it, the instructions' issue: their sub-partition's slot
      return true;
    case SyncKind::Sleep:
      op.kind = OpKind::Compute;
      op.a = std::max<int64_t>(1, r.a);
      return true;
    case SyncKind::MbarInit: op.kind = OpKind::Init; op.bar = bar(r.bar); op.a = r.a; return true;
    case SyncKind::MbarInval: op.kind = OpKind::Inval; op.bar = bar(r.bar); return true;
    case SyncKind::MbarArrive:
      // Each lane's arrive is its own arrival (with the instruction's count): they land one after
      // another, so a warp arriving past a phase's end over-arrives rather than faults.
      op.kind = OpKind::Arrive;
      op.bar = bar(r.bar);
      op.a = r.lanes > 1 ? r.a / r.lanes : r.a;
      op.b = r.lanes;
      op.flags = sim::kFlagAnswer;
      awaiting_ = Awaiting::Engine;
      return true;
    case SyncKind::MbarArriveExpectTx: op.kind = OpKind::ArriveExpectTx; op.bar = bar(r.bar); op.a = r.a; return true;
    case SyncKind::MbarExpectTx: op.kind = OpKind::ExpectTx; op.bar = bar(r.bar); op.a = r.a; return true;
    case SyncKind::MbarCompleteTx: op.kind = OpKind::CompleteTx; op.bar = bar(r.bar); op.a = r.a; return true;
    case SyncKind::MbarArriveDrop: op.kind = OpKind::ArriveDrop; op.bar = bar(r.bar); op.a = r.a; return true;
    case SyncKind::MbarTestWait:
      op.kind = OpKind::TestWait;
      op.bar = bar(r.bar);
      op.a = r.a;
      op.flags = sim::kFlagAnswer;
      awaiting_ = Awaiting::Engine;
      return true;
    case SyncKind::MbarTryWait:
      // A try_wait that fails blocks the warp until the phase changes (no spinning): the engine
      // resumes it once the parity has passed, and then it returns true.
      // A peek (SyncRequest::peek) the engine may answer false at its time limit; not the same peek
      // again right after it returned false (PeekSite).
      op.kind = OpKind::Wait;
      op.bar = bar(r.bar);
      op.a = r.a;
      peek_ = PeekSite{(uint64_t{r.function} << 32) | r.instr, r.bar, static_cast<uint64_t>(r.a)};
      {
        const bool peek = r.peek && peek_ != false_peek_;
        false_peek_ = PeekSite{};
        if (peek) op.flags = sim::kFlagAnswer;
        awaiting_ = peek ? Awaiting::Peek : Awaiting::WaitPassed;
      }
      return true;
    case SyncKind::FenceInit: op.kind = OpKind::FenceInit; return true;
    case SyncKind::TmaLoad: {
      op.kind = OpKind::TmaLoad;
      op.bar = bar(r.bar);
      op.bar.rank = sim::BarRef::kOwnCta;  // the engine lands bytes at the same offset in each destination
      op.a = r.a;
      op.b = r.b;
      const int32_t dst_rank = shared_rank(r.dst);
      if (r.b != 0) op.flags |= sim::kFlagMulticast;
      else if (dst_rank >= 0 && dst_rank != rank_) op.b = int64_t{1} << dst_rank, op.flags |= sim::kFlagMulticast;
      if (r.cta_group2) op.flags |= sim::kFlagCtaGroup2;
      op.box = r.box;
      op.l2_fill_boxes = r.l2_fill_boxes;
      op.tma_row16 = r.tma_row16;
      return true;
    }
    case SyncKind::BulkStore: op.kind = OpKind::BulkStore; op.a = r.a; op.box = r.box; return true;
    case SyncKind::BulkCommit: op.kind = OpKind::CommitGroup; return true;
    case SyncKind::BulkWait: op.kind = OpKind::WaitGroup; op.a = r.a; op.b = r.b; return true;
    case SyncKind::NamedSync: case SyncKind::NamedArrive:
      op.kind = r.kind == SyncKind::NamedSync ? OpKind::NamedSync : OpKind::NamedArrive;
      op.a = r.a;
      // No count: every thread of the CTA, which the engine counts by warps.
      op.b = r.b != 0 ? r.b : int64_t{run_.program().warps_per_cta} * 32;
      return true;
    case SyncKind::NamedRed:
      throw PtxError(run_.program().module->path, run_.program().module->functions[r.function].body[r.instr].pos,
                     "bar.red is not supported yet (its reduction across the CTA's threads is not modelled)");
    case SyncKind::ClusterArrive:
      op.kind = OpKind::ClusterArrive;
      op.b = r.b ? sim::kClusterArriveRelaxed : sim::kClusterArriveRelease;
      return true;
    case SyncKind::ClusterWait: op.kind = OpKind::ClusterWait; return true;
    case SyncKind::WgmmaMma:
      // The warpgroup's MMA: each warp of the group issues it; it runs once all have (Engine::do_wgmma).
      op.kind = OpKind::Mma;
      op.flags = sim::kFlagWgmma;
      op.a = sim::pack_mma({static_cast<model::MmaKind>(r.mma_kind), static_cast<int>(std::max<int64_t>(1, r.a)),
                            static_cast<int>(r.b), static_cast<int>(r.c)});
      op.b = 1;
      return true;
    case SyncKind::WgmmaCommit: op.kind = OpKind::MmaCommitGroup; return true;
    case SyncKind::WgmmaWait: op.kind = OpKind::MmaWaitGroup; op.a = r.a; return true;
    case SyncKind::AsyncMbarArrive:
      // cp.async.mbarrier.arrive raises the pending count and arrives when the copies land: no net
      // arrival. The .noinc form is one of the expected arrivals (one per lane).
      if (r.b == 0) return false;
      op.kind = OpKind::Arrive;
      op.bar = bar(r.bar);
      op.a = 1;
      op.b = r.lanes;
      return true;
    case SyncKind::TmemAlloc:
      // The engine answers the first column it allocated; the warp writes the address to shared memory.
      op.kind = OpKind::TmemAlloc;
      op.a = r.a;
      op.flags = sim::kFlagAnswer | (r.cta_group2 ? sim::kFlagCtaGroup2 : 0);
      awaiting_ = Awaiting::Engine;
      return true;
    case SyncKind::TmemDealloc: case SyncKind::TmemRelinquish:
      op.kind = r.kind == SyncKind::TmemDealloc ? OpKind::TmemDealloc : OpKind::TmemRelinquish;
      op.a = r.a;
      if (r.cta_group2) op.flags = sim::kFlagCtaGroup2;
      return true;
    case SyncKind::UmmaMma:
      op.kind = OpKind::Mma;
      op.a = sim::pack_mma({static_cast<model::MmaKind>(r.mma_kind), static_cast<int>(r.a), static_cast<int>(r.b), static_cast<int>(r.c)});
      op.b = r.lanes;
      if (r.cta_group2) op.flags = sim::kFlagCtaGroup2;
      return true;
    case SyncKind::UmmaCommit: {
      // One arrival on the barrier at this offset in each CTA of the mask; without .multicast, on the
      // CTA the address names.
      op.kind = OpKind::Commit;
      op.bar = bar(r.bar);
      const int32_t at_rank = op.bar.rank;
      op.bar.rank = sim::BarRef::kOwnCta;
      op.b = r.b;
      if (r.multicast) op.flags |= sim::kFlagMulticast;
      else if (at_rank != sim::BarRef::kOwnCta) op.b = int64_t{1} << at_rank, op.flags |= sim::kFlagMulticast;
      if (r.cta_group2) op.flags |= sim::kFlagCtaGroup2;
      return true;
    }
    case SyncKind::TmemLoad: case SyncKind::TmemStore:
      op.kind = r.kind == SyncKind::TmemLoad ? OpKind::TmemLoad : OpKind::TmemStore;
      op.a = r.a;
      return true;
    case SyncKind::TmemWait: op.kind = OpKind::TmemWait; op.a = r.a; return true;
    case SyncKind::ClcTryCancel:
      op.kind = OpKind::ClcTryCancel;
      op.bar = bar(r.bar);
      op.bar.rank = sim::BarRef::kOwnCta;
      op.a = shared_offset(r.dst);
      op.b = r.multicast;
      return true;
    case SyncKind::Trap: op.kind = OpKind::Fault; return true;
    // Ampere cp.async copies move no modelled data and complete at once; fences order nothing the
    // engine models beyond fence.mbarrier_init; setmaxnreg is a budget matter.
    case SyncKind::FenceProxyAsync: case SyncKind::WgmmaFence: case SyncKind::AsyncCopy:
    case SyncKind::AsyncCommit: case SyncKind::AsyncWait: case SyncKind::SetMaxNreg: case SyncKind::Tcgen05Other:
      return false;
  }
  return false;
}

}  // namespace

namespace {
// A header of the CUDA toolkit (cuda::ptx wrappers, CCCL, the runtime's intrinsics): not where a
// kernel author would look for their mistake.
bool toolkit_header(const std::string& path) {
  return path.find("/cccl/") != std::string::npos || path.find("/cuda/include/") != std::string::npos ||
         path.find("/targets/x86_64-linux/include/") != std::string::npos || path.find("/cuda-") != std::string::npos;
}
std::string position(const Module& module, uint32_t file, uint32_t line, uint32_t col) {
  const std::string* path = module.file_path(file);
  std::string p = path ? *path : "file" + std::to_string(file);
  // Relative to where pipesim runs when the file is below it (nvcc records absolute paths).
  std::error_code ec;
  const std::filesystem::path rel = std::filesystem::path(p).lexically_relative(std::filesystem::current_path(ec));
  if (!ec && !rel.empty() && *rel.begin() != "..") p = rel.string();
  return p + ":" + std::to_string(line) + (col ? ":" + std::to_string(col) : "");
}
}  // namespace

std::string source_position(const Module& module, const SourcePos& src) {
  if (src.file == 0 && src.line == 0) return {};
  // The innermost position in the kernel's own code (a toolkit wrapper's line is where the kernel
  // called it), and the kernel's call of the helper that holds it, where it was inlined.
  InlineFrame f{src.file, src.line, src.col, src.caller};
  auto in_toolkit = [&](const InlineFrame& x) {
    const std::string* path = module.file_path(x.file);
    return path && toolkit_header(*path);
  };
  while (in_toolkit(f) && f.caller >= 0) f = module.inline_frames[static_cast<size_t>(f.caller)];
  std::string out = position(module, f.file, f.line, f.col);
  // Then each caller up the chain, but not the outermost: that is the entry's own body, one call to
  // the function that holds the kernel (a __global__ wrapper, CUTLASS's device_kernel).
  for (int hops = 0; f.caller >= 0 && hops < 8; ++hops) {
    f = module.inline_frames[static_cast<size_t>(f.caller)];
    if (f.caller < 0) break;
    out += ", called at " + position(module, f.file, f.line, f.col);
  }
  return out;
}

sim::Kernel make_kernel(std::shared_ptr<const Module> module, const Launch& launch, std::shared_ptr<RunUse> use) {
  const model::Arch* arch = model::find_arch(launch.arch);
  if (!arch) throw LaunchError("unknown architecture '" + launch.arch + "'", launch.file);
  if (launch.function_index < 0 || static_cast<size_t>(launch.function_index) >= module->functions.size())
    throw LaunchError("the launch is not resolved against this module (resolve_launch)", launch.file);
  const Function* entry = &module->functions[static_cast<size_t>(launch.function_index)];

  auto prog = std::make_shared<PtxProgram>();
  prog->module = module;
  prog->program = decode(*module, *entry);
  prog->entry = entry;
  prog->arch = arch;
  prog->launch = launch;
  prog->warps_per_cta = (launch.threads() + 31) / 32;
  if (const char* t = std::getenv("PIPESIM_PTX_TRACE")) prog->trace_warp = t;
  prog->use = std::move(use);

  sim::Kernel k;
  k.name = demangle(entry->name);
  k.file = module->path;
  k.lines = module->lines;
  k.arch = arch;
  k.launch.ctas = static_cast<int64_t>(launch.ctas());
  k.launch.cluster = launch.cluster_size();
  k.launch.threads = launch.threads();
  k.launch.smem = static_cast<int64_t>(launch.dynamic_smem + launch.static_smem);
  k.launch.regs = launch.regs.value_or(entry->directives.maxnreg.value_or(0));
  k.launch.ctas_per_sm = std::max<int64_t>(1, model::resident_ctas(*arch, k.launch.threads, k.launch.smem, k.launch.regs));
  sim::BarrierArray all;
  all.name = "mbarrier";
  all.size = 0;  // slots are numbered as the kernel initialises barriers
  k.barriers.push_back(all);
  for (const Function& f : module->functions) {
    prog->site_base.push_back(static_cast<uint32_t>(k.sites.size()));
    for (const Instruction& in : f.body) {
      std::string what = in.opcode;
      for (const std::string& m : in.mods) what += "." + m;
      k.sites.push_back(sim::Site{{in.pos.line, in.pos.col}, std::move(what), source_position(*module, in.src)});
    }
  }
  k.external = std::move(prog);
  return k;
}

}  // namespace pipesim::ptx
