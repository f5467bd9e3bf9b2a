#include "sim/lowering.hpp"

#include "sim/l2.hpp"
#include "sim/operand_rules.hpp"

#include <bit>
#include <string>

namespace pipesim::sim {

template <class Env>
int64_t eval_in(const Expr& expr, const Env& env) {
  int64_t stack[64];
  int sp = 0;
  auto fail = [&](const char* why) -> int64_t { throw ScenarioError(expr.loc, why); };
  for (const ExprInstr& in : expr.code) {
    switch (in.code) {
      case ExprCode::Const:
        if (sp == 64) fail("expression too deep");
        stack[sp++] = in.value;
        continue;
      case ExprCode::Slot:
        if (sp == 64) fail("expression too deep");
        if (in.value < 0 || static_cast<size_t>(in.value) >= env.size()) fail("internal: bad slot");
        stack[sp++] = env[static_cast<size_t>(in.value)];
        continue;
      case ExprCode::Neg: case ExprCode::Not: case ExprCode::BitNot: case ExprCode::Popcount: {
        if (sp < 1) fail("internal: malformed expression");
        int64_t& x = stack[sp - 1];
        if (in.code == ExprCode::Neg) x = -x;
        else if (in.code == ExprCode::Not) x = !x;
        else if (in.code == ExprCode::BitNot) x = ~x;
        else x = std::popcount(static_cast<uint64_t>(x));
        continue;
      }
      default: break;
    }
    if (sp < 2) fail("internal: malformed expression");
    const int64_t b = stack[--sp];
    int64_t& a = stack[sp - 1];
    switch (in.code) {
      case ExprCode::Add: a = a + b; break;
      case ExprCode::Sub: a = a - b; break;
      case ExprCode::Mul: a = a * b; break;
      case ExprCode::Div: if (b == 0) fail("division by zero"); a = a / b; break;
      case ExprCode::Mod: if (b == 0) fail("division by zero"); a = a % b; break;
      case ExprCode::Shl: a = (b < 0 || b > 62) ? fail("shift out of range") : a << b; break;
      case ExprCode::Shr: a = (b < 0 || b > 62) ? fail("shift out of range") : a >> b; break;
      case ExprCode::BitAnd: a = a & b; break;
      case ExprCode::BitOr: a = a | b; break;
      case ExprCode::BitXor: a = a ^ b; break;
      case ExprCode::Lt: a = a < b; break;
      case ExprCode::Le: a = a <= b; break;
      case ExprCode::Gt: a = a > b; break;
      case ExprCode::Ge: a = a >= b; break;
      case ExprCode::Eq: a = a == b; break;
      case ExprCode::Ne: a = a != b; break;
      case ExprCode::And: a = a && b; break;
      case ExprCode::Or: a = a || b; break;
      case ExprCode::Min: a = a < b ? a : b; break;
      case ExprCode::Max: a = a > b ? a : b; break;
      default: fail("internal: bad opcode");
    }
  }
  if (sp != 1) fail("internal: malformed expression");
  return stack[0];
}

int64_t eval(const Expr& expr, const std::vector<int64_t>& env) { return eval_in(expr, env); }

CtaCoord cta_coord(const Kernel& k, int cta) {
  const int cs = static_cast<int>(k.launch.cluster);
  return {cta, cta / cs, cta % cs};
}

int role_of_warp(const Kernel& k, int warp) {
  for (size_t r = 0; r < k.roles.size(); ++r)
    if (warp >= k.roles[r].warp_lo && warp <= k.roles[r].warp_hi) return static_cast<int>(r);
  return -1;
}

int64_t arrivals_per_warp(const Participants& p, int warp_in_role) {
  switch (p.unit) {
    case ArrivalUnit::Threads: return p.n == 1 ? 1 : 32;  // "1 threads" = one elected thread
    case ArrivalUnit::Warps: return 1;
    case ArrivalUnit::Warpgroups: return warp_in_role % 4 == 0 ? 1 : 0;
  }
  return 0;
}

WarpProgram::WarpProgram(const Kernel& kernel, int cta, int warp)
    : kernel_(&kernel), role_(role_of_warp(kernel, warp)), coord_(cta_coord(kernel, cta)) {
  env_.assign(kernel.num_slots, 0);
  const int64_t cs = kernel.launch.cluster;
  env_[kSlotCtaId] = cta;
  env_[kSlotClusterId] = coord_.cluster;
  env_[kSlotClusterRank] = coord_.rank;
  env_[kSlotWarp] = warp;
  env_[kSlotWarpInRole] = role_ >= 0 ? warp - kernel.roles[static_cast<size_t>(role_)].warp_lo : 0;
  env_[kSlotNumCtas] = kernel.launch.ctas;
  env_[kSlotNumClusters] = kernel.launch.ctas / cs;
  env_[kSlotClusterSize] = cs;
  env_[kSlotNumSms] = kernel.arch ? kernel.arch->cap.sms : 0;
  const bool pair = kernel.launch.cta_group == 2;
  env_[kSlotIsLeader] = pair ? (coord_.rank % 2 == 0) : 1;
  env_[kSlotPeerRank] = pair ? (coord_.rank ^ 1) : coord_.rank;
  env_[kSlotNumTiles] = kernel.launch.tiles;
  env_[kSlotLeaderRank] = pair ? (coord_.rank & ~1) : coord_.rank;
  pipes_.resize(kernel.pipelines.size());
  for (size_t i = 0; i < kernel.pipelines.size(); ++i) {
    const PipelineDecl& p = kernel.pipelines[i];
    for (Side side : {Side::Producer, Side::Consumer}) {
      SideState& st = side == Side::Producer ? pipes_[i].producer : pipes_[i].consumer;
      const int64_t phase = side == Side::Producer ? p.producer_phase : p.consumer_phase;
      st.kind = p.state;
      st.phase = phase & 1;
      st.index = p.state == StateKind::PipelineStateSimple ? phase * p.stages : 0;
      // A start phase other than CUTLASS's (producer 1, consumer 0) is an override.
      st.overridden = phase != (side == Side::Producer ? 1 : 0);
    }
  }
  if (role_ >= 0) stack_.push_back({&kernel.roles[static_cast<size_t>(role_)].body, 0, nullptr, 0, 1});
}

void WarpProgram::hash_into(StateHash& out) const {
  if (hashed_) {
    out.add(hash_);
    return;
  }
  StateHash h;
  h.add(role_).add(env_.size());
  for (int64_t v : env_) h.add(v);
  h.add(stack_.size());
  for (const Frame& f : stack_) h.add_ptr(f.body).add(f.pc).add_ptr(f.loop).add(f.end).add(f.step);
  const auto side = [&](const SideState& st) { h.add(st.index).add(st.phase).add(st.advances).add(st.kind).add(st.overridden); };
  for (const PipeWarp& pw : pipes_) {
    side(pw.producer);
    side(pw.consumer);
    h.add(pw.acquired).add(pw.unreleased.size() - pw.head);
    for (size_t i = pw.head; i < pw.unreleased.size(); ++i) h.add(pw.unreleased[i]);
  }
  // Ops expanded and not yet taken: their kinds and operands are the program's next steps.
  h.add(qsize_ - qhead_);
  for (size_t i = qhead_; i < qsize_; ++i) {
    const Op& o = i < kQueueInline ? qbuf_[i] : qspill_[i - kQueueInline];
    hash_op(h, o);
  }
  hash_ = h.value();
  hashed_ = true;
  out.add(hash_);
}

bool WarpProgram::next(Op& op) {
  hashed_ = false;
  uint32_t idle_steps = 0;  // statements stepped through since the last op
  uint32_t idle_site = 0;
  while (qhead_ == qsize_) {
    qsize_ = qhead_ = 0;
    qspill_.clear();
    if (stack_.empty()) return false;
    // A loop whose body yields no op (`for k in 0 .. 10**12:` around an untaken `if`) would keep this
    // call from returning: every kIdleSteps statements it yields a zero-time compute, an event the
    // run's budget counts (RunOptions::max_events). No scenario in scenarios/ comes near.
    if (++idle_steps > kIdleSteps) {
      op = Op{};
      op.kind = OpKind::Compute;
      op.site = idle_site;
      return true;
    }
    Frame& f = stack_.back();
    if (f.pc >= f.body->size()) {
      if (f.loop) {
        int64_t& var = env_[f.loop->slot];
        var += f.step;
        if (var < f.end) {
          f.pc = 0;
          continue;
        }
      }
      stack_.pop_back();
      continue;
    }
    const Stmt& s = (*f.body)[f.pc++];
    idle_site = s.site;
    switch (s.kind) {
      case StmtKind::For: {
        const int64_t b = eval_in(*s.begin, env_), e = eval_in(*s.end, env_);
        const int64_t st = s.step ? eval_in(*s.step, env_) : 1;
        if (refuse(s, "bad_operand", operand::loop_step(st))) break;
        if (b < e && !s.body.empty()) {
          env_[s.slot] = b;
          stack_.push_back({&s.body, 0, &s, e, st});  // invalidates f
        }
        break;
      }
      case StmtKind::If: {
        const bool c = eval_in(*s.value, env_) != 0;
        const std::vector<Stmt>& body = c ? s.body : s.else_body;
        if (!body.empty()) stack_.push_back({&body, 0, nullptr, 0, 1});
        break;
      }
      case StmtKind::Let: env_[s.slot] = eval_in(*s.value, env_); break;
      case StmtKind::SetState: set_state(s); break;
      case StmtKind::Pipe: expand_pipe(s); break;
      case StmtKind::Op: expand(s); break;
    }
  }
  op = qhead_ < kQueueInline ? qbuf_[qhead_] : qspill_[qhead_ - kQueueInline];
  ++qhead_;
  return true;
}

int64_t WarpProgram::value(const std::optional<Expr>& e, int64_t fallback) const {
  return e ? eval_in(*e, env_) : fallback;
}

// A TMA's `box =`, as the engine's footprint key (0: none given).
uint64_t WarpProgram::box_of(const Stmt& s) const {
  if (!s.box) return 0;
  const int64_t v = eval_in(*s.box, env_);
  return box_key(1, &v, 1);
}

// A TMA's `row_bytes =` into Op::tma_row16; false (the warp refused) when out of range.
bool WarpProgram::set_row(Op& op, const Stmt& s) {
  if (!s.row_bytes) return true;
  const int64_t v = eval_in(*s.row_bytes, env_);
  if (refuse(s, "bad_operand", operand::tma_row_bytes(v))) return false;
  op.tma_row16 = static_cast<uint8_t>(v / 16);
  return true;
}

Op WarpProgram::make(OpKind kind, const Stmt& s) const {
  Op op;
  op.kind = kind;
  op.site = s.site;
  return op;
}

bool WarpProgram::refuse(const Stmt& s, std::string_view rule, std::string why) {
  if (why.empty()) return false;
  fault_ = {std::string(rule), std::move(why)};
  emit(make(OpKind::Fault, s));
  stack_.clear();
  return true;
}

// The statement's barrier operand; false when its index or rank is out of range (refused).
bool WarpProgram::bar_of(const Stmt& s, BarRef& out) {
  const BarOperand& b = *s.bar;
  const BarrierArray& arr = kernel_->barriers.at(b.array);
  const int64_t idx = eval_in(b.index, env_);
  if (refuse(s, "bad_operand", operand::barrier_index(idx, arr.name, arr.size))) return false;
  out = BarRef{b.array, static_cast<uint32_t>(idx), BarRef::kOwnCta};
  if (b.rank) {
    const int64_t rank = eval_in(*b.rank, env_);
    if (refuse(s, "bad_operand", operand::cluster_rank(rank, kernel_->launch.cluster))) return false;
    out.rank = static_cast<int32_t>(rank);
  }
  return true;
}

void WarpProgram::expand(const Stmt& s) {
  Op op = make(s.op, s);
  if (s.cell) {  // store / load of a shared-memory value cell
    const SmemArray& arr = kernel_->smem.at(s.cell->array);
    const int64_t idx = eval_in(s.cell->index, env_);
    if (refuse(s, "bad_operand", operand::barrier_index(idx, arr.name, arr.size))) return;
    op.b = arr.first + idx;
    if (s.cell->rank) {
      const int64_t rank = eval_in(*s.cell->rank, env_);
      if (refuse(s, "bad_operand", operand::cluster_rank(rank, kernel_->launch.cluster))) return;
      op.bar.rank = static_cast<int32_t>(rank);
    }
    if (s.op == OpKind::ClcTryCancel) {  // the response's cell in a, its barrier, b = 1 multicast
      op.a = op.b;
      op.b = s.mask ? 1 : 0;
      if (!bar_of(s, op.bar)) return;
    } else {
      op.a = s.op == OpKind::SmemStore ? eval_in(*s.value, env_) : s.slot;
    }
    emit(op);
    return;
  }
  if (s.bar && !bar_of(s, op.bar)) return;
  switch (s.op) {
    case OpKind::Compute:
      op.a = value(s.ns, 0);
      if (refuse(s, "bad_operand", operand::compute_time(op.a))) return;
      break;
    case OpKind::Wait:
      if (s.phase) {
        const int64_t k = eval_in(*s.phase, env_);
        if (refuse(s, "bad_operand", operand::phase(k))) return;
        op.a = k & 1;
        op.b = k + 1;  // "phase k has completed" = k+1 completions
        op.flags |= kFlagPhaseTracked;
      } else {
        op.a = value(s.parity, 0);
      }
      break;
    case OpKind::TestWait: op.a = value(s.parity, 0); op.b = value(s.expect, 1); break;
    case OpKind::Arrive: case OpKind::ArriveDrop: case OpKind::Init: op.a = value(s.count, 1); break;
    case OpKind::ArriveExpectTx: case OpKind::ExpectTx: case OpKind::CompleteTx: op.a = value(s.bytes, 0); break;
    case OpKind::TmaLoad:
      op.a = value(s.bytes, 0);
      op.b = value(s.mask, 0);
      if (s.mask) op.flags |= kFlagMulticast;
      op.box = box_of(s);
      if (!set_row(op, s)) return;
      if (op.bar.rank != BarRef::kOwnCta) {
        // `cta = leader_rank` under cta_group 2: .cta_group::2, each destination's bytes complete on
        // its pair leader's barrier (as a tma -> umma pipeline's copies do).
        if (refuse(s, "bad_operand", operand::tma_barrier_rank(op.bar.rank, coord_.rank, kernel_->launch.cta_group))) return;
        if (kernel_->launch.cta_group == 2 && op.bar.rank == (coord_.rank & ~1)) op.flags |= kFlagCtaGroup2;
        op.bar.rank = BarRef::kOwnCta;
      }
      break;
    case OpKind::BulkStore: op.a = value(s.bytes, 0); break;
    case OpKind::WaitGroup: op.a = value(s.n, 0); op.b = value(s.expect, 0); break;
    case OpKind::NamedSync: case OpKind::NamedArrive:
      op.a = value(s.id, 0);
      op.b = value(s.threads, kernel_->launch.threads);
      break;
    case OpKind::Inval: case OpKind::FenceInit: case OpKind::CommitGroup:
    case OpKind::ClusterArrive: case OpKind::ClusterWait: case OpKind::TmemRelinquish: break;
    case OpKind::Mma: {
      const int64_t m = value(s.mma_m, 0), n = value(s.mma_n, 0), k = value(s.mma_k, 0);
      for (const auto& [which, v] : {std::pair{"M", m}, std::pair{"N", n}, std::pair{"K", k}})
        if (refuse(s, "bad_operand", operand::mma_dim(which, v))) return;
      op.a = pack_mma({s.mma_kind, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k)});
      op.b = value(s.count, 1);
      if (refuse(s, "bad_operand", operand::mma_count(op.b))) return;
      if (s.wgmma) op.flags |= kFlagWgmma;  // the engine checks its shape (bad_mma_shape), as a PTX kernel's
      break;
    }
    case OpKind::Commit:
      op.b = value(s.mask, 0);
      if (s.mask) op.flags |= kFlagMulticast;
      break;
    case OpKind::TmemAlloc: case OpKind::TmemDealloc: op.a = value(s.cols, 0); break;  // the engine: tmem_bad_alloc
    case OpKind::TmemLoad: case OpKind::TmemStore:
      op.a = value(s.cols, 0);
      if (refuse(s, "bad_operand", operand::tmem_access_cols(op.a))) return;
      break;
    case OpKind::TmemWait: op.a = value(s.n, 0); break;
    case OpKind::StageWrite: break;
    case OpKind::MmaCommitGroup: break;
    case OpKind::MmaWaitGroup: op.a = value(s.n, 0); break;  // the engine: wgmma_wait_count
    // Only external programs (PTX) issue these; the scenario language has no statement for them.
    case OpKind::Fault: break;
    case OpKind::SmemStore: case OpKind::SmemLoad: case OpKind::ClcTryCancel: break;  // above (s.cell)
  }
  switch (s.op) {
    case OpKind::Mma: case OpKind::Commit: case OpKind::TmemAlloc: case OpKind::TmemDealloc: {
      if (s.wgmma) break;  // no cta_group: a warpgroup's own SM
      const int64_t g = cta_group_of(s);
      if (g == 0) return;
      if (g == 2) op.flags |= kFlagCtaGroup2;
      break;
    }
    default: break;
  }
  emit(op);
}

