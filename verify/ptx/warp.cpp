// The warp: 32 lanes in lockstep under a SIMT reconvergence stack, frames for device-function calls,
// the step loop that runs decoded instructions until a request for the engine, and answers.
//
// Reconvergence: a divergent branch leaves the current stack entry waiting at the branch's immediate
// post-dominator (its rpc) and pushes one entry per path, the fall-through path on top (it runs first).
// An entry is popped when its pc reaches its rpc or when none of its lanes is live any more (they
// exited, or returned from the device function the entry belongs to). `exit` removes lanes for good;
// `ret` from the entry is `exit`; `ret` from a device function parks the lanes until every lane of the
// call has returned, then the frame is popped.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "sim/state_hash.hpp"
#include "verify/ptx/machine_impl.hpp"

namespace pipesim::ptx {

// ---- Exec helpers ---------------------------------------------------------------------------------
uint64_t* Exec::new_chunk() {
  if (!free_chunks.empty()) {
    uint64_t* c = free_chunks.back();
    free_chunks.pop_back();
    std::fill_n(c, kRegsPerChunk * 32, uint64_t{0});
    return c;
  }
  chunk_store.emplace_back(new uint64_t[kRegsPerChunk * 32]());
  return chunk_store.back().get();
}

void Exec::error(const std::string& message) const {
  throw PtxError(prog->path, cur ? cur->pos : TextPos{}, message);
}

void Exec::kernel_fault(const std::string& kind, const std::string& message) {
  throw KernelFaultSignal{kind, message};
}

void Exec::b128_upper_half_fault(const std::string& instr) {
  kernel_fault("unsupported", instr + " of a value whose upper 64 bits are not zero: this interpreter keeps 64 bits of a .b128 register");
}

PendingRequest& Exec::push_request(SyncKind kind) {
  PendingRequest& p = pending.emplace_back();
  p.req.kind = kind;
  p.req.function = cur_fn;
  p.req.instr = cur_pc;
  return p;
}

uint64_t Exec::special(uint8_t sreg, uint8_t comp, uint32_t lane) const {
  const Launch& L = grid->launch;
  const uint32_t c = comp < 3 ? comp : 0;
  switch (static_cast<SpecialReg>(sreg)) {
    case SpecialReg::Tid: {
      if (comp >= 3) return 0;
      const uint32_t t = warp * 32 + lane;
      const uint32_t v[3] = {t % L.block[0], (t / L.block[0]) % L.block[1], t / (L.block[0] * L.block[1])};
      return v[c];
    }
    case SpecialReg::Ntid: return comp < 3 ? L.block[c] : 0;
    case SpecialReg::Ctaid: return comp < 3 ? ctaid[c] : 0;
    case SpecialReg::Nctaid: return comp < 3 ? L.grid[c] : 0;
    case SpecialReg::Laneid: return lane;
    case SpecialReg::Warpid: return warp;
    case SpecialReg::Nwarpid: return 64;  // warp slots per SM on sm_90 / sm_100
    case SpecialReg::Smid: return place.sm;
    case SpecialReg::Nsmid: return grid->sm_count;
    case SpecialReg::Gridid: return 1;
    case SpecialReg::Clusterid: return comp < 3 ? ctaid[c] / L.cluster[c] : 0;
    case SpecialReg::Nclusterid: return comp < 3 ? (L.grid[c] + L.cluster[c] - 1) / L.cluster[c] : 0;
    case SpecialReg::ClusterCtaid: return comp < 3 ? ctaid[c] % L.cluster[c] : 0;
    case SpecialReg::ClusterNctaid: return comp < 3 ? L.cluster[c] : 0;
    case SpecialReg::ClusterCtarank: return place.rank;
    case SpecialReg::ClusterNctarank: return L.cluster_size();
    case SpecialReg::IsExplicitCluster: return prog->explicit_cluster || L.cluster_size() > 1;
    case SpecialReg::Clock:
      return static_cast<uint32_t>(static_cast<uint64_t>(elapsed_now() * grid->clock_ghz));
    case SpecialReg::Clock64: return static_cast<uint64_t>(elapsed_now() * grid->clock_ghz);
    case SpecialReg::Globaltimer: return static_cast<uint64_t>(elapsed_now());
    case SpecialReg::GlobaltimerLo: return static_cast<uint32_t>(static_cast<uint64_t>(elapsed_now()));
    case SpecialReg::GlobaltimerHi: return static_cast<uint64_t>(elapsed_now()) >> 32;
    case SpecialReg::LanemaskEq: return uint32_t{1} << lane;
    case SpecialReg::LanemaskLe: return static_cast<uint32_t>((uint64_t{2} << lane) - 1);
    case SpecialReg::LanemaskLt: return (uint32_t{1} << lane) - 1;
    case SpecialReg::LanemaskGe: return ~((uint32_t{1} << lane) - 1);
    case SpecialReg::LanemaskGt: return ~static_cast<uint32_t>((uint64_t{2} << lane) - 1);
    case SpecialReg::DynamicSmemSize: return L.dynamic_smem;
    case SpecialReg::TotalSmemSize: return grid->smem_bytes;
    case SpecialReg::AggrSmemSize: return grid->smem_bytes + 1024;  // + the 1 KiB the system reserves
    case SpecialReg::Envreg: case SpecialReg::Pm: return 0;
  }
  return 0;
}

Exec::Src Exec::materialise(const DOp& o, uint32_t slot) {
  uint64_t* s = scratch[slot & 3];
  switch (o.kind) {
    case OpKind::Special: {
      const auto r = static_cast<SpecialReg>(o.sreg);
      const bool per_lane = r == SpecialReg::Tid || r == SpecialReg::Laneid || r == SpecialReg::LanemaskEq ||
                            r == SpecialReg::LanemaskLe || r == SpecialReg::LanemaskLt ||
                            r == SpecialReg::LanemaskGe || r == SpecialReg::LanemaskGt;
      if (!per_lane) {
        s[0] = special(o.sreg, o.comp, 0);
        return {s, 0};
      }
      for (uint32_t l = 0; l < 32; ++l) s[l] = special(o.sreg, o.comp, l);
      return {s, 1};
    }
    case OpKind::Sym: s[0] = sym_value(o) + static_cast<uint64_t>(o.imm); return {s, 0};
    case OpKind::Pred: {
      const uint32_t v = pred_src(o);
      for (uint32_t l = 0; l < 32; ++l) s[l] = (v >> l) & 1u;
      return {s, 1};
    }
    case OpKind::Sink: s[0] = 0; return {s, 0};
    default: error("an operand of this kind cannot be read as a value");
  }
}

namespace {

uint64_t align16(uint64_t v) { return (v + 15) / 16 * 16; }

void ensure_local(Exec& x, uint64_t bytes) {
  if (bytes <= x.local_cap) return;
  const uint64_t cap = std::max<uint64_t>(bytes, x.local_cap * 2);
  std::vector<uint8_t> grown(32 * cap, 0);
  for (uint32_t l = 0; l < 32; ++l)
    std::copy_n(x.local.data() + l * x.local_cap, x.local_top, grown.data() + l * cap);
  x.local.swap(grown);
  x.local_cap = cap;
}

void push_frame(Exec& x, const DFunction& df, uint32_t mask, uint64_t local_base, const DInstr* call) {
  Frame f;
  f.df = &df;
  f.chunks.assign((df.nvals + kRegsPerChunk - 1) / kRegsPerChunk, nullptr);
  f.preds.assign(df.npreds, 0);
  if (x.grid->scoreboard) {
    f.ready.assign(df.nvals, 0.0);
    f.pred_ready.assign(df.npreds, 0.0);
  }
  f.stack_base = static_cast<uint32_t>(x.stack.size());
  f.call_mask = mask;
  f.local_base = local_base;
  f.call = call;
  x.frames.push_back(std::move(f));
  x.frame = &x.frames.back();
  x.fn = &df;
  x.stack.push_back({0, kNoPc, mask});
}

// Lanes leave the current function (ret): for good from the entry, else until the call returns.
void lanes_leave(Exec& x, uint32_t m) {
  if (x.frames.size() == 1) {
    x.exited |= m;
  } else {
    x.frame->returned |= m;
  }
}

uint8_t* lane_local(Exec& x, uint32_t lane, uint64_t off) { return x.local.data() + lane * x.local_cap + off; }

// Copies `bytes` for every lane of `m` from a call operand (caller side) into frame offset `to`, or
// back (from a frame offset into the operand).
void copy_arg(Exec& x, const DOp& o, uint64_t caller_base, uint64_t frame_off, uint32_t bytes, uint32_t m,
              bool into_frame) {
  for_lanes(m, [&](uint32_t l) {
    uint8_t* slot = lane_local(x, l, frame_off);
    if (o.kind == OpKind::Sym) {
      uint8_t* var = lane_local(x, l, x.grid->sym_value[o.idx] + caller_base + static_cast<uint64_t>(o.imm));
      if (into_frame) {
        std::memcpy(slot, var, bytes);
      } else {
        std::memcpy(var, slot, bytes);
      }
    } else if (into_frame) {
      uint64_t v = o.kind == OpKind::Imm ? static_cast<uint64_t>(o.imm) : 0;
      std::memcpy(slot, &v, std::min<uint32_t>(bytes, 8));
    }
  });
}

void do_return(Exec& x) {
  Frame& f = x.frames.back();
  const DInstr& call = *f.call;
  const DFunction& callee = *f.df;
  const uint32_t m = f.call_mask & ~x.exited;
  const Frame& caller = x.frames[x.frames.size() - 2];
  const DFunction& caller_fn = *caller.df;
  const DOp& rets = call.ops[0];
  const uint64_t base = f.local_base;
  const uint32_t n = std::min<uint32_t>(rets.count, static_cast<uint32_t>(callee.return_offset.size()));
  for (uint32_t k = 0; k < n; ++k) {
    const DOp& o = caller_fn.pool[rets.idx + k];
    if (o.kind == OpKind::Sym)
      copy_arg(x, o, caller.local_base, base + callee.return_offset[k], callee.return_bytes[k], m, false);
  }
  for (uint64_t* c : f.chunks)  // recycle the callee's registers
    if (c) x.free_chunks.push_back(c);
  x.local_top = base;
  x.frames.pop_back();
  x.frame = &x.frames.back();
  x.fn = x.frame->df;
  for (uint32_t k = 0; k < n; ++k) {  // register destinations, in the caller's frame
    const DOp& o = caller_fn.pool[rets.idx + k];
    if (o.kind != OpKind::Reg) continue;
    uint64_t* d = x.reg(o.idx);
    const uint64_t off = base + callee.return_offset[k];
    const uint32_t bytes = std::min<uint32_t>(8, callee.return_bytes[k]);
    for_lanes(m, [&](uint32_t l) {
      uint64_t v = 0;
      std::memcpy(&v, lane_local(x, l, off), bytes);
      d[l] = v & width_mask(o.bits);
    });
  }
}

}  // namespace

bool resolve(Exec& x) {
  for (;;) {
    if (x.stack.size() == x.frame->stack_base) {
      if (x.frames.size() == 1) return false;
      do_return(x);
      continue;
    }
    StackEntry& e = x.stack.back();
    const uint32_t live = e.mask & ~x.exited & ~x.frame->returned;
    if (live == 0 || e.pc == e.rpc) {
      x.stack.pop_back();
      continue;
    }
    if (e.pc >= x.fn->code.size()) {  // ran past the last instruction: an implicit ret
      lanes_leave(x, live);
      continue;
    }
    x.active = live;
    x.need_resolve = false;
    return true;
  }
}

// ---- Control flow ----------------------------------------------------------------------------------
void exec_nop(Exec&, const DInstr&) {}

namespace {

void exec_bra(Exec& x, const DInstr& in) {
  StackEntry& e = x.stack.back();
  const uint32_t taken = x.mask, fall = x.active & ~taken;
  if (taken == 0) {  // uniform: the stack only changes when the entry reaches its reconvergence point
    if (++e.pc == e.rpc) x.need_resolve = true;
  } else if (fall == 0) {
    e.pc = in.target;
    if (e.pc == e.rpc) x.need_resolve = true;
  } else {
    x.need_resolve = true;
    const uint32_t r = in.rpc;
    const uint32_t next = x.cur_pc + 1;
    if (e.rpc == r) {  // this entry already waits for r below: reuse it for the taken path
      e.pc = in.target;
      e.mask = taken;
      x.stack.push_back({next, r, fall});
    } else {
      e.pc = r;
      x.stack.push_back({in.target, r, taken});
      x.stack.push_back({next, r, fall});
    }
  }
}

void exec_exit(Exec& x, const DInstr&) {
  x.need_resolve = true;
  x.exited |= x.mask;
  ++x.stack.back().pc;
}

void exec_ret(Exec& x, const DInstr&) {
  x.need_resolve = true;
  lanes_leave(x, x.mask);
  ++x.stack.back().pc;
}

void exec_call(Exec& x, const DInstr& in) {
  x.need_resolve = true;
  ++x.stack.back().pc;
  const uint32_t m = x.mask;
  if (m == 0) return;
  const DFunction& callee = x.prog->fn(in.target);
  const DOp& rets = in.ops[0];
  const DOp& args = in.ops[1];
  if (callee.is_extern) {
    if (callee.name == "__assertfail")
      Exec::kernel_fault("trap", "__assertfail: a device-side assert() failed");
    // vprintf and friends: nothing is printed; a return value reads 0.
    for (uint32_t k = 0; k < rets.count; ++k) {
      const DOp& o = x.elem(rets, k);
      if (o.kind == OpKind::Reg) {
        uint64_t* d = x.reg(o.idx);
        for_lanes(m, [&](uint32_t l) { d[l] = 0; });
      } else if (o.kind == OpKind::Sym) {
        for_lanes(m, [&](uint32_t l) {
          std::memset(lane_local(x, l, x.grid->sym_value[o.idx] + x.frame->local_base), 0,
                      std::min<uint64_t>(8, x.prog->symbols[o.idx].bytes));
        });
      }
    }
    return;
  }
  if (x.frames.size() > 1000) x.error("call depth over 1000 (runaway recursion?)");
  const uint64_t caller_base = x.frame->local_base;
  const uint64_t base = align16(x.local_top);
  ensure_local(x, base + callee.frame_bytes);
  x.local_top = base + callee.frame_bytes;
  for (uint32_t k = 0; k < args.count && k < callee.param_offset.size(); ++k) {
    const DOp& o = x.elem(args, k);
    if (o.kind == OpKind::Reg) {
      const uint64_t* s = x.reg(o.idx);
      const uint32_t bytes = std::min<uint32_t>(8, callee.param_bytes[k]);
      for_lanes(m, [&](uint32_t l) { std::memcpy(lane_local(x, l, base + callee.param_offset[k]), &s[l], bytes); });
    } else {
      copy_arg(x, o, caller_base, base + callee.param_offset[k], callee.param_bytes[k], m, true);
    }
  }
  push_frame(x, callee, m, base, &in);
}

}  // namespace

bool decode_control(DecodeCtx& c, Mods& m, DInstr& d) {
  const Instruction& in = *c.in;
  const std::string& op = in.opcode;
  if (op == "bra") {
    if (m.take("uni")) d.flags |= F_UNIFORM;
    c.expect_ops(1, 1);
    if (in.ops[0].kind != OperandKind::Label) c.fail("the target must be a label");
    d.op = Op::Bra;
    d.target = in.ops[0].label;
    d.control = true;
    d.fn = exec_bra;
    return true;
  }
  if (op == "exit" || op == "ret") {
    if (m.take("uni")) d.flags |= F_UNIFORM;
    c.expect_ops(0, 0);
    const bool from_entry = c.function.is_entry;
    d.op = op == "exit" ? Op::Exit : Op::Ret;
    d.control = true;
    d.fn = (op == "exit" || from_entry) ? exec_exit : exec_ret;
    return true;
  }
  if (op == "call") {
    if (m.take("uni")) d.flags |= F_UNIFORM;
    if (in.call_indirect || in.callee >= c.module.functions.size()) c.fail("indirect calls are not supported");
    const Function& callee = c.module.functions[in.callee];
    if (callee.is_extern && callee.name != "vprintf" && callee.name != "__assertfail")
      c.fail("calls the external function '" + callee.name + "', which the interpreter cannot run");
    if (callee.is_entry) c.fail("calls an .entry");
    d.op = Op::Call;
    d.target = in.callee;
    d.control = true;
    d.fn = exec_call;
    // ops[0]: the return operands, ops[1]: the arguments (both vectors in the pool).
    for (int part = 0; part < 2; ++part) {
      DOp& v = d.ops[static_cast<size_t>(part)];
      v.kind = OpKind::Vec;
      v.idx = static_cast<uint32_t>(c.df.pool.size());
      const size_t lo = part == 0 ? 0 : in.ret_count, hi = part == 0 ? in.ret_count : in.ops.size();
      for (size_t k = lo; k < hi; ++k) {
        const Operand& o = in.ops[k];
        DOp e;
        if (o.kind == OperandKind::Symbol || o.kind == OperandKind::Reg || o.kind == OperandKind::Imm) {
          e = c.value(o, Type::None);
        } else {
          c.fail("a call argument must be a .param variable, a register or an immediate", o.pos);
        }
        if (part == 0 && e.kind == OpKind::Imm) c.fail("a call's return operand cannot be an immediate", o.pos);
        c.df.pool.push_back(e);
      }
      v.count = static_cast<uint32_t>(hi - lo);
    }
    d.nops = 2;
    return true;
  }
  if (op == "pmevent" || op == "griddepcontrol") {
    // Performance-monitor events and programmatic dependent launch: nothing the model times.
    m.take("mask");
    m.take("launch_dependents");
    m.take("wait");
    d.op = Op::Nop;
    d.fn = exec_nop;
    return true;
  }
  return false;
}

// ---- Warp ------------------------------------------------------------------------------------------
struct Warp::Impl : Exec {};

Warp::Warp(GridState& grid, const CtaPlace& place, uint32_t warp) : impl_(std::make_unique<Impl>()) {
  Exec& x = *impl_;
  x.grid = &grid;
  x.prog = grid.program.get();
  x.place = place;
  x.shared_cta_base = cluster_address(static_cast<int32_t>(place.rank), 0);
  x.warp = warp;
  if (place.cta >= grid.nctas)
    throw PtxError(x.prog->path, {}, "CTA " + std::to_string(place.cta) + " is outside the grid");
  const uint32_t first = warp * 32;
  x.valid = first >= grid.threads ? 0u
            : grid.threads - first >= 32 ? ~0u
                                          : (uint32_t{1} << (grid.threads - first)) - 1;
  grid.cta_shared_read(place.cta);
  ++grid.shared_users[place.cta];
  x.smem_size = grid.smem_bytes;
  x.ctaid = grid.cta_coords(place.cta);
  const DFunction& entry = x.prog->fn(x.prog->entry);
  x.frames.reserve(8);
  x.local_cap = align16(std::max<uint64_t>(entry.frame_bytes, 16));
  x.local.assign(32 * x.local_cap, 0);
  x.local_top = entry.frame_bytes;
  push_frame(x, entry, x.valid, 0, nullptr);
  x.frame->stack_base = 0;
  x.cur_fn = entry.index;
}

namespace {

// A warp that has exited keeps nothing but its record (the engine holds every warp to the end of the
// run): its registers and local memory go, and its CTA's shared memory once no warp of the CTA runs
// (a peer reaching into it later finds zeros).
void release(Exec& x) {
  if (x.released) return;
  x.released = true;
  x.frames.clear();
  x.frames.shrink_to_fit();
  x.frame = nullptr;
  x.free_chunks.clear();
  x.chunk_store.clear();
  std::vector<uint8_t>().swap(x.local);
  x.local_cap = x.local_top = 0;
  x.stack.clear();
  x.stack.shrink_to_fit();
  GridState& g = *x.grid;
  const uint32_t cta = x.place.cta;
  if (cta < g.shared_users.size() && g.shared_users[cta] > 0 && --g.shared_users[cta] == 0) {
    g.shared[cta].reset();
    g.shared_digested[cta] = 0;
  }
}

}  // namespace

Warp Warp::clone_onto(GridState& grid) const {
  Warp w;
  w.impl_ = std::make_unique<Impl>(*impl_);
  Exec& x = *w.impl_;
  const Exec& o = *impl_;
  x.grid = &grid;
  // The chunks were copied in order: a pointer into the old store goes to the same index of the new.
  std::vector<std::pair<const uint64_t*, uint64_t*>> moved;
  moved.reserve(o.chunk_store.size());
  for (size_t i = 0; i < o.chunk_store.size(); ++i) moved.emplace_back(o.chunk_store[i].get(), x.chunk_store[i].get());
  std::sort(moved.begin(), moved.end());
  const auto repoint = [&](uint64_t*& c) {
    if (!c) return;
    auto it = std::lower_bound(moved.begin(), moved.end(), std::pair<const uint64_t*, uint64_t*>{c, nullptr});
    c = it->second;
  };
  for (Frame& f : x.frames)
    for (uint64_t*& c : f.chunks) repoint(c);
  for (uint64_t*& c : x.free_chunks) repoint(c);
  x.frame = o.frame ? x.frames.data() + (o.frame - o.frames.data()) : nullptr;
  return w;
}

void Warp::hash_into(sim::StateHash& h) const {
  const Exec& x = *impl_;
  h.add(x.valid).add(x.exited).add(x.active).add(x.carry).add(x.need_resolve).add(x.dead).add(x.released);
  h.add(x.cur_pc).add(x.cur_fn).add(x.has_fault).add(x.last).add(x.pending.size() - x.pending_head);
  for (const StackEntry& e : x.stack) h.add(e.pc).add(e.rpc).add(e.mask);
  for (const Frame& f : x.frames) {
    h.add(f.df ? f.df->index : UINT32_MAX).add(f.stack_base).add(f.returned).add(f.call_mask).add(f.local_base);
    for (size_t i = 0; i < f.chunks.size(); ++i) {
      if (!f.chunks[i]) continue;  // never written
      h.add(i);
      for (uint32_t k = 0; k < kRegsPerChunk * 32; ++k) h.add(f.chunks[i][k]);
    }
    for (uint32_t p : f.preds) h.add(p);
  }
  for (size_t i = 0; i + 8 <= x.local.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, x.local.data() + i, 8);
    h.add(v);
  }
  for (size_t i = x.pending_head; i < x.pending.size(); ++i) {
    const SyncRequest& r = x.pending[i].req;
    h.add(r.kind).add(r.function).add(r.instr).add(r.lanes).add(r.bar).add(r.dst).add(r.a).add(r.b).add(r.c);
  }
}