int64_t WarpProgram::cta_group_of(const Stmt& s) {
  const int64_t g = value(s.cta_group, kernel_->launch.cta_group);
  return refuse(s, "bad_operand", operand::cta_group(g, kernel_->launch.cluster)) ? 0 : g;
}

int64_t WarpProgram::leader_rank() const {
  return kernel_->launch.cta_group == 2 ? (coord_.rank & ~1) : coord_.rank;
}

int64_t WarpProgram::pair_mask() const {
  return kernel_->launch.cta_group == 2 ? (int64_t{3} << leader_rank()) : (int64_t{1} << coord_.rank);
}

BarRef WarpProgram::at_leader(uint32_t array, int64_t index) const {
  const int64_t l = leader_rank();
  return {array, static_cast<uint32_t>(index), l == coord_.rank ? BarRef::kOwnCta : static_cast<int32_t>(l)};
}

// tcgen05.commit of this warp's earlier tcgen05 ops to `array[index]` of every CTA in `mask`.
void WarpProgram::push_commit(const Stmt& s, uint32_t array, int64_t index, int64_t mask) {
  Op c = make(OpKind::Commit, s);
  c.bar = {array, static_cast<uint32_t>(index), BarRef::kOwnCta};
  c.b = mask;
  c.flags = kFlagFromPipeline;
  if (kernel_->launch.cta_group == 2) c.flags |= kFlagCtaGroup2;
  emit(c);
}