// A warp destroyed alive (its run ended in a hang, or a search's copy went) leaves the grid alone: the
// grid goes with its run, and a copy's warp may outlive the grid it was copied from.
Warp::~Warp() = default;
Warp::Warp(Warp&&) noexcept = default;
Warp& Warp::operator=(Warp&&) noexcept = default;

namespace {

void emit_compute(Exec& x, SyncRequest& req) {
  req = SyncRequest{};
  req.kind = SyncKind::Compute;
  req.function = x.cur_fn;
  req.instr = x.cur_pc;
  // a: the warp's time; b: the part of it that takes its sub-partition's issue slot (the rest is
  // waiting for operands and the store path, while other warps issue).
  const double issue = static_cast<double>(x.since_request) * x.grid->instruction_ns + x.owed_ns;
  req.a = std::max<int64_t>(1, std::llround(issue + x.stall_ns));
  req.b = std::clamp<int64_t>(std::llround(issue), 1, req.a);
  x.since_request = 0;
  x.owed_ns = 0;
  x.stall_ns = 0;
  x.end_step = false;
}

void take_pending(Exec& x, SyncRequest& req) {
  const PendingRequest& p = x.pending[x.pending_head];
  x.last = p.answer == AnswerKind::None ? -1 : static_cast<int64_t>(x.pending_head);
  req = p.req;
  ++x.pending_head;
}

}  // namespace

bool Warp::step(SyncRequest& req, double now_ns, uint64_t budget) {
  Exec& x = *impl_;
  x.last = -1;
  if (x.pending_head == x.pending.size() && x.pending_head != 0) {  // every one returned (and answered)
    x.pending.clear();
    x.pending_head = 0;
  }
  if (x.pending_head < x.pending.size()) {
    take_pending(x, req);
    return true;
  }
  if (x.dead) return false;
  x.now_ns = now_ns;
  x.step_count = 0;
  if (budget == 0) budget = 1;
  try {
    for (;;) {
      if (x.need_resolve && !resolve(x)) {
        x.dead = true;
        release(x);
        if (x.since_request > 0) {
          emit_compute(x, req);
          return true;
        }
        return false;
      }
      StackEntry& e = x.stack.back();
      const DInstr& in = x.fn->code[e.pc];
      x.cur = &in;
      x.cur_pc = e.pc;
      x.cur_fn = x.fn->index;
      uint32_t m = x.active;
      if (in.guard >= 0) {
        const uint32_t g = x.frame->preds[static_cast<uint32_t>(in.guard)];
        m &= in.guard_neg ? ~g : g;
      }
      x.mask = m;
      if (x.grid->scoreboard) scoreboard_issue(x, in, m);
      ++x.executed;
      ++x.since_request;
      ++x.step_count;
      if (in.control) {
        in.fn(x, in);  // control handlers set need_resolve when the stack or the live lanes change
      } else {
        if (m) in.fn(x, in);
        if (++e.pc == e.rpc) x.need_resolve = true;  // non-control handlers never touch the stack
      }
      if (x.pending_head < x.pending.size()) {
        if (x.since_request > 0) {
          emit_compute(x, req);
          return true;
        }
        take_pending(x, req);
        return true;
      }
      // The budget is instructions, and as long as they would take at one issue each: a warp that
      // spins on a global load's latency must not run ahead of the others by thousands of round trips.
      if (x.step_count >= budget || x.end_step ||
          x.stall_ns >= static_cast<double>(budget - x.step_count) * x.grid->instruction_ns) {
        emit_compute(x, req);
        req.yield = true;
        return true;
      }
    }
  } catch (const KernelFaultSignal& f) {
    x.dead = true;
    x.has_fault = true;
    x.fault.function = x.cur_fn;
    x.fault.instr = x.cur_pc;
    x.fault.kind = f.kind;
    x.fault.message = f.message;
    x.pending.clear();
    x.pending_head = 0;
    x.last = -1;
    x.push_request(SyncKind::Trap);
    release(x);
    if (x.since_request > 0) {
      emit_compute(x, req);
      return true;
    }
    take_pending(x, req);
    return true;
  }
}