// ------------------------------------------------------------------ pipelines

int64_t WarpProgram::stage_index(const SideState& st, int64_t stages) const {
  return st.kind == StateKind::PipelineStateSimple ? st.index % stages : st.index;
}
int64_t WarpProgram::stage_phase(const SideState& st, int64_t stages) const {
  return st.kind == StateKind::PipelineStateSimple ? (st.index / stages) & 1 : st.phase;
}
void WarpProgram::advance(SideState& st, int64_t stages) {
  ++st.advances;
  if (st.kind == StateKind::PipelineStateSimple) {
    ++st.index;
    return;
  }
  if (++st.index == stages) {
    st.index = 0;
    st.phase ^= 1;
  }
}

void WarpProgram::emit_acquire_wait(const PipelineDecl& p, PipeWarp& pw, const Stmt& s) {
  SideState& st = pw.producer;
  const int64_t i = stage_index(st, p.stages);
  Op w = make(OpKind::Wait, s);
  w.bar = {p.empty, static_cast<uint32_t>(i), BarRef::kOwnCta};
  w.a = stage_phase(st, p.stages);
  w.flags = kFlagFromPipeline | kFlagProducerSide;
  if (st.overridden) {
    w.flags |= kFlagStateOverridden;
  } else {
    // The producer's k-th use of a stage needs the consumers' k-th release of it.
    w.b = st.advances / p.stages;
    w.flags |= kFlagPhaseTracked;
  }
  emit(w);
}

void WarpProgram::emit_producer_acquire(const PipelineDecl& p, PipeWarp& pw, const Stmt& s) {
  const int64_t i = stage_index(pw.producer, p.stages);
  if (p.kind == PipelineKind::TmaStore) {
    // PipelineTmaStore: the buffer is free once at most stages-1 bulk groups still read smem.
    Op w = make(OpKind::WaitGroup, s);
    w.a = p.stages - 1;
    w.b = 1;
    w.flags = kFlagFromPipeline | kFlagProducerSide;
    emit(w);
    Op sw = make(OpKind::StageWrite, s);
    sw.a = s.pipeline;
    sw.b = i;
    sw.flags = kFlagFromPipeline | kFlagProducerSide;
    emit(sw);
    pw.acquired = i;
    advance(pw.producer, p.stages);
    return;
  }
  emit_acquire_wait(p, pw, s);
  const bool arms = p.kind == PipelineKind::TmaAsync || (p.kind == PipelineKind::TmaUmma && env_[kSlotIsLeader]);
  if (arms) {
    // One elected thread arms the full barrier with the stage's bytes; under PipelineTmaUmma
    // only the leader CTA does, for both CTAs of the pair.
    Op a = make(OpKind::ArriveExpectTx, s);
    a.bar = {p.full, static_cast<uint32_t>(i), BarRef::kOwnCta};
    a.a = p.kind == PipelineKind::TmaUmma ? p.tx * kernel_->launch.cta_group : p.tx;
    a.flags = kFlagFromPipeline | kFlagProducerSide;
    emit(a);
  }
  pw.acquired = i;
  advance(pw.producer, p.stages);
}