void Warp::answer(uint64_t value) {
  Exec& x = *impl_;
  if (x.last < 0) return;
  PendingRequest& p = x.pending[static_cast<size_t>(x.last)];
  x.last = -1;
  switch (p.answer) {
    case AnswerKind::None: return;
    case AnswerKind::Token:
      if (p.dst.kind == OpKind::Reg) {
        uint64_t* d = x.reg(p.dst.idx);
        for_lanes(p.lanes, [&](uint32_t l) { d[l] = value & width_mask(p.dst.bits); });
      }
      break;
    case AnswerKind::Pred: x.set_pred(p.dst, value ? ~0u : 0u, p.lanes); break;
    case AnswerKind::SharedU32: {
      // tcgen05.alloc: the TMEM address (lane 0, the first column) lands in shared memory.
      const uint32_t lane = static_cast<uint32_t>(std::countr_zero(p.lanes));
      const uint32_t v = static_cast<uint32_t>(value);
      std::memcpy(x.access(Space::Shared, p.req.dst, 4, lane, true), &v, 4);
      break;
    }
    case AnswerKind::NamedRed: {
      // The engine sums the warps' counts of lanes whose predicate is true; .popc is that sum, .and
      // holds when it covers every participating thread, .or when it is not zero.
      if (p.red_op == 0) {
        if (p.dst.kind == OpKind::Reg) {
          uint64_t* d = x.reg(p.dst.idx);
          for_lanes(p.lanes, [&](uint32_t l) { d[l] = value & 0xffffffffu; });
        }
      } else {
        const bool r = p.red_op == 1 ? value >= p.red_threads : value != 0;
        x.set_pred(p.dst, r ? ~0u : 0u, p.lanes);
      }
      break;
    }
  }
  p.answer = AnswerKind::None;
}