// A call that works on "the stage this warp acquired" needs a producer_acquire before it.
void WarpProgram::require_acquired(const PipelineDecl& p, const PipeWarp& pw, const Stmt& s) const {
  if (pw.acquired < 0)
    throw ScenarioError(kernel_->sites[s.site].loc,
                        kernel_->sites[s.site].what + " before any " + p.name + ".producer_acquire in this warp");
}

void WarpProgram::expand_pipe(const Stmt& s) {
  const PipelineDecl& p = kernel_->pipelines.at(s.pipeline);
  PipeWarp& pw = pipes_.at(s.pipeline);
  const int warp_in_role = static_cast<int>(env_[kSlotWarpInRole]);
  switch (s.call) {
    case PipeCall::ProducerAcquire: emit_producer_acquire(p, pw, s); break;
    case PipeCall::ProducerCommit: {
      require_acquired(p, pw, s);
      if (p.kind == PipelineKind::TmaAsync || p.kind == PipelineKind::TmaUmma) break;  // the TMA completes the bytes
      if (p.kind == PipelineKind::TmaStore) {
        Op c = make(OpKind::CommitGroup, s);
        c.flags = kFlagFromPipeline | kFlagProducerSide;
        emit(c);
        break;
      }
      if (p.kind == PipelineKind::UmmaAsync) {
        push_commit(s, p.full, pw.acquired, p.multicast ? eval_in(*p.multicast, env_) : pair_mask());
        break;
      }
      const int64_t n = arrivals_per_warp(p.producers, warp_in_role);
      if (n == 0) break;
      Op a = make(OpKind::Arrive, s);
      // PipelineAsyncUmma: the producers of both CTAs arrive on the leader's full barrier.
      a.bar = p.kind == PipelineKind::AsyncUmma ? at_leader(p.full, pw.acquired)
                                                : BarRef{p.full, static_cast<uint32_t>(pw.acquired), BarRef::kOwnCta};
      a.a = n;
      a.flags = kFlagFromPipeline | kFlagProducerSide;
      emit(a);
      break;
    }
    case PipeCall::Store: {
      require_acquired(p, pw, s);
      Op st = make(OpKind::BulkStore, s);
      st.a = value(s.bytes, 0);
      st.b = (static_cast<int64_t>(s.pipeline) + 1) << 32 | pw.acquired;
      st.flags = kFlagFromPipeline | kFlagProducerSide;
      emit(st);
      break;
    }
    case PipeCall::Tma: {
      require_acquired(p, pw, s);
      Op t = make(OpKind::TmaLoad, s);
      t.bar = {p.full, static_cast<uint32_t>(pw.acquired), BarRef::kOwnCta};
      t.a = value(s.bytes, p.tx);
      t.b = value(s.mask, 0);
      t.flags = kFlagFromPipeline | kFlagProducerSide;
      if (s.mask) t.flags |= kFlagMulticast;
      t.box = box_of(s);
      if (!set_row(t, s)) return;
      // .cta_group::2: the bytes complete on the pair leader's barrier (the engine maps each
      // destination CTA to its leader).
      if (p.kind == PipelineKind::TmaUmma && kernel_->launch.cta_group == 2) t.flags |= kFlagCtaGroup2;
      emit(t);
      break;
    }
    case PipeCall::ConsumerWait: {
      SideState& st = pw.consumer;
      const int64_t i = stage_index(st, p.stages);
      Op w = make(OpKind::Wait, s);
      w.bar = {p.full, static_cast<uint32_t>(i), BarRef::kOwnCta};
      w.a = stage_phase(st, p.stages);
      w.flags = kFlagFromPipeline;
      if (st.overridden) {
        w.flags |= kFlagStateOverridden;
      } else {
        w.b = st.advances / p.stages + 1;  // the k-th wait on a stage needs its (k+1)-th fill
        w.flags |= kFlagPhaseTracked;
      }
      emit(w);
      pw.unreleased.push_back(i);
      advance(st, p.stages);
      break;
    }
    case PipeCall::ConsumerRelease: {
      if (pw.head == pw.unreleased.size())
        throw ScenarioError(kernel_->sites[s.site].loc, p.name + ".consumer_release without a matching " + p.name + ".consumer_wait in this warp");
      const int64_t j = pw.unreleased[pw.head++];
      if (pw.head == pw.unreleased.size()) {
        pw.unreleased.clear();
        pw.head = 0;
      }
      if (p.kind == PipelineKind::TmaUmma || p.kind == PipelineKind::AsyncUmma) {
        // The MMA warp releases with tcgen05.commit, multicast to the CTAs whose loads feed it.
        push_commit(s, p.empty, j, p.multicast ? eval_in(*p.multicast, env_) : pair_mask());
        break;
      }
      const int64_t n = arrivals_per_warp(p.consumers, warp_in_role);
      if (p.kind == PipelineKind::UmmaAsync) {
        // Every epilogue thread of both CTAs arrives on the leader's empty barrier.
        if (n == 0) break;
        Op a = make(OpKind::Arrive, s);
        a.bar = at_leader(p.empty, j);
        a.a = n;
        a.flags = kFlagFromPipeline;
        emit(a);
        break;
      }
      if (n == 0) break;
      const int64_t mask = p.multicast ? eval_in(*p.multicast, env_) : 0;
      if (mask != 0 && refuse(s, "bad_operand", operand::multicast_mask(mask, kernel_->launch.cluster))) break;
      if (mask == 0) {
        Op a = make(OpKind::Arrive, s);
        a.bar = {p.empty, static_cast<uint32_t>(j), BarRef::kOwnCta};
        a.a = n;
        a.flags = kFlagFromPipeline;
        emit(a);
        break;
      }
      for (int r = 0; r < kernel_->launch.cluster; ++r) {
        if (!((mask >> r) & 1)) continue;
        Op a = make(OpKind::Arrive, s);
        a.bar = {p.empty, static_cast<uint32_t>(j), r == coord_.rank ? BarRef::kOwnCta : r};
        a.a = n;
        a.flags = kFlagFromPipeline;
        emit(a);
      }
      break;
    }
    case PipeCall::ProducerTail:
      if (p.kind == PipelineKind::TmaStore) {
        Op w = make(OpKind::WaitGroup, s);  // wait_group 0: every store has completed
        w.flags = kFlagFromPipeline | kFlagProducerSide;
        emit(w);
        break;
      }
      switch (p.tail) {
        case TailVariant::None: break;
        case TailVariant::Cutlass45:
          // Advance S-1 stages, then one full producer_acquire (for a TMA pipeline this arms
          // the full barrier with bytes that never come: bug-catalog item 16).
          for (int64_t k = 0; k + 1 < p.stages; ++k) advance(pw.producer, p.stages);
          emit_producer_acquire(p, pw, s);
          break;
        case TailVariant::Cutlass46:
          for (int64_t k = 0; k < p.stages; ++k) {
            emit_acquire_wait(p, pw, s);
            advance(pw.producer, p.stages);
          }
          break;
      }
      break;
  }
}

void WarpProgram::set_state(const Stmt& s) {
  const PipelineDecl& p = kernel_->pipelines.at(s.pipeline);
  SideState& st = s.side == Side::Producer ? pipes_.at(s.pipeline).producer : pipes_.at(s.pipeline).consumer;
  if (s.state_kind) st.kind = *s.state_kind;
  const int64_t idx = value(s.index, stage_index(st, p.stages));
  const int64_t phase = value(s.phase, stage_phase(st, p.stages));
  if (refuse(s, "bad_operand", operand::state_index(idx, p.stages)) || refuse(s, "bad_operand", operand::state_phase(phase))) return;
  const int64_t ph = phase & 1;
  if (st.kind == StateKind::PipelineStateSimple) {
    st.index = ph * p.stages + idx;
  } else {
    st.index = idx;
    st.phase = ph;
  }
  st.advances = 0;
  st.overridden = true;
}

}  // namespace pipesim::sim