uint64_t Warp::memory_bytes() const {
  const Exec& x = *impl_;
  uint64_t b = sizeof(Impl) + x.chunk_store.size() * kRegsPerChunk * 32 * sizeof(uint64_t) + x.local.capacity();
  // The stack and the requests count where they outgrew their inline storage (inside Impl).
  if (x.stack.capacity() > Exec::kInlineStack) b += x.stack.capacity() * sizeof(StackEntry);
  if (x.pending.capacity() > Exec::kInlinePending) b += x.pending.capacity() * sizeof(PendingRequest);
  for (const Frame& f : x.frames) b += sizeof(Frame) + f.chunks.capacity() * sizeof(uint64_t*) + f.preds.capacity() * 4;
  return b;
}
bool Warp::done() const { return impl_->dead && impl_->pending_head >= impl_->pending.size(); }

const KernelFault* Warp::fault() const { return impl_->has_fault ? &impl_->fault : nullptr; }
uint64_t Warp::instructions() const { return impl_->executed; }
// The instruction the warp executed last (a blocked warp: the instruction that blocks it), or the
// entry's first before it ran.
uint32_t Warp::function() const { return impl_->cur_fn; }
uint32_t Warp::instr() const { return impl_->cur_pc; }

}  // namespace pipesim::ptx
